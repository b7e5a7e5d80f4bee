"""The Python readers of text and JSONL files: the oracle the Rust readers (``bpeforge.TextReader``,
``bpeforge.JsonlReader``) are checked against, slow and plain. Documents of text files: one per
line, split on a separator, or whole files, bytes that are not UTF-8 named by line or skipped and
counted; documents of JSONL files: a field of each line's object; the files opened here
(standard input, ``.gz`` and ``.zst`` decompressed on the fly, a file changed while it is read an
error at its end). And :class:`PythonCorpus`, the oracle of the corpus's selection of documents
(crop, budget of characters, hold-out, sample), which the Rust readers of every format do."""

from __future__ import annotations

import codecs
import collections
import gzip
import io
import json
import os
import re
import stat
import sys
import zlib
from pathlib import Path
from typing import Deque, Iterator, List, Optional

from bpeforge._errors import InputError
from bpeforge._inputs.files import BATCH_DOCS, BadLines, check_unchanged, describe_error
from bpeforge._inputs.sources import Source



CHUNK_BYTES = 1 << 20  # text is read this many bytes at a time
BATCH_CHARS = 4 << 20  # ... or fewer, once a batch holds this many characters


def open_binary(source: Source):
    """A binary file object for ``source``, decompressing ``.gz`` and ``.zst`` on the fly."""
    path = source.path
    if str(path) == "-":
        if sys.stdin is None:
            raise InputError("-: standard input is closed")
        return open(sys.stdin.fileno(), "rb", closefd=False)
    try:
        if source.compression is not None and _is_empty_file(path):
            # gzip and zstandard read an empty file as no data; a compressed file is never empty
            # (a header at least), so this one was cut short: an error, as `gzip -d` says.
            raise InputError(f"{path}: an empty file, not {source.compression} data (cut short?)")
        if source.compression == "gzip":
            return _ClosingGzipFile(_open_watched(path))
        if source.compression == "zstd":
            return _open_zstd(path)
        return _open_watched(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder") from None
    except OSError as e:  # a link loop, a socket, an I/O error...
        raise InputError(f"{path}: cannot read it ({e.strerror or e})") from None


class _WatchedFile(io.RawIOBase):
    """A file read to its end, checked there against its size and modification time when it was
    opened (:func:`check_unchanged`)."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "rb", buffering=0)
        self._opened = os.fstat(self._file.fileno())
        self._read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._file.readinto(buffer)
        self._read += n
        if n == 0 and len(buffer):
            check_unchanged(self._opened, os.fstat(self._file.fileno()), self._read)
        return n

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()


def _open_watched(path: Path):
    return io.BufferedReader(_WatchedFile(path), buffer_size=1 << 18)


class _ClosingGzipFile(gzip.GzipFile):
    """A GzipFile reading a file object, which it closes with itself."""

    def __init__(self, raw) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _is_empty_file(path: Path) -> bool:
    """Whether ``path`` is a regular file of 0 bytes (a pipe's size says nothing)."""
    try:
        st = os.stat(path)
    except OSError:
        return False  # opening it says why
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


def _open_zstd(path: Path):
    try:
        import zstandard
    except ImportError:
        try:  # Python 3.14+
            from compression import zstd  # type: ignore[import-not-found]
        except ImportError:
            raise InputError(f"{path}: reading .zst files needs the zstandard package (pip install 'bpeforge[zstd]')") from None
        return zstd.open(path, "rb")
    return io.BufferedReader(_ZstdReader(path, zstandard), buffer_size=1 << 20)


class _ZstdReader(io.RawIOBase):
    """Decompresses a .zst file frame after frame. Unlike zstandard's stream_reader, which
    returns nothing more at the end of a truncated file, a frame cut short is an EOFError."""

    def __init__(self, path: Path, zstandard) -> None:
        self._file = _open_watched(path)
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._in_frame = False
        self._out = b""
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._pos >= len(self._out):
            data = self._file.read(1 << 18)
            if not data:
                if self._in_frame:
                    raise EOFError("the file ends in the middle of a zstd frame (truncated?)")
                return 0
            self._out, self._pos = self._decompress(data), 0
        n = min(len(buffer), len(self._out) - self._pos)
        buffer[:n] = self._out[self._pos : self._pos + n]
        self._pos += n
        return n

    def _decompress(self, data: bytes) -> bytes:
        out = []
        while data:
            self._in_frame = True
            out.append(self._obj.decompress(data))
            if not self._obj.eof:
                break
            data = self._obj.unused_data  # the next frame starts here
            self._obj = self._dctx.decompressobj()
            self._in_frame = False
        return b"".join(out)

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()


def decompression_errors() -> tuple:
    """The exceptions reading a (compressed) file may raise for bad data: a truncated or corrupt
    ``.gz`` or ``.zst``, an I/O error."""
    errors: list = [EOFError, gzip.BadGzipFile, OSError, zlib.error]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:
        pass
    return tuple(errors)



def _split_stream(chunks: Iterator[str], sep: str, lines: Optional[Deque[int]] = None) -> Iterator[List[str]]:
    """Splits a stream of text chunks on ``sep`` in linear time (a document may span chunks and
    a separator may straddle two), yielding lists of non-empty documents: the documents of
    ``"".join(chunks).split(sep)``, without the empty ones. With ``lines``, appends to it the
    line (from 1) each yielded document starts on."""
    k = len(sep)
    newlines = 0  # \n before the next document
    sep_newlines = sep.count("\n")

    def non_empty(parts: List[str]) -> List[str]:
        nonlocal newlines
        if lines is None:
            return [p for p in parts if p]
        docs = []
        for part in parts:
            if part:
                docs.append(part)
                lines.append(newlines + 1)
            newlines += part.count("\n") + sep_newlines
        return docs

    # The unfinished document, in fragments; ``sep`` never occurs in their concatenation, so a
    # separator that ends in the next chunk starts in its last k-1 characters at the earliest.
    pending: List[str] = []
    for chunk in chunks:
        if not chunk:
            continue
        # Take the last k-1 characters of ``pending`` (fewer if it is shorter) back out, to
        # search them together with the new chunk.
        need = k - 1
        tail: List[str] = []
        while need > 0 and pending:
            last = pending.pop()
            if len(last) > need:
                pending.append(last[:-need])
                tail.append(last[-need:])
                need = 0
            else:
                tail.append(last)
                need -= len(last)
        tail.reverse()
        tail.append(chunk)
        s = "".join(tail)
        parts = s.split(sep)
        if len(parts) == 1:
            pending.append(s)
            continue
        parts[0] = "".join(pending) + parts[0]
        pending = [parts.pop()]
        docs = non_empty(parts)
        if docs:
            yield docs
    final = non_empty(["".join(pending)])
    if final:
        yield final


# Bytes that are not UTF-8, as the "surrogateescape" error handler decodes them (U+DC80..U+DCFF;
# a strict UTF-8 decoder gives no other surrogate, so any surrogate here is such a byte). Only
# searched for in text known to hold some: the search is slow next to decoding.
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def _not_utf8_byte(char: str) -> str:
    return f"0x{ord(char) - 0xDC00:02x}"


def _is_regular_file(path: Path) -> bool:
    if str(path) == "-":
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _newlines_in_first(source: Source, n: int) -> int:
    """How many ``\n`` the first ``n`` bytes of ``source`` hold (read again: only for an error
    message, so that reading need not count lines)."""
    count = 0
    with open_binary(source) as f:
        while n > 0:
            data = f.read(min(n, CHUNK_BYTES))
            if not data:
                break
            count += data.count(b"\n")
            n -= len(data)
    return count


class _Decoder:
    """Decodes a text file's bytes, chunk by chunk, as UTF-8: strictly (the fast path), and where
    a chunk holds bytes that are not UTF-8 either raising :class:`InputError` naming the line
    or (``lenient``) decoding them as U+DC80..U+DCFF and counting them in :attr:`unseen`. A
    UTF-8 byte-order mark opening the file is dropped, and with ``crlf`` each ``\r\n`` is read
    as ``\n`` (on the bytes, where finding a ``\r`` costs next to nothing)."""

    def __init__(self, source: Source, lenient: bool, crlf: bool) -> None:
        self.source, self.lenient, self.crlf = source, lenient, crlf
        self.unseen = 0  # bytes that are not UTF-8, decoded and not yet found in a document
        self._read = 0  # bytes read before the current chunk
        self._carry = b""  # the unfinished end of the last chunk: part of a character, or a \r
        self._start = True
        # Only a regular file can be read again for an error's line number (not standard input,
        # a pipe, a device): otherwise count lines as they come.
        self._lines = None if _is_regular_file(source.path) else 0

    def decode(self, chunk: bytes, final: bool = False) -> str:
        read_before, self._read = self._read, self._read + len(chunk)
        data = self._carry + chunk if self._carry else chunk
        if self._start:
            if len(data) < 3 and not final and b"\xef\xbb\xbf".startswith(data):
                self._carry = data  # maybe the start of a byte-order mark: wait for more
                return ""
            self._start = False
            if data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
        held = b""
        if self.crlf and b"\r" in data:
            if data.endswith(b"\r") and not final:
                data, held = data[:-1], b"\r"  # maybe the first half of a \r\n
            data = data.replace(b"\r\n", b"\n")
        try:
            text, used = codecs.utf_8_decode(data, "strict", final)
        except UnicodeDecodeError as e:
            if not self.lenient:
                # The carried bytes hold no \n: the lines before are those of the bytes read.
                before = self._lines if self._lines is not None else _newlines_in_first(self.source, read_before)
                line = before + data.count(b"\n", 0, e.start) + 1
                raise InputError(
                    f"{self.source.path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x}); convert the file to UTF-8, "
                    "or skip the documents that hold such bytes with --skip-bad-lines (skip_bad_lines=True in Python)"
                ) from None
            text, used = codecs.utf_8_decode(data, "surrogateescape", final)
            self.unseen += len(_NOT_UTF8.findall(text))
        self._carry = data[used:] + held
        if self._lines is not None:
            self._lines += data.count(b"\n", 0, used)
        return text


def read_text(
    source: Source,
    doc_separator: str = "\n",
    chunk_bytes: Optional[int] = None,
    skip_bad_lines: bool = False,
    bad_lines: Optional[BadLines] = None,
) -> Iterator[List[str]]:
    """Documents of a text file: one per line, or split on ``doc_separator``, or (``""``) the
    whole file. The file is read ``chunk_bytes`` bytes at a time (default
    :data:`CHUNK_BYTES`); the documents do not depend on it.

    The text is read as it is, but for a UTF-8 byte-order mark opening the file (dropped) and,
    one document per line, the line endings ``\n`` and ``\r\n``. Bytes that are not UTF-8
    raise :class:`InputError` naming the file and line; with ``skip_bad_lines`` the documents
    holding them are skipped instead and counted in ``bad_lines``."""
    size = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
    decoder = _Decoder(source, skip_bad_lines, crlf=doc_separator == "\n")
    with open_binary(source) as raw:
        try:

            def decoded() -> Iterator[str]:
                for data in iter(lambda: raw.read(size), b""):
                    text = decoder.decode(data)
                    if text:
                        yield text
                text = decoder.decode(b"", final=True)
                if text:
                    yield text

            chunks = decoded()
            # The line each document starts on, for the messages of those skipped.
            lines: Optional[Deque[int]] = collections.deque() if skip_bad_lines else None
            if doc_separator == "":
                text = "".join(chunks)
                batches: Iterator[List[str]] = iter([[text]] if text else [])
                if lines is not None:
                    lines.append(1)
            else:
                batches = _rebatch(_split_stream(chunks, doc_separator, lines))
            for batch in batches:
                starts = [lines.popleft() for _ in batch] if lines is not None else []
                if decoder.unseen:
                    # Some document read so far holds bytes that are not UTF-8: look at each.
                    kept = []
                    for doc, start in zip(batch, starts):
                        found = _NOT_UTF8.findall(doc)
                        if not found:
                            kept.append(doc)
                            continue
                        decoder.unseen -= len(found)
                        if bad_lines is not None:
                            line = start + doc.count("\n", 0, _NOT_UTF8.search(doc).start())  # type: ignore[union-attr]
                            bad_lines.add(f"{source.path}:{line}: not valid UTF-8 (byte {_not_utf8_byte(found[0])})", document=True)
                    batch = kept
                if batch:
                    yield batch
        except decompression_errors() as e:
            raise InputError(f"{source.path}: cannot read ({describe_error(e)})") from None


def _rebatch(batches: Iterator[List[str]]) -> Iterator[List[str]]:
    # One line per document gives ~20k documents per 1 MB chunk; hand them on in smaller lists
    # so that progress and Ctrl-C stay responsive and --max-chars stops close to where it should.
    for batch in batches:
        if len(batch) <= BATCH_DOCS:
            yield batch
        else:
            for i in range(0, len(batch), BATCH_DOCS):
                yield batch[i : i + BATCH_DOCS]



def _decode_line(line: bytes, lineno: int) -> str:
    """A JSONL line as str; raises UnicodeDecodeError unless it is UTF-8 (a BOM may open the file)."""
    if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
        try:
            return line[3:].decode("utf-8")
        except UnicodeDecodeError as e:
            raise UnicodeDecodeError("utf-8", line, e.start + 3, e.end + 3, e.reason) from None
    return line.decode("utf-8")


def _lone_surrogate(text: str, field: str) -> Optional[str]:
    """A bad-line message if ``text`` holds a lone surrogate (from a ``\\ud800`` escape), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"field {field!r} holds a lone surrogate {text[e.start]!a} at character {e.start} (not valid Unicode)"
    return None


def read_jsonl(
    source: Source, text_column: str = "text", skip_bad_lines: bool = False, bad_lines: Optional[BadLines] = None
) -> Iterator[List[str]]:
    """Documents of a JSONL file, streamed line by line: the ``text_column`` field of each object."""
    batch: List[str] = []
    chars = 0
    with open_binary(source) as f:
        lineno = 0
        try:
            for lineno, line in enumerate(f, 1):
                if not (line[3:] if lineno == 1 and line.startswith(b"\xef\xbb\xbf") else line).strip():
                    continue  # blank (the first line may be only a byte-order mark)
                problem = None
                try:
                    # Decoded here, strictly: json.loads(bytes) would let the UTF-8 encoding of
                    # a surrogate (ED A0 80) through as a lone surrogate.
                    # Without its line end: a line cut inside a string is then "Unterminated
                    # string", not an "Invalid control character" (the \n).
                    obj = json.loads(_decode_line(line, lineno).rstrip("\r\n"))
                except UnicodeDecodeError as e:
                    problem = f"not valid UTF-8 ({e.reason} at byte {e.start})"
                except ValueError as e:
                    problem = f"not valid JSON ({e})"
                except RecursionError:
                    problem = "not readable JSON (nested too deeply)"
                else:
                    if not isinstance(obj, dict):
                        problem = f"expected a JSON object, got {type(obj).__name__}"
                    elif text_column not in obj:
                        fields = ", ".join(list(map(str, obj))[:10]) or "none"
                        problem = f"no {text_column!r} field (fields: {fields}); choose one with --text-column"
                    else:
                        text = obj[text_column]
                        if text is None:
                            continue
                        if not isinstance(text, str):
                            problem = f"field {text_column!r} is a {type(text).__name__}, expected a string"
                        elif b"\\u" in line and not text.isascii():
                            problem = _lone_surrogate(text, text_column)  # a "\ud800" escape
                if problem is not None:
                    message = f"{source.path}:{lineno}: {problem}"
                    if not skip_bad_lines:
                        raise InputError(message + " (skip such lines with --skip-bad-lines, or skip_bad_lines=True in Python)")
                    if bad_lines is not None:
                        bad_lines.add(message)
                    continue
                if not text:
                    continue
                batch.append(text)
                chars += len(text)
                if len(batch) >= BATCH_DOCS or chars >= BATCH_CHARS:
                    yield batch
                    batch, chars = [], 0
        except decompression_errors() as e:
            where = f" after line {lineno}" if lineno else ""
            raise InputError(f"{source.path}: cannot read{where} ({describe_error(e)})") from None
    if batch:
        yield batch


def read_parquet(source: Source, text_column: str = "text") -> Iterator[List[str]]:
    """The strings of a Parquet file's column (of ``source.row_groups``), by pyarrow, in batches:
    nulls and empty strings left out."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(source.path)
    groups = list(source.row_groups) if source.row_groups is not None else None
    for batch in pf.iter_batches(batch_size=BATCH_DOCS, columns=[text_column], row_groups=groups):
        docs = [d for d in batch.column(0).to_pylist() if d]
        if docs:
            yield docs


def _utf8_len(docs: List[str]) -> int:
    return sum(len(d.encode("utf-8", "surrogatepass")) for d in docs)


class PythonCorpus:
    """The oracle of :class:`bpeforge._inputs.Corpus`'s selection, which its Rust readers do: the
    documents of the files, read by the readers here (Parquet by pyarrow), each batch cropped,
    stopped at the budget of characters, every ``holdout_every``-th document held out within
    the budget of bytes, the start of the training text kept as the sample; with the same
    attributes, counted in plain Python."""

    def __init__(self, sources, *, text_column: str = "text", doc_separator: str = "\n", doc_cap: Optional[int] = None,
                 max_chars: Optional[int] = None, holdout_every: int = 0, holdout_max_bytes: int = 1_000_000,
                 skip_bad_lines: bool = False) -> None:
        self.sources = list(sources)
        self.text_column = text_column
        self.doc_separator = doc_separator
        self.doc_cap = doc_cap
        self.max_chars = max_chars
        self.holdout_every = holdout_every
        self.holdout_max_bytes = holdout_max_bytes
        self.skip_bad_lines = skip_bad_lines
        self.bad_lines = BadLines()
        self.documents = self.chars = self.bytes = 0  # training documents, their characters and bytes
        self.heldout: List[str] = []
        self.heldout_chars = self.heldout_bytes = 0
        self.sample: List[str] = []
        self.sample_bytes = 0
        self.sample_cropped = False
        self.stopped_early = False
        self._seen = 0  # documents taken, training and held out

    @property
    def total_chars(self) -> int:
        return self.chars + self.heldout_chars

    @property
    def total_bytes(self) -> int:
        return self.bytes + self.heldout_bytes

    @property
    def sample_full(self) -> bool:
        return self.sample_cropped or self.sample_bytes >= self.holdout_max_bytes

    def _read(self, source: Source) -> Iterator[List[str]]:
        if source.format == "text":
            return read_text(source, self.doc_separator, skip_bad_lines=self.skip_bad_lines, bad_lines=self.bad_lines)
        if source.format == "jsonl":
            return read_jsonl(source, self.text_column, self.skip_bad_lines, self.bad_lines)
        return read_parquet(source, self.text_column)

    def __iter__(self) -> Iterator[List[str]]:
        for source in self.sources:
            if self.stopped_early:
                break
            for docs in self._read(source):
                docs = self._take(docs)
                if docs:
                    yield docs
                if self.stopped_early:
                    break

    def _take(self, docs: List[str]) -> List[str]:
        """The training documents of a batch, the others set aside and everything counted."""
        if self.doc_cap is not None:
            docs = [d[: self.doc_cap] for d in docs]
        if self.max_chars is not None:
            room = self.max_chars - self.total_chars
            if sum(map(len, docs)) >= room:
                self.stopped_early = True
                kept = []
                for d in docs:
                    if room <= 0:
                        break
                    kept.append(d[:room])
                    room -= len(kept[-1])
                docs = kept
        training = []
        for d in docs:
            self._seen += 1
            nbytes = _utf8_len([d])
            every = self.holdout_every
            if every and self._seen % every == 0 and self.heldout_bytes + nbytes <= self.holdout_max_bytes:
                # Every Nth document, if it fits in what is left of the budget; a larger one
                # is trained on, so training sees all the text but the budget.
                self.heldout.append(d)
                self.heldout_chars += len(d)
                self.heldout_bytes += nbytes
                continue
            training.append(d)
            self.documents += 1
            self.chars += len(d)
            self.bytes += nbytes
            if not self.sample_full:
                self._keep_in_sample(d)
        return training

    def _keep_in_sample(self, doc: str) -> None:
        """Keeps ``doc`` in the sample, or as much of it as fits in what is left of its budget of
        ``holdout_max_bytes`` bytes, cropped at a character boundary."""
        room = self.holdout_max_bytes - self.sample_bytes
        data = doc.encode("utf-8", "surrogatepass")
        if len(data) > room:
            cut = room
            while cut and data[cut] & 0xC0 == 0x80:  # inside a character: back to its start
                cut -= 1
            data = data[:cut]
            doc = data.decode("utf-8", "surrogatepass")
            self.sample_cropped = True
        if doc:
            self.sample.append(doc)
            self.sample_bytes += len(data)
