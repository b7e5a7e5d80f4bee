"""``bpeforge count`` and ``bpeforge train --from-counts``: counts of every document, saved as
Parquet, that train the same tokenizer as the texts (with --holdout 0, which trains on all)."""

from __future__ import annotations

import pytest

import bpeforge
from bpeforge import SpanCounts

from .helpers import assert_one_line_error, check_saved, no_outputs_in, report_int, report_value, run


def ranks(folder):
    return bpeforge.Tokenizer.load(folder).mergeable_ranks


def test_counts_of_shards_train_what_the_texts_train(corpus, tmp_path):
    d, docs = corpus
    # The same documents in three formats, counted one file each, then trained from the folder.
    for i, name in enumerate(["docs.txt", "docs.jsonl", "docs.parquet"]):
        r = run("count", d / name, "-o", tmp_path / "counts" / f"part-{i}.parquet", "--pattern", "nanochat")
        assert r.returncode == 0, r.stderr
        assert report_int(r.stdout, "documents") == len(docs)
        assert "bytes per distinct span" in report_value(r.stdout, "saved")
    counts = SpanCounts.load(tmp_path / "counts")
    assert counts == SpanCounts.merge([bpeforge.count(docs, "nanochat")] * 3)
    r = run("train", "--from-counts", tmp_path / "counts", "--vocab-size", 600, "-o", tmp_path / "from-counts")
    assert r.returncode == 0, r.stderr
    assert report_int(r.stdout, "distinct spans") == len(counts)
    assert report_value(r.stdout, "compression").startswith("not measured: no --eval-text")
    r = run("train", d / "docs.txt", d / "docs.jsonl", d / "docs.parquet", "--holdout", 0, "--pattern", "nanochat",
            "--vocab-size", 600, "-o", tmp_path / "from-texts")
    assert r.returncode == 0, r.stderr
    assert ranks(tmp_path / "from-counts") == ranks(tmp_path / "from-texts")
    tok = check_saved(tmp_path / "from-counts")
    assert tok.pattern == bpeforge.PATTERNS["nanochat"]


def test_eval_text_measures_compression(corpus, tmp_path):
    d, _ = corpus
    assert run("count", d / "docs.txt", "-o", tmp_path / "c.parquet").returncode == 0
    r = run("train", "--from-counts", tmp_path / "c.parquet", "--vocab-size", 400, "-o", tmp_path / "tok", "--eval-text", d / "docs.txt")
    assert r.returncode == 0, r.stderr
    assert "bytes/token on 1 text" in report_value(r.stdout, "compression")
    r = run("train", "--from-counts", tmp_path / "c.parquet", "--vocab-size", 400, "-o", tmp_path / "tok2", "--eval-text", tmp_path / "none.txt")
    assert r.returncode == 0 and "not measured: --eval-text" in report_value(r.stdout, "compression")


def test_doc_cap_is_recorded(corpus, tmp_path):
    d, docs = corpus
    assert run("count", d / "docs.txt", "-o", tmp_path / "c.parquet", "--doc-cap", 20).returncode == 0
    counts = SpanCounts.load(tmp_path / "c.parquet")
    assert counts.options == {"doc_cap": 20}
    assert counts == bpeforge.count([doc[:20] for doc in docs], options={"doc_cap": 20})


def test_count_errors_are_one_line(corpus, tmp_path):
    d, _ = corpus
    assert_one_line_error(run("count", d / "docs.txt", "-o", tmp_path / "c.txt"), ".parquet file")
    assert_one_line_error(run("count", d / "docs.txt", "-o", tmp_path / "c.parquet", "--pattern", "gtp4"), "--pattern", "no such preset")
    assert_one_line_error(run("count", tmp_path / "missing.txt", "-o", tmp_path / "c.parquet"), "missing.txt")
    assert no_outputs_in(tmp_path) == []
    assert run("count", d / "docs.txt", "-o", tmp_path / "c.parquet", "-q").returncode == 0
    assert_one_line_error(run("count", d / "docs.txt", "-o", tmp_path / "c.parquet"), "already exists")
    assert run("count", d / "docs.txt", "-o", tmp_path / "c.parquet", "--force", "-q").returncode == 0


def test_from_counts_errors_are_one_line(corpus, tmp_path):
    d, _ = corpus
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    assert_one_line_error(run("train", "--from-counts", bad, "-o", tmp_path / "tok"), "bad.parquet")
    assert_one_line_error(run("train", "--from-counts", tmp_path / "missing", "-o", tmp_path / "tok"), "missing")
    assert run("count", d / "docs.txt", "-o", tmp_path / "c.parquet").returncode == 0
    assert_one_line_error(run("train", "--from-counts", tmp_path / "c.parquet", "--pattern", "gpt2", "-o", tmp_path / "tok"), "'gpt4'", "'gpt2'")
    assert_one_line_error(run("train", "--from-counts", tmp_path / "c.parquet", d / "docs.txt", "-o", tmp_path / "tok"), "INPUT")
    assert_one_line_error(run("train", "--eval-text", d / "docs.txt", "-o", tmp_path / "tok"), "--from-counts")
    assert not (tmp_path / "tok").exists()


@pytest.mark.parametrize("sub", ["count", "train"])
def test_help_mentions_counts(sub):
    r = run(sub, "--help")
    assert r.returncode == 0 and ("--from-counts" in r.stdout if sub == "train" else "span counts" in r.stdout)
