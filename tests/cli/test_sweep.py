"""`bpeforge sweep` (bpeforge.cli.sweep) and `bpeforge eval --plot`: what they write and print,
and their one-line errors."""

import csv
import json
import sys

import pytest

import bpeforge
from bpeforge import cli

from .helpers import assert_one_line_error, make_docs, run

SIZES = [300, 400, 600]


@pytest.fixture(scope="module")
def docs_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep-corpus") / "docs.txt"
    path.write_text("".join(doc + "\n" for doc in make_docs(1500)), encoding="utf-8")
    return path


def sweep_argv(out, docs_file, *more, sizes="300,400,600"):
    return ["sweep", "--vocab-sizes", sizes, "-o", str(out), str(docs_file), "--special-tokens", "none", "-q", *more]


def test_sweep_writes_the_table_the_plot_and_a_tokenizer_per_size(tmp_path, docs_file, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "sweep"
    assert cli.main(sweep_argv(out, docs_file)[:-1]) == 0  # (not quiet: the table is printed)
    printed = capsys.readouterr().out
    assert "held-out" in printed and "600" in printed and f"saved in {out}/" in printed
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["sweep.csv", "sweep.json", "sweep.png"] + [str(s) for s in SIZES] + [f"{s}.tiktoken" for s in SIZES]
    )
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Each size is the training to that size on the same documents (every 100th held out).
    docs = docs_file.read_text(encoding="utf-8").splitlines()
    trained = [d for i, d in enumerate(docs) if (i + 1) % 100]
    held = [d for i, d in enumerate(docs) if not (i + 1) % 100]
    rows = list(csv.DictReader((out / "sweep.csv").open(encoding="utf-8")))
    assert [(r["source"], int(r["vocab_size"])) for r in rows] == [("held-out", s) for s in SIZES]
    for size, row in zip(SIZES, rows):
        tok = bpeforge.Tokenizer.load(out / str(size))
        direct = bpeforge.Tokenizer.train_from_iterator(trained, size, special_tokens=[])
        assert tok.mergeable_ranks == direct.mergeable_ranks
        assert int(row["tokens"]) == sum(len(tok.encode_ordinary(d)) for d in held)
    data = json.loads((out / "sweep.json").read_text())
    assert data["corpus"].startswith("docs.txt (") and data["vocab_sizes"] == SIZES


def test_eval_text_replaces_the_held_out_documents(tmp_path, docs_file):
    other = tmp_path / "other.txt"
    other.write_text("the quick brown fox jumps over the lazy dog\n" * 20, encoding="utf-8")
    out = tmp_path / "sweep"
    assert cli.main(sweep_argv(out, docs_file, "--eval-text", str(other))) == 0
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert {r["source"] for r in rows} == {str(other)}
    # Trained on every document (no hold-out): the largest is the training on the whole file.
    direct = bpeforge.Tokenizer.train_from_iterator(docs_file.read_text().splitlines(), 600, special_tokens=[])
    assert bpeforge.Tokenizer.load(out / "600").mergeable_ranks == direct.mergeable_ranks
    # --holdout given as well: both lines.
    assert cli.main(sweep_argv(tmp_path / "both", docs_file, "--holdout", "50", "--eval-text", str(other))) == 0
    rows = json.loads((tmp_path / "both" / "sweep.json").read_text())["rows"]
    assert [r["source"] for r in rows[:: len(SIZES)]] == ["held-out", str(other)]


def test_without_matplotlib_the_table_only_and_a_note(tmp_path, docs_file, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "sweep"
    assert cli.main(sweep_argv(out, docs_file)[:-1]) == 0
    captured = capsys.readouterr()
    assert "note: no plot (sweep.png): matplotlib is not installed; pip install 'bpeforge[plot]' gives it" in captured.err
    assert not (out / "sweep.png").exists() and (out / "sweep.csv").exists()


def test_an_existing_output_is_replaced_only_with_force_and_only_if_a_sweep(tmp_path, docs_file, capsys):
    out = tmp_path / "sweep"
    out.mkdir()  # empty: used
    assert cli.main(sweep_argv(out, docs_file)) == 0
    assert cli.main(sweep_argv(out, docs_file, sizes="300,500")) == 1
    assert "already exists (use --force to replace it)" in capsys.readouterr().err
    assert cli.main(sweep_argv(out, docs_file, "--force", sizes="300,500")) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["300", "500"]  # the old sizes are gone
    (out / "notes.txt").write_text("mine")
    assert cli.main(sweep_argv(out, docs_file, "--force")) == 1
    assert "holds something other than an earlier sweep's outputs; not replacing it" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine"
    (tmp_path / "file").write_text("x")
    assert cli.main(sweep_argv(tmp_path / "file", docs_file)) == 1
    assert "exists and is not a folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    "sizes, message",
    [
        ("4k,8k", "--vocab-sizes: '4k' is not a vocabulary size (a whole number such as 8192)"),
        ("512,,1024", "an empty size in '512,,1024' (a stray comma?)"),
        ("1024,512", "--vocab-sizes: vocab sizes must be increasing: 512 comes after 1,024"),
        ("512,512", "--vocab-sizes: vocab size 512 is given twice"),
        ("260,512", "--vocab-sizes: vocab size 260 is too small: at least 256 bytes + 9 special tokens = 265"),
    ],
)
def test_bad_sizes_are_one_line_usage_errors(tmp_path, docs_file, capsys, sizes, message):
    argv = ["sweep", "--vocab-sizes", sizes, "-o", str(tmp_path / "out"), str(docs_file)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "out").exists()


