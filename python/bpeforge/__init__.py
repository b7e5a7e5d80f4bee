"""bpeforge: an exact, deterministic, fast byte-level BPE tokenizer trainer.

>>> import bpeforge
>>> tok = bpeforge.Tokenizer.train_from_iterator(["hello world"] * 10, vocab_size=260, special_tokens=[])
>>> tok.decode(tok.encode("hello world"))
'hello world'
"""

from ._core import DEFAULT_PATTERN, PRESETS, ParquetReader, Trainer, check_ranks, split
from .io import TokenizerFileError
from .tokenizer import NANOCHAT_SPECIAL_TOKENS, Tokenizer, resolve_pattern
from .eval import EvalError, evaluate, format_table

from importlib.metadata import PackageNotFoundError as _NotInstalled, version as _version

try:
    __version__: str = _version("bpeforge")
except _NotInstalled:  # run from a source tree that was never installed
    __version__ = "unknown"

PATTERNS: dict[str, str] = dict(PRESETS)
"""Preset split patterns by name: gpt4 (the default), cl100k_base, nanochat, gpt2, r50k_base,
p50k_base, o200k_base."""

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
