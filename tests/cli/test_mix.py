"""``bpeforge train --source NAME=PATH ... --alpha A | --weight NAME=W``: the ranks of
``bpeforge.mix`` on each source's counts, the balance in the report, one-line errors."""

from __future__ import annotations

import random
import re

import pytest

import bpeforge

from .helpers import assert_one_line_error, check_saved, make_docs, no_outputs_in, report_value, run


def code_docs(n: int = 300, seed: int = 1) -> list:
    rng = random.Random(seed)
    names = ["buf", "len", "ret", "dev", "ctx", "skb", "err", "flags"]
    return [
        f"static int {rng.choice(names)}_{rng.randint(0, 50)}(struct {rng.choice(names)} *{rng.choice(names)}) {{ return {rng.randint(0, 9)}; }}"
        for _ in range(n)
    ]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("sources")
    prose, code = make_docs(2000), code_docs()
    (d / "prose").mkdir()
    (d / "prose" / "a.txt").write_text("".join(doc + "\n" for doc in prose[:1000]))
    (d / "prose" / "b.txt").write_text("".join(doc + "\n" for doc in prose[1000:]))
    (d / "code.txt").write_text("".join(doc + "\n" for doc in code))
    return d, prose, code


def ranks(folder):
    return bpeforge.Tokenizer.load(folder).mergeable_ranks


