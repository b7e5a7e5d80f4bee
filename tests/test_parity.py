"""Parity-aware training against HuggingFace's ``ParityBpeTrainer`` itself: the same tokenizer
and trainer trained by both serialize to equal JSON, for both variants, with ratios, dev sets and
global merges, on generated corpora (one per language, full of ties and of languages running
out of pairs) and on real text in four languages (Python's own test data); what cannot be
reproduced, or is wrong, is refused by name.

How the parity fields meet the recipe's option-by-path test (tests/test_recipe.py): they need
one set of counts per language, which the single-source paths there do not take. Here, every
recipe drawn there trains the same ranks as parity-aware training of its corpus as one language
(so the parity path honours every other field), and the parity fields are varied over the paths
that take languages: the compiled trainer from counts, ``bpeforge.huggingface``, and the command
line (tests/cli/test_parity_cli.py)."""

from __future__ import annotations

import json
import sysconfig
import warnings
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: E402

import bpeforge  # noqa: E402
from bpeforge._errors import OptionError  # noqa: E402
from bpeforge.huggingface import train_from_iterator, train_parity  # noqa: E402
from bpeforge._training import Recipe, Training  # noqa: E402

if not hasattr(trainers, "ParityBpeTrainer"):
    pytest.skip("tokenizers has no ParityBpeTrainer (0.23 or later)", allow_module_level=True)

# Each language draws words from its own letters, sharing a few (spaces, digits, some Latin).
SCRIPTS = ["abcde", "кдфгх", "अआइकख", "你好世界的"]
SHARED = " 1a"


@st.composite
def language_corpus(draw, script: str) -> list[str]:
    letters = script + SHARED
    word = st.text(alphabet=letters, min_size=1, max_size=6)
    line = st.lists(word, min_size=1, max_size=5).map(" ".join)
    lines = draw(st.lists(line, min_size=1, max_size=8))
    return draw(st.lists(st.sampled_from(lines), min_size=len(lines), max_size=3 * len(lines)))


@st.composite
def languages(draw) -> list[list[str]]:
    n = draw(st.integers(1, 4))
    return [draw(language_corpus(SCRIPTS[i])) for i in range(n)]


def new_tokenizer(prefix: bool = False, split: bool = False) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    if split:
        from bpeforge.huggingface import oniguruma_regex
        from bpeforge._patterns import PATTERNS

        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(tokenizers.Regex(oniguruma_regex(PATTERNS["gpt4"])), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=prefix, use_regex=False),
            ]
        )
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix)
    return tok


def both(train, dev=None, ratio=None, prefix=False, split=False, **options):
    """HuggingFace's training and bpeforge's, as JSON, and bpeforge's trace."""
    options.setdefault("show_progress", False)
    theirs = new_tokenizer(prefix, split)
    trainers.ParityBpeTrainer(**options).train_from_iterator(theirs, [list(t) for t in train], dev_iterators=dev, ratio=ratio)
    ours = new_tokenizer(prefix, split)
    trained = train_parity(ours, [list(t) for t in train], trainers.ParityBpeTrainer(**options), dev, ratio=ratio)
    return json.loads(theirs.to_str()), json.loads(ours.to_str()), trained.parity_trace


def ours_first(train, dev=None, ratio=None, **options) -> dict:
    """bpeforge's trace of a training (run before HuggingFace's, to keep it out of a case where
    HuggingFace's selection never returns)."""
    tok = new_tokenizer()
    options.setdefault("show_progress", False)
    return train_parity(tok, [list(t) for t in train], trainers.ParityBpeTrainer(**options), dev, ratio=ratio).parity_trace


def assert_same(theirs: dict, ours: dict) -> None:
    if theirs != ours:
        merges = zip(theirs["model"]["merges"], ours["model"]["merges"])
        first = next(((i, a, b) for i, (a, b) in enumerate(merges) if a != b), None)
        differ = [k for k in theirs if theirs[k] != ours.get(k)]
        pytest.fail(f"fields {differ} differ; first merge that differs (index, HF, bpeforge): {first}")


@settings(max_examples=40, deadline=None)
@given(
    train=languages(),
    data=st.data(),
    variant=st.sampled_from(["base", "window"]),
    measure=st.sampled_from(["train", "dev", "ratio"]),
    num_merges=st.sampled_from([5, 30, 400]),
    global_merges=st.sampled_from([0, 0, 3]),
    min_frequency=st.integers(0, 3),
)
def test_parity_training_is_huggingfaces(train, data, variant, measure, num_merges, global_merges, min_frequency):
    n = len(train)
    dev = [data.draw(language_corpus(SCRIPTS[i])) for i in range(n)] if measure == "dev" else None
    ratio = [data.draw(st.sampled_from([1.0, 1.5, 2.5])) for _ in range(n)] if measure == "ratio" else None
    options = dict(num_merges=num_merges, variant=variant, global_merges=global_merges, min_frequency=min_frequency)
    if variant == "window":
        options.update(window_size=data.draw(st.integers(1, 6)), alpha=data.draw(st.sampled_from([0.5, 1.0, 2.0, 4.0])))
        if options["alpha"] < n:
            # HuggingFace's window selection can loop forever once a language is exhausted
            # (docs/parity.md): compared only where none is.
            trace = ours_first(train, dev, ratio, **options)
            assume(all(e is None for e in trace["exhausted"]))
    theirs, ours, trace = both(train, dev, ratio, **options)
    assert_same(theirs, ours)
    assert len(trace["chosen"]) == len(ours["model"]["merges"])


