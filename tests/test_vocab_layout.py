"""The vocabulary layout a model needs: reserved special tokens and a padded size, named later
without moving an id, kept by extension, saving, both exports and the nanochat module."""

from __future__ import annotations

import json
import warnings

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge._errors import OptionError
from bpeforge.nanochat import RustBPETokenizer
from strategies import examples

TEXTS = ["the cat sat on the mat, and the dog ran after the cat"] * 20 + ["a b c d e f g h i j k l m n o p"] * 5


def reserved(k: int) -> str:
    return f"<|reserved_special_token_{k}|>"


def train(vocab_size, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bpeforge.Tokenizer.train_from_iterator(TEXTS, vocab_size, **options)


@settings(max_examples=examples(40), deadline=None)
@given(size=st.integers(270, 330), given_names=st.sampled_from([[], ["<|bos|>"], None]), n=st.integers(0, 5),
       m=st.sampled_from([None, 1, 7, 64, 128]))
def test_reserved_and_padding_ids_follow_the_ranks(size, given_names, n, m):
    tok = train(size, special_tokens=given_names, reserve_special_tokens=n, pad_vocab_to_multiple_of=m)
    names = list(bpeforge._base.NANOCHAT_SPECIAL_TOKENS) if given_names is None else given_names
    ranks = len(tok.mergeable_ranks)
    assert ranks <= size - len(names) - n  # vocab_size counts everything
    unpadded = ranks + len(names) + n
    padded = unpadded if m is None else -(-unpadded // m) * m
    assert tok.n_vocab == padded
    expected = names + [reserved(k) for k in range(n + padded - unpadded)]
    assert tok.special_tokens == {name: ranks + i for i, name in enumerate(expected)}


def test_a_reserved_slot_is_named_without_moving_any_id(tmp_path):
    tok = train(300, special_tokens=["<|bos|>"], reserve_special_tokens=3)
    named = tok.name_reserved_token("<|tool_start|>")
    assert named.special_tokens["<|tool_start|>"] == tok.special_tokens[reserved(0)]
    assert reserved(0) not in named.special_tokens and named.n_vocab == tok.n_vocab
    assert named.mergeable_ranks == tok.mergeable_ranks
    again = named.name_reserved_token("<|tool_end|>", slot=reserved(2))
    assert again.special_tokens["<|tool_end|>"] == tok.special_tokens[reserved(2)]
    assert again.encode("<|tool_start|>hi", prepend="<|bos|>")[:1] == [tok.special_tokens["<|bos|>"]]
    with pytest.raises(ValueError, match="is a special token already"):
        named.name_reserved_token("<|bos|>")
    with pytest.raises(ValueError, match="not a free reserved special token"):
        named.name_reserved_token("<|x|>", slot=reserved(0))
    with pytest.raises(ValueError, match="no reserved special token is free"):
        train(300, special_tokens=[]).name_reserved_token("<|x|>")


def test_extending_keeps_reserved_slots_reserved():
    tok = train(290, special_tokens=["<|bos|>"], reserve_special_tokens=2, pad_vocab_to_multiple_of=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        extended = tok.extend(["more text, other words entirely"] * 10, tok.n_vocab + 12)
    assert {k: v for k, v in extended.special_tokens.items()} == tok.special_tokens
    assert min(i for t, i in extended.mergeable_ranks.items() if t not in tok.mergeable_ranks) == tok.n_vocab
    assert extended.name_reserved_token("<|tool|>").special_tokens["<|tool|>"] == tok.special_tokens[reserved(0)]


def test_the_layout_is_kept_by_saving_tiktoken_huggingface_and_nanochat(tmp_path):
    tok = train(300, special_tokens=["<|bos|>"], reserve_special_tokens=2, pad_vocab_to_multiple_of=64)
    assert tok.n_vocab % 64 == 0
    tok.save(tmp_path / "tok")
    assert bpeforge.Tokenizer.load(tmp_path / "tok").special_tokens == tok.special_tokens
    enc = tiktoken.Encoding("t", pat_str=tok.pattern, mergeable_ranks=tok.mergeable_ranks, special_tokens=tok.special_tokens)
    assert enc.n_vocab == tok.n_vocab and enc.encode(reserved(1), allowed_special="all") == [tok.special_tokens[reserved(1)]]
    tokenizers = pytest.importorskip("tokenizers")
    tok.save_huggingface(tmp_path / "hf")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "hf" / "tokenizer.json"))
    assert hf.get_vocab_size() == tok.n_vocab
    assert hf.encode(reserved(1)).ids == [tok.special_tokens[reserved(1)]]
    config = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert reserved(1) in json.dumps(config)
    nano = RustBPETokenizer.train_from_iterator(TEXTS, 300, reserve_special_tokens=2, pad_vocab_to_multiple_of=64)
    assert nano.get_vocab_size() % 64 == 0 and reserved(0) in nano.get_special_tokens()


def test_bad_layouts_are_refused_naming_the_option():
    with pytest.raises(OptionError, match="at least 256 \\+ 4 special tokens = 260") as e:
        bpeforge._training.Recipe(259, special_tokens=["<|a|>"], reserve_special_tokens=3)
    assert e.value.option == "vocab_size"
    with pytest.raises(OptionError, match="given, and reserved too") as e:
        bpeforge._training.Recipe(300, special_tokens=[reserved(0)], reserve_special_tokens=1)
    with pytest.raises(OptionError) as e:
        bpeforge._training.Recipe(300, pad_vocab_to_multiple_of=0)
    assert e.value.option == "pad_vocab_to_multiple_of"
    with pytest.raises(OptionError) as e:
        bpeforge._training.Recipe(300, reserve_special_tokens=-1)
    assert e.value.option == "reserve_special_tokens"
    with pytest.raises(OptionError, match="cannot pad") as e:
        bpeforge._training.Recipe(300, special_tokens=[], pad_vocab_to_multiple_of=8, base=train(280, special_tokens=[]))
