"""bpeforge.cli.report: the report of `bpeforge train` (merges listed once, compression counted
only on the bytes the tokens cover)."""

import re

from .helpers import report_value, run


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
