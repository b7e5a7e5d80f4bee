//! `ParquetReader`: the documents of a column of strings of a Parquet file, a `DocumentReader`
//! (`readers.rs`). The pages are read and decoded by [`crate::readers::parquet`], and the
//! documents selected, without the GIL; only the str objects handed to Python are made with it.

use std::path::PathBuf;

use pyo3::exceptions::{PyFileNotFoundError, PyIsADirectoryError, PyOSError, PyPermissionError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use super::int_arg;
use super::readers::{options_of, reader, DocumentReader, Documents, InputError};
use crate::parquet_errors::{catch_reader_panics, Failure, ReadError};
use crate::readers::parquet::{ParquetDocuments, ParquetTexts};
use crate::readers::selection::SelectionOptions;

/// A batch's rows, at most...
const BATCH_ROWS: usize = 1024;
/// ... and the size of its strings past which it ends (the Python strs of a batch of long
/// documents would otherwise add tens of MB to the reader's own memory).
const BATCH_BYTES: usize = 1 << 20;

/// Reads the documents of one column of strings of a Parquet file, batch by batch, with little
/// memory.
///
/// `ParquetReader(path, column="text", *, batch_rows=1024, batch_bytes=1 << 20, doc_cap=None,
/// max_chars=None, holdout_every=0, holdout_max_bytes=1_000_000, documents_before=0,
/// sample_max_bytes=0)` opens `path` (reading only its footer) and checks that its top-level
/// column `column` holds strings. Iterating gives lists of str in file order, null rows and empty
/// strings left out: the documents of `batch_rows` rows each, or fewer once their strings reach
/// `batch_bytes` bytes, so that a batch of long documents stays small. Hand it to
/// `Trainer.train_from_iterator` as it is (it is read in Rust, without a Python str per
/// document), or chain the lists for one str per document. Only the pages of the batch being
/// read are held in memory (and the row group's dictionary), whatever the file's size. The
/// documents are selected on the way as `TextReader`'s keyword arguments say (crop, budget of
/// characters, hold-out, sample; by default every document whole), with its counts.
///
/// Raises OSError (FileNotFoundError, ...) for a file that cannot be opened or read, and
/// ValueError for one that is not Parquet, has no such column of strings, is damaged, or
/// holds strings that are not UTF-8 (when their batch is read; the message names the row);
/// RuntimeError says bpeforge itself failed (a bug: please report it). The codecs are those
/// pyarrow writes: snappy, gzip, zstd, lz4 and brotli.
#[pyclass(module = "bpeforge._core", extends = DocumentReader)]
pub struct ParquetReader {
    column: String,
    num_rows: u64,
}

pub(super) fn read_error(path: &std::path::Path, e: ReadError) -> PyErr {
    let path = path.display();
    match e {
        ReadError::Io(e) => {
            let msg = format!("{path}: {e}");
            match e.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(msg),
                std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(msg),
                _ => PyOSError::new_err(msg),
            }
        }
        ReadError::Format(e) => PyValueError::new_err(format!("{path}: {e}")),
    }
}

/// The Python exception for a failure of the reader on `path`.
pub(super) fn failure_to_py(path: &std::path::Path, failure: Failure) -> PyErr {
    match failure {
        Failure::Read(e) => read_error(path, e),
        Failure::Bug(what) => PyRuntimeError::new_err(format!(
            "internal error in the Parquet reader on {} (a bpeforge bug: please report it): {what}",
            path.display()
        )),
    }
}

/// The two parts of a `ParquetReader` of `column` of `path` (see its comment).
fn open(
    py: Python<'_>,
    path: PathBuf,
    column: &str,
    batch_rows: Option<&Bound<'_, PyAny>>,
    batch_bytes: Option<&Bound<'_, PyAny>>,
    options: SelectionOptions,
) -> PyResult<(DocumentReader, ParquetReader)> {
    let batch_rows = match batch_rows {
        Some(n) => int_arg(n, "batch_rows", 1, 1 << 30)? as usize,
        None => BATCH_ROWS,
    };
    let batch_bytes = match batch_bytes {
        Some(n) => int_arg(n, "batch_bytes", 1, 1 << 40)? as usize,
        None => BATCH_BYTES,
    };
    let texts = py.detach(|| catch_reader_panics(|| ParquetTexts::open(&path, column))).map_err(|e| failure_to_py(&path, e))?;
    let num_rows = texts.num_rows();
    let repr = format!("ParquetReader('{}', column='{column}', batch_rows={batch_rows}, batch_bytes={batch_bytes})", path.display());
    let documents = Documents::Parquet(Box::new(ParquetDocuments::new(texts, column, batch_rows, batch_bytes)));
    // The documents' reading returns at the end of each batch of rows, which keeps both limits:
    // a batch handed to Python is that of the rows (less what the selection left out).
    let base = reader(path, repr, batch_rows, usize::MAX, documents, options);
    Ok((base, ParquetReader { column: column.to_string(), num_rows }))
}

