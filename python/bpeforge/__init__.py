"""bpeforge: an exact, deterministic, fast byte-level BPE tokenizer trainer.

>>> import bpeforge
>>> tok = bpeforge.Tokenizer.train_from_iterator(["hello world"] * 10, vocab_size=260, special_tokens=[])
>>> tok.decode(tok.encode("hello world"))
'hello world'

The package is layered, each module importing only modules of the layers below its own
(``tests/test_layers.py`` checks it):

1. ``_core``: the compiled core (Rust): the trainer, the Parquet reader, split patterns;
2. ``errors`` (exceptions), ``checks`` (arguments), ``patterns`` (split patterns),
   ``progress`` (console progress), ``version``;
3. ``base``: the encoding core, :class:`~bpeforge.base.BaseTokenizer`;
4. ``io`` (saving and loading), ``training`` (the one training path), ``pretrained``
   (tiktoken's encodings by name); then ``huggingface`` (``tokenizer.json`` both ways) and
   ``counts`` (counting texts into span counts);
5. ``chat`` (conversations for chat models);
6. ``tokenizer``: the public :class:`Tokenizer`, made of the modules above; ``rustbpe`` and
   ``nanochat``, the drop-ins for rustbpe and nanochat's tokenizer;
7. ``eval`` (compression compared) and ``inputs`` (corpus readers), ``sweep`` (compression at
   several vocabulary sizes of one training, over ``prefix``: a tokenizer's first ranks);
8. this module, which re-exports the public names; then ``cli``, the ``bpeforge`` command line.
"""

# PRESETS (the presets as (name, regex) pairs) stays importable from here; PATTERNS is its dict.
from ._core import DEFAULT_PATTERN, PRESETS, ParquetReader, Trainer, check_ranks, split
from .errors import EvalError, NoTextError, TokenizerFileError, UnknownTokenIdError
from .eval import evaluate, format_table
from .patterns import PATTERNS, resolve_pattern
from .sweep import Sweep, sweep_vocab_sizes
from .tokenizer import NANOCHAT_SPECIAL_TOKENS, Tokenizer
from .version import __version__

# Span counts: count texts, add counts, train from them.
from ._core import SpanCounts
from .counts import count

# Mixing sources: span counts weighted by source (a temperature, or weights), exactly.
from .mixing import mix

__all__ = [
    "__version__",
    "DEFAULT_PATTERN",
    "EvalError",
    "NANOCHAT_SPECIAL_TOKENS",
    "NoTextError",
    "PATTERNS",
    "ParquetReader",
    "Tokenizer",
    "TokenizerFileError",
    "Trainer",
    "UnknownTokenIdError",
    "check_ranks",
    "evaluate",
    "format_table",
    "resolve_pattern",
    "split",
    "SpanCounts",
    "count",
    "Sweep",
    "sweep_vocab_sizes",
    "mix",
]

# Text and JSONL files read in Rust, as lists of str or straight into the trainer.
from ._core import JsonlReader, TextReader  # noqa: E402
from .errors import InputError  # noqa: E402

__all__ += ["InputError", "JsonlReader", "TextReader"]
