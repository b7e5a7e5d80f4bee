"""The training documents of the input files, as batches: cropped, stopped at a budget of
characters, with every Nth document held out (within a budget of bytes), counted as they go.
The selection is done in Rust, by each file's reader (a :class:`bpeforge.DocumentReader`, whatever
the format), which goes on from where the files before it left off; the corpus adds up their
counts."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from .._core import DocumentReader, JsonlReader, TextReader
from .._errors import InputError
from .files import BadLines
from .parquet import parquet_reader
from .sources import Source


class Corpus:
    """The training documents of ``sources``, as an iterable of batches (lists of str); with
    ``readers=True``, the readers of the files themselves instead (each a
    :class:`bpeforge.DocumentReader`), which :meth:`bpeforge.Trainer.train_from_iterator` reads in
    Rust without a Python str per document. ``arrow=True`` reads Parquet files with pyarrow
    rather than bpeforge's own reader (the same documents).

    On the way: each document is cropped to ``doc_cap`` characters; reading stops once
    ``max_chars`` characters in all have been read (the last document cropped to fit); every
    ``holdout_every``-th document (the 100th, 200th, ...) is held out of training into
    :attr:`heldout` if it fits in what is left of a budget of ``holdout_max_bytes`` bytes, and
    trained on otherwise (the next ``holdout_every``-th is tried in turn): a large document is
    never held out whole, so training sees all the text but ``holdout_max_bytes`` at most,
    whatever the sizes of the documents (99% or more of a corpus of 100 MB or more, with the
    command line's 1 MB). The start of the training text, up to ``holdout_max_bytes`` bytes (the
    last document kept cropped to fit, at a character boundary), is kept in :attr:`sample`, to
    measure compression on when too few documents were read to hold any out. The default,
    ``holdout_every=0``, holds out nothing: what counts documents counts them all. Counts (``documents``, ``chars``, ``bytes``, and the
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
        readers: bool = False,
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
        self.readers = readers
        self.bad_lines = BadLines()
        self.documents = 0  # training documents
        self.chars = 0
        self.bytes = 0
        self.heldout: List[str] = []
        self.heldout_chars = 0
        self.heldout_bytes = 0
        self.sample: List[str] = []
        self.sample_bytes = 0
        self.sample_cropped = False  # the last document of the sample is cropped to fit
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

    def __iter__(self) -> Iterator:
        self.start_time = time.perf_counter()
        for source in self.sources:
            if self.stopped_early:
                break
            self.files_started += 1
            yield from self._read(source)

    def _reader(self, source: Source) -> DocumentReader:
        """The reader of ``source`` (see the module's comment)."""
        selection: Dict[str, Any] = dict(
            doc_cap=self.doc_cap,
            max_chars=None if self.max_chars is None else self.max_chars - self.total_chars,
            holdout_every=self.holdout_every,
            holdout_max_bytes=max(self.holdout_max_bytes - self.heldout_bytes, 0),
            documents_before=self._seen,
            sample_max_bytes=0 if self.sample_full else self.holdout_max_bytes - self.sample_bytes,
        )
        if source.format == "parquet":
            return parquet_reader(source, self.text_column, arrow=self.arrow, **selection)
        if source.format not in ("text", "jsonl"):
            raise InputError(f"{source.path}: unknown format {source.format!r}")
        if str(source.path) == "-" and sys.stdin is None:
            # Closed when Python started: file descriptor 0 may be any file opened since.
            raise InputError("-: standard input is closed")
        reader = TextReader if source.format == "text" else JsonlReader
        return reader(
            source.path,
            self.doc_separator if source.format == "text" else self.text_column,
            compression=source.compression or "none",
            skip_bad_lines=self.skip_bad_lines,
            byte_range=source.byte_range,
            **selection,
        )

    def _read(self, source: Source) -> Iterator:
        """The items of ``source``, read by its reader (see the class's comment)."""
        reader = self._reader(source)
        counted = _Counted()
        if self.readers:
            yield reader
        else:
            if self.on_read is not None:
                self.on_read(self, source)
            for batch in reader:
                counted.absorb(self, reader, lists=False)
                if self.on_read is not None:
                    self.on_read(self, source)
                yield batch
        counted.absorb(self, reader, lists=True)

    @property
    def sample_full(self) -> bool:
        """Whether :attr:`sample` takes no more text: its budget is used up, or a document had
        to be cropped to fit in it (the sample is the start of the training text)."""
        return self.sample_cropped or self.sample_bytes >= self.holdout_max_bytes


class _Counted:
    """What of a Rust reader's counts a :class:`Corpus` has added to its own so far."""

    def __init__(self) -> None:
        self.counts = (0, 0, 0, 0, 0, 0)
        self.bad = 0  # bad lines
        self.examples = 0  # of their messages

    def absorb(self, corpus: Corpus, reader: DocumentReader, lists: bool) -> None:
        """Adds what ``reader`` counted since the last call to ``corpus``'s counts; with
        ``lists``, once it is read, its held-out documents and sample too."""
        now = (reader.documents, reader.chars, reader.bytes, reader.heldout_chars, reader.heldout_bytes, reader.sample_bytes)
        documents, chars, nbytes, heldout_chars, heldout_bytes, sample_bytes = (a - b for a, b in zip(now, self.counts))
        self.counts = now
        corpus.documents += documents
        corpus.chars += chars
        corpus.bytes += nbytes
        corpus.heldout_chars += heldout_chars
        corpus.heldout_bytes += heldout_bytes
        corpus.sample_bytes += sample_bytes
        corpus._seen += documents
        if reader.bad_lines > self.bad:
            examples = reader.bad_line_examples
            new = examples[self.examples :]
            corpus.bad_lines.extend(reader.bad_lines - self.bad, new, document=isinstance(reader, TextReader))
            self.bad, self.examples = reader.bad_lines, len(examples)
        if lists:
            heldout = reader.heldout
            corpus.heldout.extend(heldout)
            corpus._seen += len(heldout)
            corpus.sample.extend(reader.sample)
            corpus.sample_cropped = corpus.sample_cropped or reader.sample_cropped
            corpus.stopped_early = corpus.stopped_early or reader.stopped_early