#[pymethods]
impl ParquetReader {
    #[new]
    #[pyo3(signature = (path, column = "text", *, batch_rows = None, batch_bytes = None, doc_cap = None, max_chars = None,
        holdout_every = None, holdout_max_bytes = None, documents_before = None, sample_max_bytes = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        column: &str,
        batch_rows: Option<&Bound<'_, PyAny>>,
        batch_bytes: Option<&Bound<'_, PyAny>>,
        doc_cap: Option<&Bound<'_, PyAny>>,
        max_chars: Option<&Bound<'_, PyAny>>,
        holdout_every: Option<&Bound<'_, PyAny>>,
        holdout_max_bytes: Option<&Bound<'_, PyAny>>,
        documents_before: Option<&Bound<'_, PyAny>>,
        sample_max_bytes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let options = options_of(doc_cap, max_chars, holdout_every, holdout_max_bytes, documents_before, sample_max_bytes)?;
        let (base, sub) = open(py, path, column, batch_rows, batch_bytes, options)?;
        Ok(PyClassInitializer::from(base).add_subclass(sub))
    }

    /// The number of rows the file declares, null ones included.
    #[getter]
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// Rows read so far, null ones included.
    #[getter]
    fn rows_read(slf: PyRef<'_, Self>) -> PyResult<u64> {
        Ok(slf.as_super().parquet_read()?.0)
    }

    /// UTF-8 bytes of the strings read so far (those of a batch count once it is read), held-out
    /// and cropped ones whole.
    #[getter]
    fn bytes_read(slf: PyRef<'_, Self>) -> PyResult<u64> {
        Ok(slf.as_super().parquet_read()?.1)
    }

    /// The column read.
    #[getter]
    fn column(&self) -> &str {
        &self.column
    }
}

/// A `ParquetReader` for the command line's corpus (`bpeforge._inputs`): the same reader, which
/// raises bpeforge's `InputError` naming the file for a file that cannot be opened or read,
/// instead of OSError or ValueError (a bug is still a RuntimeError).
#[pyfunction]
#[pyo3(signature = (path, column = "text", *, batch_rows = None, doc_cap = None, max_chars = None,
    holdout_every = None, holdout_max_bytes = None, documents_before = None, sample_max_bytes = None))]
#[allow(clippy::too_many_arguments)]
pub fn parquet_documents(
    py: Python<'_>,
    path: PathBuf,
    column: &str,
    batch_rows: Option<&Bound<'_, PyAny>>,
    doc_cap: Option<&Bound<'_, PyAny>>,
    max_chars: Option<&Bound<'_, PyAny>>,
    holdout_every: Option<&Bound<'_, PyAny>>,
    holdout_max_bytes: Option<&Bound<'_, PyAny>>,
    documents_before: Option<&Bound<'_, PyAny>>,
    sample_max_bytes: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<ParquetReader>> {
    let options = options_of(doc_cap, max_chars, holdout_every, holdout_max_bytes, documents_before, sample_max_bytes)?;
    let (base, sub) = match open(py, path.clone(), column, batch_rows, None, options) {
        Ok(parts) => parts,
        Err(e) if e.is_instance_of::<PyOSError>(py) || e.is_instance_of::<PyValueError>(py) => {
            // (The reader's messages name the file.)
            return Err(InputError::new_err(e.value(py).to_string()));
        }
        Err(e) => return Err(e),
    };
    Py::new(py, PyClassInitializer::from(base.with_input_errors()).add_subclass(sub))
}
