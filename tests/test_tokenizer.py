"""bpeforge._tokenizer, the public Tokenizer: one name per job (tiktoken's where it has one;
nanochat's other spellings live in bpeforge.nanochat), encode variants, token_bytes,
from_encoding, load. (Its parts are tested with their modules:
training in test_training.py, files in test_io.py, chat in test_chat.py.)"""

import pytest
import tiktoken

import bpeforge
import bpeforge.nanochat

CORPUS = [
    "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs.",
    "def encode(self, text):\n    return self.enc.encode_ordinary(text)\n",
    "Ünïcödé: naïve café, 日本語のテキスト, Ελληνικά, emojis 🎉🚀🎉.",
    "Numbers 12345 and 678, contractions don't, it's, we'll.",
] * 5

TEXTS = [
    "The quick brown fox.",
    "",
    "日本語のテキスト 🎉",
    "<|bos|> is just text here <|user_start|>",
    "def f(x):\n    return x\n",
    "lone surrogate \ud800 replaced",
]


@pytest.fixture(scope="module")
def tok():
    return bpeforge.Tokenizer.train_from_iterator(CORPUS, vocab_size=320)


# ------------------------------------------------------------------------------ names


def test_one_name_per_job(tok):
    for name in [
        "train_from_iterator", "load", "from_pretrained", "save", "id_to_token", "encode_special",
        "encode", "decode", "render_conversation", "render_for_completion", "visualize_tokenization",
    ]:
        assert callable(getattr(tok, name)), name
    # nanochat's second spellings are bpeforge.nanochat.RustBPETokenizer's, not the Tokenizer's.
    for name in ["from_directory", "get_vocab_size", "get_special_tokens", "get_bos_token_id", "enc"]:
        assert not hasattr(tok, name), name
        assert hasattr(bpeforge.nanochat.RustBPETokenizer, name), name


def test_nanochat_attributes_and_lookups(tok):
    import fractions

    assert isinstance(tok.encoding, tiktoken.Encoding) and tok.bos_token_id == tok.encode_special("<|bos|>")
    # encode_special is tiktoken's encode_single_token there: any single token's text or bytes.
    assert tok.encode_special("a") == tok.encode_special(b"a") == ord("a")
    assert tok.encode_special(b"<|bos|>") == tok.bos_token_id
    assert tok.encode("x", prepend="a") == [ord("a"), ord("x")]
    with pytest.raises(KeyError, match="not a special token"):
        tok.encode_special("not one token at all")

    class Index:  # as a NumPy integer or a 0-d tensor: an int by __index__
        def __index__(self):
            return ord("h")

    assert tok.id_to_token(Index()) == "h"
    with pytest.raises(TypeError, match="got Fraction"):
        tok.id_to_token(fractions.Fraction(1, 2))
    assert tok.encode(["ab", "c"], num_threads=None) == tok.encode(["ab", "c"])  # tiktoken's default


def test_vocab_and_special_tokens(tok):
    assert tok.n_vocab == 320
    assert set(tok.special_tokens) == set(bpeforge._base.NANOCHAT_SPECIAL_TOKENS)
    assert set(tok.special_tokens) == tok.encoding.special_tokens_set
    assert tok.bos_token_id == tok.encode_special("<|bos|>") == 311  # 320 - 9 specials
    assert [tok.encode_special(n) for n in bpeforge._base.NANOCHAT_SPECIAL_TOKENS] == list(range(311, 320))


def test_id_to_token(tok):
    assert tok.id_to_token(ord("a")) == "a"
    assert tok.id_to_token(tok.bos_token_id) == "<|bos|>"
    for i in range(256, 311):
        assert tok.id_to_token(i) == tok.decode([i])
    assert tok.id_to_token(0x80) == "\ufffd"  # a lone continuation byte
    for bad in (320, -1, 2**40):
        with pytest.raises(ValueError, match=f"^Unknown token id {bad}: the vocabulary has 320 ids, 0 to 319$") as caught:
            tok.id_to_token(bad)
        assert isinstance(caught.value, KeyError)  # as id_to_token raised before
    with pytest.raises(TypeError):
        tok.id_to_token("a")


def test_load_round_trip(tok, tmp_path):
    tok.save(tmp_path / "tok")
    again = bpeforge.Tokenizer.load(tmp_path / "tok")
    assert isinstance(again, bpeforge.Tokenizer)
    assert again.mergeable_ranks == tok.mergeable_ranks
    assert again.special_tokens == tok.special_tokens
    assert again.encode(TEXTS) == tok.encode(TEXTS)
    with pytest.raises(FileNotFoundError):
        bpeforge.Tokenizer.load(tmp_path / "missing")


# ------------------------------------------------------------------------------ encode


def test_plain_encode_unchanged(tok):
    for text in TEXTS:
        assert tok.encode(text) == tok.encoding.encode_ordinary(text)
        assert tok(text) == tok.encode(text)


def test_batch_equals_one_by_one(tok):
    batch = tok.encode(TEXTS)
    assert batch == [tok.encode(t) for t in TEXTS]
    assert tok.encode(TEXTS, num_threads=1) == batch
    assert tok.encode(tuple(TEXTS)) == batch
    assert tok(TEXTS, num_threads=3) == batch
    assert tok.encode([]) == []
    big = CORPUS * 10
    assert tok.encode(big, num_threads=4) == [tok.encode(t) for t in big]


