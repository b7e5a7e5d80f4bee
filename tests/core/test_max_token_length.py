"""``max_token_length``: every merge whose token would be longer than that many bytes is skipped
(the best pair among those that fit is merged), exactly as the reference trainer extended with
the same rule does, on every training path, whatever the threads."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpeforge
import reference as R
import strategies as S
from bpeforge._training import Recipe

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def stdlib_texts(limit_bytes=600_000):
    root = Path(sys.modules["os"].__file__).parent
    texts, total = [], 0
    for path in sorted(root.glob("*.py")):
        texts.append(path.read_text(encoding="utf-8", errors="replace"))
        total += len(texts[-1])
        if total > limit_bytes:
            return texts
    return texts


@settings(max_examples=S.examples(40), **SETTINGS)
@given(corpus=st.one_of(S.corpora(max_repeat=6), S.repeated_words_corpus("ab", 9), S.repeated_words_corpus("abc", 12)),
       max_token_length=st.integers(2, 6),
       vocab_size=st.sampled_from([260, 300, 400]),
       pattern=st.sampled_from([None, bpeforge.PATTERNS["o200k_base"], r"\S+|\s+"]))
def test_train_from_iterator_matches_reference(corpus, max_token_length, vocab_size, pattern):
    expected = R.train(corpus, vocab_size, R.GPT4_PATTERN if pattern is None else pattern, max_token_length=max_token_length)
    trainer = bpeforge.Trainer(pattern)
    trainer.train_from_iterator(corpus, vocab_size, max_token_length=max_token_length)
    assert (trainer.get_mergeable_ranks(), trainer.get_merges()) == expected
    assert all(len(token) <= max_token_length for token, _ in expected[0])


@settings(max_examples=S.examples(40), **SETTINGS)
@given(counts=st.dictionaries(st.text("abc ", min_size=1, max_size=14), st.integers(1, 10**12), max_size=12),
       max_token_length=st.integers(2, 8))
def test_train_from_counts_matches_reference(counts, max_token_length):
    expected = R.train_from_counts(counts, 320, max_token_length=max_token_length)
    trainer = bpeforge.Trainer()
    trainer.train_from_counts(counts, 320, max_token_length=max_token_length)
    assert (trainer.get_mergeable_ranks(), trainer.get_merges()) == expected


def test_a_long_run_stops_growing_at_the_limit():
    # A run of 64 a's becomes aa, aaaa, ... up to one token; with a limit of 5 bytes, the pair
    # (aaaa, aaaa) is dropped for good and the rarer (a, b) merges instead.
    def tokens(**limit):
        trainer = bpeforge.Trainer(r"\S+")
        trainer.train_from_counts({"a" * 64: 10, "ab": 1}, 300, **limit)
        return [t for t, _ in trainer.get_mergeable_ranks()[256:]]

    assert tokens(max_token_length=5) == [b"aa", b"a" * 4, b"ab"]
    assert tokens(max_token_length=8) == [b"aa", b"a" * 4, b"a" * 8, b"ab"]
    assert tokens() == [b"a" * 2**k for k in range(1, 7)] + [b"ab"]


@pytest.fixture(scope="module")
def real_text():
    return stdlib_texts()


@pytest.fixture(scope="module")
def limited(real_text):
    trainer = bpeforge.Trainer(num_threads=1)
    trainer.train_from_iterator(real_text, 2000, max_token_length=4)
    return trainer.get_mergeable_ranks(), trainer.get_merges()


def test_the_limit_binds_on_real_text(real_text, limited):
    ranks, merges = limited
    assert len(ranks) == 2000
    assert max(len(t) for t, _ in ranks) == 4
    unlimited = bpeforge.Trainer(num_threads=1)
    unlimited.train_from_iterator(real_text, 2000)
    assert max(len(t) for t, _ in unlimited.get_mergeable_ranks()) > 4
    # Up to the first merge the limit skips, both learn the same.
    first_long = next(k for k, (t, _) in enumerate(unlimited.get_mergeable_ranks()) if len(t) > 4)
    assert ranks[:first_long] == unlimited.get_mergeable_ranks()[:first_long]


@pytest.mark.parametrize("num_threads, buffer_size", [(2, 8192), (4, 7), (3, 100)])
def test_deterministic_across_threads_and_batches(real_text, limited, num_threads, buffer_size):
    trainer = bpeforge.Trainer(num_threads=num_threads)
    trainer.train_from_iterator(reversed(real_text), 2000, buffer_size, max_token_length=4)
    assert (trainer.get_mergeable_ranks(), trainer.get_merges()) == limited


def test_counts_path_equals_the_text_path(real_text, limited):
    counts = Counter(span for text in real_text for span in bpeforge.split(text, "gpt4"))
    trainer = bpeforge.Trainer()
    trainer.train_from_counts(counts, 2000, max_token_length=4)
    assert trainer.get_mergeable_ranks() == limited[0]


def test_tokenizer_and_training_take_it():
    tok = bpeforge.Tokenizer.train_from_iterator(["abcdefgh " * 50] * 3, 261, special_tokens=[], max_token_length=3)
    assert max(len(t) for t in tok.mergeable_ranks) == 3
    assert tok.decode(tok.encode("abcdefgh")) == "abcdefgh"
    assert Recipe(300, max_token_length=None).max_token_length is None


@pytest.mark.parametrize("bad, error", [(1, ValueError), (0, ValueError), (-3, ValueError), ("4", TypeError), (4.0, TypeError), (True, TypeError)])
def test_bad_values_are_refused_before_any_text_is_read(bad, error):
    def texts():
        raise AssertionError("read")
        yield ""

    with pytest.raises(error, match="max_token_length"):
        Recipe(300, max_token_length=bad)
    with pytest.raises(error, match="max_token_length"):
        bpeforge.Trainer().train_from_iterator(texts(), 300, max_token_length=bad)
    with pytest.raises(error, match="max_token_length"):
        bpeforge.Trainer().train_from_counts({"ab": 1}, 300, max_token_length=bad)


def test_command_line_flag(tmp_path):
    corpus = tmp_path / "docs.txt"
    corpus.write_text("".join(f"internationalization {i} localization\n" for i in range(300)))
    out = tmp_path / "tok"
    run = subprocess.run(
        [sys.executable, "-m", "bpeforge", "train", "-q", "--vocab-size", "400", "--special-tokens", "none",
         "--max-token-length", "3", "--holdout", "0", "-o", str(out), str(corpus)],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    tok = bpeforge.Tokenizer.load(out)
    assert max(len(t) for t in tok.mergeable_ranks) == 3
    bad = subprocess.run(
        [sys.executable, "-m", "bpeforge", "train", "--max-token-length", "1", "-o", str(tmp_path / "x"), str(corpus)],
        capture_output=True, text=True, timeout=120,
    )
    assert bad.returncode == 2 and "--max-token-length" in bad.stderr
