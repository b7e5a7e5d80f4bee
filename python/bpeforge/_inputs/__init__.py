"""Reading training documents: text, JSONL and Parquet files, folders and globs, ``.gz``/``.zst``.

Everything streams: text is read in 1 MiB chunks, JSONL line by line (by
:class:`bpeforge.TextReader` and :class:`bpeforge.JsonlReader`, checked against plain Python
readers that the tests keep as the oracle), Parquet page by page (by
:class:`bpeforge.ParquetReader`, or by record batches through pyarrow with ``arrow=True``, whose
arrays reach Rust through the Arrow C Data Interface), so memory stays bounded whatever the size
of the corpus. Every file is read by a Rust reader (a :class:`bpeforge.DocumentReader`), which
also selects the documents (:class:`Corpus`'s cropping, budget of characters, hold-out and
sample: one piece of code for every format). Iterating a reader gives *batches* (lists of str);
:meth:`bpeforge.Trainer.train_from_iterator` takes the reader itself and reads it in Rust,
without a Python str per document.

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
* A ``.gz`` or ``.zst`` file cut short (anywhere, or to nothing at all) is an :class:`InputError`
  naming it, never the documents before the cut taken silently.
* Nothing is held out unless asked (:class:`Corpus`'s ``holdout_every``, for the command line's
  compression report): what counts documents counts them all.
* JSONL: each non-blank line is a JSON object whose ``text_column`` field is a string (or null,
  skipped). Anything else is a bad line (:class:`InputError` naming the file and line, or skipped
  and counted with ``skip_bad_lines``), and so is a line that is not UTF-8 or whose text holds a
  lone surrogate (a ``\\ud800`` escape).
* Parquet: the ``text_column`` column must hold strings; nulls (and empty strings) are skipped.

Modules, in the order they build on each other: :mod:`~bpeforge._inputs.sources` (which files),
:mod:`~bpeforge._inputs.files` (what the readers share), :mod:`~bpeforge._inputs.parquet` (the
Parquet readers, bpeforge's or through pyarrow), and
:mod:`~bpeforge._inputs.corpus` (the documents of all the files, held-out ones set aside).
"""

from .._errors import InputError
from .corpus import Corpus
from .files import BATCH_DOCS, BadLines
from .parquet import check_parquet, parquet_reader
from .sources import COMPRESSIONS, EXTENSIONS, FORMATS, Source, detect, expand_inputs, stdlib_sources, unique_sources

__all__ = [
    "BATCH_DOCS",
    "COMPRESSIONS",
    "EXTENSIONS",
    "FORMATS",
    "BadLines",
    "Corpus",
    "InputError",
    "Source",
    "check_parquet",
    "detect",
    "expand_inputs",
    "parquet_reader",
    "stdlib_sources",
    "unique_sources",
]
