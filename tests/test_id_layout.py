"""tiktoken's model of ids, accepted everywhere: ranks with gaps, the single bytes at any ranks,
special tokens below, among and above the ranks (``check_ranks``, the Tokenizer, save and load,
the ``.tiktoken`` file, the chat helpers, ``from_pretrained``); and what tiktoken would break
on, refused with a message that names it. Encodings are built by hand: nothing is downloaded."""

from __future__ import annotations

import pytest
import tiktoken
import tiktoken.load

import bpeforge
from bpeforge._io import RANKS_FILE
from bpeforge._patterns import PATTERNS

CORPUS = ["the lower lowest newer wider, hello world! 1234 don't 日本語 🎉"] * 20


@pytest.fixture(scope="module")
def trained():
    return bpeforge.Tokenizer.train_from_iterator(CORPUS, vocab_size=300, special_tokens=[])


def gpt2_byte_order() -> list[int]:
    """The bytes in GPT-2's order of ranks: the printable ones first, then the rest."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    return printable + [b for b in range(256) if b not in printable]


def relaid(tok: bpeforge.Tokenizer, byte_rank, merge_rank) -> dict[bytes, int]:
    """The ranks of ``tok`` with single byte ``b`` at ``byte_rank(b)`` and its merge ``i`` (0, 1,
    ... in rank order) at ``merge_rank(i)``: the same merge priorities, another layout."""
    ordered = sorted(tok.mergeable_ranks.items(), key=lambda x: x[1])
    ranks = {bytes([b]): byte_rank(b) for b in range(256)}
    ranks.update({token: merge_rank(i) for i, (token, _) in enumerate(ordered[256:])})
    return ranks


def layouts(tok):
    """(name, ranks, special tokens) of layouts tiktoken allows, none of them bpeforge's own."""
    order = gpt2_byte_order()
    n = len(tok.mergeable_ranks) - 256
    yield "gpt2 byte order", relaid(tok, order.index, lambda i: 256 + i), {"<|endoftext|>": 256 + n}
    yield "specials first", relaid(tok, lambda b: 9 + b, lambda i: 265 + i), dict(
        zip(bpeforge._base.NANOCHAT_SPECIAL_TOKENS, range(9))
    )
    yield "gaps and specials among the ranks", relaid(tok, lambda b: 3 * b, lambda i: 1000 + 2 * i), {
        "<|bos|>": 1,
        "<|user_start|>": 500,
        "<|user_end|>": 1001,
        "<|assistant_start|>": 5000,
        "<|assistant_end|>": 5001,
        "<|python_start|>": 5002,
        "<|python_end|>": 5003,
        "<|output_start|>": 5004,
        "<|output_end|>": 99999,
    }


TEXTS = ["", "hello world", "the lowest newer\n\n  wider 1234567 don't DON'T", "日本語 🎉 <|bos|> <|endoftext|>"]


@pytest.mark.parametrize("index", range(3))
def test_every_layout_encodes_as_tiktoken_saves_and_loads(trained, tmp_path, index):
    name, ranks, specials = list(layouts(trained))[index]
    bpeforge._core.check_ranks(ranks)
    tok = bpeforge.Tokenizer(ranks, PATTERNS["gpt4"], specials)
    enc = tiktoken.Encoding(name, pat_str=PATTERNS["gpt4"], mergeable_ranks=ranks, special_tokens=specials)
    for text in TEXTS:
        ids = tok.encode(text)
        assert ids == enc.encode_ordinary(text)
        # the same merges at other ids: the same tokens, id for id
        assert [trained.decode([i]) for i in trained.encode(text)] == [tok.decode([i]) for i in ids]
        assert tok.decode(ids) == text
    assert tok.n_vocab == max([*ranks.values(), *specials.values()]) + 1
    for special, i in specials.items():
        assert tok.encode_special(special) == i and tok.decode([i]) == special
    tok.save(tmp_path)
    back = bpeforge.Tokenizer.load(tmp_path)
    assert (back.mergeable_ranks, back.special_tokens, back.pattern) == (ranks, specials, tok.pattern)
    assert tiktoken.load.load_tiktoken_bpe(str(tmp_path / RANKS_FILE)) == ranks
    lengths = back.token_bytes()
    assert len(lengths) == tok.n_vocab and all(lengths[r] == len(t) for t, r in ranks.items())
    assert sum(lengths[i] for i in back.encode(TEXTS[2])) == len(TEXTS[2].encode())


