"""Documents of text files: one per line, split on a separator, or whole files; bytes that are
not UTF-8 named by line, or skipped and counted."""

from __future__ import annotations

import codecs
import collections
import os
import re
import stat
from pathlib import Path
from typing import Deque, Iterator, List, Optional

from .._errors import InputError
from .files import BATCH_DOCS, CHUNK_BYTES, BadLines, decompression_errors, describe_error, open_binary
from .sources import Source


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
