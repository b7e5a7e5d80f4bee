"""The fast preset scanner splits every string exactly as its slow twin, fancy-regex."""

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from strategies import examples

# Characters from every class the preset patterns name, weighted toward the tricky ones.
TRICKY = list(
    "aAzZsStTdDmMlLvVrReE'’ſK 0189٣²Ⅻ\t\n\r\x0b\x0c\x85\xa0\u2028\u3000/!.,;-_()[]{}\"#@"
    "éÉñçǅʰא中文日本語한국어\u0301\u0302\u0308🎉👍🏽\x00\x1c\u200b\ufeffßẞςΣ"
)
tricky_text = st.lists(
    st.one_of(st.sampled_from(TRICKY), st.sampled_from(["'s", "'LL", "'Re", " \n", "\r\n", "  ", "123456"])),
    max_size=60,
).map("".join)


@pytest.mark.parametrize("preset", sorted(bpeforge.PATTERNS))
@settings(max_examples=examples(300), deadline=None)
@given(text=st.one_of(tricky_text, st.text(max_size=80)))
def test_scanner_equals_fancy_regex(preset, text):
    pattern = bpeforge.PATTERNS[preset]
    assert bpeforge.split(text, pattern) == bpeforge.split(text, pattern, fast=False)


@pytest.mark.parametrize("preset", sorted(bpeforge.PATTERNS))
def test_scanner_equals_fancy_regex_on_real_sources(preset):
    pattern = bpeforge.PATTERNS[preset]
    root = Path(sys.modules["os"].__file__).parent
    for path in sorted(root.glob("*.py"))[:60]:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert bpeforge.split(text, pattern) == bpeforge.split(text, pattern, fast=False), path.name


def test_gpt4_and_cl100k_strings_differ_only_at_trailing_newline_whitespace():
    text = "a\n  "
    assert bpeforge.split(text, bpeforge.PATTERNS["gpt4"]) == ["a", "\n", "  "]
    assert bpeforge.split(text, bpeforge.PATTERNS["cl100k_base"]) == ["a", "\n  "]


def test_long_whitespace_runs_need_no_backtracking():
    # fancy-regex runs out of backtracking stack on about a million spaces; the scanner does not.
    text = "x" + " " * 2_000_000 + "y"
    assert bpeforge.split(text, bpeforge.PATTERNS["gpt4"]) == ["x", " " * 1_999_999, " y"]
    with pytest.raises(RuntimeError, match="split pattern failed"):
        bpeforge.split(text, bpeforge.PATTERNS["gpt4"], fast=False)
