"""Readers of bpeforge.inputs (text, JSONL, Parquet, .gz/.zst, folders and globs), the Corpus
pipeline (doc cap, max chars, held-out slice), tested in-process."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import struct
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import bpeforge
import strategies
from bpeforge import _core, inputs
from bpeforge.inputs import Corpus, InputError, Source, detect, expand_inputs, read_jsonl, read_parquet, read_text

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
zstandard = pytest.importorskip("zstandard")

STRING_TYPES = [pa.string(), pa.large_string()] + ([pa.string_view()] if hasattr(pa, "string_view") else [])


def docs_of(batches) -> list:
    """The documents of batches of str, or of pyarrow arrays (``read_parquet(..., arrow=True)``)."""
    return [d for batch in batches for d in (batch.to_pylist() if hasattr(batch, "to_pylist") else batch)]


def text_source(path: Path) -> Source:
    fmt, compression = detect(path)
    return Source(path, fmt or "text", compression)


# ------------------------------------------------------------------------------ file discovery


@pytest.mark.parametrize(
    "name, expected",
    [
        ("a.txt", ("text", None)),
        ("a.TXT", ("text", None)),
        ("a.text.gz", ("text", "gzip")),
        ("shard.jsonl", ("jsonl", None)),
        ("shard.ndjson.zst", ("jsonl", "zstd")),
        ("shard.jsonl.zstd", ("jsonl", "zstd")),
        ("x.parquet", ("parquet", None)),
        ("x.pq", ("parquet", None)),
        ("notes.md", (None, None)),
        ("README", (None, None)),
        ("a.gz", (None, "gzip")),
    ],
)
def test_detect(name, expected):
    assert detect(Path(name)) == expected


def test_folders_are_walked_recursively_sorted_skipping_hidden_and_unknown(tmp_path):
    for rel in ["b.txt", "a.jsonl", "sub/z.parquet", "sub/c.txt.gz", "notes.md", ".hidden.txt", ".git/x.txt", "sub/.cache/y.txt"]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")
    found = [(s.path.relative_to(tmp_path).as_posix(), s.format, s.compression) for s in expand_inputs([str(tmp_path)])]
    assert found == [
        ("a.jsonl", "jsonl", None),
        ("b.txt", "text", None),
        ("sub/c.txt.gz", "text", "gzip"),
        ("sub/z.parquet", "parquet", None),
    ]
    only_text = [s.path.name for s in expand_inputs([str(tmp_path)], "text")]
    assert only_text == ["b.txt", "c.txt.gz"]


def test_folders_are_walked_through_links_but_never_twice(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x.txt").write_text("x")
    (tmp_path / "top").mkdir()
    (tmp_path / "top" / "y.txt").write_text("y")
    (tmp_path / "top" / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "top" / "loop").symlink_to(tmp_path / "top")  # would walk forever
    found = [s.path.relative_to(tmp_path).as_posix() for s in expand_inputs([str(tmp_path / "top")])]
    assert found == ["top/y.txt", "top/linked/x.txt"]


def test_a_folder_that_cannot_be_read_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.txt").write_text("a")
    (tmp_path / "locked").mkdir()
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)  # as root, chmod 000 would not stop us
    with pytest.raises(InputError, match="locked: cannot read the folder \\(Permission denied\\)"):
        expand_inputs([str(tmp_path)])


def test_a_glob_of_folders_without_known_files_is_an_error(tmp_path):
    (tmp_path / "emptyd1").mkdir()
    (tmp_path / "emptyd2").mkdir()
    (tmp_path / "emptyd2" / "notes.md").write_text("x")
    with pytest.raises(InputError, match=r"emptyd\*: matches only folders with no files of a known format"):
        expand_inputs([str(tmp_path / "emptyd*")])


def test_globs_files_and_order(tmp_path):
    for name in ["s2.txt", "s10.txt", "s1.txt", "other.jsonl"]:
        (tmp_path / name).write_text("x")
    got = [s.path.name for s in expand_inputs([str(tmp_path / "s*.txt"), str(tmp_path / "other.jsonl")])]
    assert got == ["s1.txt", "s10.txt", "s2.txt", "other.jsonl"]
    assert [s.path.name for s in expand_inputs([str(tmp_path / "**" / "*.jsonl")])] == ["other.jsonl"]


def test_a_double_star_glob_gives_each_file_once_sorted(tmp_path):
    # `**` matches the folders too: walking them must not add their files again.
    for rel in ["top.txt", "a/b/x.txt", "a/y.jsonl"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    got = [s.path.relative_to(tmp_path).as_posix() for s in expand_inputs([str(tmp_path / "**")])]
    assert got == ["a/b/x.txt", "a/y.jsonl", "top.txt"]


def test_a_file_reached_twice_is_read_once(tmp_path):
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "s1.txt").write_text("one\n")
    (tmp_path / "shards" / "s2.txt").write_text("two\n")
    (tmp_path / "shards" / "latest.txt").symlink_to(tmp_path / "shards" / "s2.txt")
    os.link(tmp_path / "shards" / "s1.txt", tmp_path / "hard.txt")
    sources = expand_inputs([str(tmp_path / "shards"), str(tmp_path / "shards" / "s1.txt"), str(tmp_path / "hard.txt"), "-"])
    kept, left_out = inputs.unique_sources(sources)
    names = lambda ss: [s.path.name for s in ss]  # noqa: E731
    assert names(sources) == ["latest.txt", "s1.txt", "s2.txt", "s1.txt", "hard.txt", "-"]
    assert names(kept) == ["latest.txt", "s1.txt", "-"]
    assert [(again.path.name, first.path.name) for again, first in left_out] == [("s2.txt", "latest.txt"), ("s1.txt", "s1.txt"), ("hard.txt", "s1.txt")]


def test_a_file_that_cannot_be_opened_for_another_reason_is_an_input_error(tmp_path):
    loop = tmp_path / "loop.txt"
    loop.symlink_to(loop)  # opening it: "Too many levels of symbolic links"
    with pytest.raises(InputError, match=re.escape(f"{loop}: cannot read it (Too many levels of symbolic links)")):
        inputs.open_binary(text_source(loop))


def test_closed_standard_input_is_an_input_error(monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)  # what Python sets when started with fd 0 closed
    with pytest.raises(InputError, match="-: standard input is closed"):
        inputs.open_binary(inputs.Source(Path("-"), "text"))


@pytest.mark.parametrize(
    "make, arg, message",
    [
        (None, "missing.txt", "no such file or folder"),
        (None, "nothing*.txt", "no file matches"),
        ("notes.md", "notes.md", "cannot tell the format"),
        ("data.parquet.gz", "data.parquet.gz", "compressed Parquet"),
        ("emptydir/", "emptydir", "no files of a known format"),
    ],
)
def test_expand_errors(tmp_path, monkeypatch, make, arg, message):
    monkeypatch.chdir(tmp_path)
    if make and make.endswith("/"):
        (tmp_path / make).mkdir()
        (tmp_path / make / "readme.md").write_text("x")
    elif make:
        (tmp_path / make).write_text("x")
    with pytest.raises(InputError, match=re.escape(message)) as e:
        expand_inputs([arg])
    assert arg in str(e.value)


def test_input_format_overrides_extension_and_stdin(tmp_path):
    (tmp_path / "corpus.dat").write_text("x")
    [s] = expand_inputs([str(tmp_path / "corpus.dat")], "jsonl")
    assert s.format == "jsonl"
    [s] = expand_inputs(["-"])
    assert (str(s.path), s.format) == ("-", "text")
    with pytest.raises(InputError, match="standard input"):
        expand_inputs(["-"], "parquet")


def test_stdlib_sources_are_sorted_py_files_without_site_packages():
    root, sources = inputs.stdlib_sources()
    assert len(sources) > 100
    paths = [s.path for s in sources]
    assert all(p.suffix == ".py" and s.format == "text" for p, s in zip(paths, sources))
    assert not any("site-packages" in p.parts or "__pycache__" in p.parts for p in paths)
    assert root / "argparse.py" in paths
    assert inputs.stdlib_sources()[1] == sources  # deterministic


# ------------------------------------------------------------------------------ text


def test_text_one_document_per_line(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"first\r\nsecond\n\n  \nthird\rstill third\nlast without newline")
    # A line ends with \n or \r\n; a lone \r is text.
    assert docs_of(read_text(text_source(p))) == ["first", "second", "  ", "third\rstill third", "last without newline"]


def test_text_separator_and_whole_file(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("para one\nline two\n\npara two\n\n\n\npara three\n")
    assert docs_of(read_text(text_source(p), "\n\n")) == ["para one\nline two", "para two", "para three\n"]
    assert docs_of(read_text(text_source(p), "")) == ["para one\nline two\n\npara two\n\n\n\npara three\n"]
    q = tmp_path / "b.txt"
    q.write_text("a<|endoftext|>b<|endoftext|><|endoftext|>c")
    assert docs_of(read_text(text_source(q), "<|endoftext|>")) == ["a", "b", "c"]


def test_text_is_read_as_it_is_but_for_a_byte_order_mark(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"\xef\xbb\xbfdoc one\r\nline two\r\n\r\ndoc \xef\xbb\xbftwo\r\n")
    assert docs_of(read_text(text_source(p), "\r\n\r\n")) == ["doc one\r\nline two", "doc \ufefftwo\r\n"]
    assert docs_of(read_text(text_source(p), "")) == ["doc one\r\nline two\r\n\r\ndoc \ufefftwo\r\n"]
    assert docs_of(read_text(text_source(p))) == ["doc one", "line two", "doc \ufefftwo"]


def test_text_not_utf8_is_an_error_naming_the_line_or_skipped(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"ok\nline two\ncaf\xe9\nhello\n\xed\xa0\x80 (an encoded surrogate)\n")
    with pytest.raises(InputError, match=r"a\.txt:3: not valid UTF-8 \(byte 0xe9\).*--skip-bad-lines"):
        docs_of(read_text(text_source(p)))
    bad = inputs.BadLines()
    assert docs_of(read_text(text_source(p), skip_bad_lines=True, bad_lines=bad)) == ["ok", "line two", "hello"]
    assert bad.count == 2 and "document 3: not valid UTF-8 (byte 0xe9)" in bad.examples[0]
    assert "document 5: not valid UTF-8 (byte 0xed)" in bad.examples[1]


@pytest.mark.parametrize("chunk_bytes", [3, 7, 64, None])
def test_the_line_of_a_byte_that_is_not_utf8_is_exact_across_chunks(tmp_path, chunk_bytes):
    p = tmp_path / "a.txt"
    p.write_bytes("".join(f"line {i} é\r\n" for i in range(1, 1000)).encode() + b"caf\xe9\nmore\n")
    with pytest.raises(InputError, match=r"a\.txt:1000: not valid UTF-8 \(byte 0xe9\)"):
        docs_of(read_text(text_source(p), chunk_bytes=chunk_bytes))
    with pytest.raises(InputError, match=r"a\.txt:1000: not valid UTF-8"):
        docs_of(read_text(text_source(p), "\r\n", chunk_bytes=chunk_bytes))


def test_not_utf8_in_a_pipe_names_the_line_without_reading_it_again(tmp_path):
    import threading

    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    data = "".join(f"line {i}\n" for i in range(1, 200_000)).encode() + b"caf\xe9\n"

    def write():
        with open(fifo, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with pytest.raises(InputError, match=r"pipe\.txt:200000: not valid UTF-8"):
        docs_of(read_text(text_source(fifo)))
    writer.join(10)


@pytest.mark.parametrize("data", [b"\xef", b"\xef\xbb", b"\xef\xbbX"])
def test_part_of_a_byte_order_mark_is_not_utf8(tmp_path, data):
    p = tmp_path / "a.txt"
    p.write_bytes(data)
    for chunk_bytes in (1, None):
        with pytest.raises(InputError, match="not valid UTF-8"):
            docs_of(read_text(text_source(p), chunk_bytes=chunk_bytes))


@st.composite
def text_bytes_and_separator(draw):
    """File bytes made of UTF-8 text, separators, \r\n, bytes that are not UTF-8 and a byte-order
    mark (at the start or not), and a separator."""
    sep = draw(st.sampled_from(["\n", "\n\n", "\r\n", "é", "<|endoftext|>"]))
    piece = st.one_of(
        st.just(sep.encode()),
        st.sampled_from([b"\r\n", b"\r", b"\n", b"\xef\xbb\xbf", b"\xc3", b"\xa9", b"\xff", b"\xed\xa0\x80", b"\xe0\xa0"]),
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=8).map(str.encode),
    )
    return b"".join(draw(st.lists(piece, max_size=25))), sep


def reference_documents(data: bytes, sep: str) -> list:
    """What read_text(..., skip_bad_lines=True) must give, worked out on the bytes: drop the
    byte-order mark, one document per line read \r\n as \n, split, drop empty documents and
    those that are not UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if sep == "\n":
        data = data.replace(b"\r\n", b"\n")
    docs = []
    for d in data.split(sep.encode()):
        try:
            docs.append(d.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    return [d for d in docs if d]


@settings(max_examples=300, deadline=None)
@given(case=text_bytes_and_separator(), chunk_bytes=st.integers(1, 9))
def test_text_reader_matches_a_reference_on_bytes(scratch_file, case, chunk_bytes):
    data, sep = case
    scratch_file.write_bytes(data)
    bad = inputs.BadLines()
    got = docs_of(read_text(text_source(scratch_file), sep, chunk_bytes=chunk_bytes, skip_bad_lines=True, bad_lines=bad))
    assert got == reference_documents(data, sep)
    not_utf8 = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    try:
        not_utf8.decode("utf-8")
    except UnicodeDecodeError:
        assert bad.count > 0
        with pytest.raises(InputError, match="not valid UTF-8"):
            docs_of(read_text(text_source(scratch_file), sep, chunk_bytes=chunk_bytes))
    else:
        assert bad.count == 0


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


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="ab\n|", max_size=60),
    sep=st.sampled_from(["\n", "||", "a|b", "\n\n", "|", "ab|ab", "|||a"]),
    chunk=st.integers(1, 7),
)
def test_split_stream_matches_str_split(text, sep, chunk):
    chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    got = docs_of(inputs.text._split_stream(iter(chunks), sep))
    assert got == [d for d in text.split(sep) if d]


