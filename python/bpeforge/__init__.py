"""bpeforge: an exact, deterministic, fast byte-level BPE tokenizer trainer.

>>> import bpeforge
>>> tok = bpeforge.Tokenizer.train_from_iterator(["hello world"] * 10, vocab_size=260, special_tokens=[])
>>> tok.decode(tok.encode("hello world"))
'hello world'

The package is layered, each module importing only modules below it (``tests/test_layers.py``
checks this):

1. ``errors`` (exceptions), ``checks`` (arguments), ``patterns`` (split patterns),
   ``progress`` (console progress), ``version``, and the compiled ``_core``;
2. ``base``: the encoding core, :class:`~bpeforge.base.BaseTokenizer`;
3. ``io`` (saving and loading), ``training``, ``pretrained`` (tiktoken's encodings by name);
4. ``chat`` (conversations for chat models);
5. ``tokenizer``: the public :class:`Tokenizer`, made of the modules above;
6. ``eval`` (compression compared) and ``inputs`` (corpus readers);
7. ``cli``: the ``bpeforge`` command line.
"""

from ._core import DEFAULT_PATTERN, PRESETS, ParquetReader, Trainer, check_ranks, split
from .errors import EvalError, TokenizerFileError
from .eval import evaluate, format_table
from .patterns import PATTERNS, resolve_pattern
from .tokenizer import NANOCHAT_SPECIAL_TOKENS, Tokenizer
from .version import __version__

__all__ = [
    "__version__",
    "DEFAULT_PATTERN",
    "EvalError",
    "NANOCHAT_SPECIAL_TOKENS",
    "PATTERNS",
    "ParquetReader",
    "Tokenizer",
    "TokenizerFileError",
    "Trainer",
    "check_ranks",
    "evaluate",
    "format_table",
    "resolve_pattern",
    "split",
]