@settings(max_examples=20, deadline=None)
@given(
    train=languages(),
    data=st.data(),
    prefix=st.booleans(),
    split=st.booleans(),
    specials=st.sampled_from([[], ["<s>"], ["<s>", "</s>", "<s>"]]),
    max_token_length=st.sampled_from([None, 1, 3, 5]),
    initial=st.sampled_from([[], ["a", "z", "Ā"]]),
    total_symbols=st.booleans(),
)
def test_parity_with_the_options_it_shares_with_bpe_trainer(train, data, prefix, split, specials, max_token_length, initial, total_symbols):
    options = dict(
        num_merges=data.draw(st.sampled_from([10, 60, 300])),
        special_tokens=specials,
        max_token_length=max_token_length,
        initial_alphabet=initial,
        total_symbols=total_symbols,
    )
    theirs, ours, _ = both(train, prefix=prefix, split=split, **options)
    assert_same(theirs, ours)


def real_texts() -> list[list[str]]:
    """Python's own test data in Chinese, Japanese and Korean, and English prose: one language
    each, lines as texts."""
    test = Path(sysconfig.get_paths()["stdlib"]) / "test"
    cjk = test / "cjkencodings"
    files = [cjk / "gb2312-utf8.txt", cjk / "euc_jp-utf8.txt", cjk / "cp949-utf8.txt"]
    if not all(f.is_file() for f in files):
        pytest.skip("this Python has no test/cjkencodings data")
    others = [f.read_text(encoding="utf-8") for f in files]
    # English about as long as the others (in bytes), so that no language starts far behind.
    english = (Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py").read_text(encoding="utf-8")
    english = english.encode()[: max(len(t.encode()) for t in others)].decode(errors="ignore")
    return [t.splitlines(keepends=True) for t in [english] + others]


@pytest.mark.parametrize(
    "options, measure",
    [
        (dict(num_merges=150), "train"),
        (dict(num_merges=150), "dev"),
        (dict(num_merges=150), "ratio"),
        (dict(num_merges=150, variant="window", window_size=20, alpha=2.0), "dev"),
        (dict(num_merges=150, global_merges=30, min_frequency=2), "train"),
    ],
)
def test_parity_on_real_text_in_four_languages(options, measure):
    texts = real_texts()
    train = [t[: len(t) * 4 // 5] for t in texts]
    dev = [t[len(t) * 4 // 5 :] for t in texts] if measure == "dev" else None
    ratio = [1.0, 2.5, 2.5, 2.5] if measure == "ratio" else None
    theirs, ours, trace = both(train, dev, ratio, **options)
    assert_same(theirs, ours)
    assert len(trace["chosen"]) == len(ours["model"]["merges"]) == 150


def test_a_single_language_with_bpeforges_ties_is_plain_training():
    """Every recipe of tests/test_recipe.py (bpeforge's tie-break, no superword stage) trains
    the same ranks with parity over its corpus as one language: the parity path honours every
    other field."""
    from test_recipe import recipes  # the recipes drawn there

    from strategies import corpora

    @settings(max_examples=25, deadline=None)
    @given(texts=corpora(), options=recipes(), variant=st.sampled_from(["base", "window"]))
    def check(texts, options, variant):
        assume(options["tie_break"] == "bpeforge" and options["superword_transition"] is None)
        options = {k: v for k, v in options.items() if k not in ("superword_transition", "superword_pattern")}
        recipe = Recipe(**options)
        counts = bpeforge.count(texts, pattern=recipe.pattern, options={"doc_cap": recipe.doc_cap} if recipe.doc_cap else None)
        assume(len(counts) > 0)
        plain = Training(recipe).run(counts=counts)
        parity = Training(recipe.replace(parity=variant)).run(counts=[counts])
        assert parity.ranks == plain.ranks
        assert parity.special_tokens == plain.special_tokens
        assert parity.parity_trace["chosen"] == [0] * (len(parity.ranks) - 256)

    check()


def test_all_global_merges_are_plain_training_on_the_languages_summed():
    texts = real_texts()
    counts = [bpeforge.count(t) for t in texts]
    recipe = Recipe(700, special_tokens=[])
    plain = Training(recipe).run(counts=bpeforge.SpanCounts.merge(counts))
    parity = Training(recipe.replace(parity="base", global_merges=10**6)).run(counts=counts)
    assert parity.ranks == plain.ranks
    assert set(parity.parity_trace["chosen"]) == {None}


def test_the_trace_measures_each_language():
    texts = real_texts()
    counts = [bpeforge.count(t) for t in texts]
    run = Training(Recipe(600, special_tokens=[], parity="base")).run(counts=counts)
    trace = run.parity_trace
    assert [lengths[0] for lengths in trace["lengths"]] == [c.total_bytes for c in counts]
    assert trace["on_dev"] is False and all(len(l) == len(trace["chosen"]) + 1 for l in trace["lengths"])
    for k, language in enumerate(trace["chosen"]):
        assert trace["lengths"][language][k + 1] < trace["lengths"][language][k]  # its merge helped it
    # The base rule keeps the languages' lengths close: the longest now is not far above the rest.
    final = [l[-1] for l in trace["lengths"]]
    plain = Training(Recipe(600, special_tokens=[])).run(counts=bpeforge.SpanCounts.merge(counts))
    tok = plain.build(bpeforge.Tokenizer)
    plain_final = [sum(len(tok.encode(line)) for line in t) for t in texts]
    assert max(final) - min(final) < max(plain_final) - min(plain_final)


@pytest.mark.parametrize(
    "options, option",
    [
        ({"parity": "fair"}, "parity"),
        ({"parity_window": 10}, "parity_window"),
        ({"global_merges": 3}, "global_merges"),
        ({"parity": "base", "parity_alpha": 1.0}, "parity_alpha"),
        ({"parity": "window", "parity_window": 0}, "parity_window"),
        ({"parity": "window", "parity_alpha": 0.0}, "parity_alpha"),
        ({"parity": "window", "parity_alpha": float("nan")}, "parity_alpha"),
        ({"parity": "base", "global_merges": -1}, "global_merges"),
        ({"parity": "base", "superword_transition": 300}, "parity"),
    ],
)
def test_bad_parity_options_are_refused_by_name(options, option):
    with pytest.raises(OptionError) as raised:
        Recipe(400, **options)
    assert raised.value.option == option


def test_parity_recipes_round_trip():
    recipe = Recipe(400, parity="window", parity_window=7, parity_alpha=1.5, global_merges=3)
    assert Recipe(**recipe.as_dict()) == recipe
    assert (recipe.parity, recipe.parity_window, recipe.parity_alpha, recipe.global_merges) == ("window", 7, 1.5, 3)
    assert Recipe(400, parity="base").parity_window is None and "parity='base'" in repr(Recipe(400, parity="base"))


def test_what_parity_learns_from_is_checked():
    a, b = bpeforge.count(["hello world"]), bpeforge.count(["hallo welt"])
    training = Training(Recipe(300, special_tokens=[], parity="base"))
    with pytest.raises(TypeError, match="list of SpanCounts"):
        training.run(counts=a)
    with pytest.raises(TypeError, match="not texts"):
        training.run(["hello"])
    with pytest.raises(ValueError, match="one per language"):
        training.run(counts=[a, b], dev=[a])
    with pytest.raises(TypeError, match="not both"):
        training.run(counts=[a, b], dev=[a, b], ratio=[1, 2])
    with pytest.raises(ValueError, match="ratio"):
        training.run(counts=[a, b], ratio=[1.0, -2.0])
    with pytest.raises(ValueError, match="ratio"):
        training.run(counts=[a, b], ratio=[1.0])
    with pytest.raises(OptionError) as raised:
        training.run(counts=[a, bpeforge.count(["x"], pattern="gpt2")])
    assert raised.value.option == "pattern"
    with pytest.raises(TypeError, match="parity"):
        Training(Recipe(300, special_tokens=[])).run(counts=a, dev=[a])


def test_huggingface_refusals_name_what_differs():
    tok = new_tokenizer()
    trainer = trainers.ParityBpeTrainer(num_merges=10, show_progress=False)
    with pytest.raises(TypeError, match="one iterable per language"):
        train_from_iterator(tok, ["just", "texts"][0], trainer)
    with pytest.raises(ValueError, match="must match"):
        train_from_iterator(tok, [["a"], ["b"]], trainer, [["a"]])
    with pytest.raises(ValueError, match="ratio length"):
        train_from_iterator(tok, [["a"], ["b"]], trainer, ratio=[1.0])
    with pytest.raises(ValueError, match="end_of_word_suffix"):
        train_from_iterator(tok, [["a"]], trainers.ParityBpeTrainer(num_merges=10, end_of_word_suffix="</w>"))
    with pytest.raises(TypeError, match="ParityBpeTrainer"):
        train_from_iterator(tok, ["a"], trainers.BpeTrainer(), [["a"]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train_from_iterator(tok, [["hello hello"], ["hallo hallo"]], trainer, [])  # an empty dev list is none
