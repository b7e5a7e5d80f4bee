"""bpeforge.cli.report: the report of `bpeforge train` (merges listed once, tokens shown cropped,
compression counted only on the bytes the tokens cover, measured on bounded text after the
tokenizer is saved, a failed measurement a line of the report)."""

import re

import bpeforge

from .helpers import check_saved, report_value, run


def test_a_pattern_that_skips_text_is_reported_and_not_credited(tmp_path):
    (tmp_path / "a.txt").write_text("hello world\nhello there\n" * 20)
    r = run("train", tmp_path / "a.txt", "--vocab-size", 256, "--special-tokens", "none", "--pattern", r"\w+",
            "--holdout", 0, "-o", tmp_path / "tok")
    assert r.returncode == 0, r.stderr
    assert "warning: the split pattern skips text" in r.stderr
    # Single bytes only: one token per byte it keeps, so 1.00 bytes/token (not the text's bytes
    # over those tokens).
    assert report_value(r.stdout, "compression").startswith("1.00 bytes/token"), r.stdout
    r = run("train", tmp_path / "a.txt", "--vocab-size", 256, "--special-tokens", "none", "--holdout", 0, "-o", tmp_path / "tok2")
    assert r.returncode == 0 and "skips text" not in r.stderr


def test_the_report_lists_no_merge_twice(corpus, tmp_path):
    d, _ = corpus
    for merges in (3, 7, 10, 11, 20):
        r = run("train", d / "docs.txt", "-o", tmp_path / f"tok{merges}", "--vocab-size", 256 + merges, "--special-tokens", "none")
        assert r.returncode == 0, r.stderr
        listed = re.findall(r"-> (\d+) ", r.stdout)
        assert len(listed) == len(set(listed)) == min(merges, 10), r.stdout
        assert ("..." in r.stdout) == (merges > 10)


# The marks of a foreign error reaching stderr: a Python traceback, a Rust panic (tiktoken's
# or pyo3's).
FOREIGN = ("Traceback", "panicked", "PanicException", "RUST_BACKTRACE")


def test_a_long_run_of_spaces_trains_saves_and_reports(tmp_path):
    """5 MB of spaces in one line with the default pattern: tiktoken's regex engine gives up on
    such a run, so the report must not hand it to tiktoken. The run succeeds, the tokenizer is
    saved, and the report says what it measured: the first 1 MB of the training text."""
    (tmp_path / "s.txt").write_text(" " * 5_000_000 + "\n")
    r = run("train", tmp_path / "s.txt", "-o", tmp_path / "tok")
    assert r.returncode == 0, r.stderr
    assert not any(mark in r.stderr for mark in FOREIGN), r.stderr
    check_saved(tmp_path / "tok", " " * 1000)
    assert re.match(r"[\d.]+ bytes/token on 1 training document \(1,000,000 bytes -> \d+ tokens\)$", report_value(r.stdout, "compression"))
    assert "the first 1,000,000 bytes of the training text, the last document cropped" in r.stdout


def test_a_measurement_that_fails_is_a_line_of_the_report(tmp_path):
    """A custom pattern whose regex engine gives up on a held-out document (and on no training
    document): the tokenizer is saved, the run succeeds, and the report says why compression
    was not measured."""
    (tmp_path / "a.txt").write_text("hello world\n" + "a" * 40 + "\n")
    r = run("train", tmp_path / "a.txt", "--pattern", r"(?:a|a)+(?=c)|[^c]", "--holdout", 2, "--vocab-size", 260,
            "--special-tokens", "none", "-o", tmp_path / "tok")
    assert r.returncode == 0, r.stderr
    assert not any(mark in r.stderr for mark in FOREIGN), r.stderr
    assert report_value(r.stdout, "compression").startswith(
        "not measured: the split pattern's regex engine gave up on the held-out documents (")
    check_saved(tmp_path / "tok", "hello world")