def test_separator_straddling_chunks_after_a_short_document(tmp_path):
    # The first 1 MiB chunk ends with "<|endoftext|>abc<|endo": the unfinished document "abc<|endo"
    # is shorter than the separator, which the next chunk completes.
    sep = "<|endoftext|>"
    head = "x" * (inputs.CHUNK_BYTES - len(sep + "abc<|endo")) + sep + "abc<|endo"
    assert len(head) == inputs.CHUNK_BYTES
    p = tmp_path / "a.txt"
    p.write_text(head + "ftext|>def")
    assert docs_of(read_text(text_source(p), sep)) == ["x" * (inputs.CHUNK_BYTES - 22), "abc", "def"]


# No \r: one document per line reads \r\n as \n (checked above); no U+FEFF, dropped at the start.
_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\ufeff")


@st.composite
def text_and_separator(draw):
    """A separator of 1 to 15 characters (multi-byte ones included) and a text made of it, pieces
    of it and other text, so that separators occur, overlap and are cut in every way."""
    sep = draw(st.one_of(st.sampled_from(["<|endoftext|>", "\n\n", "é", "日本語", "🙂\n🙂", "aaa"]), st.text(_CHARS, min_size=1, max_size=15)))
    piece = st.one_of(
        st.just(sep),
        st.integers(1, len(sep)).map(lambda i: sep[:i]),
        st.integers(0, len(sep) - 1).map(lambda i: sep[i:]),
        st.text(st.sampled_from(sep + "x"), max_size=10),
        st.text(_CHARS, max_size=10),
    )
    return "".join(draw(st.lists(piece, max_size=30))), sep