def test_sizes_beyond_what_training_reached(tmp_path, capsys):
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("abab abab\n" * 300, encoding="utf-8")
    assert cli.main(["sweep", "--vocab-sizes", "258,300", "-o", str(tmp_path / "a"), str(tiny), "--special-tokens", "none"]) == 0
    err = capsys.readouterr().err
    assert "warning: training stopped at" in err and "the size 300 is beyond it and left out" in err
    assert json.loads((tmp_path / "a" / "sweep.json").read_text())["vocab_sizes"] == [258]
    assert cli.main(["sweep", "--vocab-sizes", "400,500", "-o", str(tmp_path / "b"), str(tiny), "--special-tokens", "none"]) == 1
    assert "the sizes 400 and 500 are beyond it and left out" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_a_bad_eval_text_is_found_before_training(tmp_path, docs_file, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff")
    assert cli.main(sweep_argv(tmp_path / "out", docs_file, "--eval-text", str(bad))) == 1
    assert f"--eval-text {bad}: not UTF-8 text (byte 3" in capsys.readouterr().err


def test_errors_are_one_line_in_a_subprocess(tmp_path, docs_file):
    r = run("sweep", "--vocab-sizes", "abc", "-o", tmp_path / "out", docs_file)
    assert_one_line_error(r, "'abc' is not a vocabulary size")
    r = run("sweep", "-o", tmp_path / "out", docs_file)
    assert_one_line_error(r, "--vocab-sizes")


def test_eval_plot(tmp_path, docs_file, capsys):
    pytest.importorskip("matplotlib")
    assert cli.main(sweep_argv(tmp_path / "sw", docs_file)) == 0
    tokenizers = [str(tmp_path / "sw" / str(s)) for s in SIZES]
    png = tmp_path / "eval.png"
    assert cli.main(["eval", *tokenizers, "--text", str(docs_file), "--plot", str(png)]) == 0
    assert "Vocab sizes:" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert cli.main(["eval", *tokenizers, "--text", str(docs_file), "--plot", str(tmp_path / "no" / "such" / "x.png")]) == 1
    assert "--plot" in capsys.readouterr().err


def test_eval_plot_without_matplotlib_says_so_before_encoding(tmp_path, hello, capsys, monkeypatch):
    hello.save(tmp_path / "tok")
    (tmp_path / "a.txt").write_text("hello", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert cli.main(["eval", str(tmp_path / "tok"), "--text", str(tmp_path / "a.txt"), "--plot", str(tmp_path / "x.png")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing was encoded
    assert "--plot: plots need matplotlib: pip install 'bpeforge[plot]'" in captured.err


def test_a_sweep_from_span_counts_measures_on_the_eval_text(tmp_path, docs_file):
    """--from-counts: one training on saved counts, each size the training to that size on the
    same counts, measured on --eval-text (required: counts hold no text)."""
    counts = tmp_path / "counts.parquet"
    assert cli.main(["count", str(docs_file), "-o", str(counts), "-q"]) == 0
    other = tmp_path / "other.txt"
    other.write_text("the quick brown fox jumps over the lazy dog\n" * 20, encoding="utf-8")
    out = tmp_path / "sweep"
    argv = ["sweep", "--vocab-sizes", "300,400,600", "-o", str(out), "--special-tokens", "none", "-q", "--from-counts", str(counts)]
    assert cli.main([*argv, "--eval-text", str(other)]) == 0
    loaded = bpeforge.SpanCounts.load(counts)
    for size in SIZES:
        direct = bpeforge.Tokenizer.train_from_counts(loaded, size, special_tokens=[])
        assert bpeforge.Tokenizer.load(out / str(size)).mergeable_ranks == direct.mergeable_ranks
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert [(r["source"], r["vocab_size"]) for r in rows] == [(str(other), s) for s in SIZES]
    assert all(r["tokens"] > 0 for r in rows)
    r = run(*argv[:3], "-o", tmp_path / "o2", "--from-counts", counts)
    assert_one_line_error(r, "--from-counts needs --eval-text")
    r = run(*argv[:3], "-o", tmp_path / "o3", "--from-counts", counts, "--eval-text", other, "--holdout", 5)
    assert_one_line_error(r, "--holdout cannot go with it")


def test_a_sweep_of_a_mix_measures_each_source_on_its_own_held_out_documents(tmp_path, docs_file):
    """--source: the sources are mixed as train mixes them; each size is what train --source
    makes at that size, and each source is a line of the table."""
    code = tmp_path / "code.txt"
    code.write_text("".join(f"int f{i}(void) {{ return {i} * {i}; }}\n" for i in range(400)), encoding="utf-8")
    common = ["--source", f"docs={docs_file}", "--source", f"code={code}", "--alpha", "0.5", "--special-tokens", "none", "-q"]
    out = tmp_path / "sweep"
    assert cli.main(["sweep", "--vocab-sizes", "300,400,600", "-o", str(out), *common]) == 0
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert sorted({r["source"] for r in rows}) == ["code", "docs"]
    for size in SIZES:
        assert cli.main(["train", "--vocab-size", str(size), "-o", str(tmp_path / f"t{size}"), *common]) == 0
        assert bpeforge.Tokenizer.load(out / str(size)).mergeable_ranks == bpeforge.Tokenizer.load(tmp_path / f"t{size}").mergeable_ranks
    r = run("sweep", "--vocab-sizes", "300,400", "-o", tmp_path / "o2", "--source", f"docs={docs_file}", docs_file)
    assert_one_line_error(r, "INPUT cannot go with it")
