"""the Python JSONL reader (the oracle, python_readers.py): documents of JSONL files (the text field; bad lines named or skipped;
byte-order marks; .zst)."""

from __future__ import annotations

import json
import re

import pytest

from bpeforge import JsonlReader, _inputs as inputs
from bpeforge._inputs import InputError

from .python_readers import read_jsonl

from .helpers import docs_of, text_source, write_jsonl

zstandard = pytest.importorskip("zstandard")


def test_jsonl_reads_the_text_field(tmp_path):
    p = tmp_path / "a.jsonl"
    write_jsonl(p, [{"text": "one", "id": 1}, {"text": None}, {"text": ""}, "", {"text": "two\nlines"}, {"body": "x", "text": "three"}])
    assert docs_of(read_jsonl(text_source(p))) == ["one", "two\nlines", "three"]
    write_jsonl(p, [{"body": "b1"}, {"body": "b2"}])
    assert docs_of(read_jsonl(text_source(p), "body")) == ["b1", "b2"]


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"text": broken', "not valid JSON"),
        ('{"text": "broken', "not valid JSON (Unterminated string starting at: line 1 column 10"),  # cut short
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"body": "x"}', "no 'text' field (fields: body)"),
        ('{"text": 5}', "field 'text' is a int, expected a string"),
        ("[" * 100_000, "not readable JSON (nested too deeply)"),
    ],
)
def test_jsonl_bad_lines_name_file_and_line(tmp_path, line, message):
    p = tmp_path / "bad.jsonl"
    write_jsonl(p, [{"text": "ok"}, line, {"text": "after"}])
    with pytest.raises(InputError) as e:
        docs_of(read_jsonl(text_source(p)))
    assert f"{p}:2: " in str(e.value) and message in str(e.value) and "--skip-bad-lines" in str(e.value)
    bad = inputs.BadLines()
    assert docs_of(read_jsonl(text_source(p), skip_bad_lines=True, bad_lines=bad)) == ["ok", "after"]
    assert bad.count == 1 and bad.examples[0].startswith(f"{p}:2: ")
    with pytest.raises(InputError) as rust:  # the same message from the reader in Rust
        docs_of(JsonlReader(p))
    assert str(rust.value) == str(e.value)


@pytest.mark.parametrize(
    "line, message",
    [
        (b'{"text": "\xff"}', "not valid UTF-8 (invalid start byte at byte 10)"),
        # The UTF-8 encoding of the surrogate U+D800, which json.loads(bytes) would let through.
        (b'{"text": "a\xed\xa0\x80b"}', "not valid UTF-8 (invalid continuation byte at byte 11)"),
        (b'{"text": "half \\ud800 pair"}', "field 'text' holds a lone surrogate '\\ud800' at character 5 (not valid Unicode)"),
        (b'{"text": "\\udc00"}', "field 'text' holds a lone surrogate '\\udc00' at character 0 (not valid Unicode)"),
    ],
)
def test_jsonl_invalid_utf8_and_lone_surrogates_are_bad_lines(tmp_path, line, message):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"text": "ok"}\n' + line + b'\n{"text": "pair \\ud83d\\ude00 \xc3\xa9"}\n')
    with pytest.raises(InputError) as e:
        docs_of(read_jsonl(text_source(p)))
    assert str(e.value) == f"{p}:2: {message} (skip such lines with --skip-bad-lines, or skip_bad_lines=True in Python)"
    bad = inputs.BadLines()
    docs = docs_of(read_jsonl(text_source(p), skip_bad_lines=True, bad_lines=bad))
    assert docs == ["ok", "pair \U0001F600 \u00e9"]
    assert bad.count == 1 and bad.examples == [f"{p}:2: {message}"]


def test_jsonl_byte_order_mark(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"text": "first"}\n{"text": "second"}\n')
    assert docs_of(read_jsonl(text_source(p))) == ["first", "second"]
    p.write_bytes(b'\xef\xbb\xbf{"text": "\xff"}\n')
    with pytest.raises(InputError, match=re.escape(f"{p}:1: not valid UTF-8 (invalid start byte at byte 13)")):
        docs_of(read_jsonl(text_source(p)))


def test_jsonl_first_line_of_only_a_byte_order_mark_is_blank(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'\xef\xbb\xbf\n{"text": "hello world"}\n')
    assert docs_of(read_jsonl(text_source(p))) == ["hello world"]
    p.write_bytes(b'\xef\xbb\xbf  \r\n{"text": "x"}\n')
    assert docs_of(read_jsonl(text_source(p))) == ["x"]


def test_jsonl_zst_streams(tmp_path):
    rows = [{"text": f"document {i}"} for i in range(3000)]
    raw = "".join(json.dumps(r) + "\n" for r in rows).encode()
    p = tmp_path / "a.jsonl.zst"
    p.write_bytes(zstandard.ZstdCompressor().compress(raw))
    batches = list(read_jsonl(text_source(p)))
    assert len(batches) == 3 and max(len(b) for b in batches) <= inputs.BATCH_DOCS
    assert docs_of(batches) == [r["text"] for r in rows]
