"""the Python text reader (the oracle, python_readers.py): documents of text files (lines, separators, whole files; bytes that are
not UTF-8), against references on random bytes and chunk sizes."""

from __future__ import annotations

import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpeforge import _inputs as inputs
from bpeforge._inputs import InputError

from . import python_readers
from .python_readers import read_text
from strategies import examples

from .helpers import docs_of, text_source


_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\ufeff")


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
    assert bad.examples == [f"{p}:3: not valid UTF-8 (byte 0xe9)", f"{p}:5: not valid UTF-8 (byte 0xed)"]
    # Located by line, as the error is, whatever the separator (not by document: the empty line
    # 2 makes none).
    p.write_bytes(b"ok\n\nline two\ncaf\xe9\nhello\n")
    with pytest.raises(InputError, match=r"a\.txt:4: not valid UTF-8"):
        docs_of(read_text(text_source(p)))
    for separator, line in [("\n", 4), ("\n\n", 4), ("", 4), ("line", 4), ("\nc", 4)]:
        bad = inputs.BadLines()
        docs_of(read_text(text_source(p), separator, skip_bad_lines=True, bad_lines=bad))
        assert bad.examples == [f"{p}:{line}: not valid UTF-8 (byte 0xe9)"], separator


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


@settings(max_examples=examples(300), deadline=None)
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


@settings(max_examples=examples(200), deadline=None)
@given(
    text=st.text(alphabet="ab\n|", max_size=60),
    sep=st.sampled_from(["\n", "||", "a|b", "\n\n", "|", "ab|ab", "|||a"]),
    chunk=st.integers(1, 7),
)
def test_split_stream_matches_str_split(text, sep, chunk):
    chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    got = docs_of(python_readers._split_stream(iter(chunks), sep))
    assert got == [d for d in text.split(sep) if d]


def test_separator_straddling_chunks_after_a_short_document(tmp_path):
    # The first 1 MiB chunk ends with "<|endoftext|>abc<|endo": the unfinished document "abc<|endo"
    # is shorter than the separator, which the next chunk completes.
    sep = "<|endoftext|>"
    head = "x" * (python_readers.CHUNK_BYTES - len(sep + "abc<|endo")) + sep + "abc<|endo"
    assert len(head) == python_readers.CHUNK_BYTES
    p = tmp_path / "a.txt"
    p.write_text(head + "ftext|>def")
    assert docs_of(read_text(text_source(p), sep)) == ["x" * (python_readers.CHUNK_BYTES - 22), "abc", "def"]


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


@settings(max_examples=examples(300), deadline=None)
@given(case=text_and_separator(), chunk_bytes=st.integers(1, 16))
@example(case=("1234567<|endoftext|>abc<|endoftext|>def", "<|endoftext|>"), chunk_bytes=7)
@example(case=("<|endoftext|>abc<|endoftext|>def", "<|endoftext|>"), chunk_bytes=22)
def test_chunked_reader_matches_str_split(scratch_file, case, chunk_bytes):
    text, sep = case
    scratch_file.write_bytes(text.encode("utf-8"))
    got = docs_of(read_text(text_source(scratch_file), sep, chunk_bytes=chunk_bytes))
    assert got == [d for d in text.split(sep) if d]  # empty documents are skipped


def test_long_document_across_many_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(python_readers, "CHUNK_BYTES", 16)  # where read_text reads it
    p = tmp_path / "a.txt"
    p.write_text("x" * 1000 + "\n" + "y" * 10)
    assert docs_of(read_text(text_source(p))) == ["x" * 1000, "y" * 10]
