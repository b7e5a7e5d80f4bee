"""Extending a tokenizer (continued BPE): against the naive reference, the property that
extending with the training corpus again is training longer, every base id kept, texts that
need no new token encoded as before by tiktoken, and the policy on bases BPE could not make."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
import reference
from bpeforge._errors import OptionError
from bpeforge._extending import extension_recipe
from bpeforge._training import Recipe, Training
from ranks import hand_ranks
from strategies import corpora, examples, repeated_words_corpus, texts

SPECIALS = ["<|bos|>", "<|eot|>"]


def trained(corpus, vocab_size, special_tokens=()):
    """A tokenizer trained by bpeforge (quietly: small corpora run out of pairs)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bpeforge.Tokenizer.train_from_iterator(corpus, vocab_size, special_tokens=list(special_tokens))


def extend(base, vocab_size, learn_from, **options):
    """The extension of ``base`` to ``vocab_size`` learned from texts or span counts (a mapping
    or SpanCounts), through the one training path."""
    training = Training(extension_recipe(base, vocab_size, **options), base=base)
    if isinstance(learn_from, (dict, bpeforge.SpanCounts)):
        return training.run(counts=learn_from)
    return training.run(learn_from)


def ranks_in_order(ranks):
    return sorted(ranks.items(), key=lambda r: r[1])


def tiktoken_of(extended):
    """The extended ranks as a tiktoken encoding, special tokens with their ids."""
    return tiktoken.Encoding(
        "extended", pat_str=extended.pattern, mergeable_ranks=extended.ranks, special_tokens=extended.special_tokens_to_build()
    )


@settings(max_examples=examples(60), deadline=None)
@given(a=corpora(), b=corpora(), short=st.integers(256, 300), new=st.integers(0, 60), specials=st.booleans())
def test_extending_equals_the_reference(a, b, short, new, specials):
    a = a + ["x"]  # training refuses no text at all
    base = trained(a, short + 2 * specials, SPECIALS if specials else ())
    extended = extend(base, base.n_vocab + new, b)
    want, merges = reference.extend(b, base.mergeable_ranks, base.n_vocab, new, base.pattern)
    assert ranks_in_order(extended.ranks) == want
    assert extended.merges() == [tuple(m) for m in merges]


@settings(max_examples=examples(60), deadline=None)
@given(a=corpora(), b=corpora(), short=st.integers(256, 300), new=st.integers(0, 60), longest=st.integers(2, 6), counts=st.booleans())
def test_extending_with_a_longest_token_equals_the_reference(a, b, short, new, longest, counts):
    # The base may hold tokens longer than the limit: they stay, and pairs with them are never merged.
    base = trained(a + ["x"], short)
    extended = extend(base, base.n_vocab + new, bpeforge.count(b, pattern=base.pattern) if counts else b, max_token_length=longest)
    want, merges = reference.extend(b, base.mergeable_ranks, base.n_vocab, new, base.pattern, max_token_length=longest)
    assert ranks_in_order(extended.ranks) == want
    assert extended.merges() == [tuple(m) for m in merges]
    assert all(len(t) <= longest for t, i in extended.ranks.items() if i >= base.n_vocab)


def test_extend_passes_the_longest_token_on():
    base = trained(["the cat sat on the mat"] * 5, 262)
    texts = ["catastrophe catamaran catalogue"] * 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the small text runs out of pairs
        limited = base.extend(texts, 300, max_token_length=3)
        unlimited = base.extend(texts, 300)
    new = lambda tok: [t for t, i in tok.mergeable_ranks.items() if i >= base.n_vocab]  # noqa: E731
    assert new(limited) and all(len(t) <= 3 for t in new(limited))
    assert any(len(t) > 3 for t in new(unlimited))


