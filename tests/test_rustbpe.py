"""``bpeforge.rustbpe.Tokenizer`` is rustbpe 0.1.0's Python API: the same tests run against real
rustbpe and against bpeforge's (``tok`` is parametrized over both), and the two are compared
directly on the same inputs, edge cases and generated corpora included."""

import sys
from pathlib import Path

import pytest
import rustbpe  # a test dependency: these tests are the point of having it
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
import bpeforge.rustbpe
from strategies import corpora, examples, texts

IMPLEMENTATIONS = {"rustbpe": rustbpe.Tokenizer, "bpeforge": bpeforge.rustbpe.Tokenizer}

HOSTILE = [
    "",
    "hello world",
    "  two  spaces,\ttabs\r\nand CRLF\n\n\n",
    "digits 1 12 123 1234 12345678901",
    "naïve café 你好世界 🙂👍🏽 e\u0301",
    "'s 've 'LL don't",
    "<|bos|> looks special but is text",
    " " * 50 + "x",
]


def corpus():
    """Some real text: the standard library's own sources, about 300 KB."""
    root = Path(sys.modules["os"].__file__).parent
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.glob("[a-c]*.py"))][:25]


def ranks_of(tok):
    return [(bytes(b), r) for b, r in tok.get_mergeable_ranks()]


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def tok(request):
    return IMPLEMENTATIONS[request.param]()


def test_untrained_state(tok):
    assert tok.vocab_size == 256
    assert tok.get_pattern() == ""
    assert ranks_of(tok) == [(bytes([i]), i) for i in range(256)]
    assert tok.encode("hello world") == []  # no pattern: nothing matches
    assert tok.batch_encode(["hello", "world"]) == [[], []]
    assert tok.decode([104, 105]) == "hi"
    assert tok.decode([]) == ""


def test_training_with_the_default_pattern(tok):
    tok.train_from_iterator(iter(HOSTILE * 3), 300)
    assert tok.get_pattern() == bpeforge._core.DEFAULT_PATTERN
    assert tok.vocab_size == len(tok.get_mergeable_ranks()) > 256
    for text in HOSTILE:
        assert tok.decode(tok.encode(text)) == text
    assert tok.batch_encode(HOSTILE) == [tok.encode(t) for t in HOSTILE]


def test_keyword_arguments_and_defaults(tok):
    tok.train_from_iterator(iterator=["ab ab ab"], vocab_size=257, buffer_size=1, pattern=r"\w+|\s+")
    assert tok.get_pattern() == r"\w+|\s+"
    assert ranks_of(tok)[256:] == [(b"ab", 256)]
    assert tok.encode(text="ab") == [256]
    assert tok.decode(ids=[256, 32]) == "ab "
    assert tok.batch_encode(texts=("ab", "b")) == [[256], [98]]


def test_an_empty_iterator_learns_nothing(tok):
    tok.train_from_iterator(iter([]), 1000)
    assert tok.vocab_size == 256
    assert tok.get_pattern() == bpeforge._core.DEFAULT_PATTERN  # trained: the pattern is set
    assert tok.encode("hi there") == [104, 105, 32, 116, 104, 101, 114, 101]


def test_repeated_training_replaces_everything(tok):
    tok.train_from_iterator(["aaaa bbbb"] * 5, 260, pattern=r"\w+")
    first = ranks_of(tok)
    tok.train_from_iterator(["xyxy"] * 5, 258)  # pattern=None: GPT-4's again, not the last one
    assert tok.get_pattern() == bpeforge._core.DEFAULT_PATTERN
    assert ranks_of(tok)[256:] == [(b"xy", 256), (b"xyxy", 257)]
    assert ranks_of(tok) != first
    assert tok.encode("xyxy") == [257]


def test_vocab_size_below_256_is_refused(tok):
    # rustbpe panics (pyo3's PanicException, a BaseException); bpeforge raises a ValueError.
    with pytest.raises(BaseException, match="vocab_size must be at least 256"):
        tok.train_from_iterator(["hello"], 255)


