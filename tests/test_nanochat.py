"""``bpeforge.nanochat`` mirrors nanochat's ``nanochat/tokenizer.py``: its names, its defaults
(split pattern, special tokens), every method of ``RustBPETokenizer``, and the same tokenizer as
nanochat's recipe (train with rustbpe, wrap the ranks in a tiktoken encoding) on the same text.
``from_pretrained`` is tested offline through a tiktoken plugin that registers a local encoding."""

from __future__ import annotations

import inspect
import pickle
import sys
import textwrap
from pathlib import Path

import pytest
import rustbpe
import tiktoken
import tiktoken.load
import tiktoken.registry

import bpeforge
from bpeforge._errors import EncodingUnavailable, EvalError, UnknownTokenIdError
from bpeforge.nanochat import SPECIAL_TOKENS, SPLIT_PATTERN, RustBPETokenizer

# nanochat's values, written out here rather than taken from the code under test.
NANOCHAT_SPLIT_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
NANOCHAT_SPECIAL_TOKENS = [
    "<|bos|>", "<|user_start|>", "<|user_end|>", "<|assistant_start|>", "<|assistant_end|>",
    "<|python_start|>", "<|python_end|>", "<|output_start|>", "<|output_end|>",
]
# The methods nanochat's RustBPETokenizer has (and its attributes enc, bos_token_id).
NANOCHAT_METHODS = [
    "train_from_iterator", "from_directory", "from_pretrained", "get_vocab_size", "get_special_tokens",
    "id_to_token", "encode_special", "get_bos_token_id", "encode", "__call__", "decode",
    "decode_single_token_bytes", "save", "render_conversation", "visualize_tokenization", "render_for_completion",
]

CORPUS = [
    "The quick brown fox jumps over the lazy dog. 1234567 and 89.",
    "hello world, hello tokenizer, hello hello hello",
    "naïve café 你好 🙂 def f(x):\n    return x + 1\n",
] * 10
VOCAB_SIZE = 256 + len(NANOCHAT_SPECIAL_TOKENS) + 60


def nanochat_recipe(texts, vocab_size):
    """nanochat's tokenizer as nanochat makes it: rustbpe with its pattern, then tiktoken."""
    trainer = rustbpe.Tokenizer()
    trainer.train_from_iterator(iter(texts), vocab_size - len(NANOCHAT_SPECIAL_TOKENS), pattern=NANOCHAT_SPLIT_PATTERN)
    ranks = {bytes(k): v for k, v in trainer.get_mergeable_ranks()}
    specials = {name: len(ranks) + i for i, name in enumerate(NANOCHAT_SPECIAL_TOKENS)}
    return tiktoken.Encoding(name="rustbpe", pat_str=trainer.get_pattern(), mergeable_ranks=ranks, special_tokens=specials)


@pytest.fixture(scope="module")
def tok():
    return RustBPETokenizer.train_from_iterator(iter(CORPUS), VOCAB_SIZE)


def test_names_and_defaults():
    assert SPLIT_PATTERN == NANOCHAT_SPLIT_PATTERN
    assert SPECIAL_TOKENS == NANOCHAT_SPECIAL_TOKENS and isinstance(SPECIAL_TOKENS, list)
    for name in NANOCHAT_METHODS:
        assert callable(getattr(RustBPETokenizer, name)), name
    assert list(inspect.signature(RustBPETokenizer.train_from_iterator).parameters)[:2] == ["text_iterator", "vocab_size"]
    assert list(inspect.signature(RustBPETokenizer).parameters) == ["enc", "bos_token"]
    # The rest of bpeforge keeps GPT-4's pattern as its default.
    assert bpeforge.Tokenizer.train_from_iterator(CORPUS, VOCAB_SIZE).pattern == bpeforge._core.DEFAULT_PATTERN


