"""bpeforge.inputs.corpus: the Corpus (counts, doc cap, max chars, held-out documents, the
sample), the same across formats and across the list and Arrow paths."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
import strategies
from bpeforge import _core
from bpeforge.inputs import Corpus, Source, expand_inputs

from .helpers import docs_of, write_jsonl

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

docs_lists = st.lists(st.lists(strategies.texts(max_pieces=5).filter(bool), max_size=12), max_size=8)


def corpus_of(tmp_path, lines, **kw) -> Corpus:
    p = tmp_path / "c.txt"
    p.write_text("".join(line + "\n" for line in lines))
    return Corpus(expand_inputs([str(p)]), **kw)


def test_corpus_counts_and_doc_cap(tmp_path):
    lines = [f"doc {i} " + "é" * i for i in range(50)]
    c = corpus_of(tmp_path, lines, doc_cap=10)
    got = docs_of(c)
    assert got == [d[:10] for d in lines]
    assert c.documents == 50 and c.chars == sum(map(len, got)) and c.bytes == sum(len(d.encode()) for d in got)
    assert not c.stopped_early and c.heldout == []


def test_corpus_max_chars_is_exact(tmp_path):
    lines = [f"document number {i}" for i in range(5000)]
    c = corpus_of(tmp_path, lines, max_chars=1000)
    got = docs_of(c)
    assert c.stopped_early and sum(map(len, got)) == 1000 == c.chars
    assert "".join(got) == "".join(lines)[:1000]


def test_corpus_holdout_every_nth_up_to_a_byte_budget(tmp_path):
    lines = [f"doc {i}" for i in range(1000)]
    c = corpus_of(tmp_path, lines, holdout_every=100)
    got = docs_of(c)
    assert c.heldout == [f"doc {i}" for i in range(99, 1000, 100)]
    assert got == [d for i, d in enumerate(lines) if i % 100 != 99]
    assert c.documents == 990 and c.heldout_chars == sum(map(len, c.heldout))
    c = corpus_of(tmp_path, lines, holdout_every=10, holdout_max_bytes=20)
    docs_of(c)
    assert c.heldout == ["doc 9", "doc 19", "doc 29", "doc 39"]  # 4 x 5 bytes, then training gets everything


def test_corpus_sample_when_too_small_to_hold_out(tmp_path):
    c = corpus_of(tmp_path, ["a b", "c d"], holdout_every=100)
    assert docs_of(c) == ["a b", "c d"]
    assert c.heldout == [] and c.sample == ["a b", "c d"]


def test_corpus_across_formats_is_identical(tmp_path):
    texts = [f"the text of document {i}" for i in range(300)]
    (tmp_path / "a.txt").write_text("\n".join(texts))
    write_jsonl(tmp_path / "b.jsonl", [{"text": t} for t in texts])
    pq.write_table(pa.table({"text": texts}), tmp_path / "c.parquet")
    for name in ["a.txt", "b.jsonl", "c.parquet"]:
        c = Corpus(expand_inputs([str(tmp_path / name)]), holdout_every=100)
        assert docs_of(c) == [t for i, t in enumerate(texts) if i % 100 != 99], name
        assert len(c.heldout) == 3


def test_corpus_trains_through_list_batches(tmp_path):
    lines = ["hello world"] * 40
    c = corpus_of(tmp_path, lines)
    tok = bpeforge.Tokenizer.train_from_iterator(c, vocab_size=260, special_tokens=[])
    assert tok.decode(tok.encode("hello world")) == "hello world"


@settings(max_examples=150, deadline=None)
@given(
    batches=docs_lists,
    doc_cap=st.one_of(st.none(), st.integers(1, 30)),
    max_chars=st.one_of(st.none(), st.integers(1, 400)),
    every=st.sampled_from([0, 1, 2, 3, 7]),
    budget=st.integers(1, 200),
    large=st.booleans(),
)
def test_corpus_arrow_batches_match_list_batches(batches, doc_cap, max_chars, every, budget, large):
    """Corpus._take_arrow (pyarrow.compute) and Corpus._take (Python) give the same documents,
    held-out slice, sample and figures, batch after batch."""
    kw = dict(doc_cap=doc_cap, max_chars=max_chars, holdout_every=every, holdout_max_bytes=budget)
    a, b = Corpus([], **kw), Corpus([], arrow=True, **kw)
    for docs in batches:
        if a.stopped_early:
            break
        got_a = a._take(list(docs))
        got_b = b._take_arrow(pa.array(docs, pa.large_string() if large else pa.string()))
        assert got_b.to_pylist() == got_a
        assert got_b.null_count == 0
    for attr in ("documents", "chars", "bytes", "heldout", "heldout_chars", "heldout_bytes", "sample", "sample_bytes", "stopped_early"):
        assert getattr(b, attr) == getattr(a, attr), attr


def test_holding_out_slices_the_batch_without_copying_it():
    docs = pa.array([f"document {i}" for i in range(1000)])
    c = Corpus([], arrow=True, holdout_every=10, holdout_max_bytes=10_000)
    got = c._take_arrow(docs)
    assert c.heldout == [f"document {i}" for i in range(9, 1000, 10)]
    assert got.to_pylist() == [f"document {i}" for i in range(1000) if i % 10 != 9]
    data = docs.buffers()[2].address
    assert got.num_chunks == 100 and all(chunk.buffers()[2].address == data for chunk in got.chunks)


def test_corpus_from_parquet_trains_like_str(tmp_path):
    texts = [f"document {i}: " + "naïve text " * (i % 13) for i in range(3000)]
    p = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": texts}), p, row_group_size=700)
    kw = dict(doc_cap=50, max_chars=60_000, holdout_every=100)
    a = Corpus([Source(p, "parquet")], **kw)
    b = Corpus([Source(p, "parquet")], arrow=True, **kw)
    ta, tb = _core.Trainer(), _core.Trainer()
    ta.train_from_iterator(a, 400)
    tb.train_from_iterator(b, 400)
    assert ta.get_mergeable_ranks() == tb.get_mergeable_ranks()
    assert ta.stats["texts"] == tb.stats["texts"] == a.documents == b.documents
    assert ta.stats["bytes"] == tb.stats["bytes"] == a.bytes == b.bytes
    assert (a.chars, a.heldout, a.sample, a.stopped_early) == (b.chars, b.heldout, b.sample, b.stopped_early)
    assert a.stopped_early and a.total_chars == 60_000
