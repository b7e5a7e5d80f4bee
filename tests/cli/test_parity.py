"""``bpeforge train --source NAME=PATH ... --parity``: the ranks of ``bpeforge.parity`` on each
source's counts (with dev texts, ratios, the window variant, global merges and HuggingFace's
layout), the per-language report and plot, one-line errors."""

from __future__ import annotations

import random

import pytest
import tiktoken.load

import bpeforge
import bpeforge.parity
from bpeforge._training import Recipe

from .helpers import assert_one_line_error, check_saved, no_outputs_in, run

# Each language's syllables: its words are random runs of them (many distinct words, as text has).
LANGUAGES = {"en": "the qu ick br own fox ju mps ov er la zy dog s", "ru": "бы стр ая ли са пры га ет че рез ле ни вую со ба ку", "hi": "ते ज़ भू री लो म ड़ी आ ल सी कु त्ते प र कू द ती है"}


def language_docs(syllables: str, n: int, seed: int) -> list:
    rng = random.Random(seed)
    parts = syllables.split()
    words = ["".join(rng.choices(parts, k=rng.randint(1, 4))) for _ in range(300)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(2, 12))) for _ in range(n)]


@pytest.fixture(scope="module")
def languages(tmp_path_factory):
    d = tmp_path_factory.mktemp("languages")
    docs = {}
    for k, (name, text) in enumerate(LANGUAGES.items()):
        docs[name] = language_docs(text, 300 * (k + 1), k)  # unequal sizes
        (d / f"{name}.txt").write_text("".join(doc + "\n" for doc in docs[name]), encoding="utf-8")
        (d / f"dev.{name}.txt").write_text("".join(doc + "\n" for doc in language_docs(text, 40, 10 + k)), encoding="utf-8")
    return d, docs


def sources(d) -> list:
    return [flag for name in LANGUAGES for flag in ("--source", f"{name}={d / (name + '.txt')}")]


def devs(d) -> list:
    return [flag for name in LANGUAGES for flag in ("--dev", f"{name}={d / ('dev.' + name + '.txt')}")]