def test_same_tokenizer_as_nanochats_recipe(tok):
    enc = nanochat_recipe(CORPUS, VOCAB_SIZE)
    assert isinstance(tok, RustBPETokenizer) and isinstance(tok, bpeforge.Tokenizer)
    assert tok.enc._mergeable_ranks == enc._mergeable_ranks
    assert tok.enc._pat_str == enc._pat_str == SPLIT_PATTERN
    assert tok.enc._special_tokens == enc._special_tokens
    assert tok.get_vocab_size() == enc.n_vocab == VOCAB_SIZE
    assert tok.get_special_tokens() == enc.special_tokens_set
    texts = ["hello world 12345", "naïve café 你好 🙂", "<|bos|> stays text"]
    assert tok.encode(texts) == enc.encode_ordinary_batch(texts)
    assert tok.encode(texts[0], prepend="<|bos|>", append="<|user_end|>") == (
        [enc.encode_single_token("<|bos|>")] + enc.encode_ordinary(texts[0]) + [enc.encode_single_token("<|user_end|>")]
    )
    assert tok.bos_token_id == tok.get_bos_token_id() == enc.encode_single_token("<|bos|>")
    for token_id in (0, 104, 256, tok.get_vocab_size() - 1):
        assert tok.decode_single_token_bytes(token_id) == enc.decode_single_token_bytes(token_id)
        assert tok.id_to_token(token_id) == enc.decode([token_id])
    assert tok(texts[1]) == enc.encode_ordinary(texts[1])


def test_decode_single_token_bytes_refuses_an_unknown_id(tok):
    with pytest.raises(UnknownTokenIdError):
        tok.decode_single_token_bytes(tok.get_vocab_size())
    assert bpeforge.Tokenizer.decode_single_token_bytes is RustBPETokenizer.decode_single_token_bytes


def test_chat_rendering(tok):
    conversation = {"messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "sure"}, {"type": "python", "text": "1+1"},
                                          {"type": "python_output", "text": "2"}]},
    ]}
    ids, mask = tok.render_conversation(conversation)
    assert ids[0] == tok.get_bos_token_id() and len(ids) == len(mask)
    assert ids[2:2 + len(tok.encode("be brief\n\nhi"))] == tok.encode("be brief\n\nhi")
    prompt = tok.render_for_completion(conversation)
    assert prompt[-1] == tok.encode_special("<|assistant_start|>")
    assert tok.visualize_tokenization(ids, mask).endswith("\033[92m<|assistant_end|>\033[0m")  # green: mask 1


def test_the_nanochat_constructor_wraps_an_encoding(tok):
    enc = nanochat_recipe(CORPUS, VOCAB_SIZE)
    wrapped = RustBPETokenizer(enc, "<|bos|>")
    assert wrapped.enc is enc and wrapped.get_bos_token_id() == enc.encode_single_token("<|bos|>")
    assert RustBPETokenizer(enc, "<|user_start|>").bos_token_id == enc.encode_single_token("<|user_start|>")
    with pytest.raises(ValueError, match="not a special token"):
        RustBPETokenizer(enc, "<|endoftext|>")
    with pytest.raises(TypeError, match="tiktoken.Encoding"):
        RustBPETokenizer(dict(enc._mergeable_ranks), "<|bos|>")  # type: ignore[arg-type]


def test_save_and_from_directory(tok, tmp_path):
    tok.save(tmp_path / "tok")
    again = RustBPETokenizer.from_directory(tmp_path / "tok")
    assert isinstance(again, RustBPETokenizer)
    assert again.enc._mergeable_ranks == tok.enc._mergeable_ranks and again.pattern == SPLIT_PATTERN
    assert again.get_bos_token_id() == tok.get_bos_token_id()
    # nanochat's own from_directory reads the pickled encoding.
    enc = pickle.loads((tmp_path / "tok" / "tokenizer.pkl").read_bytes())
    assert enc.encode_ordinary("hello 12345") == tok.encode("hello 12345")
    assert bpeforge.Tokenizer.load(tmp_path / "tok").mergeable_ranks == tok.mergeable_ranks


