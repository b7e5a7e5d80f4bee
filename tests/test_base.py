"""bpeforge._base, the encoding core: the ranks, pattern and special tokens checked as tiktoken
needs them, and the tiktoken.Encoding they make (exact round trips, the vocabulary asked for,
special tokens after the ranks)."""

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from strategies import examples

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
    assert len(tok.mergeable_ranks) == 400 - len(bpeforge._base.NANOCHAT_SPECIAL_TOKENS)


def test_special_tokens_follow_ranks(tok):
    n = len(tok.mergeable_ranks)
    assert tok.special_tokens == {name: n + i for i, name in enumerate(bpeforge._base.NANOCHAT_SPECIAL_TOKENS)}
    assert tok.encoding.encode("<|bos|>", allowed_special="all") == [n]


@pytest.mark.parametrize("bad", [400, 401, 2**31, 2**40, -1, -(2**40)])
def test_decode_of_an_unknown_id_is_a_value_error_naming_it_and_the_vocabulary(tok, bad):
    # tiktoken raises KeyError for an unknown id and OverflowError for a negative or huge one.
    with pytest.raises(ValueError, match=rf"^Unknown token id {bad}: the vocabulary has 400 ids, 0 to 399$") as caught:
        tok.decode([104, bad, 105])
    assert isinstance(caught.value, KeyError)  # what tiktoken raised for an unknown id, still caught
    assert isinstance(caught.value, bpeforge._errors.UnknownTokenIdError)


def test_decode_of_an_id_in_a_gap_of_the_vocabulary_says_so():
    import tiktoken

    enc = tiktoken.Encoding("gaps", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={"<|x|>": 300})
    tok = bpeforge._base.BaseTokenizer.from_encoding(enc)
    assert tok.decode([300, 104]) == "<|x|>h"
    with pytest.raises(ValueError, match=r"^Unknown token id 257: no token has it \(the vocabulary's 301 ids run from 0 to 300, with gaps\)$"):
        tok.decode([257])


@pytest.mark.parametrize("bad, name", [("a", "str"), (1.5, "float"), (None, "NoneType")])
def test_decode_of_a_value_that_is_no_integer_is_a_type_error_naming_it(tok, bad, name):
    with pytest.raises(TypeError, match=rf"^token ids must be integers; ids\[1\] is a {name}: "):
        tok.decode([104, bad])
    with pytest.raises(TypeError, match="a sequence of token ids, not str"):
        tok.decode("hi")


def test_decode_takes_any_integer_type(tok):
    class Index:  # as a NumPy integer or a 0-d tensor: an int by __index__
        def __index__(self):
            return ord("h")

    assert tok.decode([Index(), ord("i")]) == tok.decode(iter([ord("h"), ord("i")])) == "hi"


def test_special_text_is_ordinary_in_encode(tok):
    ids = tok.encode("<|bos|>")
    assert tok.encode_special("<|bos|>") not in ids
    assert tok.decode(ids) == "<|bos|>"


@settings(max_examples=examples(300), deadline=None)
@given(st.text())
def test_decode_encode_round_trip(tok, s):
    # tiktoken replaces lone surrogates by U+FFFD (they cannot be encoded); everything else is exact.
    expected = s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert tok.decode(tok.encode(s)) == expected


@settings(max_examples=examples(100), deadline=None)
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
    made at the end makes its tiktoken Encoding (two more copies of every token) only when it
    first encodes, and saving imports hashlib."""
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
        "assert heavy() == [], heavy()\n"
        "small = tok.truncate(270)\n"  # (a smaller tokenizer of the same name: no Encoding needed)
        "assert heavy() == [] and small.n_vocab == 270 and small.name == tok.name, heavy()\n"
        "assert tok.decode(tok.encode('hello world')) == 'hello world'\n"
        "assert heavy() == ['tiktoken'], heavy()\n"
        "d = tempfile.mkdtemp()\n"
        "tok.save(d)\n"
        "assert bpeforge.Tokenizer.load(d).mergeable_ranks == tok.mergeable_ranks\n"
        "assert 'hashlib' in sys.modules\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


BYTES = {bytes([i]): i for i in range(256)}


def test_tokenizer_rejects_broken_ranks():
    ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(ValueError, match="not the concatenation"):
        bpeforge.Tokenizer({**ranks, b"xyz": 256})
    with pytest.raises(ValueError, match="not the concatenation"):
        bpeforge.Tokenizer({**ranks, b"a": 300, b"ab": 97})  # a merge ranked below its part b"a"
    with pytest.raises(ValueError, match="the single byte 0x61 is not a token"):
        bpeforge.Tokenizer({t: r for t, r in ranks.items() if t != b"a"})
    with pytest.raises(ValueError, match="the single byte 0x00 is not a token"):
        bpeforge.Tokenizer({b"a": 0})
    # tiktoken's model allows gaps and the single bytes at any ranks
    swapped = dict(ranks)
    swapped[b"a"], swapped[b"b"] = swapped[b"b"], swapped[b"a"]
    assert bpeforge.Tokenizer({**swapped, b"ab": 300}).encode("abc") == [300, 99]


def test_tokenizer_rejects_bad_special_tokens():
    ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(ValueError, match="special token '<x>' has id 10, which a rank uses"):
        bpeforge.Tokenizer(ranks, None, {"<x>": 10})
    with pytest.raises(ValueError, match="given twice"):
        bpeforge.Tokenizer(ranks, None, ["<x>", "<x>"])
    with pytest.raises(ValueError, match="share an id"):
        bpeforge.Tokenizer(ranks, None, {"<x>": 300, "<y>": 300})
    with pytest.raises(TypeError, match="not a str"):
        bpeforge.Tokenizer(ranks, None, "<x>")


def test_encode_special_unknown_name():
    tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, None, ["<|bos|>"])
    with pytest.raises(KeyError, match="not a special token"):
        tok.encode_special("<|eos|>")


def test_a_panic_inside_tiktoken_is_a_runtime_error():
    # fancy-regex gives up on this pattern (its backtracking limit); tiktoken then panics, which
    # Python sees as a BaseException that `except Exception` does not catch.
    tok = bpeforge.Tokenizer(BYTES, r"(?:a|a)+(?!x)b|\S+|\s+")
    for call in (lambda: tok.encode("a" * 40), lambda: tok.encode(["a" * 40]), lambda: tok.encode("a" * 40, prepend=0)):
        with pytest.raises(RuntimeError, match="tiktoken failed while encoding.*backtracking"):
            call()
    assert tok.encode("ab") == [97, 98]  # and it still encodes what it can


@pytest.mark.parametrize(
    "ranks, kind, message",
    [
        ({"a": 0}, TypeError, "a token is str"),
        ({b"a": 1.0}, TypeError, "the rank of b'a' is 1.0"),
        ({b"a": True}, TypeError, "the rank of b'a' is True"),
        ({**BYTES, b"ab": -1}, ValueError, "rank -1 of b'ab' is out of range: ranks are ints from 0 up to 2147483647"),
        ({**BYTES, b"ab": 2**70}, ValueError, f"rank {2**70} of b'ab' is out of range"),
    ],
)
def test_bad_ranks_name_the_problem(ranks, kind, message):
    with pytest.raises(kind, match=re.escape(message)):
        bpeforge.Tokenizer(ranks)


def test_numpy_missing_names_the_extra(monkeypatch):
    tok = bpeforge.Tokenizer.train_from_iterator(["ab ab"], vocab_size=260, special_tokens=[])
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(ModuleNotFoundError, match=r"bpeforge\[numpy\]"):
        tok.token_bytes(as_numpy=True)
