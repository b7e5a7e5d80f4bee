"""A file cut short or rewritten in place while it is read: every reader (bpeforge's in Rust,
the Python ones, pyarrow's) stops with an error naming the file, at the latest at its end,
instead of training on what it read as if it were the whole file."""

from __future__ import annotations

import gzip
import json
import os
import random

import pytest

from bpeforge import InputError, JsonlReader, ParquetReader, TextReader
from bpeforge._inputs import Source, parquet_reader

from .python_readers import read_jsonl, read_text

zstandard = pytest.importorskip("zstandard")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

_RNG = random.Random(0)
LINES = [_RNG.randbytes(40).hex() for _ in range(100_000)]  # 8 MB, compressed 4 MB


def cut(path):
    os.truncate(path, path.stat().st_size // 3)


def touch(path):
    os.utime(path, ns=(10**9, 10**9))  # rewritten in place: same size, another time


def write_text(tmp_path, how: str):
    data = "".join(line + "\n" for line in LINES).encode()
    path = tmp_path / ("f.txt" + {"plain": "", "gzip": ".gz", "zstd": ".zst"}[how])
    path.write_bytes({"plain": data, "gzip": gzip.compress(data, 1), "zstd": zstandard.ZstdCompressor().compress(data)}[how])
    return path, (None if how == "plain" else how)


def write_jsonl(tmp_path, how: str):
    path = tmp_path / "f.jsonl"
    path.write_text("".join(json.dumps({"text": line}) + "\n" for line in LINES))
    return path, None


def write_parquet(tmp_path, how: str):
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"text": LINES}), path, row_group_size=10_000, compression="none")
    return path, None


READERS = {
    "TextReader": (write_text, lambda p, c: TextReader(p, compression=c, batch_docs=1000)),
    "read_text": (write_text, lambda p, c: read_text(Source(p, "text", c))),
    "JsonlReader": (write_jsonl, lambda p, c: JsonlReader(p, batch_docs=1000)),
    "read_jsonl": (write_jsonl, lambda p, c: read_jsonl(Source(p, "jsonl", c))),
    "ParquetReader": (write_parquet, lambda p, c: ParquetReader(p, batch_rows=1000)),
    "pyarrow": (write_parquet, lambda p, c: parquet_reader(Source(p, "parquet", None), arrow=True, batch_rows=1000)),
}
CASES = [(name, how) for name in READERS for how in (["plain", "gzip", "zstd"] if "ext" in name.lower() else ["plain"])]


@pytest.mark.parametrize("change", [cut, touch])
@pytest.mark.parametrize("reader, how", CASES)
def test_a_file_changed_while_it_is_read_is_an_error(tmp_path, reader, how, change):
    write, open_reader = READERS[reader]
    path, compression = write(tmp_path, how)
    assert sum(map(len, open_reader(path, compression))) == len(LINES)  # unchanged, read whole
    batches = iter(open_reader(path, compression))
    first = next(batches)
    assert 0 < len(first) < len(LINES)
    change(path)
    # (ParquetReader raises ValueError for what a file holds, as for a damaged page.)
    with pytest.raises(ValueError if reader == "ParquetReader" else InputError, match="changed while it was read") as e:
        for _ in batches:
            pass
    assert str(path) in str(e.value)
