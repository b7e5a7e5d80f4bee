"""bpeforge._inputs.corpus: the Corpus (counts, doc cap, max chars, held-out documents, the
sample), the same across formats and Parquet's two readers, and the same as the plain Python
oracle's (text and JSONL: tests/inputs/test_rust_readers.py)."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
import strategies
from bpeforge import _core
from bpeforge._inputs import Corpus, Source, expand_inputs

from .helpers import docs_of, write_jsonl
from .python_readers import PythonCorpus

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

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


def test_a_corpus_holds_out_nothing_unless_asked(tmp_path):
    """Counting and reading count everything: the hold-out is the command line's, asked for."""
    lines = [f"doc {i}" for i in range(1000)] + ["x" * 2_000_000]
    c = corpus_of(tmp_path, lines)
    assert docs_of(c) == lines
    assert c.heldout == [] and c.heldout_bytes == 0 and c.documents == 1001 and c.bytes == c.total_bytes


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
    # 5 + 6 + 6 bytes; "doc 39" (6 more) would overflow the budget, and so would every later one.
    assert c.heldout == ["doc 9", "doc 19", "doc 29"] and c.heldout_bytes == 17


def test_a_document_larger_than_what_is_left_of_the_budget_is_trained_on(tmp_path):
    """A large document at a held-out position is trained on, never held out whole, and the next
    such position is tried: one that fits is held out."""
    lines = [f"doc {i}" for i in range(400)]
    lines[99] = "x" * 5000  # larger than the whole budget: trained on
    lines[199] = "y" * 900  # fits: held out
    lines[299] = "z" * 95  # fits in the 100 bytes left: held out
    c = corpus_of(tmp_path, lines, holdout_every=100, holdout_max_bytes=1000)
    got = docs_of(c)
    assert c.heldout == ["y" * 900, "z" * 95] and c.heldout_bytes == 995
    assert "x" * 5000 in got and "doc 399" in got  # 995 + 7 > 1000: trained on
    assert c.bytes + c.heldout_bytes == sum(len(l) for l in lines)
    assert c.bytes >= c.total_bytes - 1000


@settings(max_examples=strategies.examples(100), deadline=None)
@given(sizes=st.lists(st.integers(1, 3000), min_size=1, max_size=60), every=st.integers(1, 5), budget=st.integers(1, 2000),
       fmt=st.sampled_from(["txt", "parquet"]))
def test_training_sees_all_but_the_budget_whatever_the_sizes(tmp_path_factory, sizes, every, budget, fmt):
    """The held-out text never passes the budget, so training sees all of the text but that."""
    lines = ["é" * (n // 2) + "a" * (n % 2) for n in sizes]
    c = Corpus([write_docs(tmp_path_factory.mktemp("c"), lines, fmt)], holdout_every=every, holdout_max_bytes=budget)
    docs = docs_of(c)
    assert c.heldout_bytes == sum(len(d.encode()) for d in c.heldout) <= budget
    assert c.bytes == sum(len(d.encode()) for d in docs) >= sum(sizes) - budget
    assert all(len(d.encode()) <= budget for d in c.heldout)


def write_docs(folder, docs, fmt: str, **parquet) -> Source:
    """``docs`` as a text file (one per line) or a Parquet file's column ``text``."""
    path = folder / f"docs.{fmt}"
    if fmt == "txt":
        path.write_text("".join(d + "\n" for d in docs))
        return Source(path, "text")
    pq.write_table(pa.table({"text": pa.array(docs, pa.string())}), path, **parquet)
    return Source(path, "parquet")


def test_corpus_sample_when_too_small_to_hold_out(tmp_path):
    c = corpus_of(tmp_path, ["a b", "c d"], holdout_every=100)
    assert docs_of(c) == ["a b", "c d"]
    assert c.heldout == [] and c.sample == ["a b", "c d"] and not c.sample_cropped


def test_the_sample_is_bounded_and_cropped_at_a_character_boundary(tmp_path):
    """A document that does not fit in what is left of the sample's budget is cropped to fit,
    at a character boundary, never kept whole; the sample then takes nothing more."""
    c = corpus_of(tmp_path, ["ab", "é" * 100, "cd"], holdout_every=100, holdout_max_bytes=9)
    assert docs_of(c) == ["ab", "é" * 100, "cd"]
    assert c.sample == ["ab", "ééé"] and c.sample_bytes == 8 and c.sample_cropped
    c = corpus_of(tmp_path, ["x" * 3_000_000], holdout_every=100)
    docs_of(c)
    assert c.sample == ["x" * 1_000_000] and c.sample_bytes == 1_000_000


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


@settings(max_examples=strategies.examples(150), deadline=None)
@given(
    files=st.lists(st.tuples(st.lists(st.one_of(st.none(), strategies.texts(max_pieces=5)), max_size=40), st.booleans()),
                   min_size=1, max_size=3),
    doc_cap=st.one_of(st.none(), st.integers(1, 30)),
    max_chars=st.one_of(st.none(), st.integers(1, 400)),
    every=st.sampled_from([0, 1, 2, 3, 7]),
    budget=st.integers(0, 200),
    row_group_size=st.integers(1, 50),
)
def test_parquet_documents_are_selected_as_the_oracle_selects_them(tmp_path_factory, files, doc_cap, max_chars, every, budget,
                                                                   row_group_size):
    """Parquet files read by bpeforge's reader, by pyarrow, and by pyarrow for some row groups:
    the documents cropped, the budget of characters, the hold-out and the sample, across files,
    are those of the plain Python oracle (tests/inputs/python_readers.py), as are the figures."""
    folder = tmp_path_factory.mktemp("pq")
    sources = []
    for i, (docs, large) in enumerate(files):
        path = folder / f"{i}.parquet"
        docs = [None if d is None else d.encode("utf-8", "replace").decode() for d in docs]  # (Parquet holds UTF-8)
        pq.write_table(pa.table({"text": pa.array(docs, pa.large_string() if large else pa.string())}), path,
                       row_group_size=row_group_size)
        groups = pq.ParquetFile(path).num_row_groups
        sources.append(Source(path, "parquet", row_groups=tuple(range(groups // 2, groups)) if large and groups else None))
    kw = dict(doc_cap=doc_cap, max_chars=max_chars, holdout_every=every, holdout_max_bytes=budget)
    want = PythonCorpus(sources, **kw)
    want_docs = docs_of(want)
    for arrow in (False, True):
        for readers in (False, True):
            c = Corpus(sources, arrow=arrow, readers=readers, **kw)
            if readers:  # as the trainer reads them: in Rust
                got_docs = [d for reader in c for batch in reader for d in batch]
            else:
                got_docs = docs_of(c)
            assert got_docs == want_docs, (arrow, readers)
            for attr in FIGURES:
                assert getattr(c, attr) == getattr(want, attr), (attr, arrow, readers)


FIGURES = ("documents", "chars", "bytes", "heldout", "heldout_chars", "heldout_bytes", "sample", "sample_bytes", "sample_cropped",
           "stopped_early")


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
    for arrow in (False, True):  # the readers themselves, read by the trainer in Rust (as the command line does)
        c = Corpus([Source(p, "parquet")], arrow=arrow, readers=True, **kw)
        tc = _core.Trainer()
        tc.train_from_iterator(c, 400)
        assert tc.get_mergeable_ranks() == ta.get_mergeable_ranks()
        assert (tc.stats["texts"], c.documents, c.bytes, c.heldout, c.sample) == (ta.stats["texts"], a.documents, a.bytes, a.heldout, a.sample)
