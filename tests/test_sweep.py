"""bpeforge._sweep: compression at several vocabulary sizes of one training, the table, the files
it writes, and its checks of the sizes."""

from __future__ import annotations

import csv
import io
import json
import sys
import warnings

import pytest

import bpeforge
from bpeforge._eval import TextFile, evaluate
from bpeforge._sweep import Sweep, check_vocab_sizes, evaluate_vocab_sizes, sweep_vocab_sizes

TEXTS = ["the cat sat on the mat; the rat ate the hat, and that was that"] * 20 + [
    "a cat is not a hat, and a mat is not a rat"
] * 10
SIZES = [260, 270, 280]


@pytest.fixture(scope="module")
def sweep():
    return sweep_vocab_sizes(TEXTS, SIZES, {"held": TEXTS[-1], "docs": TEXTS[:3]}, special_tokens=["<|bos|>"], corpus="cats")


def test_each_size_is_the_training_to_that_size(sweep):
    for size in SIZES:
        direct = bpeforge.Tokenizer.train_from_iterator(TEXTS, size, special_tokens=["<|bos|>"])
        assert sweep.tokenizers[size].mergeable_ranks == direct.mergeable_ranks
        assert sweep.tokenizers[size].special_tokens == direct.special_tokens


def test_rows_are_evaluate_s_counts(sweep):
    """A str is counted as bpeforge.evaluate counts it; a list of documents as the sum of each
    document encoded alone."""
    assert [(r.source, r.vocab_size) for r in sweep.rows] == [(s, n) for s in ("held", "docs") for n in SIZES]
    for r in sweep.rows:
        tok = sweep.tokenizers[r.vocab_size]
        if r.source == "held":
            (expected,) = evaluate([tok], {"held": TEXTS[-1]})
            assert (r.bytes, r.chars, r.tokens) == (expected.bytes, expected.chars, expected.tokens)
        else:
            assert r.tokens == sum(len(tok.encode_ordinary(d)) for d in TEXTS[:3])
            assert r.bytes == sum(len(d.encode()) for d in TEXTS[:3])
        assert r.bytes_per_token == r.bytes / r.tokens
    by_source = [r for r in sweep.rows if r.source == "docs"]
    assert by_source[0].tokens_saved is None
    for before, after in zip(by_source, by_source[1:]):
        assert after.tokens_saved == pytest.approx((before.tokens - after.tokens) / before.tokens * 100)
        assert after.tokens < before.tokens


def test_a_text_file_counts_as_its_text(sweep, tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(TEXTS[-1], encoding="utf-8")
    tok = sweep.tokenizers[SIZES[-1]]
    from_file = evaluate_vocab_sizes(tok, SIZES, {"held": TextFile(path)})
    assert from_file == [r for r in sweep.rows if r.source == "held"]


def test_save_writes_loadable_prefix_tokenizers_and_the_tables(sweep, tmp_path):
    pytest.importorskip("matplotlib")
    plot = sweep.save(tmp_path / "out")
    out = tmp_path / "out"
    assert plot == out / "sweep.png"
    largest = bpeforge.Tokenizer.load(out / str(SIZES[-1]))
    for size in SIZES:
        tok = bpeforge.Tokenizer.load(out / str(size))
        assert tok.n_vocab == size
        n_ranks = size - 1
        assert tok.mergeable_ranks == {t: r for t, r in largest.mergeable_ranks.items() if r < n_ranks}
        assert tok.special_tokens == {"<|bos|>": n_ranks}
        assert (out / f"{size}.tiktoken").read_bytes() == (out / str(size) / "tokenizer.tiktoken").read_bytes()
    rows = list(csv.DictReader(io.StringIO((out / "sweep.csv").read_text())))
    assert [(r["source"], int(r["vocab_size"]), int(r["tokens"])) for r in rows] == [(r.source, r.vocab_size, r.tokens) for r in sweep.rows]
    assert rows[0]["tokens_saved"] == "" and float(rows[1]["tokens_saved"]) == pytest.approx(sweep.rows[1].tokens_saved)
    data = json.loads((out / "sweep.json").read_text())
    assert data["format"] == "bpeforge-sweep" and data["corpus"] == "cats" and data["vocab_sizes"] == SIZES
    assert data["rows"] == [r._asdict() for r in sweep.rows]
    assert data["special_tokens"] == ["<|bos|>"]


def test_save_without_matplotlib_writes_the_tables_only(sweep, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    assert sweep.save(tmp_path / "out") is None
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name[0].isdigit()) == ["sweep.csv", "sweep.json"]
    with pytest.raises(bpeforge._plot.PlotUnavailable, match=r"pip install 'bpeforge\[plot\]'"):
        sweep.save(tmp_path / "again", plot=True)
    assert sweep.save(tmp_path / "never", plot=False) is None


def test_sizes_training_did_not_reach_are_left_out_with_a_warning():
    with pytest.warns(UserWarning, match=r"training stopped at \d+ tokens \(no pair is left\): the size 5,000 is beyond it"):
        result = sweep_vocab_sizes(TEXTS, [260, 5000], {"t": TEXTS[0]}, special_tokens=[])
    assert result.vocab_sizes == [260] and len(result.notes) == 1
    with pytest.raises(ValueError, match="the sizes 4,000 and 5,000 are beyond it"):
        sweep_vocab_sizes(TEXTS, [4000, 5000], {"t": TEXTS[0]}, special_tokens=[])


@pytest.mark.parametrize(
    "sizes, n_special, error, message",
    [
        ([], 0, ValueError, "no vocab sizes"),
        ([512, 512], 0, ValueError, "vocab size 512 is given twice"),
        ([1024, 512], 0, ValueError, "must be increasing: 512 comes after 1,024"),
        ([260, 512], 9, ValueError, r"vocab size 260 is too small: at least 256 bytes \+ 9 special tokens = 265"),
        ([1 << 32], 0, ValueError, "too large"),
        (["512"], 0, TypeError, "a vocab size must be an int"),
        ("512", 0, TypeError, "not a str"),
    ],
)
def test_bad_sizes_are_refused(sizes, n_special, error, message):
    with pytest.raises(error, match=message):
        check_vocab_sizes(sizes, n_special)


def test_a_size_above_the_tokenizer_is_refused(hello):
    with pytest.raises(ValueError, match="larger than the tokenizer's 261 tokens"):
        evaluate_vocab_sizes(hello, [258, 300], {"t": "hello"})


@pytest.mark.parametrize("texts, message", [({}, "no texts"), ({"t": ""}, "'t' is empty"), ({"d": []}, "'d' is empty")])
def test_empty_texts_are_refused(hello, texts, message):
    with pytest.raises(bpeforge.EvalError, match=message):
        Sweep.from_tokenizer(hello, [258], texts)


def test_table_and_repr(sweep):
    table = sweep.table().splitlines()
    assert table[0].split() == ["Source", "Vocab", "size", "Bytes/token", "Tokens", "Tokens/char", "Saved"]
    assert table[2].split()[:2] == ["held", "260"] and table[3].split()[0] == "270"
    assert table[5].split()[:2] == ["docs", "260"]
    assert repr(sweep) == "<bpeforge._sweep.Sweep vocab_sizes=[260, 270, 280] sources=['held', 'docs']>"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bpeforge._sweep.Sweep is Sweep and bpeforge.sweep is sweep_vocab_sizes
