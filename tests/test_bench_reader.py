"""The benchmarks' .txt reader (benches/benchlib.py) hands the trainers the open file itself: it
must give the same texts, and count the same texts and bytes, as decoding the file's lines one by
one, whole or cut at a fraction of its bytes."""

import os
import sys

import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benches"))
import benchlib  # noqa: E402
from strategies import examples  # noqa: E402


def lines_decoded_one_by_one(path, fraction):
    """The plain reading: binary lines (ended by b"\\n" only), each decoded with replacement,
    taken while fewer than `fraction` of the file's bytes were taken before."""
    budget = os.path.getsize(path) * fraction if fraction < 1 else float("inf")
    texts, taken = [], 0
    with open(path, "rb") as f:
        for raw in f:
            if taken >= budget:
                break
            texts.append(raw.decode("utf-8", "replace"))
            taken += len(raw)
    return texts, taken


# Pieces that make lines interesting: \r alone and in \r\n, invalid and cut-short UTF-8, other
# line breaks that universal newlines would split at, multi-byte characters.
PIECES = [b"a", b"word ", b"\n", b"\r", b"\r\n", b"\xff", b"\xe2\x82", b"\xe2\x82\xac", b"\x85", b"\xe2\x80\xa8", b"\x0b", b"\x1c", b" "]


# (The reader leaves its file open, for the benchmark's child process to end with.)
@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
@settings(max_examples=examples(150), deadline=None)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=60), fraction=st.sampled_from([1.0, 0.75, 0.5, 0.125, 0.01]))
def test_the_file_reader_gives_the_lines_decoded_one_by_one(tmp_path_factory, pieces, fraction):
    path = tmp_path_factory.mktemp("txt") / "corpus.txt"
    path.write_bytes(b"".join(pieces))
    want, taken = lines_decoded_one_by_one(path, fraction)
    stats = benchlib.Stats()
    got = list(benchlib._iter_txt(str(path), fraction, stats))
    assert got == want
    assert (stats.texts, stats.bytes) == (len(want), taken)


@settings(max_examples=examples(60), deadline=None)
@given(docs=st.lists(st.none() | st.text(st.characters(codec="utf-8"), max_size=20), max_size=80),
       fraction=st.sampled_from([1.0, 0.75, 0.5, 0.125, 0.01]), row_group_size=st.integers(1, 50),
       feed=st.sampled_from(["str", "list"]))
def test_the_parquet_readers_give_the_same_texts_and_counts(tmp_path_factory, docs, fraction, row_group_size, feed):
    """The benchmarks read a .parquet corpus with bpeforge.ParquetReader or with pyarrow: the
    same texts (nulls and empty strings skipped; `round(rows * fraction)` of them), and the same counts of texts
    and bytes."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path_factory.mktemp("pq") / "corpus.parquet"
    pq.write_table(pa.table({"text": pa.array(docs, pa.string())}), path, row_group_size=row_group_size)
    texts = [d for d in docs if d]
    limit = round(len(docs) * fraction) if fraction < 1 else len(texts)
    got = {}
    for reader in benchlib.PARQUET_READERS:
        stats = benchlib.Stats()
        items = list(benchlib._iter_parquet(str(path), fraction, stats, feed, reader))
        flat = [t for batch in items for t in batch] if feed == "list" else items
        got[reader] = (flat, stats.texts, stats.bytes)
    want = texts[:limit]
    assert got["bpeforge"] == got["pyarrow"] == (want, len(want), sum(len(d.encode()) for d in want))
