"""bpeforge._prefix and Tokenizer.truncate: the first ranks of a training are the smaller training.

BPE merges are greedy, so the first k merges of a training to N are the training to k: checked
against the trainer itself at both sizes and against the reference trainer (tests/reference.py),
which shares no code with bpeforge.
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpeforge
import reference as R
import strategies as S
from bpeforge._prefix import first_ranks
from ranks import BYTE_RANKS, hand_ranks

SETTINGS = dict(deadline=None, max_examples=S.examples(60), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def trained_ranks(corpus, n_ranks):
    trainer = bpeforge.Trainer()
    trainer.train_from_iterator(corpus, n_ranks)
    return dict(trainer.get_mergeable_ranks())


@settings(**SETTINGS)
@given(corpus=st.one_of(S.corpora(), S.repeated_words_corpus("abc")), small=st.integers(256, 300), extra=st.integers(0, 40))
def test_the_first_ranks_of_a_training_are_the_smaller_training(corpus, small, extra):
    large = small + extra
    big = trained_ranks(corpus, large)
    expected_small = dict(R.train_ranks(corpus, small))
    # The reference at the small size, the trainer at the small size, and the large training cut
    # there (the trainer may stop early, when no pair is left: then both sizes stop at the same place).
    assert trained_ranks(corpus, small) == expected_small
    assert {t: r for t, r in big.items() if r < small} == expected_small
    assert dict(R.train_ranks(corpus, large)) == big
    if len(big) >= small:
        cut, _ = first_ranks(big, {}, small)
        assert cut == expected_small


@settings(**SETTINGS)
@given(corpus=S.repeated_words_corpus("ab"), small=st.integers(260, 290), n_special=st.integers(0, 3))
def test_truncate_is_the_smaller_training_with_its_special_tokens(corpus, small, n_special):
    special = [f"<|s{i}|>" for i in range(n_special)]
    with warnings.catch_warnings():  # training may stop early on a tiny corpus
        warnings.simplefilter("ignore")
        big = bpeforge.Tokenizer.train_from_iterator(corpus, small + 20 + n_special, special_tokens=special)
        direct = bpeforge.Tokenizer.train_from_iterator(corpus, small + n_special, special_tokens=special)
    if big.n_vocab < small + n_special:
        with pytest.raises(ValueError, match="larger than the tokenizer's"):
            big.truncate(small + n_special)
        return
    cut = big.truncate(small + n_special)
    assert cut.mergeable_ranks == direct.mergeable_ranks
    assert cut.special_tokens == direct.special_tokens
    assert cut.n_vocab == direct.n_vocab
    text = " ".join(corpus)
    assert cut.encode(text) == direct.encode(text)


def test_truncate_renumbers_special_tokens_after_the_ranks_kept(hello):
    # hello: 256 bytes + he, ll, hell, hello; <|bos|> at 260.
    cut = hello.truncate(259)  # 258 ranks: he, ll
    assert cut.special_tokens == {"<|bos|>": 258}
    assert set(cut.mergeable_ranks) == set(BYTE_RANKS) | {b"he", b"ll"}
    assert cut.encode("hello") == [256, 257, ord("o")]
    assert cut.encode_special("<|bos|>") == 258 and cut.decode([258]) == "<|bos|>"
    assert hello.truncate(hello.n_vocab).mergeable_ranks == hello.mergeable_ranks
    assert isinstance(cut, bpeforge.Tokenizer)


def test_special_tokens_keep_the_order_of_their_ids():
    ranks = hand_ranks(b"ab")
    cut, special = first_ranks(ranks, {"<|z|>": 300, "<|a|>": 257}, 258)
    assert special == {"<|a|>": 256, "<|z|>": 257}
    assert len(cut) == 256


@pytest.mark.parametrize(
    "size, message",
    [
        (262, "larger than the tokenizer's 261 tokens"),
        (256, r"at least 256 \+ 1 special tokens = 257, got 256"),
        (10, "at least 256"),
    ],
)
def test_truncate_refuses_sizes_it_cannot_give(hello, size, message):
    with pytest.raises(ValueError, match=message):
        hello.truncate(size)


def test_truncate_refuses_a_non_integer(hello):
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        hello.truncate(259.0)


def test_a_prefix_without_every_single_byte_is_refused():
    """Ranks laid out as OpenAI's (a merged token before some single bytes): a short prefix
    would leave a byte out, which tiktoken cannot encode without."""
    ranks = {bytes([i]): i for i in range(255)}
    ranks[b"ab"] = 255
    ranks[bytes([255])] = 256
    tok = bpeforge.Tokenizer(ranks, bpeforge._core.DEFAULT_PATTERN, {}, name="odd")
    with pytest.raises(ValueError, match=r"leave out 1 single bytes \(e.g. b'\\xff'\)"):
        tok.truncate(256)
    assert tok.truncate(257).n_vocab == 257