@settings(max_examples=examples(60), deadline=None)
@given(a=st.one_of(corpora(), repeated_words_corpus("abc")), short=st.integers(256, 290), more=st.integers(0, 40), specials=st.booleans())
def test_extending_with_the_same_corpus_is_training_longer(a, short, more, specials):
    a = a + ["x"]
    special_tokens = SPECIALS if specials else ()
    base = trained(a, short + len(special_tokens), special_tokens)
    extended = extend(base, base.n_vocab + more, a)
    longer = trained(a, len(base.mergeable_ranks) + more + len(special_tokens), special_tokens)
    # The same tokens in the same order; with special tokens the new ids start after them.
    assert [t for t, _ in ranks_in_order(extended.ranks)] == [t for t, _ in ranks_in_order(longer.mergeable_ranks)]
    n = len(base.mergeable_ranks)
    assert [i for _, i in ranks_in_order(extended.ranks)][n:] == list(range(base.n_vocab, base.n_vocab + len(extended.ranks) - n))


@settings(max_examples=examples(60), deadline=None)
@given(a=corpora(), b=corpora(), probes=st.lists(texts(), max_size=8), specials=st.booleans())
def test_base_ids_stay_and_texts_needing_no_new_token_encode_as_before(a, b, probes, specials):
    a = a + ["x"]
    base = trained(a, 280 + 2 * specials, SPECIALS if specials else ())
    extended = extend(base, base.n_vocab + 30, b)
    for token, rank in base.mergeable_ranks.items():
        assert extended.ranks[token] == rank
    assert extended.special_tokens_to_build() == base.special_tokens
    enc = tiktoken_of(extended)  # loads in tiktoken, with its gaps and special tokens
    for text in probes + a + b:
        ids = enc.encode_ordinary(text)
        assert enc.decode(ids) == text
        if all(i < base.n_vocab for i in ids):
            assert ids == base.encode_ordinary(text)
    # Each training text encodes with tiktoken as the merge loop left its spans: no more
    # tokens than the base's, and the texts that hold a new token's bytes use some new token.
    for text in b:
        assert len(enc.encode_ordinary(text)) <= len(base.encode_ordinary(text))


def test_extend_keeps_ids_and_encodes_old_texts_as_before():
    base = trained(["the cat sat on the mat"] * 3, 270)
    tok = base.extend(["int main(void) { return 0; }"] * 4, vocab_size=280)
    assert tok.n_vocab == 280
    assert all(tok.mergeable_ranks[t] == r for t, r in base.mergeable_ranks.items())
    assert tok.encode("the cat sat on the mat") == base.encode("the cat sat on the mat")
    assert len(tok.encode("int main(void)")) < len(base.encode("int main(void)"))
    assert tok.decode(tok.encode("return 0;")) == "return 0;"


def test_extend_stops_early_with_a_warning():
    base = trained(["ab ab"], 257)
    with pytest.warns(UserWarning, match="extending stopped at"):
        tok = base.extend(["cd"], vocab_size=300)
    assert tok.n_vocab == 258


def test_extend_saves_and_loads(tmp_path):
    base = trained(["the cat sat"] * 3, 262)
    tok = base.extend(["a cat, a hat"] * 3, vocab_size=270)
    tok.save(tmp_path / "tok")
    again = bpeforge.Tokenizer.load(tmp_path / "tok")
    assert again.mergeable_ranks == tok.mergeable_ranks


def test_extend_a_base_with_special_tokens(tmp_path):
    # New ranks come after the special tokens: the ranks then have a gap where they are.
    base = trained(["the cat sat"] * 3, 262, SPECIALS)
    tok = base.extend(["a cat, a hat"] * 3, vocab_size=270)
    assert tok.special_tokens == base.special_tokens
    tok.save(tmp_path / "tok")
    assert bpeforge.Tokenizer.load(tmp_path / "tok").mergeable_ranks == tok.mergeable_ranks


def unreachable_base():
    """"abcd" made of "ab" + "cd", with "bc" ranked first: merging the bytes of "abcd" gives
    a, bc, d, never "abcd" (BPE training could not make these ranks)."""
    return bpeforge.Tokenizer(hand_ranks(b"bc", b"ab", b"cd", b"abcd"), special_tokens=[])


def test_a_base_bpe_could_not_make_is_refused():
    base = unreachable_base()
    with pytest.raises(ValueError, match=r'token 259 "abcd" is not what merging its bytes makes \(97 "a", 256 "bc", 100 "d"\)'):
        base.extend(["abcd abce abc"] * 3, vocab_size=265)