def test_training_options_and_errors():
    small = RustBPETokenizer.train_from_iterator(CORPUS, VOCAB_SIZE, special_tokens=["<|endoftext|>"], pattern=None)
    assert small.pattern == bpeforge._core.DEFAULT_PATTERN and small.get_bos_token_id() == VOCAB_SIZE - 1
    with pytest.raises(ValueError, match="vocab_size"):
        RustBPETokenizer.train_from_iterator(CORPUS, 256)  # no room for the nine special tokens
    with pytest.raises(TypeError):
        RustBPETokenizer.train_from_iterator("a str", VOCAB_SIZE)


@pytest.fixture
def local_encodings(tmp_path, monkeypatch):
    """A tiktoken plugin (a module of the ``tiktoken_ext`` namespace package on sys.path) that
    registers ``bpeforge_test_tiny``, read from a local .tiktoken file, and
    ``bpeforge_test_remote``, whose ranks must be downloaded from a URL that fails at once
    (a closed port on the loopback address, never the network)."""
    ranks = {bytes([i]): i for i in range(256)}
    ranks[b"he"] = 256
    ranks[b"ll"] = 257
    ranks_file = tmp_path / "tiny.tiktoken"
    bpeforge._io.write_atomic(ranks_file, bpeforge._io.ranks_to_tiktoken(ranks))
    plugin = tmp_path / "plugins" / "tiktoken_ext"
    plugin.mkdir(parents=True)
    (plugin / "bpeforge_test_plugin.py").write_text(textwrap.dedent(f"""
        from tiktoken.load import load_tiktoken_bpe

        def tiny():
            return {{"name": "bpeforge_test_tiny", "pat_str": r"\\S+|\\s+",
                     "mergeable_ranks": load_tiktoken_bpe({str(ranks_file)!r}),
                     "special_tokens": {{"<|endoftext|>": 258}}}}

        def remote():
            return {{"name": "bpeforge_test_remote", "pat_str": r"\\S+|\\s+",
                     "mergeable_ranks": load_tiktoken_bpe("http://127.0.0.1:9/remote.tiktoken"),
                     "special_tokens": {{"<|endoftext|>": 256}}}}

        ENCODING_CONSTRUCTORS = {{"bpeforge_test_tiny": tiny, "bpeforge_test_remote": remote}}
    """))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setattr(tiktoken.registry, "ENCODING_CONSTRUCTORS", None)
    tiktoken.registry._available_plugin_modules.cache_clear()
    yield
    tiktoken.registry._available_plugin_modules.cache_clear()
    for name in ("bpeforge_test_tiny", "bpeforge_test_remote"):
        tiktoken.registry.ENCODINGS.pop(name, None)
    sys.modules.pop("tiktoken_ext.bpeforge_test_plugin", None)


def test_from_pretrained_through_a_tiktoken_plugin(local_encodings):
    tok = RustBPETokenizer.from_pretrained("bpeforge_test_tiny")
    assert isinstance(tok, RustBPETokenizer)
    assert tok.get_bos_token_id() == 258  # <|endoftext|>, as nanochat takes it
    assert tok.encode("hello", prepend="<|endoftext|>") == [258, 256, 257, 111]
    assert tok.decode_single_token_bytes(257) == b"ll"
    assert tok.enc is tiktoken.get_encoding("bpeforge_test_tiny")


def test_from_pretrained_names_what_cannot_be_had_without_a_download(local_encodings):
    with pytest.raises(EncodingUnavailable, match="'bpeforge_test_remote'.*downloads the ranks") as e:
        RustBPETokenizer.from_pretrained("bpeforge_test_remote")
    assert isinstance(e.value, ConnectionError)
    with pytest.raises(EvalError, match="'no_such_encoding' is not a tiktoken encoding"):
        RustBPETokenizer.from_pretrained("no_such_encoding")
