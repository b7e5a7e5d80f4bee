"""Split patterns: the presets by name, and what a ``pattern`` argument means.

The rules live in the compiled core (``bpeforge._core.resolve_pattern`` and the check that a
pattern compiles and never matches an empty string), so that the trainer, the tokenizer and the
command line read a pattern the same way.
"""

from __future__ import annotations

from typing import Optional

from . import _core

PATTERNS: dict[str, str] = dict(_core.PRESETS)
"""Preset split patterns by name: gpt4 (the default), cl100k_base, nanochat, gpt2, r50k_base,
p50k_base, o200k_base."""

SUPERWORD_PATTERN: str = _core.SUPERWORD_PATTERN
"""The superword stage's split pattern (``pattern="superword"``; docs/superword.md): spans that
may hold several words."""


def resolve_pattern(pattern: Optional[str]) -> str:
    """The split pattern for ``pattern``: ``None`` is GPT-4's, a preset name is that preset's,
    anything else is taken as a regex. A string without any regex syntax (which would split
    out only copies of itself) is taken for a misspelt preset name: a ValueError.

    >>> resolve_pattern("nanochat") == resolve_pattern(None).replace("{1,3}", "{1,2}")
    True
    >>> resolve_pattern("gtp4")
    Traceback (most recent call last):
    ValueError: 'gtp4': no such preset (choose from gpt4, cl100k_base, nanochat, gpt2, r50k_base, p50k_base, o200k_base, superword); a regex needs at least one of \\ [ ] ( ) { } | ? * + ^ $ .
    """
    if pattern is None:
        return _core.DEFAULT_PATTERN
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str or None, got {type(pattern).__name__}")
    return _core.resolve_pattern(pattern)


def pattern_label(regex: str) -> str:
    """The preset's name for ``regex`` (``superword`` for the superword pattern), or
    ``"custom regex"``.

    >>> pattern_label(resolve_pattern("gpt2")), pattern_label(r"\\S+|\\s+"), pattern_label(SUPERWORD_PATTERN)
    ('gpt2', 'custom regex', 'superword')
    """
    if regex == SUPERWORD_PATTERN:
        return "superword"
    return next((name for name, preset in PATTERNS.items() if preset == regex), "custom regex")