def test_why_such_a_base_is_refused():
    # Extended naively, "abc" (a + bc) would be learned from "abce"; tiktoken then merges
    # "abc" + "d" into the old token "abcd", ahead of every new rank, so training's spans
    # ([abc, d] for "abcde") are not what tiktoken encodes, and "abcde", which needs no new
    # token, encodes otherwise than before.
    base = unreachable_base()
    ranks, _ = reference.extend(["abce abcde"] * 3, base.mergeable_ranks, 260, 1, base.pattern)
    assert ranks[-1] == (b"abc", 260)
    enc = tiktoken.Encoding("naive", pat_str=base.pattern, mergeable_ranks=dict(ranks), special_tokens={})
    before = base.encode_ordinary("abcde")
    assert before == [97, 256, 100, 101]
    assert enc.encode_ordinary("abcde") == [259, 101]  # no new token, yet not as before


def test_bad_options_are_refused():
    base = trained(["the cat sat"] * 3, 262, SPECIALS)
    with pytest.raises(OptionError, match="at least the base's 262 ids"):
        base.extend(["the cat"], 261)
    with pytest.raises(TypeError, match="got a str"):
        extend(base, 270, "the cat")
    with pytest.raises(TypeError, match="a bpeforge tokenizer"):
        extension_recipe(tiktoken.Encoding("x", pat_str=r"\w+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}), 300)
    with pytest.raises(TypeError, match="a bpeforge tokenizer"):
        Training(Recipe(300), base="out/tok")
    with pytest.raises(bpeforge._errors.NoTextError):
        extend(base, 270, []).build(bpeforge.Tokenizer)
    with pytest.raises(OptionError, match="max_token_length must be at least 2 bytes"):
        extension_recipe(base, 270, max_token_length=1)
    with pytest.raises(OptionError, match="an extension keeps the base's"):
        Training(Recipe(270, special_tokens=["<|bos|>"]), base=base).run(["the cat"])
    with pytest.raises(OptionError, match="at least the base's 262 ids"):
        Recipe(261, special_tokens=SPECIALS, base=base)


@settings(max_examples=examples(30), deadline=None)
@given(a=corpora(), b=corpora(), new=st.integers(0, 40))
def test_extending_from_span_counts_is_extending_from_the_texts(a, b, new):
    base = trained(a + ["x"], 280)
    counts = reference.count_spans(b, base.pattern)
    from_texts = extend(base, base.n_vocab + new, b)
    from_counts = extend(base, base.n_vocab + new, dict(counts))
    assert from_counts.ranks == from_texts.ranks and from_counts.merges() == from_texts.merges()
    assert from_counts.no_text is None
    span_counts = bpeforge.count(b, pattern=base.pattern)
    from_span_counts = extend(base, base.n_vocab + new, span_counts)
    assert from_span_counts.ranks == from_texts.ranks and from_span_counts.merges() == from_texts.merges()


def test_span_counts_of_another_pattern_are_refused():
    base = trained(["a cat sat on a mat"] * 5, 270)
    with pytest.raises(OptionError, match="split by 'gpt2', the training asks for 'gpt4'"):
        base.extend(bpeforge.count(["more cats"], pattern="gpt2"), vocab_size=280)


def test_the_core_refuses_new_ids_among_the_base_ids():
    # The core reads a base's attributes: one that says less than the truth is refused, not trusted.
    trainer = bpeforge._core.Trainer()
    ranks = {bytes([i]): i for i in range(256)}
    recipe = Recipe(259, special_tokens=[])
    base = SimpleNamespace(pattern=recipe.pattern, mergeable_ranks=ranks, special_tokens={}, n_vocab=255)
    with pytest.raises(ValueError, match="above the base's ids"):
        trainer.learn(recipe, texts=["ab"], base=base)
    base.n_vocab, base.mergeable_ranks = 256, {t: i for t, i in ranks.items() if i != 97}
    with pytest.raises(ValueError, match="single byte 97 has no rank"):
        trainer.learn(recipe, texts=["ab"], base=base)