@pytest.fixture(scope="module")
def scratch_file(tmp_path_factory):
    return tmp_path_factory.mktemp("chunks") / "a.txt"


@settings(max_examples=300, deadline=None)
@given(case=text_and_separator(), chunk_bytes=st.integers(1, 16))
@example(case=("1234567<|endoftext|>abc<|endoftext|>def", "<|endoftext|>"), chunk_bytes=7)
@example(case=("<|endoftext|>abc<|endoftext|>def", "<|endoftext|>"), chunk_bytes=22)
def test_chunked_reader_matches_str_split(scratch_file, case, chunk_bytes):
    text, sep = case
    scratch_file.write_bytes(text.encode("utf-8"))
    got = docs_of(read_text(text_source(scratch_file), sep, chunk_bytes=chunk_bytes))
    assert got == [d for d in text.split(sep) if d]  # empty documents are skipped


def test_long_document_across_many_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs.text, "CHUNK_BYTES", 16)  # where read_text reads it
    p = tmp_path / "a.txt"
    p.write_text("x" * 1000 + "\n" + "y" * 10)
    assert docs_of(read_text(text_source(p))) == ["x" * 1000, "y" * 10]


# ------------------------------------------------------------------------------ JSONL


def write_jsonl(path: Path, rows) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


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
    assert str(e.value) == f"{p}:2: {message} (use --skip-bad-lines to skip such lines)"
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


