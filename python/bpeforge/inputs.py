"""Reading training documents: text, JSONL and Parquet files, folders and globs, ``.gz``/``.zst``.

Everything streams: text is read in 1 MiB chunks, JSONL line by line, Parquet page by page
(by :class:`bpeforge.ParquetReader`, or by record batches through pyarrow with ``arrow=True``),
so memory stays bounded whatever the size of the corpus. Readers yield *batches* (lists of str,
or for Parquet with ``arrow=True`` pyarrow string arrays), which
:meth:`bpeforge.Trainer.train_from_iterator` takes as they are: an Arrow array reaches Rust
through the Arrow C Data Interface, without a Python str per document.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "a.txt").write_text("first line\\n\\nsecond line\\n")
>>> [doc for batch in Corpus(expand_inputs([str(d)])) for doc in batch]
['first line', 'second line']

Conventions:

* Formats come from the extension (``.txt``/``.text``: text, ``.jsonl``/``.ndjson``: JSONL,
  ``.parquet``/``.pq``: Parquet), after stripping ``.gz``, ``.zst`` or ``.zstd``; or from
  ``input_format`` for every file.
* Text: one document per line by default. ``doc_separator`` splits on that exact string instead
  (e.g. ``"\\n\\n"`` for blank-line-separated paragraphs); ``""`` makes each whole file one document.
  The text is read as it is (a UTF-8 byte-order mark opening a file is dropped), except that one
  document per line, a line ends with ``\\n`` or ``\\r\\n``. Bytes that are not UTF-8 are an
  :class:`InputError` naming the file and line, or (``skip_bad_lines``) the documents holding
  them are skipped and counted.
* Empty documents are skipped everywhere (and not counted).
* JSONL: each non-blank line is a JSON object whose ``text_column`` field is a string (or null,
  skipped). Anything else is a bad line (:class:`InputError` naming the file and line, or skipped
  and counted with ``skip_bad_lines``), and so is a line that is not UTF-8 or whose text holds a
  lone surrogate (a ``\\ud800`` escape).
* Parquet: the ``text_column`` column must hold strings; nulls are skipped.
"""

from __future__ import annotations

import codecs
import glob
import gzip
import io
import json
import os
import re
import stat
import sys
import sysconfig
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ._core import ParquetReader
from .errors import InputError

FORMATS = ("text", "jsonl", "parquet")
EXTENSIONS = {
    ".txt": "text",
    ".text": "text",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}

CHUNK_BYTES = 1 << 20  # text is read this many bytes at a time
BATCH_DOCS = 1024  # documents per batch handed on (JSONL lines, Parquet rows)
BATCH_CHARS = 4 << 20  # ... or fewer, once a batch holds this many characters


@dataclass(frozen=True)
class Source:
    """One input file: its path, format (text, jsonl, parquet) and compression (None, gzip, zstd)."""

    path: Path
    format: str
    compression: Optional[str] = None

    def __str__(self) -> str:
        return str(self.path)


def detect(path: Path) -> "tuple[Optional[str], Optional[str]]":
    """(format, compression) from the file name; format is None when the extension is unknown.

    >>> detect(Path("shard.jsonl.zst"))
    ('jsonl', 'zstd')
    >>> detect(Path("notes.md"))
    (None, None)
    """
    suffixes = [s.lower() for s in path.suffixes]
    compression = None
    if suffixes and suffixes[-1] in COMPRESSIONS:
        compression = COMPRESSIONS[suffixes.pop()]
    fmt = EXTENSIONS.get(suffixes[-1]) if suffixes else None
    return fmt, compression


def _source(path: Path, input_format: Optional[str]) -> Source:
    fmt, compression = detect(path)
    if input_format is not None:
        fmt = input_format
    if fmt is None:
        known = ", ".join(sorted(EXTENSIONS))
        raise InputError(f"{path}: cannot tell the format from the extension (known: {known}); use --input-format")
    if fmt == "parquet" and compression is not None:
        raise InputError(f"{path}: compressed Parquet files are not supported (Parquet compresses internally)")
    return Source(path, fmt, compression)


