"""TextReader and JsonlReader with ``byte_range``: ranges that tile a file read its documents
once each, in order, as reading it whole does, wherever the cuts fall (inside a separator, a
CRLF, a multi-byte character, a byte-order mark); errors and skipped lines name the lines of
the whole file; what cannot be cut (compressed, a separator that overlaps itself) is refused."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpeforge import InputError, JsonlReader, TextReader
from strategies import examples

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
PIECES = [b"word", b" ", b"caf\xc3\xa9", b"\xf0\x9f\x98\x80", b"\n", b"\r\n", b"\r", b"<|e|>", b"<|", b"\xef\xbb\xbf", b"\t", b"x" * 50]


def read_all(reader):
    return [d for batch in reader for d in batch]


def tiles(size, cuts):
    bounds = sorted({0, size, *[c % (size + 1) for c in cuts]})
    return list(zip(bounds, bounds[1:])) or [(0, 0)]


@SETTINGS
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=40), cuts=st.lists(st.integers(0, 10_000), max_size=6),
       separator=st.sampled_from(["\n", "<|e|>"]))
def test_text_ranges_read_what_the_whole_file_reads(tmp_path, pieces, cuts, separator):
    data = b"".join(pieces)
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    whole = read_all(TextReader(path, separator, skip_bad_lines=True))
    parts = [d for a, b in tiles(len(data), cuts) for d in read_all(TextReader(path, separator, skip_bad_lines=True, byte_range=(a, b)))]
    assert parts == whole


@SETTINGS
@given(texts=st.lists(st.one_of(st.text(max_size=30), st.none()), max_size=30), cuts=st.lists(st.integers(0, 10_000), max_size=6),
       blank=st.booleans())
def test_jsonl_ranges_read_what_the_whole_file_reads(tmp_path, texts, cuts, blank):
    lines = [json.dumps({"text": t}) for t in texts if not (isinstance(t, str) and any(0xD800 <= ord(c) < 0xE000 for c in t))]
    data = ("\ufeff" + ("\n\n" if blank else "\n").join(lines)).encode()
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    whole = read_all(JsonlReader(path))
    parts = [d for a, b in tiles(len(data), cuts) for d in read_all(JsonlReader(path, byte_range=(a, b)))]
    assert parts == whole


def test_errors_name_lines_of_the_whole_file(tmp_path):
    text = tmp_path / "f.txt"
    text.write_bytes(b"one\ntwo\nthree\nfour \xe9\nfive\n")
    with pytest.raises(InputError, match=r"f\.txt:4: not valid UTF-8"):
        read_all(TextReader(text, byte_range=(9, 30)))
    jsonl = tmp_path / "f.jsonl"
    jsonl.write_text('{"text": "a"}\n{"text": "b"}\n\n{"text": 3}\n')
    with pytest.raises(InputError, match=r"f\.jsonl:4: "):
        read_all(JsonlReader(jsonl, byte_range=(10, 100)))
    reader = JsonlReader(jsonl, skip_bad_lines=True, byte_range=(10, 100))  # from line 2
    assert read_all(reader) == ["b"] and reader.bad_lines == 1 and ":4:" in reader.bad_line_examples[0]


def test_what_cannot_be_cut_is_refused(tmp_path):
    import gzip

    gz = tmp_path / "f.txt.gz"
    gz.write_bytes(gzip.compress(b"a\nb\n"))
    with pytest.raises(ValueError, match="uncompressed"):
        TextReader(gz, byte_range=(0, 2))
    plain = tmp_path / "f.txt"
    plain.write_bytes(b"a\n\nb\n\n")
    for separator in ("\n\n", "", "abca"):
        with pytest.raises(ValueError, match="cannot read bytes"):
            TextReader(plain, separator, byte_range=(0, 2))
