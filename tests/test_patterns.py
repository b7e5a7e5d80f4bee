"""bpeforge._patterns: presets by name, a misspelt preset refused, and a pattern that can match
an empty string refused everywhere a pattern is taken."""

import pytest

import bpeforge


@pytest.mark.parametrize("pattern", ["a*", r"\w*", "(?=x)|y", r"\s*", r"(?=x)|\w+|\s+|[^\w\s]+", "(?:)"])
def test_pattern_matching_empty_strings_is_refused(pattern):
    # tiktoken raises a PanicException (not an Exception) on empty matches, and after one
    # fancy-regex skips a character (the "x" of "(?=x)|\w+"): refuse them first, everywhere.
    with pytest.raises(ValueError, match="can match an empty string"):
        bpeforge.Tokenizer.train_from_iterator(["abc"], 300, pattern=pattern)
    with pytest.raises(ValueError, match="can match an empty string"):
        bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, pattern)
    with pytest.raises(ValueError, match="can match an empty string"):
        bpeforge.Trainer(pattern)
    with pytest.raises(ValueError, match="can match an empty string"):
        bpeforge.Trainer().train_from_iterator(["abc"], 300, pattern=pattern)


@pytest.mark.parametrize("pattern", ["gtp4", "o200k", "", "hello world"])
def test_a_pattern_with_no_regex_syntax_is_taken_for_a_misspelt_preset(pattern):
    # It would split out nothing but copies of itself: training would learn nothing, silently.
    with pytest.raises(ValueError, match="no such preset.*cl100k_base"):
        bpeforge.Trainer(pattern)
    with pytest.raises(ValueError, match="no such preset"):
        bpeforge.Trainer().train_from_iterator(["abc"], 300, pattern=pattern)
    with pytest.raises(ValueError, match="no such preset"):
        bpeforge.Tokenizer.train_from_iterator(["abc"], 300, pattern=pattern)
    with pytest.raises(ValueError, match="no such preset"):
        bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, pattern)
    with pytest.raises(ValueError, match="no such preset"):
        bpeforge.split("abc", pattern)
    bpeforge.Trainer(".")  # one regex character is enough


def test_split_takes_preset_names():
    for name, regex in bpeforge.PATTERNS.items():
        text = "Hello world's 12345  \n\n x"
        assert bpeforge.split(text, name) == bpeforge.split(text, regex) == bpeforge.split(text, name, fast=False)


def test_trainer_takes_preset_names():
    t = bpeforge.Trainer("gpt2")
    assert t.get_pattern() == bpeforge._patterns.resolve_pattern("gpt2")
    t.train_from_iterator(["hello world"] * 5, 300, pattern="nanochat")
    assert t.get_pattern() == bpeforge._patterns.resolve_pattern("nanochat") and t.vocab_size > 256
