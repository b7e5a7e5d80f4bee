"""bpeforge's result must not depend on threads, batching, input order or the iterable type.

The specification makes the result a function of the multiset of spans only (counts are sums,
ties are broken on the pair ids), so every way of feeding the same texts must give the same
ranks and merges, which must also be the reference's.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpeforge
import reference as R
import strategies as S

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PATTERNS = [None, bpeforge.PATTERNS["o200k_base"], bpeforge.PATTERNS["gpt2"], r"\S+|\s+"]


def run(texts, vocab_size, pattern=None, num_threads=None, buffer_size=8192):
    trainer = bpeforge.Trainer(pattern, num_threads=num_threads)
    trainer.train_from_iterator(texts, vocab_size, buffer_size)
    return trainer.get_mergeable_ranks(), trainer.get_merges()


class OneAtATime:
    """A bare iterator (no __len__, no sequence protocol)."""

    def __init__(self, texts):
        self._texts = list(texts)
        self._i = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self._i >= len(self._texts):
            raise StopIteration
        self._i += 1
        return self._texts[self._i - 1]


@settings(max_examples=S.examples(40), **SETTINGS)
@given(corpus=S.corpora(max_distinct=10, max_repeat=5),
       vocab_size=st.sampled_from([260, 300, 400]),
       pattern=st.sampled_from(PATTERNS),
       rnd=st.randoms(use_true_random=False))
def test_same_result_every_way(corpus, vocab_size, pattern, rnd):
    expected = R.train(corpus, vocab_size, R.GPT4_PATTERN if pattern is None else pattern)
    base = run(corpus, vocab_size, pattern, num_threads=1)
    assert base == expected
    for num_threads in [None, 2, 3]:
        assert run(corpus, vocab_size, pattern, num_threads=num_threads) == base, num_threads
    for buffer_size in [1, 7, 8192]:
        assert run(corpus, vocab_size, pattern, buffer_size=buffer_size) == base, buffer_size
    shuffled = list(corpus)
    rnd.shuffle(shuffled)
    assert run(shuffled, vocab_size, pattern) == base
    assert run((t for t in corpus), vocab_size, pattern) == base
    assert run(OneAtATime(corpus), vocab_size, pattern, buffer_size=3) == base
    assert run(tuple(reversed(corpus)), vocab_size, pattern, num_threads=2, buffer_size=1) == base


def random_corpus(seed, n_texts):
    """A seeded corpus with many distinct spans, several batches' worth of texts, a skewed
    word distribution (big counts, few ties) and a long tail (many ties)."""
    rng = random.Random(seed)
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    extra = ["é", "ü", "ñ", "日本", "語", "😀", "👍🏽", "'s", "'LL", "don't", "123", "4567", "!", "...",
             "\n", "\r\n", "\t", "  "]
    vocab = ["".join(rng.choice(letters[: rng.randint(5, 26)]) for _ in range(rng.randint(1, 9)))
             for _ in range(400)] + extra
    weights = [1.0 / (k + 1) for k in range(len(vocab))]
    texts = []
    for _ in range(n_texts):
        words = rng.choices(vocab, weights, k=rng.randint(0, 14))
        texts.append("".join(w + rng.choice([" ", " ", " ", "", "\n", ", "]) for w in words))
    return texts


@pytest.fixture(scope="module")
def big_corpus():
    return random_corpus(seed=20240521, n_texts=5000)


@pytest.fixture(scope="module")
def big_expected(big_corpus):
    # The reference's result, computed once (a few seconds).
    return R.train(big_corpus, 700)


def test_big_corpus_matches_reference(big_expected, big_corpus):
    assert len(big_expected[0]) == 700  # the corpus is rich enough to reach the vocab size
    assert run(big_corpus, 700, num_threads=1, buffer_size=len(big_corpus)) == big_expected


def test_smaller_vocab_is_a_prefix(big_corpus, big_expected):
    # Training is a sequence of merges, so stopping earlier gives a prefix of it.
    ranks, merges = big_expected
    for vocab_size in [256, 257, 300, 512]:
        assert run(big_corpus, vocab_size) == (ranks[:vocab_size], merges[: vocab_size - 256])


@pytest.mark.parametrize("num_threads", [1, 2, 4, None])
@pytest.mark.parametrize("buffer_size", [1, 7, 8192])
def test_big_corpus_threads_and_batches(big_corpus, big_expected, num_threads, buffer_size):
    assert run(big_corpus, 700, num_threads=num_threads, buffer_size=buffer_size) == big_expected


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_big_corpus_shuffled(big_corpus, big_expected, seed):
    shuffled = list(big_corpus)
    random.Random(seed).shuffle(shuffled)
    assert run(shuffled, 700, buffer_size=97) == big_expected


def test_big_corpus_generator_and_iterator(big_corpus, big_expected):
    assert run((t for t in big_corpus), 700) == big_expected
    assert run((t for t in big_corpus), 700, buffer_size=7) == big_expected
    assert run(OneAtATime(big_corpus), 700, num_threads=2, buffer_size=1000) == big_expected
    assert run(iter(tuple(big_corpus)), 700) == big_expected


def test_big_corpus_repeated_runs(big_corpus, big_expected):
    for _ in range(3):
        assert run(big_corpus, 700) == big_expected


def test_retraining_replaces_earlier_training(big_corpus, big_expected):
    trainer = bpeforge.Trainer()
    trainer.train_from_iterator(["aaab"] * 3, 300)
    trainer.train_from_iterator(big_corpus, 700)
    assert (trainer.get_mergeable_ranks(), trainer.get_merges()) == big_expected
    trainer.train_from_iterator(["aaab"] * 3, 300)
    assert (trainer.get_mergeable_ranks(), trainer.get_merges()) == R.train(["aaab"] * 3, 300)


def wide_corpus(seed, n_texts):
    """Many distinct spans (about 10,000) over a 4-letter alphabet, so that the first merges
    each touch thousands of spans: bpeforge applies such merges to blocks of spans in parallel
    (from 2,048 spans touched, in blocks of 4,096), a path the corpora above do not reach."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n_texts):
        words = ["".join(rng.choices("abcd", [4, 3, 2, 1], k=rng.randint(4, 10)))
                 for _ in range(rng.randint(1, 4))]
        texts.append(" ".join(words))
    return texts


@pytest.fixture(scope="module")
def wide():
    corpus = wide_corpus(seed=7, n_texts=5000)
    return corpus, R.train(corpus, 400)


@pytest.mark.parametrize("num_threads, buffer_size", [(1, 8192), (None, 8192), (2, 1), (4, 333)])
def test_wide_corpus_matches_reference(wide, num_threads, buffer_size):
    corpus, expected = wide
    assert len(expected[0]) == 400
    assert run(corpus, 400, num_threads=num_threads, buffer_size=buffer_size) == expected


def test_wide_corpus_shuffled(wide):
    corpus, expected = wide
    shuffled = list(corpus)
    random.Random(3).shuffle(shuffled)
    assert run(iter(shuffled), 400, num_threads=2) == expected


def test_tokenizer_threads(big_corpus, big_expected):
    one = bpeforge.Tokenizer.train_from_iterator(big_corpus, 500, special_tokens=[], num_threads=1)
    default = bpeforge.Tokenizer.train_from_iterator(iter(big_corpus), 500, special_tokens=[],
                                                     buffer_size=13)
    assert one.mergeable_ranks == default.mergeable_ranks
    assert one.mergeable_ranks == dict(big_expected[0][:500])  # see test_smaller_vocab_is_a_prefix
