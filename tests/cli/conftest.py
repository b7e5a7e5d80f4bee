"""Fixtures of the command line's tests."""

import gzip
import json

import pytest

from .helpers import make_docs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The same 2,000 documents as .txt, .jsonl, .parquet, .txt.gz and .jsonl.zst."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    zstandard = pytest.importorskip("zstandard")
    d = tmp_path_factory.mktemp("corpus")
    docs = make_docs()
    text = "".join(doc + "\n" for doc in docs)
    jsonl = "".join(json.dumps({"id": i, "text": doc}) + "\n" for i, doc in enumerate(docs))
    (d / "docs.txt").write_text(text)
    (d / "docs.jsonl").write_text(jsonl)
    pq.write_table(pa.table({"id": list(range(len(docs))), "text": docs}), d / "docs.parquet", row_group_size=300)
    (d / "docs.txt.gz").write_bytes(gzip.compress(text.encode()))
    (d / "docs.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(jsonl.encode()))
    return d, docs
