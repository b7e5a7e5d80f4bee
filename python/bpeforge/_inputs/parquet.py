"""Documents of Parquet files: one column, page by page with :class:`bpeforge.ParquetReader`, or
by record batches through pyarrow as Arrow arrays."""

from __future__ import annotations

import os
from typing import Iterator, Optional

from .._core import ParquetReader
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
    if arrow or source.row_groups is not None:  # some row groups: read by pyarrow
        yield from _read_parquet_arrow(source, text_column, batch_rows, lists=not arrow)
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


def _read_parquet_arrow(source: Source, text_column: str, batch_rows: int, lists: bool = False) -> Iterator:
    pa = _pyarrow()
    opened = _stat(source)
    pf = _open_parquet(source, pa)
    try:
        _check_column(source, pf, text_column, pa)
        groups = list(source.row_groups) if source.row_groups is not None else None
        for batch in pf.iter_batches(batch_size=batch_rows, columns=[text_column], row_groups=groups):
            docs = _arrow_docs(batch.column(0), pa)
            if len(docs):
                yield docs.to_pylist() if lists else docs
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