def test_a_report_failure_leaves_the_tokenizer_saved(tmp_path, monkeypatch, capsys):
    """In-process: the encoder failing in any way is a line of the report (exit 0); the report
    itself failing, or Ctrl-C while it is made, leaves the tokenizer saved (it was saved first)
    and says so."""
    from bpeforge.cli import main, report

    class Failing:
        def __init__(self, *args):
            raise MemoryError("out of memory")

    (tmp_path / "a.txt").write_text("hello world\n" * 50)
    monkeypatch.setattr(report._core, "Encoder", Failing)
    assert main(["train", str(tmp_path / "a.txt"), "--vocab-size", "270", "-o", str(tmp_path / "tok")]) == 0
    out = capsys.readouterr().out
    assert report_value(out, "compression") == "not measured: out of memory (MemoryError)"
    check_saved(tmp_path / "tok", "hello world")

    def broken(**kwargs):
        raise ValueError("a bug in the report")

    monkeypatch.setattr("bpeforge.cli.train.format_report", broken)
    assert main(["train", str(tmp_path / "a.txt"), "--vocab-size", "270", "-o", str(tmp_path / "tok2")]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"bpeforge: warning: the tokenizer is saved in {tmp_path / 'tok2'}/ and {tmp_path / 'tok2.tiktoken'}, "
                            "but the report failed: a bug in the report (ValueError)\n")
    check_saved(tmp_path / "tok2", "hello world")

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("bpeforge.cli.train.measure_compression", interrupted)
    # Ctrl-C once the tokenizer is saved: 0, since 130 means nothing was written.
    assert main(["train", str(tmp_path / "a.txt"), "--vocab-size", "270", "-o", str(tmp_path / "tok3")]) == 0
    assert capsys.readouterr().err == (f"bpeforge: interrupted: the rest of the report is skipped; the tokenizer is saved in "
                                       f"{tmp_path / 'tok3'}/ and {tmp_path / 'tok3.tiktoken'}\n")
    check_saved(tmp_path / "tok3", "hello world")


def test_tokens_are_shown_cropped(tmp_path):
    """A 2 MB run of `a` is one token: the report shows its start and its length, not 2 MB."""
    (tmp_path / "a.txt").write_text("a" * 2_000_000 + "\n")
    r = run("train", tmp_path / "a.txt", "-o", tmp_path / "tok")
    assert r.returncode == 0, r.stderr
    assert len(r.stdout) < 5000, len(r.stdout)
    assert f"-> 281 '{'a' * 32}'... (2,000,000 characters, 2,000,000 bytes) (1)" in r.stdout


def test_the_measured_text_is_bounded(tmp_path):
    """Compression is measured on at most the hold-out budget: the held-out documents, or the
    start of the training text, whatever the sizes of the documents."""
    from bpeforge.cli.report import measure_compression
    from bpeforge._inputs import Corpus, expand_inputs

    (tmp_path / "big.txt").write_text("hello world " * 300_000 + "\n" + "short line\n" * 300)
    corpus = Corpus(expand_inputs([str(tmp_path / "big.txt")]), holdout_every=100, holdout_max_bytes=1_000_000)
    tok = bpeforge.Tokenizer.train_from_iterator(corpus, vocab_size=265, special_tokens=[])
    assert corpus.documents == 298 and len(corpus.heldout) == 3  # the 3.6 MB line is trained on
    c = measure_compression(tok.mergeable_ranks, tok.pattern, corpus, 100, [])
    assert (c.documents, c.bytes, c.failure) == (3, 30, "")
    corpus = Corpus(expand_inputs([str(tmp_path / "big.txt")]), holdout_every=0, holdout_max_bytes=1_000_000)
    for _ in corpus:
        pass
    c = measure_compression(tok.mergeable_ranks, tok.pattern, corpus, 0, [])
    assert (c.documents, c.bytes) == (1, 1_000_000)
    assert c.tokens == len(tok.encode(("hello world " * 300_000)[:1_000_000]))
