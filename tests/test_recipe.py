"""One training recipe, honoured the same way by every path.

A training's options are one value, :class:`bpeforge._training.Recipe`, carried whole into the
compiled trainer's one entry point. These tests enumerate the recipe's fields and check every
way of training against plain ``Tokenizer.train_from_iterator`` with the same options: span
counts (``bpeforge.count``, saved and loaded, mixed alone with alpha 1), extending a smaller
tokenizer trained on the same texts, a sweep's tokenizer at that size, the low-level
``Trainer``, and the command line (``train --holdout 0``, ``count`` then ``train
--from-counts``, a single ``--source`` with ``--alpha 1``, ``sweep``, ``train --extend``).
A new option is covered by adding it to :data:`VARIED` (the first test fails until it is)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge._errors import OptionError
from bpeforge._training import Recipe
from strategies import corpora, examples

# How each field of a recipe is varied here: a strategy for the API, and the command line's flag.
VARIED = {
    "vocab_size": st.integers(262, 330),
    "pattern": st.sampled_from(["gpt4", "gpt2", "nanochat"]),
    "special_tokens": st.sampled_from([[], ["<|bos|>"], ["<|a|>", "<|b|>", "<|c|>"]]),
    "min_frequency": st.integers(1, 4),
    "max_token_length": st.one_of(st.none(), st.integers(2, 6)),
    "max_token_chars": st.one_of(st.none(), st.integers(2, 4)),
    "doc_cap": st.one_of(st.none(), st.integers(1, 30)),
    "max_token_words": st.one_of(st.none(), st.integers(1, 3)),
    # The superword stage: from this many ids below vocab_size on (None: none); see recipes().
    "superword_transition": st.one_of(st.none(), st.integers(0, 40)),
    "superword_pattern": st.sampled_from([None, "superword", r"[^\n]+|\n+"]),
    "reserve_special_tokens": st.integers(0, 3),
    "pad_vocab_to_multiple_of": st.sampled_from([None, 1, 8, 64]),
    "tie_break": st.sampled_from(["bpeforge", "huggingface"]),
    "initial_alphabet": st.sampled_from([None, bytes(range(256))]),
    "limit_alphabet": st.one_of(st.none(), st.integers(256, 300)),
    # Parity-aware training learns from one set of counts per language, which none of the paths
    # here takes: off here. tests/test_parity.py varies these fields over the paths that take
    # languages, and checks there that one language's parity training is this training for
    # every recipe drawn here.
    "parity": st.none(),
    "parity_window": st.none(),
    "parity_alpha": st.none(),
    "global_merges": st.none(),
}

PARITY_FIELDS = ("parity", "parity_window", "parity_alpha", "global_merges")

ALL_BYTES = bytes(range(256))


def tiktoken_recipe(options: dict) -> dict:
    """``options`` made a recipe whose training is a tiktoken tokenizer: HuggingFace's alphabet
    options go with its tie-break only, and its alphabet must then hold every byte (a byte left
    out is refused, see tests/test_hf_training.py; what it trains there is checked against
    HuggingFace's own trainer)."""
    if options["tie_break"] == "bpeforge":
        return dict(options, initial_alphabet=None, limit_alphabet=None)
    return dict(options, initial_alphabet=ALL_BYTES)


@st.composite
def recipes(draw) -> dict:
    """A recipe's options, every field drawn, made coherent: a tiktoken tokenizer
    (:func:`tiktoken_recipe`); a superword transition between the bytes and specials and
    vocab_size, and a superword pattern only with one; HuggingFace's layout without a
    superword stage or padding (its special tokens come first)."""
    options = tiktoken_recipe(draw(st.fixed_dictionaries(VARIED)))
    for field in PARITY_FIELDS:  # off here, and not an argument of the single-source paths
        del options[field]
    if options["tie_break"] == "huggingface":
        options.update(superword_transition=None, pad_vocab_to_multiple_of=None)
    least = 256 + len(options["special_tokens"]) + options["reserve_special_tokens"]
    if options["superword_transition"] is None:
        options["superword_pattern"] = None
    else:
        options["superword_transition"] = max(least, options["vocab_size"] - options["superword_transition"])
    return options


def quietly(train, *args, **kwargs):
    """``train(*args, **kwargs)`` without the early-stop warning (small corpora run out of pairs)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return train(*args, **kwargs)


def ranks_in_order(tokenizer) -> list[bytes]:
    """The tokens of a tokenizer's ranks in the order of their ids (special tokens left out)."""
    return [t for t, _ in sorted(tokenizer.mergeable_ranks.items(), key=lambda r: r[1])]


def same_training(a, b) -> None:
    """Asserts two tokenizers are the same training: ranks, pattern, special tokens and ids."""
    assert a.mergeable_ranks == b.mergeable_ranks
    assert a.pattern == b.pattern
    assert a.special_tokens == b.special_tokens


def counting_options(options) -> dict:
    """The counting options ``bpeforge.count`` records (and crops by) for a recipe's options."""
    return {"doc_cap": options["doc_cap"]} if options.get("doc_cap") is not None else {}


def superword_counts(texts, options):
    """The texts' span counts by the superword stage's pattern, if the recipe has that stage."""
    if options.get("superword_transition") is None:
        return None
    return bpeforge.count(texts, pattern=options["superword_pattern"] or "superword", options=counting_options(options))


def test_every_field_of_the_recipe_is_varied_here():
    assert set(Recipe.fields()) == set(VARIED)
    recipe = Recipe(300, special_tokens=["<|x|>"], max_token_length=4, doc_cap=9)
    assert Recipe(**recipe.as_dict()) == recipe
    assert recipe.replace(doc_cap=None).doc_cap is None and recipe.doc_cap == 9
    hf = Recipe(300, tie_break="huggingface", initial_alphabet=b"ba", limit_alphabet=9)
    assert Recipe(**hf.as_dict()) == hf and hf.initial_alphabet == b"ab" and hf.replace(limit_alphabet=None) != hf


@pytest.mark.parametrize(
    "options, option",
    [
        ({"tie_break": "hf"}, "tie_break"),
        ({"initial_alphabet": b"a"}, "initial_alphabet"),  # bpeforge's alphabet is all bytes
        ({"limit_alphabet": 100}, "limit_alphabet"),
        ({"tie_break": "huggingface", "initial_alphabet": [300]}, "initial_alphabet"),
        ({"tie_break": "huggingface", "limit_alphabet": -1}, "limit_alphabet"),
        ({"max_token_chars": 1}, "max_token_chars"),
    ],
)
def test_the_tie_breaks_options_are_checked_naming_them(options, option):
    with pytest.raises(OptionError) as e:
        Recipe(300, **options)
    assert e.value.option == option


@settings(max_examples=examples(40), deadline=None)
@given(texts=corpora(), options=recipes(), smaller=st.integers(0, 6))
def test_every_api_path_trains_what_training_from_the_texts_trains(texts, options, smaller):
    texts = texts + ["x y"]  # training refuses no text at all
    want = quietly(bpeforge.Tokenizer.train_from_iterator, texts, **options)

    counts = bpeforge.count(texts, pattern=options["pattern"], options=counting_options(options))
    superword = superword_counts(texts, options)
    same_training(quietly(bpeforge.Tokenizer.train_from_counts, counts, superword_counts=superword, **options), want)
    # Counts made with the options give them back where the call names none.
    rest = {k: v for k, v in options.items() if k not in ("pattern", "doc_cap")}
    same_training(quietly(bpeforge.Tokenizer.train_from_counts, counts, superword_counts=superword, **rest), want)

    with tempfile.TemporaryDirectory() as saved:
        counts.save(Path(saved) / "counts.parquet")
        again = bpeforge.SpanCounts.load(Path(saved) / "counts.parquet")
    same_training(quietly(bpeforge.Tokenizer.train_from_counts, again, superword_counts=superword, **options), want)

    alone = bpeforge.mix({"only": counts}, alpha=1)
    same_training(quietly(bpeforge.Tokenizer.train_from_counts, alone, superword_counts=superword, **options), want)

    # A sweep's tokenizer at that size: one training to a larger size, cut to it (HuggingFace's
    # layout keeps its special tokens first: a larger training truncated).
    size = options["vocab_size"]
    if options["tie_break"] == "huggingface":
        larger = quietly(bpeforge.Tokenizer.train_from_iterator, texts, **dict(options, vocab_size=size + 20))
        if larger.n_vocab >= size:
            same_training(larger.truncate(size), want)
    elif len(want.mergeable_ranks) == size - len(options["special_tokens"]) - options["reserve_special_tokens"]:
        rest = {k: v for k, v in options.items() if k != "vocab_size"}
        sweep = quietly(bpeforge.sweep, texts, [size, size + 20], {"t": texts[0] or "x"}, **rest)
        same_training(sweep.tokenizers[size], want)

    # Extending a smaller tokenizer trained on the same texts with the same options reaches the
    # same ranks (the special tokens keep the base's ids, so the ranks are compared in order).
    # A superword stage is an extension itself: test_superword.py checks it is one.
    # Padding takes ids the extension then numbers around: compared without it.
    if options["superword_transition"] is not None or options["pad_vocab_to_multiple_of"] not in (None, 1):
        return
    n_special = len(options["special_tokens"]) + options["reserve_special_tokens"]
    small_size = max(256 + n_special, options["vocab_size"] - smaller)
    base = quietly(bpeforge.Tokenizer.train_from_iterator, texts, **dict(options, vocab_size=small_size))
    if base.n_vocab == small_size and options["tie_break"] == "huggingface":
        # An extension keeps its base's ids, and HuggingFace's tie-break would renumber them;
        # yet extending a base in HuggingFace's layout by bpeforge's rule breaks ties by the
        # base's ids, HuggingFace's, and so goes on as HuggingFace's training does.
        with pytest.raises(OptionError) as e:
            bpeforge._training.Training(Recipe(**options), base=base).run(texts)
        assert e.value.option == "tie_break"
    if base.n_vocab == small_size:  # the base did not stop early
        extend_options = {k: options[k] for k in ("min_frequency", "max_token_length", "max_token_chars", "doc_cap", "max_token_words")}
        extended = quietly(base.extend, texts, options["vocab_size"], **extend_options)
        assert ranks_in_order(extended) == ranks_in_order(want)
        assert set(extended.special_tokens) == set(want.special_tokens)
        from_counts = quietly(base.extend, counts, options["vocab_size"], **extend_options)
        assert ranks_in_order(from_counts) == ranks_in_order(want)


@settings(max_examples=examples(25), deadline=None)
@given(texts=corpora(), options=recipes())
def test_the_low_level_trainer_trains_the_same_ranks(texts, options):
    # rustbpe's shape has no word limit and no superword stage: Trainer.learn takes a Recipe.
    options = dict(options, max_token_words=None, superword_transition=None, superword_pattern=None)
    ranks = options["vocab_size"] - len(options["special_tokens"]) - options["reserve_special_tokens"]
    texts = texts + ["x y"]
    # The trainer's own methods have rustbpe's arguments, and its rule; Trainer.learn takes a recipe.
    options = dict(options, tie_break="bpeforge", initial_alphabet=None, limit_alphabet=None, max_token_chars=None)
    want = quietly(bpeforge.Tokenizer.train_from_iterator, texts, **options)
    trainer = bpeforge.Trainer(options["pattern"])
    cropped = texts if options["doc_cap"] is None else [t[: options["doc_cap"]] for t in texts]
    limits = {"min_frequency": options["min_frequency"], "max_token_length": options["max_token_length"]}
    trainer.train_from_iterator(cropped, ranks, **limits)
    assert dict(trainer.get_mergeable_ranks()) == want.mergeable_ranks
    counts = bpeforge.count(texts, pattern=options["pattern"], options=counting_options(options))
    trainer.train_from_counts(counts, ranks, **limits)
    assert dict(trainer.get_mergeable_ranks()) == want.mergeable_ranks


def test_mixed_counts_read_min_frequency_in_occurrences_of_the_mix_on_every_path():
    a = bpeforge.count(["ab ab ab cd"] * 6 + ["xy"] * 4)  # "xy" 4 times: below the mix's threshold of 4
    b = bpeforge.count(["ef gh"] * 2)
    mixed = bpeforge.mix({"a": a, "b": b}, weights={"a": 1, "b": 3})
    threshold = bpeforge._mixing.min_count(mixed, 4)
    assert threshold > 4  # the mix's scale is above 1: the rescaling matters here
    want = quietly(bpeforge.Tokenizer.train_from_counts, mixed, 300, special_tokens=[], min_frequency=4)
    trainer = bpeforge.Trainer()
    trainer.train_from_counts(mixed, 300, min_frequency=4)
    assert dict(trainer.get_mergeable_ranks()) == want.mergeable_ranks
    base = bpeforge.Tokenizer.train_from_iterator(["zz"] * 3, 257, special_tokens=[])
    extended = quietly(base.extend, mixed, 300, min_frequency=4)
    plain = quietly(base.extend, dict(mixed.items()), 300, min_frequency=threshold)
    assert extended.mergeable_ranks == plain.mergeable_ranks
    # Without the rescaling, a pair of the mix counted 4 to threshold - 1 times would be merged.
    unscaled = quietly(base.extend, dict(mixed.items()), 300, min_frequency=4)
    assert unscaled.n_vocab > extended.n_vocab


def test_counts_made_with_other_options_are_refused_naming_the_option():
    counts = bpeforge.count(["the cat sat"] * 3, options={"doc_cap": 5})
    with pytest.raises(OptionError, match="cropped to 5 characters.*the training asks for whole documents") as e:
        bpeforge._training.Training(Recipe(300)).run(counts=counts)
    assert e.value.option == "doc_cap"
    with pytest.raises(OptionError, match="split by 'gpt4', the training asks for 'gpt2'") as e:
        bpeforge.Tokenizer.train_from_counts(counts, 300, pattern="gpt2")
    assert e.value.option == "pattern"


def test_a_doc_cap_crops_every_text_as_counting_does():
    tok = quietly(bpeforge.Tokenizer.train_from_iterator, ["abcdefgh"] * 5, 270, special_tokens=[], doc_cap=3)
    assert max(len(t) for t in tok.mergeable_ranks) == 3
    assert bpeforge.count(["abcdefgh"], options={"doc_cap": 3}).most_common() == [(b"abc", 1)]


# ------------------------------------------------------------------------------ the command line

# Option sets that together give every field a value other than its default.
NO_SUPERWORD = {"superword_transition": None, "superword_pattern": None}
BPEFORGE_RULE = {"tie_break": "bpeforge", "initial_alphabet": None, "limit_alphabet": None}
CLI_OPTIONS = [
    {"vocab_size": 300, "pattern": "gpt2", "special_tokens": [], "min_frequency": 2, "max_token_length": 4, "max_token_chars": None, "doc_cap": None,
     "max_token_words": None, **NO_SUPERWORD, "reserve_special_tokens": 0, "pad_vocab_to_multiple_of": None, **BPEFORGE_RULE},
    {"vocab_size": 290, "pattern": "gpt4", "special_tokens": ["<|a|>", "<|b|>"], "min_frequency": 1, "max_token_length": None, "max_token_chars": 3,
     "doc_cap": 40, "max_token_words": 1, **NO_SUPERWORD, "reserve_special_tokens": 3, "pad_vocab_to_multiple_of": 64, **BPEFORGE_RULE},
    {"vocab_size": 330, "pattern": "gpt4", "special_tokens": ["<|a|>"], "min_frequency": 1, "max_token_length": 12, "max_token_chars": None, "doc_cap": None,
     "max_token_words": 3, "superword_transition": 300, "superword_pattern": "superword", "reserve_special_tokens": 1,
     "pad_vocab_to_multiple_of": None, **BPEFORGE_RULE},
    {"vocab_size": 310, "pattern": "gpt4", "special_tokens": ["<|a|>"], "min_frequency": 1, "max_token_length": 5, "max_token_chars": None, "doc_cap": None,
     "max_token_words": None, **NO_SUPERWORD, "reserve_special_tokens": 0, "pad_vocab_to_multiple_of": None,
     "tie_break": "huggingface", "initial_alphabet": ALL_BYTES, "limit_alphabet": 280},
]

# The fields an extension takes from its base (the command line refuses them with --extend).
FROM_THE_BASE = ("pattern", "special_tokens", "tie_break", "initial_alphabet", "limit_alphabet")


def flags(options, without=()) -> list[str]:
    """The command line's flags for a recipe's options, but those ``without`` names."""
    given = {
        "vocab_size": ["--vocab-size", str(options["vocab_size"])],
        "pattern": ["--pattern", options["pattern"]],
        "special_tokens": ["--special-tokens", ",".join(options["special_tokens"]) or "none"],
        "min_frequency": ["--min-frequency", str(options["min_frequency"])],
        "max_token_length": [] if options["max_token_length"] is None else ["--max-token-length", str(options["max_token_length"])],
        "max_token_chars": [] if options["max_token_chars"] is None else ["--max-token-chars", str(options["max_token_chars"])],
        "doc_cap": [] if options["doc_cap"] is None else ["--doc-cap", str(options["doc_cap"])],
        "max_token_words": [] if options["max_token_words"] is None else ["--max-token-words", str(options["max_token_words"])],
        "superword_transition": [] if options["superword_transition"] is None else ["--superword-transition", str(options["superword_transition"])],
        "superword_pattern": [] if options["superword_pattern"] is None else ["--superword-pattern", options["superword_pattern"]],
        "reserve_special_tokens": ["--reserve-special-tokens", str(options["reserve_special_tokens"])],
        "pad_vocab_to_multiple_of": [] if options["pad_vocab_to_multiple_of"] is None else ["--pad-vocab-to-multiple-of", str(options["pad_vocab_to_multiple_of"])],
        "tie_break": ["--tie-break", options["tie_break"]],
        "initial_alphabet": [] if options["initial_alphabet"] is None else ["--initial-alphabet", "all"],
        "limit_alphabet": [] if options["limit_alphabet"] is None else ["--limit-alphabet", str(options["limit_alphabet"])],
        # (parity: see tests/test_parity.py)
        "parity": [],
        "parity_window": [],
        "parity_alpha": [],
        "global_merges": [],
    }
    assert set(given) == set(Recipe.fields())
    return [flag for field, pair in given.items() if field not in without for flag in pair]


def bpeforge_cli(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "bpeforge", *args, "-q"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Documents (some long, some with newlines inside) as a JSONL file, and as a list."""
    import random

    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyzäöü"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(150)]
    words += ["\n", "42", "1234567", ", ", "x" * 12]
    docs = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(400)]
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    return path, docs


def load_folder(folder: Path):
    """The tokenizer the command line saved in ``folder``: bpeforge's folder, or with
    HuggingFace's tie-break its ``tokenizer.json``."""
    if (folder / "bpeforge.json").exists():
        return bpeforge.Tokenizer.load(folder)
    return bpeforge.Tokenizer.from_huggingface(folder / "tokenizer.json")


@pytest.mark.parametrize("options", CLI_OPTIONS, ids=["gpt2-limits", "specials-doc-cap", "superword", "huggingface"])
def test_every_command_line_path_trains_what_the_api_trains(tmp_path, corpus, options):
    path, docs = corpus
    want = quietly(bpeforge.Tokenizer.train_from_iterator, docs, **options)
    given = flags(options)

    bpeforge_cli("train", str(path), "-o", str(tmp_path / "plain"), "--holdout", "0", *given)
    same_training(load_folder(tmp_path / "plain"), want)

    counting = flags(options, without=[f for f in Recipe.fields() if f not in ("pattern", "doc_cap")])
    bpeforge_cli("count", str(path), "-o", str(tmp_path / "counts.parquet"), *counting)
    from_counts = flags(options, without=("pattern", "doc_cap"))  # the counts' own
    superword = options["superword_transition"] is not None
    if superword:  # the superword stage's counts too
        swcount = ["--pattern", options["superword_pattern"]] + flags(options, without=[f for f in Recipe.fields() if f != "doc_cap"])
        bpeforge_cli("count", str(path), "-o", str(tmp_path / "superword.parquet"), *swcount)
        from_counts += ["--superword-counts", str(tmp_path / "superword.parquet")]
    bpeforge_cli("train", "--from-counts", str(tmp_path / "counts.parquet"), "-o", str(tmp_path / "counted"), *from_counts)
    same_training(load_folder(tmp_path / "counted"), want)

    if superword:  # a mix is span counts of one pattern: refused, with one line
        done = subprocess.run([sys.executable, "-m", "bpeforge", "train", "--source", f"only={path}", "-o", str(tmp_path / "m"), *given],
                              capture_output=True, text=True)
        assert done.returncode == 2 and "--superword-transition cannot go with --source" in done.stderr
    else:
        bpeforge_cli("train", "--source", f"only={path}", "--alpha", "1", "--holdout", "0", "-o", str(tmp_path / "mixed"), *given)
        same_training(load_folder(tmp_path / "mixed"), want)

    sizes = f"{options['vocab_size']},{options['vocab_size'] + 10}"
    bpeforge_cli("sweep", str(path), "--vocab-sizes", sizes, "--holdout", "0", "-o", str(tmp_path / "sweep"), *flags(options, without=("vocab_size",)))
    same_training(load_folder(tmp_path / "sweep" / str(options["vocab_size"])), want)

    if superword or options["pad_vocab_to_multiple_of"] or options["tie_break"] == "huggingface":
        # An extension itself (test_superword.py); padding takes ids; HuggingFace's folder holds
        # its tokenizer.json, which --extend does not read (yet).
        return
    smaller = dict(options, vocab_size=options["vocab_size"] - 5)
    bpeforge_cli("train", str(path), "-o", str(tmp_path / "small"), "--holdout", "0", *flags(smaller))
    extend_flags = flags(options, without=FROM_THE_BASE + ("reserve_special_tokens", "pad_vocab_to_multiple_of"))  # the base's
    bpeforge_cli("train", str(path), "--extend", str(tmp_path / "small"), "-o", str(tmp_path / "extended"), "--holdout", "0", *extend_flags)
    assert ranks_in_order(load_folder(tmp_path / "extended")) == ranks_in_order(want)


def test_training_from_counts_with_a_max_token_length_honours_it(tmp_path, corpus):
    # The issue's own case, on the command line: --from-counts used to drop --max-token-length.
    path, docs = corpus
    bpeforge_cli("count", str(path), "-o", str(tmp_path / "c.parquet"))
    bpeforge_cli("train", "--from-counts", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "t"), "--max-token-length", "3", "--special-tokens", "none")
    assert max(len(t) for t in bpeforge.Tokenizer.load(tmp_path / "t").mergeable_ranks) == 3
    assert Path(tmp_path / "t.tiktoken").exists()
