"""bpeforge: an exact, deterministic, fast byte-level BPE tokenizer trainer.

>>> import bpeforge
>>> tok = bpeforge.Tokenizer.train_from_iterator(["hello world"] * 10, vocab_size=260, special_tokens=[])
>>> tok.decode(tok.encode("hello world"))
'hello world'

The names here are the package's public face (``__all__``); the modules users import by name
are ``bpeforge.huggingface``, ``bpeforge.nanochat``, ``bpeforge.rustbpe``, ``bpeforge.ray``,
``bpeforge.parity`` and the command line, ``bpeforge.cli``. Every other module has a leading
underscore: it may change. The package is layered, each module importing only modules of the
layers below its own: docs/design.md lists the layers (``tests/test_layers.py`` holds them, and
checks the imports).
"""

# Training and tokenizers.
from ._core import ParquetReader, SpanCounts, Trainer, split
from ._core import JsonlReader, TextReader
from ._counts import count
from ._errors import EvalError, InputError, NoTextError, OptionError, TokenizerFileError
from ._eval import evaluate, format_table
from ._mixing import mix
from ._patterns import PATTERNS
from ._sweep import sweep_vocab_sizes as sweep
from ._tokenizer import Tokenizer
from ._training import Recipe
from ._version import __version__

__all__ = [
    "__version__",
    # a tokenizer, and how it is trained
    "Tokenizer",
    "Trainer",
    "Recipe",
    "PATTERNS",
    "split",
    # span counts: counted apart, added, mixed, trained from
    "count",
    "SpanCounts",
    "mix",
    # the corpus readers (in Rust)
    "TextReader",
    "JsonlReader",
    "ParquetReader",
    # compression: of tokenizers, and at several sizes of one training
    "evaluate",
    "format_table",
    "sweep",
    # errors (each also a ValueError, TypeError or OSError)
    "InputError",
    "OptionError",
    "TokenizerFileError",
    "NoTextError",
    "EvalError",
]
