"""Documents of Parquet files: one column, page by page with :class:`bpeforge.ParquetReader`, or
by record batches through pyarrow as Arrow arrays, selected in Rust either way."""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional

from .._core import DocumentReader, ParquetReader, arrow_documents, parquet_documents
from .._errors import InputError
from .files import BATCH_DOCS, check_unchanged, describe_error
from .sources import Source


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


def parquet_reader(source: Source, text_column: str = "text", *, arrow: bool = False, batch_rows: int = BATCH_DOCS, **selection) -> DocumentReader:
    """The documents of a Parquet file's column, as a :class:`bpeforge.DocumentReader` that
    selects them as ``selection`` (``TextReader``'s keyword arguments: ``doc_cap``,
    ``max_chars``, ``holdout_every``, ...) says; null rows and empty strings left out. Read page
    by page by bpeforge's own reader (:class:`bpeforge.ParquetReader`), or with ``arrow=True`` or
    some ``source.row_groups`` by pyarrow, whose record batches of ``batch_rows`` rows reach Rust
    through the Arrow C Data Interface (dictionary and view columns decoded). Either way the
    documents are selected in Rust, and the trainer takes the reader without a Python str per
    document. A file that cannot be read raises :class:`InputError` naming it (when the reader
    is made, or read)."""
    if arrow or source.row_groups is not None:  # some row groups: read by pyarrow
        return arrow_documents(_arrow_arrays(source, text_column, batch_rows), source.path, **selection)
    return _parquet_documents(source, text_column, batch_rows=batch_rows, **selection)


def _parquet_documents(source: Source, text_column: str, **kw: Any) -> ParquetReader:
    try:
        return parquet_documents(source.path, text_column, **kw)
    except InputError as e:
        hint = "; choose one with --text-column" if ": no column " in str(e) else ""
        raise InputError(f"{e}{hint}") from None


def check_parquet(source: Source, text_column: str = "text", *, arrow: bool = False) -> int:
    """Opens a Parquet file's footer and checks the text column; returns its number of rows.
    Raises :class:`InputError` for an unreadable file, a missing column or a non-string one.
    ``arrow``: as pyarrow reads it (see :func:`parquet_reader`)."""
    if not arrow:
        return _parquet_documents(source, text_column).num_rows
    pa = _pyarrow()
    pf = _open_parquet(source, pa)
    try:
        _check_column(source, pf, text_column, pa)
        return pf.metadata.num_rows
    finally:
        _close(pf)


def _arrow_arrays(source: Source, text_column: str, batch_rows: int) -> Iterator:
    """The text column of pyarrow's record batches of the file (of ``source.row_groups``), as
    ``string`` or ``large_string`` arrays; what pyarrow cannot read raises :class:`InputError`."""
    pa = _pyarrow()
    opened = _stat(source)
    pf = _open_parquet(source, pa)
    try:
        _check_column(source, pf, text_column, pa)
        groups = list(source.row_groups) if source.row_groups is not None else None
        for batch in pf.iter_batches(batch_size=batch_rows, columns=[text_column], row_groups=groups):
            column = batch.column(0)
            if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
                column = column.cast(pa.large_string())  # dictionary<string>, string_view
            yield column
        _check_unchanged(source, opened)
    except (pa.ArrowException, OSError, ValueError) as e:
        _check_unchanged(source, opened)  # a file changed while it is read fails as damaged
        raise InputError(f"{source.path}: cannot read ({describe_error(e)})") from None
    finally:
        _close(pf)


def _stat(source: Source) -> Optional[os.stat_result]:
    try:
        return os.stat(source.path)
    except OSError:
        return None  # opening it says why


def _check_unchanged(source: Source, opened: Optional[os.stat_result]) -> None:
    """Raises InputError if the file is not as it was before pyarrow opened it."""
    if opened is None:
        return
    try:
        check_unchanged(opened, os.stat(source.path))
    except OSError as e:
        raise InputError(f"{source.path}: cannot read ({describe_error(e)})") from None


def _close(pf) -> None:
    try:
        pf.close()
    except Exception:  # pragma: no cover - old pyarrow without close()
        pass


def _open_parquet(source: Source, pa):
    try:
        # Stream each column chunk through a 1 MB buffer rather than loading it whole; a page
        # that carries a checksum is checked against it (as bpeforge's own reader does).
        return pa.parquet.ParquetFile(source.path, pre_buffer=False, buffer_size=1 << 20, page_checksum_verification=True)
    except FileNotFoundError:
        raise InputError(f"{source.path}: no such file") from None
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InputError(f"{source.path}: not a readable Parquet file ({describe_error(e)})") from None


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
