"""The exported tiktoken.Encoding: exact round trips, the asked vocabulary, specials after ranks."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge

CORPUS = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "Ünïcödé, 日本語のテキスト, emoji 🎉🎉 and combining e\u0301\u0302 marks",
    "def main():\n    return [x ** 2 for x in range(10)]\r\n\r\n",
    "I'll say it's 3.14159 — DON'T you think? 2025-11-21",
] * 20


@pytest.fixture(scope="module")
def tok():
    return bpeforge.Tokenizer.train_from_iterator(CORPUS, 400)


def test_n_vocab_is_vocab_size(tok):
    assert tok.n_vocab == tok.encoding.n_vocab == 400
    assert len(tok.mergeable_ranks) == 400 - len(bpeforge.NANOCHAT_SPECIAL_TOKENS)


def test_special_tokens_follow_ranks(tok):
    n = len(tok.mergeable_ranks)
    assert tok.special_tokens == {name: n + i for i, name in enumerate(bpeforge.NANOCHAT_SPECIAL_TOKENS)}
    assert tok.encoding.encode("<|bos|>", allowed_special="all") == [n]


def test_special_text_is_ordinary_in_encode(tok):
    ids = tok.encode("<|bos|>")
    assert tok.encode_special("<|bos|>") not in ids
    assert tok.decode(ids) == "<|bos|>"


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_decode_encode_round_trip(tok, s):
    # tiktoken replaces lone surrogates by U+FFFD (they cannot be encoded); everything else is exact.
    expected = s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert tok.decode(tok.encode(s)) == expected


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64))
def test_ranks_decode_any_bytes(tok, data):
    ids = tok.encoding.encode_ordinary(data.decode("utf-8", "replace"))
    assert tok.encoding.decode_bytes(ids) == data.decode("utf-8", "replace").encode()


def test_encoding_merges_trained_text(tok):
    # Text seen many times in training compresses well below one token per byte.
    text = CORPUS[0]
    assert len(tok.encode(text)) < len(text.encode()) / 3


def test_no_special_tokens():
    tok = bpeforge.Tokenizer.train_from_iterator(CORPUS, 300, special_tokens=[])
    assert tok.special_tokens == {}
    assert tok.n_vocab == 300


def test_presets_by_name():
    tok = bpeforge.Tokenizer.train_from_iterator(CORPUS, 300, pattern="o200k_base")
    assert tok.pattern == bpeforge.PATTERNS["o200k_base"]
    assert tok.encoding._pat_str == tok.pattern


def test_import_and_training_leave_tiktoken_and_hashlib_unloaded_until_needed():
    """tiktoken (and hashlib, which loads OpenSSL) are imported where they are used, so a
    training script's peak memory, reached in the merge loop, does not carry them; the Tokenizer
    made at the end imports tiktoken, and saving imports hashlib."""
    import subprocess
    import sys

    code = (
        "import sys, tempfile, bpeforge\n"
        "heavy = lambda: [m for m in ('tiktoken', 'hashlib') if m in sys.modules]\n"
        "assert heavy() == [], heavy()\n"
        "seen = []\n"
        "def progress(stage, info):\n"
        "    seen.append(heavy())\n"
        "tok = bpeforge.Tokenizer.train_from_iterator(['hello world'] * 50, 300, progress=progress)\n"
        "assert seen and all(s == [] for s in seen), seen\n"
        "assert heavy() == ['tiktoken'], heavy()\n"
        "assert tok.decode(tok.encode('hello world')) == 'hello world'\n"
        "d = tempfile.mkdtemp()\n"
        "tok.save(d)\n"
        "assert bpeforge.Tokenizer.load(d).mergeable_ranks == tok.mergeable_ranks\n"
        "assert 'hashlib' in sys.modules\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