class Index:
    """An integer type that is not int (as NumPy's and 0-d tensors are): it has __index__."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


def test_prepend_append_names_and_ids(tok):
    bos, end = tok.encode_special("<|bos|>"), tok.encode_special("<|assistant_end|>")
    text = "The quick brown fox."
    base = tok.encode(text)
    assert tok.encode(text, prepend="<|bos|>") == [bos] + base
    assert tok.encode(text, append="<|assistant_end|>") == base + [end]
    assert tok.encode(text, prepend=bos, append=end) == [bos] + base + [end]
    assert tok.encode(text, "<|bos|>", "<|assistant_end|>") == [bos] + base + [end]  # positional, as nanochat
    assert tok(text, prepend=bos) == [bos] + base
    assert tok.encode(text, prepend=ord("x")) == [ord("x")] + base  # any id, not only special ones
    assert tok.encode(text, prepend=Index(bos), append=b"x") == [bos] + base + [ord("x")]  # any integer type
    assert tok.encode([text], num_threads=Index(2)) == [base]
    batch = tok.encode(TEXTS, prepend="<|bos|>", append=end)
    assert batch == [[bos] + tok.encode(t) + [end] for t in TEXTS]
    assert tok.encode([""], prepend=bos) == [[bos]]
    # rows are independent lists
    batch[0].append(-1)
    assert batch[1][-1] == end


def test_special_token_text_stays_text(tok):
    for name in bpeforge._base.NANOCHAT_SPECIAL_TOKENS:
        ids = tok.encode(name)
        assert tok.encode_special(name) not in ids
        assert all(i < 311 for i in ids)
        assert tok.decode(ids) == name
    batch = tok.encode(["<|bos|>", "x<|user_end|>y"], append="<|bos|>")
    bos = tok.bos_token_id
    assert [row.count(bos) for row in batch] == [1, 1]
    assert [row[-1] for row in batch] == [bos, bos]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(text=42), TypeError, "text must be a str or a list of str, got int"),
        (dict(text=b"bytes"), TypeError, "got bytes"),
        (dict(text=["ok", 3]), TypeError, r"text\[1\] must be a str, got int"),
        (dict(text="x", prepend="<|nope|>"), KeyError, "not a special token"),
        (dict(text=["x"], append="<|nope|>"), KeyError, "not a special token"),
        (dict(text="x", prepend=320), ValueError, "out of range"),
        (dict(text="x", append=-1), ValueError, "out of range"),
        (dict(text="x", prepend=True), TypeError, "name .str. or an id"),
        (dict(text="x", prepend=1.0), TypeError, "name .str. or an id"),
        (dict(text=["x"], num_threads=0), ValueError, "num_threads"),
    ],
)
def test_encode_errors(tok, kwargs, error, message):
    with pytest.raises(error, match=message):
        tok.encode(**kwargs)


# ------------------------------------------------------------------------------ other constructors


def test_from_encoding_wraps_tiktoken():
    enc = tiktoken.Encoding(
        "tiny", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)},
        special_tokens={"<|endoftext|>": 256},
    )
    tok = bpeforge.Tokenizer.from_encoding(enc)
    assert tok.encoding is enc
    assert tok.n_vocab == 257
    assert set(tok.special_tokens) == {"<|endoftext|>"}
    assert tok.bos_token_id == 256
    assert tok.encode("ab", prepend="<|endoftext|>") == [256, 97, 98]
    assert tok.pattern == r"\S+|\s+"
    with pytest.raises(TypeError):
        bpeforge.Tokenizer.from_encoding({"not": "an encoding"})


# ------------------------------------------------------------------------------ token_bytes


def test_token_bytes_values(tok):
    tb = tok.token_bytes()
    assert isinstance(tb, list) and len(tb) == tok.n_vocab
    assert tb[:256] == [1] * 256
    ranks = tok.mergeable_ranks
    for token, rank in ranks.items():
        assert tb[rank] == len(token)
    for name in set(tok.special_tokens):
        assert tb[tok.encode_special(name)] == 0
    assert max(tb[256:311]) >= 2


def test_token_bytes_sum_to_byte_length(tok):
    tb = tok.token_bytes()
    for text in TEXTS + CORPUS[:4]:
        ids = tok.encode(text)
        decoded = tok.decode(ids)
        assert sum(tb[i] for i in ids) == len(decoded.encode("utf-8"))
    # specials add nothing
    ids = tok.encode(TEXTS[2], prepend="<|bos|>", append="<|assistant_end|>")
    assert sum(tb[i] for i in ids) == len(TEXTS[2].encode("utf-8"))


def test_token_bytes_matches_nanochat_formula_on_whole_characters(tok):
    # nanochat's tok_train.py: len(decode([id]).encode()), 0 for special tokens; the same
    # wherever a token is whole UTF-8 characters (elsewhere nanochat counts U+FFFD's 3 bytes)
    tb = tok.token_bytes()
    specials = set(tok.special_tokens)
    for i in range(tok.n_vocab):
        s = tok.decode([i])
        if "\ufffd" in s:
            continue
        assert tb[i] == (0 if s in specials else len(s.encode("utf-8"))), i
