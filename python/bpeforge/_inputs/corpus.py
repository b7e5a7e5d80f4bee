"""The training documents of the input files, as batches: cropped, stopped at a budget of
characters, with every Nth document held out (within a budget of bytes), counted as they go."""

from __future__ import annotations

import sys
import time
from typing import Callable, Iterator, List, Optional, Sequence

from .._core import DocumentReader, JsonlReader, TextReader
from .._errors import InputError
from .files import BadLines
from .parquet import read_parquet
from .sources import Source


def _utf8_len(docs: List[str]) -> int:
    return sum(len(d) if d.isascii() else len(d.encode("utf-8", "surrogatepass")) for d in docs)


class Corpus:
    """The training documents of ``sources``, as an iterable of batches (lists of str; with
    ``arrow=True``, batches of Parquet documents are pyarrow string arrays instead, which
    :meth:`bpeforge.Trainer.train_from_iterator` reads without a Python str per document).

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

    def _read(self, source: Source) -> Iterator[List[str]]:
        if source.format == "parquet":
            return read_parquet(source, self.text_column, arrow=self.arrow)
        raise InputError(f"{source.path}: unknown format {source.format!r}")

    def __iter__(self) -> Iterator:
        self.start_time = time.perf_counter()
        for source in self.sources:
            if self.stopped_early:
                break
            self.files_started += 1
            if source.format in ("text", "jsonl"):
                yield from self._read_in_rust(source)
            else:
                yield from self._read_in_python(source)

    def _read_in_python(self, source: Source) -> Iterator:
        """The batches of ``source`` read by :meth:`_read`, each through the selection
        (:meth:`_take`): Parquet through pyarrow."""
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

    def _reader(self, source: Source) -> DocumentReader:
        """A Rust reader of ``source`` that goes on from where the files before it left off."""
        if str(source.path) == "-" and sys.stdin is None:
            # Closed when Python started: file descriptor 0 may be any file opened since.
            raise InputError("-: standard input is closed")
        room = None if self.max_chars is None else self.max_chars - self.total_chars
        reader = TextReader if source.format == "text" else JsonlReader
        return reader(
            source.path,
            self.doc_separator if source.format == "text" else self.text_column,
            compression=source.compression or "none",
            skip_bad_lines=self.skip_bad_lines,
            doc_cap=self.doc_cap,
            max_chars=room,
            holdout_every=self.holdout_every,
            holdout_max_bytes=max(self.holdout_max_bytes - self.heldout_bytes, 0),
            documents_before=self._seen,
            sample_max_bytes=0 if self.sample_full else self.holdout_max_bytes - self.sample_bytes,
            byte_range=source.byte_range,
        )

    def _read_in_rust(self, source: Source) -> Iterator:
        """The items of a text or JSONL file read by a Rust reader (see the class's comment)."""
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
            held = [i for i in range(first, len(docs), every) if self._hold_out(_utf8_len([docs[i]]))]
            if held:
                for i in held:
                    self.heldout.append(docs[i])
                    self.heldout_chars += len(docs[i])
                docs = list(docs)
                for i in reversed(held):
                    del docs[i]
        nbytes = _utf8_len(docs)
        self.documents += len(docs)
        self.chars += sum(map(len, docs))
        self.bytes += nbytes
        for d in docs:
            if self.sample_full:
                break
            self._keep_in_sample(d)
        return docs

    def _hold_out(self, nbytes: int) -> bool:
        """Whether a document of ``nbytes`` bytes, one of every ``holdout_every``-th, is held out:
        only if it fits in what is left of the budget (then it is counted in it); a larger one
        is trained on. So a large document is never held out whole, and training sees all the
        text but ``holdout_max_bytes`` at most, whatever the sizes of the documents."""
        if self.heldout_bytes + nbytes > self.holdout_max_bytes:
            return False
        self.heldout_bytes += nbytes
        return True

    @property
    def sample_full(self) -> bool:
        """Whether :attr:`sample` takes no more text: its budget is used up, or a document had
        to be cropped to fit in it (the sample is the start of the training text)."""
        return self.sample_cropped or self.sample_bytes >= self.holdout_max_bytes

    def _keep_in_sample(self, doc: str) -> None:
        """Keeps ``doc`` in :attr:`sample`, or as much of it as fits in what is left of its
        budget of ``holdout_max_bytes`` bytes, cropped at a character boundary."""
        room = self.holdout_max_bytes - self.sample_bytes
        data = doc[: room + 1].encode("utf-8", "surrogatepass")  # a character is at least a byte
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
                sizes = pc.binary_length(docs.take(pa.array(picks, pa.int64()))).to_pylist()
                cuts = [i for i, n in zip(picks, sizes) if self._hold_out(n)]
                if cuts:
                    held = docs.take(pa.array(cuts, pa.int64()))
                    self.heldout.extend(held.to_pylist())
                    self.heldout_chars += total(chars(held))
                    pieces = [docs.slice(a + 1, b - a - 1) for a, b in zip([-1] + cuts, cuts + [len(docs)])]
                    # Slices of the batch, not a copy of it (a batch may hold tens of MB).
                    docs = pa.chunked_array([p for p in pieces if len(p)], type=docs.type)
        nbytes = pc.cast(pc.binary_length(docs), pa.int64())
        self.documents += len(docs)
        self.chars += total(chars(docs))
        self.bytes += total(nbytes)
        if not self.sample_full and len(docs):
            # The documents that fit whole, then the next one cropped (only its start becomes a str).
            ends = pc.add(pc.cumulative_sum(nbytes), self.sample_bytes)
            k = total(pc.cast(pc.less_equal(ends, self.holdout_max_bytes), pa.int64()))
            self.sample.extend(docs.slice(0, k).to_pylist())
            self.sample_bytes += total(nbytes.slice(0, k))
            if k < len(docs) and not self.sample_full:
                room = self.holdout_max_bytes - self.sample_bytes
                self._keep_in_sample(pc.utf8_slice_codeunits(docs.slice(k, 1), 0, room + 1).to_pylist()[0])
        return docs


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