@pytest.mark.parametrize(
    "flags, options, measure",
    [
        ([], {}, "train"),
        (["--dev-all"], {}, "dev"),
        (["--ratio", "en=1", "--ratio", "ru=1.8", "--ratio", "hi=2.6"], {}, "ratio"),
        (["--parity-window", "5", "--parity-alpha", "1.5", "--global-merges", "10"], {"parity_window": 5, "parity_alpha": 1.5, "global_merges": 10}, "window"),
        (["--tie-break", "huggingface", "--initial-alphabet", "all"], {"tie_break": "huggingface", "initial_alphabet": bytes(range(256))}, "train"),
    ],
)
def test_the_command_line_trains_what_the_api_trains(languages, tmp_path, flags, options, measure):
    d, docs = languages
    if flags == ["--dev-all"]:
        flags = devs(d)
    variant = "window" if measure == "window" else "base"
    out = tmp_path / "out"
    r = run("train", *sources(d), "--parity", variant, *flags, "--vocab-size", 420, "--special-tokens", "<|end|>", "--holdout", 0, "-o", out)
    assert r.returncode == 0, r.stderr
    if options.get("tie_break") == "huggingface":  # HuggingFace's folder: its tokenizer.json and the .tiktoken
        ranks = tiktoken.load.load_tiktoken_bpe(str(out / "tokenizer.tiktoken"))
    else:
        ranks = check_saved(out, "the quick brown fox").mergeable_ranks
    recipe = Recipe(420, special_tokens=["<|end|>"], parity=variant, **options)
    counts = {name: bpeforge.count(docs[name], pattern=recipe.pattern) for name in LANGUAGES}
    dev = {name: bpeforge.count((d / f"dev.{name}.txt").read_text(encoding="utf-8").splitlines()) for name in LANGUAGES} if measure == "dev" else None
    ratio = {"en": 1.0, "ru": 1.8, "hi": 2.6} if measure == "ratio" else None
    trained, report = bpeforge.parity.train_counts(recipe, counts, dev=dev, ratio=ratio)
    assert ranks == trained.build(bpeforge.Tokenizer).mergeable_ranks
    # The report's balance: a row per language, its figures the API's.
    for name, _, made, plain, parity in report.rows():
        row = next(line for line in r.stdout.splitlines() if line.strip().startswith(name + " "))
        assert f"{parity:.3f}" in row and f"{plain:.3f}" in row and f"{made:,}" in row, row
    assert (out / "parity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_parity_evens_out_the_languages_lengths(languages, tmp_path):
    d, docs = languages
    recipe = Recipe(600, special_tokens=[], parity="base")
    counts = {name: bpeforge.count(docs[name]) for name in LANGUAGES}
    dev = {name: bpeforge.count((d / f"dev.{name}.txt").read_text(encoding="utf-8").splitlines()) for name in LANGUAGES}
    _, report = bpeforge.parity.train_counts(recipe, counts, dev=dev)
    parity = [lengths[-1] for lengths in report.parity_lengths]
    plain = [lengths[-1] for lengths in report.plain_lengths]
    # The longest language's dev text (in tokens) is shorter with parity than without.
    assert max(parity) < max(plain)


@pytest.mark.parametrize(
    "flags, needles",
    [
        (["--parity"], ["--parity trains on named sources"]),
        (["--dev", "en=x"], ["--dev goes with --parity"]),
        (["--global-merges", "3"], ["--global-merges goes with --parity"]),
        (["SOURCES", "--parity", "--alpha", "0.3"], ["--alpha and --weight do not go with it"]),
        (["SOURCES", "--parity", "--ratio", "en=1"], ["--ratio: none for the sources ru, hi"]),
        (["SOURCES", "--parity", "--ratio", "en=1", "--ratio", "ru=x", "--ratio", "hi=1"], ["--ratio ru=x: not a number"]),
        (["SOURCES", "--parity", "--ratio", "en=1", "--ratio", "ru=-1", "--ratio", "hi=1"], ["a ratio must be a positive number"]),
        (["SOURCES", "--parity", "--ratio", "xx=1"], ["no --source is named 'xx'"]),
        (["SOURCES", "--parity", "DEVS", "--ratio", "en=1", "--ratio", "ru=1", "--ratio", "hi=1"], ["--dev and --ratio both"]),
        (["SOURCES", "--parity", "window", "--parity-window", "0"], ["--parity-window"]),
        (["SOURCES", "--parity", "--parity-alpha", "2"], ["--parity-alpha", "window"]),
        (["SOURCES", "--parity", "--superword-transition", "300"], ["--superword-transition"]),
        (["SOURCES", "--parity", "--dev", "en=/nonexistent/dev.txt", "--dev", "ru=/nonexistent/dev.txt", "--dev", "hi=/nonexistent/dev.txt"], ["--dev en"]),
    ],
)
def test_bad_parity_flags_are_one_line_errors(languages, tmp_path, flags, needles):
    d, _ = languages
    expanded = []
    for flag in flags:
        expanded += sources(d) if flag == "SOURCES" else devs(d) if flag == "DEVS" else [flag]
    r = run("train", *expanded, "--vocab-size", 400, "-o", tmp_path / "out")
    assert_one_line_error(r, *needles)
    assert no_outputs_in(tmp_path) == []


def test_the_python_api_trains_from_texts_by_name(languages):
    _, docs = languages
    run_ = bpeforge.parity.train(docs, 400, special_tokens=[], parity="window", parity_window=10)
    assert run_.tokenizer.n_vocab == 400 and run_.report.languages == list(LANGUAGES)
    assert "bytes/token plain" in run_.report.table()
    with pytest.raises(ValueError, match="dev must name every language"):
        bpeforge.parity.train(docs, 400, special_tokens=[], dev={"en": ["x"]})
    with pytest.raises(ValueError, match="ratio must name every language"):
        bpeforge.parity.train(docs, 400, special_tokens=[], ratio={"en": 1, "ru": 1, "hi": 1, "fr": 1})
