"""bpeforge: an exact, deterministic, fast byte-level BPE tokenizer trainer.

>>> import bpeforge
>>> tok = bpeforge.Tokenizer.train_from_iterator(["hello world"] * 10, vocab_size=260, special_tokens=[])
>>> tok.decode(tok.encode("hello world"))
'hello world'

The package is layered, each module importing only modules of the layers below its own:
docs/design.md lists the layers (``tests/test_layers.py`` holds them, and checks the imports).
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
