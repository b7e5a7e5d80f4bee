"""Superword tokens (SuperBPE): the two stages against their definition, a slow reference, and
every way of asking for them; the superword pattern's cuts; encoding in tiktoken."""

from __future__ import annotations

import warnings

import pytest
import regex
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
import bpeforge._superword_sweep
import reference
from bpeforge._errors import OptionError
from strategies import corpora, examples

SUPERWORD = bpeforge._core.SUPERWORD_PATTERN

# Texts with many multi-word stretches: a few words, spaces, colons, punctuation, digits, newlines.
phrases = st.lists(
    st.sampled_from(["the", " of", " the", " cat", ",", ":", " ", "  ", "\n", "42", "!!", " by", " way", "é"]),
    min_size=1,
    max_size=30,
).map("".join)
texts = st.lists(phrases, min_size=1, max_size=12)


def quietly(train, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return train(*args, **kwargs)


def ranks_in_order(tokenizer) -> list[bytes]:
    return [t for t, _ in sorted(tokenizer.mergeable_ranks.items(), key=lambda r: r[1])]


def test_the_reference_writes_the_same_pattern():
    assert reference.SUPERWORD_PATTERN == SUPERWORD == bpeforge._patterns.resolve_pattern("superword")


@settings(max_examples=examples(300), deadline=None)
@given(text=phrases)
def test_the_pattern_splits_as_the_regex_package_and_keeps_every_character(text):
    spans = bpeforge.split(text, "superword")
    assert spans == regex.findall(SUPERWORD, text)
    assert "".join(spans) == text
    for span in spans:
        assert ": " not in span  # the colon rule
        assert regex.search(r"[\r\n][^\r\n/]", span) is None  # a newline ends its span


@settings(max_examples=examples(40), deadline=None)
@given(data=texts, transition=st.integers(256, 290), more=st.integers(0, 40), words=st.sampled_from([None, 1, 2, 4]))
def test_two_stages_equal_the_reference(data, transition, more, words):
    want, merges = reference.superword(data, transition + more, transition, max_token_words=words or 4)
    tok = quietly(
        bpeforge.Tokenizer.train_from_iterator, data, transition + more, special_tokens=[], superword_transition=transition,
        max_token_words=words,
    )
    assert sorted(tok.mergeable_ranks.items(), key=lambda r: r[1]) == want
    assert tok.pattern == SUPERWORD


@settings(max_examples=examples(25), deadline=None)
@given(data=corpora(), transition=st.integers(0, 30), more=st.integers(0, 30), specials=st.booleans())
def test_superword_training_is_training_then_extending_with_the_superword_pattern(data, transition, more, specials):
    data = data + ["by the way"]
    special_tokens = ["<|bos|>", "<|eos|>"] if specials else []
    t = 256 + len(special_tokens) + transition
    two_stages = quietly(
        bpeforge.Tokenizer.train_from_iterator, data, t + more, special_tokens=special_tokens, superword_transition=t
    )
    first = quietly(bpeforge.Tokenizer.train_from_iterator, data, t, special_tokens=special_tokens)
    extended = quietly(first.extend, data, t + more, pattern="superword", max_token_words=4)
    assert ranks_in_order(two_stages) == ranks_in_order(extended)
    # Special tokens follow every rank (the extension keeps them where the first stage put them).
    assert sorted(two_stages.special_tokens.values()) == list(range(len(two_stages.mergeable_ranks), two_stages.n_vocab))
    # From span counts of both patterns: the same.
    counts = bpeforge.count(data)
    superword_counts = bpeforge.count(data, pattern="superword")
    from_counts = quietly(
        bpeforge.Tokenizer.train_from_counts, counts, t + more, special_tokens=special_tokens, superword_transition=t,
        superword_counts=superword_counts,
    )
    assert from_counts.mergeable_ranks == two_stages.mergeable_ranks


def test_superword_tokens_appear_and_encode_identically_in_tiktoken():
    prose = ["by the way, the cat sat on the mat. by the way, it was in the end of the day."] * 30
    tok = quietly(bpeforge.Tokenizer.train_from_iterator, prose, 400, special_tokens=["<|bos|>"], superword_transition=300)
    multi = [t for t in tok.mergeable_ranks if reference.words(t) > 1]
    assert multi, "superword tokens were learned"
    assert max(reference.words(t) for t in tok.mergeable_ranks) <= 4
    assert not any(b": " in t for t in tok.mergeable_ranks)
    plain = quietly(bpeforge.Tokenizer.train_from_iterator, prose, 400, special_tokens=["<|bos|>"])
    text = prose[0]
    assert len(tok.encode(text)) < len(plain.encode(text))
    enc = tiktoken.Encoding("sw", pat_str=tok.pattern, mergeable_ranks=tok.mergeable_ranks, special_tokens=tok.special_tokens)
    assert enc.encode_ordinary(text) == tok.encode(text)
    assert tok.decode(tok.encode(text)) == text


def test_bad_superword_options_are_refused_naming_them():
    with pytest.raises(OptionError, match="superword_transition must be at least 256 \\+ 0 special tokens = 256 and at most vocab_size \\(300\\)") as e:
        bpeforge._training.Recipe(300, special_tokens=[], superword_transition=301)
    assert e.value.option == "superword_transition"
    with pytest.raises(OptionError, match="superword_pattern goes with superword_transition"):
        bpeforge._training.Recipe(300, superword_pattern="superword")
    with pytest.raises(OptionError) as e:
        bpeforge._training.Recipe(300, superword_transition=280, superword_pattern="x*")
    assert e.value.option == "superword_pattern"
    counts = bpeforge.count(["by the way"] * 3)
    with pytest.raises(OptionError, match="superword_counts"):
        bpeforge.Tokenizer.train_from_counts(counts, 300, special_tokens=[], superword_transition=280)
    with pytest.raises(OptionError, match="split by 'gpt4', the training asks for 'superword'") as e:
        bpeforge.Tokenizer.train_from_counts(counts, 300, special_tokens=[], superword_transition=280, superword_counts=counts)
    assert e.value.option == "superword_pattern"
    base = quietly(bpeforge.Tokenizer.train_from_iterator, ["by the way"] * 3, 260, special_tokens=[])
    with pytest.raises(OptionError, match="extend it with pattern='superword'"):
        bpeforge._training.Recipe(300, special_tokens=[], superword_transition=270, base=base)
    assert bpeforge._training.Recipe(300, superword_transition=280).max_token_words == 4
    assert bpeforge._training.Recipe(300, superword_transition=280, max_token_words=2).max_token_words == 2


@settings(max_examples=examples(300), deadline=None)
@given(text=st.one_of(phrases, st.text(max_size=60)))
def test_huggingface_splits_by_the_superword_pattern_as_bpeforge_does(text):
    tokenizers = pytest.importorskip("tokenizers")
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(bpeforge.huggingface.oniguruma_regex(SUPERWORD)), behavior="isolated")
    assert [piece for piece, _ in split.pre_tokenize_str(text)] == bpeforge.split(text, "superword")


