"""bpeforge._core.Encoder against tiktoken: the same ids as encode_ordinary, for every preset
pattern and custom ones, on ranks bpeforge trains and on ranks with gaps and odd orders."""

from __future__ import annotations

import random

import pytest
import tiktoken
from hypothesis import given, settings, strategies as st

import bpeforge
from bpeforge import _core
from strategies import corpora, examples, texts

PRESETS = sorted(bpeforge.PATTERNS)


def tiktoken_encoding(ranks: dict, pattern: str) -> tiktoken.Encoding:
    return tiktoken.Encoding("t", pat_str=bpeforge._patterns.resolve_pattern(pattern), mergeable_ranks=ranks, special_tokens={})


def trained_ranks(corpus: list, vocab_size: int, pattern: str) -> dict:
    trainer = bpeforge.Trainer(pattern)
    trainer.train_from_iterator(corpus, vocab_size)
    return dict(trainer.get_mergeable_ranks())


@settings(max_examples=examples(60), deadline=None)
@given(corpus=corpora(), text=texts(), pattern=st.sampled_from(PRESETS + [r"\S+|\s+", r"[a-z]+"]),
       extra=st.integers(0, 80))
def test_encodes_as_tiktoken_does(corpus, text, pattern, extra):
    ranks = trained_ranks(corpus * 3, 256 + extra, pattern)
    expected = tiktoken_encoding(ranks, pattern).encode_ordinary(text)
    encoder = _core.Encoder(list(ranks.items()), pattern)
    assert encoder.encode(text) == expected
    tokens, covered = encoder.count([text, text])
    assert tokens == 2 * len(expected)
    assert covered == 2 * len(tiktoken_encoding(ranks, pattern).decode_bytes(expected))


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), text=st.text(alphabet="ab c", max_size=300))
def test_ranks_in_any_order_and_with_gaps(seed, text):
    """Ranks that are not trained in order (merged tokens ranked by chance, with gaps): tiktoken's
    rule still decides, lowest rank first, whole spans first; long spans take the heap path."""
    rng = random.Random(seed)
    tokens = {bytes([b]) for b in range(256)}
    pieces = [bytes([c]) for c in b"ab c"]
    for _ in range(rng.randrange(40)):
        pieces.append(rng.choice(pieces) + rng.choice(pieces))
    tokens.update(pieces)
    ids = rng.sample(range(4 * len(tokens)), len(tokens))
    ranks = dict(zip(sorted(tokens), ids))
    text = text * rng.randrange(1, 4)
    expected = tiktoken_encoding(ranks, r"\S+|\s+").encode_ordinary(text)
    assert _core.Encoder(list(ranks.items()), r"\S+|\s+").encode(text) == expected


def test_long_runs_are_counted_where_tiktoken_gives_up():
    ranks = trained_ranks(["  x " * 50, " " * 64], 300, "gpt4")
    text = " " * 2_000_000 + "x"
    tokens, covered = _core.Encoder(list(ranks.items()), "gpt4").count([text])
    assert covered == len(text)
    assert 0 < tokens < len(text) // 2


def test_bad_ranks_and_patterns_are_value_errors():
    ranks = {bytes([b]): b for b in range(256)}
    del ranks[b"a"]
    with pytest.raises(ValueError, match="single byte 97 has no rank"):
        _core.Encoder(list(ranks.items()), "gpt4")
    full = [(bytes([b]), b) for b in range(256)]
    with pytest.raises(ValueError, match="no such preset"):
        _core.Encoder(full, "gtp4")
    with pytest.raises(ValueError, match="empty string"):
        _core.Encoder(full, r"a*")