# ------------------------------------------------------------------------------ Parquet


# arrow=False: bpeforge.ParquetReader; arrow=True: pyarrow, the command line's --parquet-reader pyarrow.
@pytest.mark.parametrize("arrow", [False, True])
def test_parquet_by_batches(tmp_path, arrow):
    texts = [f"row {i}" if i % 7 else None for i in range(2500)]
    p = tmp_path / "a.parquet"
    pq.write_table(pa.table({"id": list(range(2500)), "text": texts}), p, row_group_size=1000)
    batches = list(read_parquet(text_source(p), batch_rows=500, arrow=arrow))
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
        assert docs_of(read_parquet(text_source(p), arrow=arrow)) == texts


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
        docs_of(read_parquet(text_source(p), arrow=arrow))


@pytest.mark.parametrize("arrow", [False, True])
def test_truncated_parquet(tmp_path, arrow):
    p = tmp_path / "x.parquet"
    pq.write_table(pa.table({"text": [f"row {i}" for i in range(10000)]}), p)
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with pytest.raises(InputError, match="not a readable Parquet file"):
        docs_of(read_parquet(text_source(p), arrow=arrow))


# ------------------------------------------------------------------------------ Corpus


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


@pytest.mark.parametrize("module", ["sources", "files", "text", "jsonl", "parquet", "corpus"])
def test_public_names_have_docstrings(module):
    import importlib
    import inspect

    mod = importlib.import_module(f"bpeforge.inputs.{module}")
    missing = []
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
            continue
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and not obj.__doc__:
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                member = member.fget if isinstance(member, property) else member
                if not attr.startswith("_") and callable(member) and not member.__doc__:
                    missing.append(f"{name}.{attr}")
    assert missing == []


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


