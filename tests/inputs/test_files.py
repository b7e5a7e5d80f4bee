"""the Python readers opening inputs (the oracle, python_readers.py) (standard input, .gz and .zst, truncated or corrupt
files, files that cannot be opened)."""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
from pathlib import Path

import pytest

from bpeforge import _inputs as inputs
from bpeforge._inputs import InputError, expand_inputs

from . import python_readers
from .python_readers import read_jsonl, read_text

from .helpers import docs_of, text_source

zstandard = pytest.importorskip("zstandard")


def test_a_file_that_cannot_be_opened_for_another_reason_is_an_input_error(tmp_path):
    loop = tmp_path / "loop.txt"
    loop.symlink_to(loop)  # opening it: "Too many levels of symbolic links"
    with pytest.raises(InputError, match=re.escape(f"{loop}: cannot read it (Too many levels of symbolic links)")):
        python_readers.open_binary(text_source(loop))


def test_closed_standard_input_is_an_input_error(monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)  # what Python sets when started with fd 0 closed
    with pytest.raises(InputError, match="-: standard input is closed"):
        python_readers.open_binary(inputs.Source(Path("-"), "text"))


def test_text_gz_and_zst(tmp_path):
    body = "".join(f"line {i} é\n" for i in range(5000))
    with gzip.open(tmp_path / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write(body)
    (tmp_path / "a.txt.zst").write_bytes(zstandard.ZstdCompressor().compress(body.encode()))
    expected = body.splitlines()
    for name in ["a.txt.gz", "a.txt.zst"]:
        [source] = expand_inputs([str(tmp_path / name)])
        assert docs_of(read_text(source)) == expected


def test_zst_with_several_frames_and_without_content_size(tmp_path):
    c = zstandard.ZstdCompressor()
    p = tmp_path / "multi.txt.zst"
    p.write_bytes(b"".join(c.compress(f"frame {i}\n".encode() * 3) for i in range(4)))
    assert docs_of(read_text(text_source(p))) == [f"frame {i}" for i in range(4) for _ in range(3)]
    out = io.BytesIO()
    with c.stream_writer(out, closefd=False) as w:
        for i in range(2000):
            w.write(f"streamed {i}\n".encode())
    p.write_bytes(out.getvalue())
    assert docs_of(read_text(text_source(p))) == [f"streamed {i}" for i in range(2000)]


@pytest.mark.parametrize("name", ["a.txt.gz", "a.jsonl.gz", "a.txt.zst", "a.jsonl.zst"])
def test_truncated_or_corrupt_compressed_files_are_input_errors(tmp_path, name):
    body = "".join(json.dumps({"text": f"line {i} " * 20}) + "\n" for i in range(3000)).encode()
    packed = gzip.compress(body) if name.endswith(".gz") else zstandard.ZstdCompressor().compress(body)
    source = text_source(tmp_path / name)
    middle = len(packed) // 2
    broken = [packed[:middle], b"garbage" * 10]  # cut off; not compressed at all
    if name.endswith(".gz"):
        # Bytes of the deflate data flipped: zlib's own error ("invalid code lengths set").
        broken.append(packed[:12] + bytes([packed[12] ^ 0xFF]) + packed[13:])
    read = read_text if ".txt" in name else read_jsonl
    for data in broken:
        source.path.write_bytes(data)
        with pytest.raises(InputError, match=re.escape(name) + r": cannot read"):
            docs_of(read(source))


@pytest.mark.parametrize("name", ["e.txt.gz", "e.jsonl.zst", "e.txt.zstd"])
def test_an_empty_compressed_file_is_an_input_error(tmp_path, name):
    """A compressed file is never empty (a header at least): one of 0 bytes was cut short, and
    is an error rather than no documents taken silently."""
    (tmp_path / name).write_bytes(b"")
    (source,) = expand_inputs([str(tmp_path / name)])
    with pytest.raises(InputError, match=re.escape(f"{tmp_path / name}: an empty file, not {source.compression} data (cut short?)")):
        python_readers.open_binary(source)
    (tmp_path / "e.txt").write_bytes(b"")
    assert docs_of(read_text(text_source(tmp_path / "e.txt"))) == []  # an empty text file is no documents
