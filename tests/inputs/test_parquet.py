"""bpeforge._inputs.parquet: documents of Parquet files, with bpeforge's reader and with pyarrow
(batches, string flavours, errors, invalid UTF-8, a broken pyarrow); both are Rust readers that
select the documents (their selection: tests/inputs/test_corpus.py)."""

from __future__ import annotations

import re
import struct
import sys

import pytest

from bpeforge import _inputs as inputs
from bpeforge._inputs import InputError, Source, parquet_reader

from .helpers import docs_of, text_source

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

STRING_TYPES = [pa.string(), pa.large_string()] + ([pa.string_view()] if hasattr(pa, "string_view") else [])


# arrow=False: bpeforge.ParquetReader; arrow=True: pyarrow, the command line's --parquet-reader pyarrow.
@pytest.mark.parametrize("arrow", [False, True])
def test_parquet_by_batches(tmp_path, arrow):
    texts = [f"row {i}" if i % 7 else None for i in range(2500)]
    p = tmp_path / "a.parquet"
    pq.write_table(pa.table({"id": list(range(2500)), "text": texts}), p, row_group_size=1000)
    batches = list(parquet_reader(text_source(p), batch_rows=500, arrow=arrow))
    assert len(batches) >= 5 and all(len(b) <= 500 for b in batches)
    assert docs_of(batches) == [t for t in texts if t]
    assert inputs.check_parquet(text_source(p), arrow=arrow) == 2500


@pytest.mark.parametrize("arrow", [False, True])
def test_parquet_string_flavours(tmp_path, arrow):
    texts = ["a", "b", "a"]
    for name, arr in [
        ("large", pa.array(texts, pa.large_string())),
        ("dict", pa.array(texts).dictionary_encode()),
    ]:
        p = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"text": arr}), p)
        assert docs_of(parquet_reader(text_source(p), arrow=arrow)) == texts


@pytest.mark.parametrize(
    "content, message",
    [
        (b"this is not parquet at all, just bytes", "not a readable Parquet file"),
        (b"", "not a readable Parquet file"),
        ("nocol", "no column 'text' (columns: body)"),
        ("intcol", "column 'text' holds int64, not strings"),
        ("twocols", "2 columns are named 'text'"),
    ],
)
@pytest.mark.parametrize("arrow", [False, True])
def test_parquet_errors(tmp_path, content, message, arrow):
    p = tmp_path / "x.parquet"
    if content == "nocol":
        pq.write_table(pa.table({"body": ["x"]}), p)
    elif content == "twocols":
        pq.write_table(pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"])], names=["text", "text"]), p)
    elif content == "intcol":
        pq.write_table(pa.table({"text": [1, 2]}), p)
    else:
        p.write_bytes(content)
    with pytest.raises(InputError, match=re.escape(message)) as e:
        inputs.check_parquet(text_source(p), arrow=arrow)
    assert str(p) in str(e.value)
    with pytest.raises(InputError, match=re.escape(message)):
        docs_of(parquet_reader(text_source(p), arrow=arrow))


@pytest.mark.parametrize("arrow", [False, True])
def test_truncated_parquet(tmp_path, arrow):
    p = tmp_path / "x.parquet"
    pq.write_table(pa.table({"text": [f"row {i}" for i in range(10000)]}), p)
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with pytest.raises(InputError, match="not a readable Parquet file"):
        docs_of(parquet_reader(text_source(p), arrow=arrow))


def test_a_broken_pyarrow_is_not_called_missing(monkeypatch):
    class Broken:
        def find_spec(self, name, path=None, target=None):
            if name == "pyarrow" or name.startswith("pyarrow."):
                raise ImportError("compiled against another NumPy")
            return None

    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [Broken(), *sys.meta_path])
    with pytest.raises(inputs.InputError, match="installed but fails to import: compiled against another NumPy"):
        inputs.parquet._pyarrow()
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # not installed
    with pytest.raises(inputs.InputError, match=r"needs pyarrow \(pip install 'bpeforge\[parquet\]'\)"):
        inputs.parquet._pyarrow()


def test_parquet_arrow_batches(tmp_path):
    """pyarrow's record batches reach Rust as Arrow arrays, of every string type; nulls and empty
    strings are left out, as bpeforge's reader leaves them out."""
    texts = [f"row {i} é" if i % 7 else (None if i % 2 else "") for i in range(2500)]
    p = tmp_path / "a.parquet"
    pq.write_table(pa.table({"id": list(range(2500)), "text": texts}), p, row_group_size=1000)
    source = Source(p, "parquet")
    batches = list(parquet_reader(source, batch_rows=500, arrow=True))
    assert all(isinstance(b, list) and 0 < len(b) <= 500 for b in batches)
    assert docs_of(batches) == [t for t in texts if t]
    assert docs_of(parquet_reader(source, batch_rows=500)) == [t for t in texts if t]
    assert docs_of(parquet_reader(Source(p, "parquet", row_groups=(1, 2)))) == [t for t in texts[1000:] if t]
    for typ in STRING_TYPES + [pa.dictionary(pa.int32(), pa.string())]:
        q = tmp_path / f"{typ}.parquet"
        pq.write_table(pa.table({"text": pa.array(texts).cast(typ)}), q)
        assert docs_of(parquet_reader(Source(q, "parquet"), arrow=True)) == [t for t in texts if t], typ


def test_parquet_with_invalid_utf8_is_an_input_error(tmp_path):
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(struct.pack("<3i", 0, 2, 4)), pa.py_buffer(b"ok\xff\xfe")])
    p = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"text": bad}), p)
    with pytest.raises(inputs.InputError, match="bad.parquet: cannot read") as e:
        list(parquet_reader(Source(p, "parquet"), arrow=True))
    assert "the array of rows 0 to 1" in str(e.value) and "not valid UTF-8" in str(e.value)
    with pytest.raises(inputs.InputError, match=r"bad.parquet: row 1 of column 'text' is not UTF-8"):
        list(parquet_reader(Source(p, "parquet")))


@pytest.mark.parametrize("dictionary", [False, True])
@pytest.mark.parametrize("arrow", [False, True])
def test_a_page_whose_checksum_fails_is_refused(tmp_path, arrow, dictionary):
    """A file written with page checksums, one byte of a text changed: both readers refuse it,
    as pyarrow's own check does, instead of reading the changed text."""
    p = tmp_path / "x.parquet"
    texts = [f"row {i} of the sums" for i in range(1000)] + ["the checked text"]
    pq.write_table(pa.table({"text": texts}), p, compression="none", use_dictionary=dictionary, write_statistics=False, write_page_checksum=True)
    assert p.read_bytes().count(b"the checked text") == 1  # in a page, not in statistics
    assert docs_of(parquet_reader(text_source(p), arrow=arrow)) == texts
    data = bytearray(p.read_bytes())
    at = data.index(b"the checked text")
    data[at] = ord("T")
    p.write_bytes(bytes(data))
    with pytest.raises(OSError):
        pq.ParquetFile(p, page_checksum_verification=True).read()
    with pytest.raises(InputError, match="(?i)crc|checksum") as e:
        docs_of(parquet_reader(text_source(p), arrow=arrow))
    assert str(p) in str(e.value)