def test_numpy_missing_names_the_extra(monkeypatch):
    tok = bpeforge.Tokenizer.train_from_iterator(["ab ab"], vocab_size=260, special_tokens=[])
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(ModuleNotFoundError, match=r"bpeforge\[numpy\]"):
        tok.token_bytes(as_numpy=True)


# ------------------------------------------------------------------------------ the Arrow path


docs_lists = st.lists(st.lists(strategies.texts(max_pieces=5).filter(bool), max_size=12), max_size=8)


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


def test_parquet_arrow_batches(tmp_path):
    texts = [f"row {i} é" if i % 7 else (None if i % 2 else "") for i in range(2500)]
    p = tmp_path / "a.parquet"
    pq.write_table(pa.table({"id": list(range(2500)), "text": texts}), p, row_group_size=1000)
    source = Source(p, "parquet")
    batches = list(inputs.read_parquet(source, batch_rows=500, arrow=True))
    assert all(isinstance(b, pa.Array) and b.null_count == 0 for b in batches)
    assert [d for b in batches for d in b.to_pylist()] == [t for t in texts if t]
    assert [d for b in inputs.read_parquet(source, batch_rows=500) for d in b] == [t for t in texts if t]
    for typ in STRING_TYPES + [pa.dictionary(pa.int32(), pa.string())]:
        q = tmp_path / f"{typ}.parquet"
        pq.write_table(pa.table({"text": pa.array(texts).cast(typ)}), q)
        got = [d for b in inputs.read_parquet(Source(q, "parquet"), arrow=True) for d in b.to_pylist()]
        assert got == [t for t in texts if t], typ


def test_parquet_with_invalid_utf8_is_an_input_error(tmp_path):
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(struct.pack("<3i", 0, 2, 4)), pa.py_buffer(b"ok\xff\xfe")])
    p = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"text": bad}), p)
    with pytest.raises(inputs.InputError, match="bad.parquet: cannot read"):
        list(inputs.read_parquet(Source(p, "parquet"), arrow=True))


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