def test_unknown_token_id(tok):
    tok.train_from_iterator(["hello hello"], 258)
    with pytest.raises(ValueError, match="Unknown token id"):
        tok.decode([104, 258])
    for bad in (-1, 1 << 32):
        with pytest.raises(OverflowError):
            tok.decode([bad])
    for bad in ("hi", [1.0], ["a"]):
        with pytest.raises(TypeError):
            tok.decode(bad)


def test_bytes_that_are_not_utf8(tok):
    # rustbpe's attempt to raise UnicodeDecodeError ends as a TypeError; bpeforge's error is both.
    for ids in ([0xFF], [104, 0xE4, 0xBD], [0x80]):
        with pytest.raises(TypeError):
            tok.decode(ids)


def test_bad_arguments(tok):
    with pytest.raises(TypeError):
        tok.encode(b"bytes")
    with pytest.raises(TypeError):
        tok.batch_encode("a str is not a list of texts")
    with pytest.raises(TypeError):
        tok.train_from_iterator(["ok", 3], 300)
    with pytest.raises(ValueError):
        tok.train_from_iterator(["ok"], 300, pattern="(")


def test_the_bpeforge_error_for_non_utf8_is_also_a_unicode_error():
    tok = bpeforge.rustbpe.Tokenizer()
    with pytest.raises(UnicodeDecodeError) as e:
        tok.decode([104, 0xFF])
    assert isinstance(e.value, bpeforge._errors.NotUtf8Error) and e.value.start == 1


def test_buffer_size_zero_is_refused():
    # rustbpe would loop forever, refilling an empty buffer.
    with pytest.raises(ValueError, match="buffer_size"):
        bpeforge.rustbpe.Tokenizer().train_from_iterator(["ab"], 300, buffer_size=0)


def test_a_failed_training_keeps_the_last_one():
    tok = bpeforge.rustbpe.Tokenizer()
    tok.train_from_iterator(["abab"] * 3, 258)
    with pytest.raises(ValueError):
        tok.train_from_iterator(["x"], 300, pattern="a*")  # can match empty text
    assert ranks_of(tok)[256:] == [(b"ab", 256), (b"abab", 257)]
    assert tok.encode("abab") == [257]


def both():
    return rustbpe.Tokenizer(), bpeforge.rustbpe.Tokenizer()


@pytest.mark.parametrize("vocab_size, pattern", [(1024, None), (600, bpeforge.PATTERNS["nanochat"]), (500, r"\w+|\s+|[^\w\s]+")])
def test_identical_to_rustbpe_on_real_text(vocab_size, pattern):
    texts_ = corpus()
    theirs, ours = both()
    for tok in (theirs, ours):
        tok.train_from_iterator(iter(texts_), vocab_size, pattern=pattern)
    assert ours.get_pattern() == theirs.get_pattern()
    assert ours.vocab_size == theirs.vocab_size
    assert ranks_of(ours) == ranks_of(theirs)
    sample = [t[:2000] for t in texts_[:5]] + HOSTILE
    assert ours.batch_encode(sample) == theirs.batch_encode(sample)
    for text in sample:
        ids = theirs.encode(text)
        assert ours.encode(text) == ids
        assert ours.decode(ids) == theirs.decode(ids)


@settings(max_examples=examples(60), deadline=None)
@given(corpus=corpora(), vocab_size=st.integers(256, 400), probes=st.lists(texts(), max_size=4))
def test_identical_to_rustbpe_on_generated_text(corpus, vocab_size, probes):
    theirs, ours = both()
    for tok in (theirs, ours):
        tok.train_from_iterator(iter(corpus), vocab_size)
    assert ranks_of(ours) == ranks_of(theirs)
    assert ours.vocab_size == theirs.vocab_size
    probes = corpus[:4] + probes
    assert ours.batch_encode(probes) == theirs.batch_encode(probes)
    assert [ours.encode(p) for p in probes] == [theirs.encode(p) for p in probes]