def test_a_superword_tokenizer_exports_to_huggingface_and_back(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    prose = ["by the way, the cat sat on the mat: yes. By the way, it was 12 of the 40 days.\n"] * 30
    tok = quietly(bpeforge.Tokenizer.train_from_iterator, prose, 420, special_tokens=["<|bos|>"], superword_transition=300)
    tok.save_huggingface(tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in prose[:1] + ["the way of the cat: by the mat", "new words, by the way"]:
        assert hf.encode(text).ids == tok.encode(text)
    back = bpeforge.Tokenizer.from_huggingface(tmp_path / "tokenizer.json")
    assert back.pattern == SUPERWORD and back.mergeable_ranks == tok.mergeable_ranks


def test_a_transition_sweep_trains_each_tokenizer_as_training_does(tmp_path):
    prose = ["by the way, the cat sat on the mat. In the end, the dog ran off the mat and out of the door."] * 40
    counts, superword = bpeforge.count(prose), bpeforge.count(prose, pattern="superword")
    sweep = quietly(
        bpeforge._superword_sweep.sweep_superword_transitions, counts, superword, 420, [300, 380], {"t": prose[0]}, special_tokens=[]
    )
    plain = quietly(bpeforge.Tokenizer.train_from_iterator, prose, 420, special_tokens=[])
    assert sweep.tokenizers[None].mergeable_ranks == plain.mergeable_ranks
    for t in (300, 380):
        direct = quietly(bpeforge.Tokenizer.train_from_iterator, prose, 420, special_tokens=[], superword_transition=t)
        assert sweep.tokenizers[t].mergeable_ranks == direct.mergeable_ranks
    rows = {r.transition: r for r in sweep.rows}
    assert rows[None].tokens == len(plain.encode(prose[0])) and rows[None].tokens_saved is None
    assert rows[300].tokens == len(sweep.tokenizers[300].encode(prose[0]))
    assert rows[300].tokens_saved == pytest.approx((rows[None].tokens - rows[300].tokens) / rows[None].tokens * 100)
    with pytest.raises(ValueError, match="increasing"):
        bpeforge._superword_sweep.check_transitions([380, 300], 420, 0)


def test_the_command_line_sweeps_transitions(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "prose.txt"
    path.write_text("by the way, the cat sat on the mat. In the end, the dog ran off the mat and out of the door.\n" * 200)
    out = tmp_path / "sweep"
    done = subprocess.run(
        [sys.executable, "-m", "bpeforge", "sweep", str(path), "--vocab-sizes", "400", "--superword-transitions", "300,350",
         "--special-tokens", "none", "--holdout", "0", "--eval-text", str(path), "-o", str(out)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "plain BPE" in done.stdout and "Vs plain" in done.stdout
    docs = path.read_text().splitlines()
    direct = quietly(bpeforge.Tokenizer.train_from_iterator, docs, 400, special_tokens=[], superword_transition=350)
    assert bpeforge.Tokenizer.load(out / "350").mergeable_ranks == direct.mergeable_ranks
    assert (out / "plain.tiktoken").is_file() and (out / "sweep.csv").is_file()
    again = subprocess.run([sys.executable, "-m", "bpeforge", "sweep", str(path), "--vocab-sizes", "400,500",
                            "--superword-transitions", "300", "-o", str(tmp_path / "x")], capture_output=True, text=True)
    assert again.returncode == 2 and "one vocabulary size" in again.stderr