def test_from_pretrained_saves_and_loads(trained, tmp_path, monkeypatch):
    """The regression of the issue: ``from_pretrained`` of an encoding laid out as OpenAI's are
    (GPT-2's byte order, ``<|endoftext|>`` after the ranks), saved, then loaded. The encoding is
    registered by hand under a name of its own, as a tiktoken plugin would."""
    ranks = relaid(trained, gpt2_byte_order().index, lambda i: 256 + i)
    specials = {"<|endoftext|>": len(ranks), "<|fim_prefix|>": len(ranks) + 5}
    tiktoken.list_encoding_names()  # fills tiktoken's registry, so that it can be added to
    constructor = lambda: dict(name="handmade", pat_str=PATTERNS["r50k_base"], mergeable_ranks=ranks, special_tokens=specials)  # noqa: E731
    monkeypatch.setitem(tiktoken.registry.ENCODING_CONSTRUCTORS, "handmade", constructor)
    tok = bpeforge.Tokenizer.from_pretrained("handmade")
    tok.save(tmp_path)
    back = bpeforge.Tokenizer.load(tmp_path)
    assert back.mergeable_ranks == ranks and back.special_tokens == specials
    assert back.bos_token_id == len(ranks)
    for text in TEXTS:
        assert back.encode(text) == tok.encode(text) == tiktoken.get_encoding("handmade").encode_ordinary(text)


def test_chat_helpers_take_specials_below_the_ranks(trained):
    _, ranks, specials = list(layouts(trained))[1]
    tok = bpeforge.Tokenizer(ranks, PATTERNS["gpt4"], specials)
    conversation = {"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "world"}]}
    ids, mask = tok.render_conversation(conversation)
    assert ids == [0, 1, *tok.encode("hello"), 2, 3, *tok.encode("world"), 4]
    assert mask == [0, 0, *[0] * len(tok.encode("hello")), 0, 0, *[1] * len(tok.encode("world")), 1]
    assert tok.render_for_completion(conversation) == [0, 1, *tok.encode("hello"), 2, 3]
    shown = tok.visualize_tokenization(ids, mask)
    assert "<|bos|>" in shown and "<|assistant_end|>" in shown


def test_a_list_of_special_names_is_numbered_after_the_largest_rank(trained):
    _, ranks, _ = list(layouts(trained))[2]
    tok = bpeforge.Tokenizer(ranks, None, ["<|a|>", "<|b|>"])
    assert tok.special_tokens == {"<|a|>": max(ranks.values()) + 1, "<|b|>": max(ranks.values()) + 2}


def test_check_ranks_takes_a_mapping_or_pairs():
    ranks = {bytes([b]): 255 - b for b in range(256)} | {b"ab": 700}
    assert bpeforge._core.check_ranks(ranks) is None
    assert bpeforge._core.check_ranks(list(ranks.items())) is None
    assert bpeforge._core.check_ranks(iter(ranks.items())) is None
    with pytest.raises(TypeError, match="dict of bytes to int rank, or a list"):
        bpeforge._core.check_ranks({"a": 0})
    with pytest.raises(TypeError, match="dict of bytes to int rank, or a list"):
        bpeforge._core.check_ranks([(b"a", 0, 1)])
    with pytest.raises(TypeError, match="dict of bytes to int rank, or a list"):
        bpeforge._core.check_ranks(5)


BYTES = {bytes([b]): b for b in range(256)}


@pytest.mark.parametrize(
    "ranks, message",
    [
        ({b: r for b, r in BYTES.items() if b != b"\xff"}, "the single byte 0xff is not a token"),
        (list(BYTES.items()) + [(b"a", 300)], "ranks 97 and 300 have the same bytes b'a'"),
        (list(BYTES.items()) + [(b"ab", 7)], "rank 7 is given twice"),
        ({**BYTES, b"ab": -1}, "rank -1 of b'ab' is out of range"),
        ({**BYTES, b"ab": 2**31}, "rank 2147483648 of .* is out of range"),
        ({**BYTES, b"": 300}, "the empty token has rank 300"),
        ({**BYTES, b"abc": 300}, r"rank 300 \(b'abc'\) is not the concatenation of two tokens of lower rank"),
        ({**BYTES, b"a": 400, b"ab": 300}, "rank 300 .* is not the concatenation"),
    ],
)
def test_what_tiktoken_would_break_on_is_refused_by_name(ranks, message):
    with pytest.raises(ValueError, match=message):
        bpeforge._core.check_ranks(ranks)
    if isinstance(ranks, dict) and not any(r < 0 or r >= 2**31 for r in ranks.values()):
        with pytest.raises(ValueError, match=message):
            bpeforge.Tokenizer(ranks)


@pytest.mark.parametrize(
    "specials, message",
    [
        ({"<|a|>": 97}, "special token '<|a|>' has id 97, which a rank uses"),
        ({"<|a|>": 300, "<|b|>": 300}, "two special tokens share an id"),
        ({"<|a|>": -1}, "special ids must be ints from 0"),
    ],
)
def test_special_ids_a_rank_uses_or_shared_are_refused(specials, message):
    with pytest.raises(ValueError, match=message):
        bpeforge.Tokenizer({**BYTES, b"ab": 500}, None, specials)


def test_the_trainer_keeps_its_canonical_layout(trained):
    ranks = trained.mergeable_ranks
    assert all(ranks[bytes([b])] == b for b in range(256))
    assert sorted(ranks.values()) == list(range(len(ranks)))
    tok = bpeforge.Tokenizer.train_from_iterator(CORPUS, vocab_size=290, special_tokens=["<|a|>", "<|b|>"])
    assert tok.special_tokens == {"<|a|>": 288, "<|b|>": 289}
