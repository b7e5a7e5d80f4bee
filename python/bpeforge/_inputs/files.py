"""Opening an input file: standard input, ``.gz`` and ``.zst`` decompressed on the fly, errors
as :class:`~bpeforge._errors.InputError`, a file changed while it is read an error at its end;
the sizes readers read and hand on in; and the count of the bad lines skipped."""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from pathlib import Path
from typing import List, Optional

from .._errors import InputError
from .sources import Source


CHUNK_BYTES = 1 << 20  # text is read this many bytes at a time
BATCH_DOCS = 1024  # documents per batch handed on (JSONL lines, Parquet rows)
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


class FileChangedError(OSError):
    """A file cut short, grown or rewritten while it was read (its size or modification time
    is not what it was when it was opened)."""


def file_state(st: os.stat_result) -> tuple:
    """What says a regular file changed: its size and modification time."""
    return st.st_size, st.st_mtime_ns


def check_unchanged(opened: os.stat_result, now: os.stat_result, read: Optional[int] = None) -> None:
    """Raises :class:`FileChangedError` if a regular file's ``now`` (or the ``read`` bytes read
    to its end) is not what it was when ``opened``."""
    if not stat.S_ISREG(opened.st_mode):
        return
    if now.st_size != opened.st_size:
        raise FileChangedError(f"the file changed while it was read: {opened.st_size} bytes when it was opened, {now.st_size} now")
    if now.st_mtime_ns != opened.st_mtime_ns:
        raise FileChangedError("the file changed while it was read: its modification time changed")
    # (A pseudo-file of /proc says 0 bytes whatever it holds.)
    if read is not None and opened.st_size and read != opened.st_size:
        raise FileChangedError(f"the file changed while it was read: {opened.st_size} bytes when it was opened, {read} read")


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


def describe_error(e: BaseException) -> str:
    """``e``'s message on one line, at most 200 characters (its type's name if it has none)."""
    msg = " ".join(str(e).split())
    return msg[:200] or type(e).__name__


class BadLines:
    """Counts the bad JSONL lines and text documents that are not UTF-8 skipped with
    ``skip_bad_lines``, and keeps the first few messages."""

    def __init__(self, keep: int = 5) -> None:
        self.count = 0
        self.documents = 0  # of count: text documents (the rest are JSONL lines)
        self.examples: List[str] = []
        self._keep = keep

    def add(self, message: str, document: bool = False) -> None:
        """Counts one skipped line (or text ``document``), keeping its message if fewer than
        ``keep`` are kept."""
        self.count += 1
        self.documents += document
        if len(self.examples) < self._keep:
            self.examples.append(message)

    def extend(self, count: int, examples: List[str], document: bool = False) -> None:
        """Counts ``count`` more skipped lines (or text documents), keeping as many of
        their ``examples`` (messages, first first) as there is room for."""
        self.count += count
        self.documents += count if document else 0
        self.examples.extend(examples[: max(self._keep - len(self.examples), 0)])

    def describe(self) -> str:
        """What was skipped, e.g. "2 bad lines and 1 text document that is not UTF-8"."""
        lines, documents = self.count - self.documents, self.documents
        parts = []
        if lines:
            parts.append(f"{lines:,} bad line{'s' if lines != 1 else ''}")
        if documents:
            parts.append(f"{documents:,} text document{'s that are' if documents != 1 else ' that is'} not UTF-8")
        return " and ".join(parts)