def _walk(folder: Path, input_format: Optional[str]) -> List[Path]:
    """Files under ``folder`` (recursively, following links to folders but never into one
    twice, hidden ones skipped, sorted) of a known format, or of ``input_format`` when it is
    given. A folder that cannot be read is an :class:`InputError`."""
    found = []
    seen = set()  # the real paths of the folders walked: a link back up is not walked again

    def unreadable(e: OSError) -> None:
        raise InputError(f"{e.filename}: cannot read the folder ({e.strerror or e})")

    for root, dirs, files in os.walk(folder, onerror=unreadable, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            fmt, _ = detect(Path(name))
            if fmt is not None and (input_format is None or fmt == input_format):
                found.append(Path(root) / name)
    return found


def expand_inputs(inputs: Sequence[str], input_format: Optional[str] = None) -> List[Source]:
    """The input files for ``inputs`` (files, folders, globs, ``-`` for standard input), in the
    order given; a folder or a glob contributes its files sorted by path. Raises :class:`InputError` for a missing file, a
    glob that matches nothing (or only folders with no known file), a folder with no known file,
    or an unknown extension."""
    if input_format is not None and input_format not in FORMATS:
        raise InputError(f"unknown input format {input_format!r} (choose from {', '.join(FORMATS)})")
    sources: List[Source] = []
    for arg in inputs:
        path = Path(arg)
        if arg == "-":
            fmt = input_format or "text"
            if fmt == "parquet":
                raise InputError("-: Parquet cannot be read from standard input; give the file")
            sources.append(Source(path, fmt))
        elif path.is_dir():
            files = _walk(path, input_format)
            if not files:
                what = input_format or "known"
                raise InputError(f"{arg}: no files of a {what} format in this folder (extensions: {', '.join(sorted(EXTENSIONS))}, optionally .gz/.zst)")
            sources.extend(_source(f, input_format) for f in files)
        elif path.is_file():
            sources.append(_source(path, input_format))
        elif path.exists():  # a named pipe, /dev/stdin, a shell's <(zcat ...)
            sources.append(_source(path, input_format))
        elif glob.has_magic(arg):
            matches = glob.glob(arg, recursive=True)
            if not matches:
                raise InputError(f"{arg}: no file matches this pattern")
            # `**` matches a folder and the files under it, each once: a set.
            matched: "set[Path]" = set()
            for m in matches:
                mp = Path(m)
                if mp.is_dir():
                    matched.update(_walk(mp, input_format))
                elif mp.is_file():
                    matched.add(mp)
            if not matched:
                what = input_format or "known"
                raise InputError(f"{arg}: matches only folders with no files of a {what} format")
            sources.extend(_source(f, input_format) for f in sorted(matched))
        else:
            raise InputError(f"{arg}: no such file or folder")
    return sources


def unique_sources(sources: Sequence[Source]) -> "tuple[List[Source], List[Tuple[Source, Source]]]":
    """(the sources, each file once, in order; the (left out, same file as) pairs): a file the
    inputs reach twice, by a link, a hard link, overlapping folders or globs, or named twice, is
    read once, where it comes first. Files are the same by device and inode; standard input and
    files that cannot be looked at are kept."""
    kept: List[Source] = []
    left_out: List[Tuple[Source, Source]] = []
    first: Dict[Tuple[int, int], Source] = {}
    for source in sources:
        try:
            st = os.stat(source.path) if str(source.path) != "-" else None
        except OSError:
            st = None
        if st is not None:
            key = (st.st_dev, st.st_ino)
            if key in first:
                left_out.append((source, first[key]))
                continue
            first[key] = source
        kept.append(source)
    return kept, left_out


def stdlib_sources() -> "tuple[Path, List[Source]]":
    """The running interpreter's standard library ``.py`` files, sorted by path (site-packages,
    dist-packages, ``__pycache__`` and hidden folders left out): the default training corpus."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"site-packages", "dist-packages", "__pycache__"}
    other = {Path(p).resolve() for key in ("purelib", "platlib") for p in [sysconfig.get_paths().get(key)] if p}
    files: List[Path] = []
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = sorted(
            d for d in dirs if d not in skip and not d.startswith(".") and (Path(dirpath) / d).resolve() not in other
        )
        files.extend(Path(dirpath) / n for n in sorted(names) if n.endswith(".py"))
    return root, [Source(f, "text") for f in files]


# ------------------------------------------------------------------------------------ opening


def open_binary(source: Source):
    """A binary file object for ``source``, decompressing ``.gz`` and ``.zst`` on the fly."""
    path = source.path
    if str(path) == "-":
        if sys.stdin is None:
            raise InputError("-: standard input is closed")
        return open(sys.stdin.fileno(), "rb", closefd=False)
    try:
        if source.compression == "gzip":
            return gzip.open(path, "rb")
        if source.compression == "zstd":
            return _open_zstd(path)
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder") from None
    except OSError as e:  # a link loop, a socket, an I/O error...
        raise InputError(f"{path}: cannot read it ({e.strerror or e})") from None


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
        self._file = open(path, "rb")
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


def _decompression_errors() -> tuple:
    errors: list = [EOFError, gzip.BadGzipFile, OSError, zlib.error]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:
        pass
    return tuple(errors)


# ------------------------------------------------------------------------------------ readers


def _split_stream(chunks: Iterator[str], sep: str) -> Iterator[List[str]]:
    """Splits a stream of text chunks on ``sep`` in linear time (a document may span chunks and
    a separator may straddle two), yielding lists of non-empty documents: the documents of
    ``"".join(chunks).split(sep)``, without the empty ones."""
    k = len(sep)
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
        docs = [p for p in parts if p]
        if docs:
            yield docs
    last = "".join(pending)
    if last:
        yield [last]


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
                    "or use --skip-bad-lines to skip the documents that hold such bytes"
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
            documents = 0
            if doc_separator == "":
                text = "".join(chunks)
                batches: Iterator[List[str]] = iter([[text]] if text else [])
            else:
                batches = _rebatch(_split_stream(chunks, doc_separator))
            for batch in batches:
                if decoder.unseen:
                    # Some document read so far holds bytes that are not UTF-8: look at each.
                    kept = []
                    for doc in batch:
                        documents += 1
                        found = _NOT_UTF8.findall(doc)
                        if not found:
                            kept.append(doc)
                            continue
                        decoder.unseen -= len(found)
                        if bad_lines is not None:
                            bad_lines.add(f"{source.path}: document {documents}: not valid UTF-8 (byte {_not_utf8_byte(found[0])})", document=True)
                    batch = kept
                else:
                    documents += len(batch)
                if batch:
                    yield batch
        except _decompression_errors() as e:
            raise InputError(f"{source.path}: cannot read ({_describe(e)})") from None


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

    def describe(self) -> str:
        """What was skipped, e.g. "2 bad lines and 1 text document that is not UTF-8"."""
        lines, documents = self.count - self.documents, self.documents
        parts = []
        if lines:
            parts.append(f"{lines:,} bad line{'s' if lines != 1 else ''}")
        if documents:
            parts.append(f"{documents:,} text document{'s that are' if documents != 1 else ' that is'} not UTF-8")
        return " and ".join(parts)


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
                    obj = json.loads(_decode_line(line, lineno))
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
                        raise InputError(message + " (use --skip-bad-lines to skip such lines)")
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
        except _decompression_errors() as e:
            where = f" after line {lineno}" if lineno else ""
            raise InputError(f"{source.path}: cannot read{where} ({_describe(e)})") from None
    if batch:
        yield batch


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as e:
        if isinstance(e, ModuleNotFoundError) and e.name in ("pyarrow", "pyarrow.parquet"):
            raise InputError("reading Parquet files with pyarrow needs pyarrow (pip install 'bpeforge[parquet]')") from None
        # Installed, but broken (built for another NumPy, say): saying it is missing would mislead.
        raise InputError(f"reading Parquet files with pyarrow needs pyarrow, which is installed but fails to import: {e}") from None
    return pyarrow


def _parquet_reader(source: Source, text_column: str, batch_rows: int = BATCH_DOCS):
    """A :class:`bpeforge.ParquetReader` of ``source``'s column, or :class:`InputError`."""
    try:
        return ParquetReader(source.path, text_column, batch_rows=batch_rows)
    except (OSError, ValueError) as e:
        hint = "; choose one with --text-column" if ": no column " in str(e) else ""
        raise InputError(_located(source, e) + hint) from None


def _located(source: Source, e: BaseException) -> str:
    """``e``'s message, which names the file (the reader's messages do), or else ``source: e``."""
    msg = str(e)
    return msg if msg.startswith(str(source.path)) else f"{source.path}: {msg}"


def check_parquet(source: Source, text_column: str = "text", *, arrow: bool = False) -> int:
    """Opens a Parquet file's footer and checks the text column; returns its number of rows.
    Raises :class:`InputError` for an unreadable file, a missing column or a non-string one.
    ``arrow``: as pyarrow reads it (see :func:`read_parquet`)."""
    if not arrow:
        return _parquet_reader(source, text_column).num_rows
    pa = _pyarrow()
    pf = _open_parquet(source, pa)
    try:
        _check_column(source, pf, text_column, pa)
        return pf.metadata.num_rows
    finally:
        _close(pf)


def read_parquet(source: Source, text_column: str = "text", batch_rows: int = BATCH_DOCS, *, arrow: bool = False) -> Iterator:
    """Documents of a Parquet file, one column only, in batches of up to ``batch_rows`` rows:
    lists of str without nulls or empty strings, read by :class:`bpeforge.ParquetReader` page
    by page (batches of long documents stop at 1 MB). With ``arrow=True``, pyarrow string arrays
    instead, read by pyarrow (record batches of ``batch_rows`` rows; dictionary and view
    columns decoded), checked to be UTF-8."""
    if arrow:
        yield from _read_parquet_arrow(source, text_column, batch_rows)
        return
    reader_batches = iter(_parquet_reader(source, text_column, batch_rows))
    while True:
        try:
            batch = next(reader_batches, None)
        except (OSError, ValueError) as e:
            raise InputError(_located(source, e)) from None
        if batch is None:
            return
        docs = [d for d in batch if d]
        if docs:
            yield docs


def _read_parquet_arrow(source: Source, text_column: str, batch_rows: int) -> Iterator:
    pa = _pyarrow()
    pf = _open_parquet(source, pa)
    try:
        _check_column(source, pf, text_column, pa)
        for batch in pf.iter_batches(batch_size=batch_rows, columns=[text_column]):
            docs = _arrow_docs(batch.column(0), pa)
            if len(docs):
                yield docs
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InputError(f"{source.path}: cannot read ({_describe(e)})") from None
    finally:
        _close(pf)


def _close(pf) -> None:
    try:
        pf.close()
    except Exception:  # pragma: no cover - old pyarrow without close()
        pass


def _open_parquet(source: Source, pa):
    try:
        # Stream each column chunk through a 1 MB buffer rather than loading it whole.
        return pa.parquet.ParquetFile(source.path, pre_buffer=False, buffer_size=1 << 20)
    except FileNotFoundError:
        raise InputError(f"{source.path}: no such file") from None
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InputError(f"{source.path}: not a readable Parquet file ({_describe(e)})") from None


def _check_column(source: Source, pf, text_column: str, pa) -> None:
    schema = pf.schema_arrow
    if text_column not in schema.names:
        columns = ", ".join(schema.names[:20]) or "none"
        raise InputError(f"{source.path}: no column {text_column!r} (columns: {columns}); choose one with --text-column")
    if schema.names.count(text_column) > 1:
        raise InputError(f"{source.path}: {schema.names.count(text_column)} columns are named {text_column!r}; the file cannot say which to read")
    typ = schema.field(text_column).type
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    is_view = getattr(pa.types, "is_string_view", lambda t: False)
    if not (pa.types.is_string(typ) or pa.types.is_large_string(typ) or is_view(typ)):
        raise InputError(f"{source.path}: column {text_column!r} holds {typ}, not strings")


def _arrow_docs(column, pa):
    """``column`` as a ``string``/``large_string`` array without nulls or empty strings; raises
    ``pa.ArrowInvalid`` if its bytes are not UTF-8 (as ``to_pylist`` would fail to decode them)."""
    import pyarrow.compute as pc

    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        column = column.cast(pa.large_string())  # dictionary<string>, string_view
    column.validate(full=True)
    lengths = pc.binary_length(column)
    if column.null_count or pc.min(lengths).as_py() == 0:
        column = column.filter(pc.greater(lengths, 0))  # a null in the mask drops the row
    return column


def _describe(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return msg[:200] or type(e).__name__


# ------------------------------------------------------------------------------------ corpus


def _utf8_len(docs: List[str]) -> int:
    return sum(len(d) if d.isascii() else len(d.encode("utf-8", "surrogatepass")) for d in docs)


class Corpus:
    """The training documents of ``sources``, as an iterable of batches (lists of str; with
    ``arrow=True``, batches of Parquet documents are pyarrow string arrays instead, which
    :meth:`bpeforge.Trainer.train_from_iterator` reads without a Python str per document).

    On the way: each document is cropped to ``doc_cap`` characters; reading stops once
    ``max_chars`` characters in all have been read (the last document cropped to fit); every
    ``holdout_every``-th document (the 100th, 200th, ...) is held out of training into
    :attr:`heldout` until it holds ``holdout_max_bytes`` bytes. The first ``holdout_max_bytes``
    of training text are also kept in :attr:`sample`, to measure compression on when too few
    documents were read to hold any out. Counts (``documents``, ``chars``, ``bytes``, and the
    same for held-out text) are kept as it goes; ``on_read(corpus, source)`` is called as
    each file starts and after each of its batches. Iterate once.
    """

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        text_column: str = "text",
        doc_separator: str = "\n",
        doc_cap: Optional[int] = None,
        max_chars: Optional[int] = None,
        holdout_every: int = 0,
        holdout_max_bytes: int = 1_000_000,
        skip_bad_lines: bool = False,
        on_read: Optional[Callable[["Corpus", Source], None]] = None,
        arrow: bool = False,
    ) -> None:
        self.sources = list(sources)
        self.text_column = text_column
        self.doc_separator = doc_separator
        self.doc_cap = doc_cap
        self.max_chars = max_chars
        self.holdout_every = holdout_every
        self.holdout_max_bytes = holdout_max_bytes
        self.skip_bad_lines = skip_bad_lines
        self.on_read = on_read
        self.arrow = arrow
        self.bad_lines = BadLines()
        self.documents = 0  # training documents
        self.chars = 0
        self.bytes = 0
        self.heldout: List[str] = []
        self.heldout_chars = 0
        self.heldout_bytes = 0
        self.sample: List[str] = []
        self.sample_bytes = 0
        self.files_started = 0
        self.stopped_early = False  # max_chars was reached
        self.start_time: Optional[float] = None
        self._seen = 0  # documents read, training and held out

    @property
    def total_chars(self) -> int:
        """Characters read so far, training and held out."""
        return self.chars + self.heldout_chars

    @property
    def total_bytes(self) -> int:
        """UTF-8 bytes read so far, training and held out."""
        return self.bytes + self.heldout_bytes

    def _read(self, source: Source) -> Iterator[List[str]]:
        if source.format == "text":
            return read_text(source, self.doc_separator, skip_bad_lines=self.skip_bad_lines, bad_lines=self.bad_lines)
        if source.format == "jsonl":
            return read_jsonl(source, self.text_column, self.skip_bad_lines, self.bad_lines)
        if source.format == "parquet":
            return read_parquet(source, self.text_column, arrow=self.arrow)
        raise InputError(f"{source.path}: unknown format {source.format!r}")

    def __iter__(self) -> Iterator:
        self.start_time = time.perf_counter()
        for source in self.sources:
            if self.stopped_early:
                break
            self.files_started += 1
            if self.on_read is not None:
                self.on_read(self, source)
            for docs in self._read(source):
                docs = self._take(docs) if isinstance(docs, list) else self._take_arrow(docs)
                if self.on_read is not None:
                    self.on_read(self, source)
                # A ChunkedArray (slices left by the held-out documents) goes chunk by chunk:
                # the trainer takes arrays and lists, not streams.
                for part in getattr(docs, "chunks", [docs]):
                    if len(part):
                        yield part
                if self.stopped_early:
                    break

    def _take(self, docs: List[str]) -> List[str]:
        cap = self.doc_cap
        if cap is not None:
            docs = [d[:cap] for d in docs]
        if self.max_chars is not None:
            room = self.max_chars - self.total_chars
            n = sum(map(len, docs))
            if n >= room:
                self.stopped_early = True
                kept = []
                for d in docs:
                    if room <= 0:
                        break
                    kept.append(d[:room])
                    room -= len(kept[-1])
                docs = kept
        every = self.holdout_every
        seen = self._seen
        self._seen += len(docs)
        if every and self.heldout_bytes < self.holdout_max_bytes:
            first = (every - 1 - seen) % every
            held = docs[first::every]
            k = 0
            for d in held:  # hold out while under the budget
                if self.heldout_bytes >= self.holdout_max_bytes:
                    break
                self.heldout.append(d)
                self.heldout_chars += len(d)
                self.heldout_bytes += _utf8_len([d])
                k += 1
            if k:
                docs = list(docs)
                del docs[first : first + (k - 1) * every + 1 : every]
        nbytes = _utf8_len(docs)
        self.documents += len(docs)
        self.chars += sum(map(len, docs))
        self.bytes += nbytes
        if self.sample_bytes < self.holdout_max_bytes and docs:
            for d in docs:
                if self.sample_bytes >= self.holdout_max_bytes:
                    break
                self.sample.append(d)
                self.sample_bytes += len(d.encode("utf-8", "surrogatepass"))
        return docs

    def _take_arrow(self, docs):
        """:meth:`_take` for a pyarrow string array without nulls or empty strings, with the same
        results, computed with pyarrow.compute: only held-out and sample documents become str."""
        import pyarrow as pa
        import pyarrow.compute as pc

        def chars(a):
            return pc.cast(pc.utf8_length(a), pa.int64())

        def before(lengths):  # for each document, the total length of those before it
            return pc.subtract(pc.cumulative_sum(lengths), lengths)

        def total(lengths) -> int:
            return pc.sum(lengths).as_py() or 0

        cap = self.doc_cap
        if cap is not None and len(docs) and pc.max(chars(docs)).as_py() > cap:
            docs = pc.utf8_slice_codeunits(docs, 0, cap)
        if self.max_chars is not None:
            room = self.max_chars - self.total_chars
            lengths = chars(docs)
            if total(lengths) >= room:
                self.stopped_early = True
                # Keep the documents that start before the budget runs out, the last one cropped.
                starts = before(lengths)
                k = total(pc.cast(pc.less(starts, room), pa.int64())) if room > 0 else 0
                if k:
                    last = pc.utf8_slice_codeunits(docs.slice(k - 1, 1), 0, room - starts[k - 1].as_py())
                    docs = pa.concat_arrays([docs.slice(0, k - 1), last])
                else:
                    docs = docs.slice(0, 0)
        every = self.holdout_every
        seen = self._seen
        self._seen += len(docs)
        if every and self.heldout_bytes < self.holdout_max_bytes and len(docs):
            first = (every - 1 - seen) % every
            picks = list(range(first, len(docs), every))
            if picks:
                held = docs.take(pa.array(picks, pa.int64()))
                nbytes = pc.cast(pc.binary_length(held), pa.int64())
                # Hold out while under the budget (checked before each document).
                k = total(pc.cast(pc.less(pc.add(before(nbytes), self.heldout_bytes), self.holdout_max_bytes), pa.int64()))
                if k:
                    held = held.slice(0, k)
                    self.heldout.extend(held.to_pylist())
                    self.heldout_chars += total(chars(held))
                    self.heldout_bytes += total(nbytes.slice(0, k))
                    cuts = picks[:k]
                    pieces = [docs.slice(a + 1, b - a - 1) for a, b in zip([-1] + cuts, cuts + [len(docs)])]
                    # Slices of the batch, not a copy of it (a batch may hold tens of MB).
                    docs = pa.chunked_array([p for p in pieces if len(p)], type=docs.type)
        nbytes = pc.cast(pc.binary_length(docs), pa.int64())
        self.documents += len(docs)
        self.chars += total(chars(docs))
        self.bytes += total(nbytes)
        if self.sample_bytes < self.holdout_max_bytes and len(docs):
            k = total(pc.cast(pc.less(pc.add(before(nbytes), self.sample_bytes), self.holdout_max_bytes), pa.int64()))
            self.sample.extend(docs.slice(0, k).to_pylist())
            self.sample_bytes += total(nbytes.slice(0, k))
        return docs