def balance(stdout: str) -> dict:
    """{source: [bytes, share, weight, weighted share, bytes/token...]} from the report's table."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("balance"))
    rows = {}
    for line in lines[start + 1:]:
        if not line.startswith(" ") or line.strip().startswith("("):
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[0]] = cells[1:]
    return rows


def test_alpha_trains_the_ranks_of_mix_and_reports_the_balance(sources, tmp_path):
    d, prose, code = sources
    r = run("train", "--source", f"prose={d / 'prose'}", "--source", f"code={d / 'code.txt'}", "--alpha", "0.5",
            "--holdout", 0, "--vocab-size", 500, "--special-tokens", "none", "-o", tmp_path / "mix")
    assert r.returncode == 0, r.stderr
    counts = {"prose": bpeforge.count(prose), "code": bpeforge.count(code)}
    mixed = bpeforge.mix(counts, alpha=0.5)
    expected = bpeforge.Tokenizer.train_from_counts(mixed, 500, special_tokens=[])
    assert ranks(tmp_path / "mix") == expected.mergeable_ranks
    check_saved(tmp_path / "mix")
    assert report_value(r.stdout, "sources").startswith("2, mixed with alpha 0.5")
    table = balance(r.stdout)
    assert list(table) == ["prose", "code"]
    n = {k: c.total_bytes for k, c in counts.items()}
    share = {k: 100 * v / sum(n.values()) for k, v in n.items()}
    p = {k: 100 * v**0.5 / sum(x**0.5 for x in n.values()) for k, v in n.items()}
    for k in table:
        assert table[k][1] == f"{share[k]:.1f}%"
        assert table[k][3] == f"{p[k]:.1f}%"  # the weighted share is the temperature's
        assert "(on training documents)" in table[k][4]  # --holdout 0
    weights = bpeforge._mixing.MixRecord.of(mixed).weights
    assert [int(table[k][2].replace(",", "")) for k in table] == [weights["prose"], weights["code"]]


def test_each_source_is_measured_on_its_own_held_out_documents(sources, tmp_path):
    d, prose, code = sources
    r = run("train", "--source", f"prose={d / 'prose'}", "--source", f"code={d / 'code.txt'}",
            "--weight", "prose=1", "--weight", "code=3", "--vocab-size", 400, "-o", tmp_path / "w")
    assert r.returncode == 0, r.stderr
    assert "+ 20 held out" in report_value(r.stdout, "source prose")  # every 100th document
    assert "+ 3 held out" in report_value(r.stdout, "source code")
    table = balance(r.stdout)
    assert [table[k][2] for k in table] == ["1", "3"]
    for k in table:
        bpt = float(table[k][4].split()[0])
        assert 1.0 < bpt < 20.0 and "training documents" not in table[k][4]
    assert "merge counts below are weighted" in r.stdout


def test_a_span_counts_file_is_a_source_and_a_text_parquet_file_is_text(sources, corpus, tmp_path):
    d, prose, code = sources
    r = run("count", d / "code.txt", "-o", tmp_path / "code.parquet", "--pattern", "nanochat")
    assert r.returncode == 0, r.stderr
    r = run("train", "--source", f"prose={d / 'prose'}", "--source", f"code={tmp_path / 'code.parquet'}", "--alpha", "0.5",
            "--holdout", 0, "--vocab-size", 500, "--special-tokens", "none", "-o", tmp_path / "mix")
    assert r.returncode == 0, r.stderr
    mixed = bpeforge.mix({"prose": bpeforge.count(prose, "nanochat"), "code": bpeforge.count(code, "nanochat")}, alpha=0.5)
    assert ranks(tmp_path / "mix") == bpeforge.Tokenizer.train_from_counts(mixed, 500, special_tokens=[]).mergeable_ranks
    assert "span counts" in report_value(r.stdout, "source code")
    assert balance(r.stdout)["code"][4] == "n/a (span counts: no text)"
    # A Parquet file of text is read as text; a damaged counts file is an error naming its source.
    parquet = corpus[0] / "docs.parquet"
    r = run("train", "--source", f"a={parquet}", "--source", f"code={d / 'code.txt'}", "--vocab-size", 300, "-o", tmp_path / "pq")
    assert r.returncode == 0, r.stderr
    assert "(parquet), 1,980 documents (+ 20 held out)" in report_value(r.stdout, "source a")
    damaged = tmp_path / "damaged.parquet"
    data = bytearray((tmp_path / "code.parquet").read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    r = run("train", "--source", f"a={damaged}", "--source", f"code={d / 'code.txt'}", "-o", tmp_path / "bad")
    assert_one_line_error(r, f"--source a: {damaged}: ")


def test_no_alpha_is_the_plain_sum(sources, tmp_path):
    d, _, _ = sources
    r = run("train", "--source", f"prose={d / 'prose' / 'a.txt'}", "--source", f"prose={d / 'prose' / 'b.txt'}",
            "--source", f"code={d / 'code.txt'}", "--holdout", 0, "--vocab-size", 500, "-o", tmp_path / "mix")
    assert r.returncode == 0, r.stderr
    assert list(balance(r.stdout)) == ["prose", "code"]  # a name given twice is one source
    r = run("train", d / "prose", d / "code.txt", "--holdout", 0, "--vocab-size", 500, "-o", tmp_path / "plain")
    assert r.returncode == 0, r.stderr
    assert ranks(tmp_path / "mix") == ranks(tmp_path / "plain")


@pytest.mark.parametrize(
    "extra, needles",
    [
        (["--weight", "prose=2", "--weight", "sv=1"], ["--weight sv=1: no --source is named 'sv'", "prose, code"]),
        (["--weight", "prose=2"], ["--weight: no weight for the source code"]),
        (["--weight", "prose=0", "--weight", "code=1"], ["--weight prose=0: a weight must be a positive number"]),
        (["--weight", "prose=x", "--weight", "code=1"], ["--weight prose=x: the weight is not a number"]),
        (["--alpha", "2"], ["--alpha: alpha must be from 0", "got 2.0"]),
        (["--alpha", "-0.5"], ["--alpha: alpha must be from 0"]),
        (["--alpha", "x"], ["--alpha: not a number: 'x'"]),
        (["--alpha", "0.3", "--weight", "prose=1"], ["--alpha and --weight both set the weights"]),
        (["--source", "nope"], ["--source 'nope': expected NAME=PATH"]),
        (["--source", "fi=/no/such/folder"], ["--source fi: /no/such/folder: no such file or folder"]),
        (["INPUT.txt"], ["--source names every input: INPUT cannot go with it"]),
    ],
)
def test_bad_mixes_are_one_line_errors(sources, tmp_path, extra, needles):
    d, _, _ = sources
    positional = [a for a in extra if a == "INPUT.txt"]
    extra = [a for a in extra if a != "INPUT.txt"]
    r = run("train", *positional, "--source", f"prose={d / 'prose'}", "--source", f"code={d / 'code.txt'}", *extra,
            "-o", tmp_path / "out")
    assert_one_line_error(r, *needles)
    assert no_outputs_in(tmp_path) == []


def test_weights_without_sources_are_refused(tmp_path):
    assert_one_line_error(run("train", "--alpha", "0.3", "-o", tmp_path / "out"), "--alpha weights sources: name them with --source")
    assert_one_line_error(run("train", "--weight", "a=1", "-o", tmp_path / "out"), "--weight weights sources")
