"""What the readers share: a file changed while it is read is an error at its end, the batch
size the Parquet reader hands on, an error described in one line, and the count of the bad lines
skipped. (The text and JSONL files are read in Rust: ``bpeforge.TextReader`` and
``bpeforge.JsonlReader``.)"""

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
BATCH_DOCS = 1024  # documents per batch handed on (JSONL lines, Parquet rows)


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
