"""bpeforge._pretrained: tiktoken's encodings by name, as Tokenizer.from_pretrained loads them;
clear errors for an unknown name and for being offline."""

import pytest
import tiktoken

import bpeforge
from bpeforge._errors import EvalError
from bpeforge._pretrained import load_tiktoken_encoding


def test_from_pretrained_offline_error(monkeypatch):
    def offline(name):
        raise ConnectionError(f"cannot reach the network for {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    with pytest.raises(EvalError, match="could not load the encoding 'gpt2'.*offline"):
        bpeforge.Tokenizer.from_pretrained("gpt2")
    # being offline is also a ConnectionError (an OSError), as any failed download
    with pytest.raises(ConnectionError, match="could not load the encoding 'gpt2'.*offline"):
        bpeforge.Tokenizer.from_pretrained("gpt2")
    # an unknown name is not
    with pytest.raises(EvalError) as e:
        bpeforge.Tokenizer.from_pretrained("no-such-encoding")
    assert not isinstance(e.value, OSError)


def test_from_pretrained_uses_endoftext_as_bos(monkeypatch):
    enc = tiktoken.Encoding(
        "fake_gpt2", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)},
        special_tokens={"<|endoftext|>": 256},
    )
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: enc)
    tok = bpeforge.Tokenizer.from_pretrained("gpt2")
    assert tok.bos_token_id == 256


def test_names_aliases_and_model_names(monkeypatch):
    asked = []
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: asked.append(name) or name)
    assert [load_tiktoken_encoding(n) for n in ("gpt2", "gpt4", "gpt-4o")] == ["gpt2", "cl100k_base", "o200k_base"]
    assert asked == ["gpt2", "cl100k_base", "o200k_base"]
    with pytest.raises(EvalError, match="'gpt-17' is not a tiktoken encoding or model name"):
        load_tiktoken_encoding("gpt-17")
