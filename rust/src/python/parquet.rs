//! `ParquetReader`: a column of strings of a Parquet file as lists of str, one list per batch of
//! rows. The pages are read and decoded by [`crate::readers::parquet`] without the GIL; only the
//! str objects are made with it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, TryLockError};

use pyo3::exceptions::{PyFileNotFoundError, PyIsADirectoryError, PyOSError, PyPermissionError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use super::int_arg;
use crate::parquet_errors::{catch_reader_panics, Failure, ReadError};
use crate::readers::parquet::ParquetTexts;

/// A batch's rows, at most...
const BATCH_ROWS: usize = 1024;
/// ... and the size of its strings past which it ends (the Python strs of a batch of long
/// documents would otherwise add tens of MB to the reader's own memory).
const BATCH_BYTES: usize = 1 << 20;

/// Reads the strings of one column of a Parquet file, batch by batch, with little memory.
///
/// `ParquetReader(path, column="text", *, batch_rows=1024, batch_bytes=1 << 20)` opens `path`
/// (reading only its footer) and checks that its top-level column `column` holds strings.
/// Iterating gives lists of str in file order, null rows left out: `batch_rows` rows each, or
/// fewer once their strings reach `batch_bytes` bytes, so that a batch of long documents stays
/// small. Hand it to `Trainer.train_from_iterator` as it is (lists of str are batches), or
/// chain the lists for one str per row. Only the pages of the batch being read are held in
/// memory (and the row group's dictionary), whatever the file's size.
///
/// Raises OSError (FileNotFoundError, ...) for a file that cannot be opened or read, and
/// ValueError for one that is not Parquet, has no such column of strings, is damaged, or
/// holds strings that are not UTF-8 (when their batch is read; the message names the row);
/// RuntimeError says bpeforge itself failed (a bug: please report it). The codecs are those
/// pyarrow writes: snappy, gzip, zstd, lz4 and brotli.
#[pyclass(module = "bpeforge._core")]
pub struct ParquetReader {
    path: PathBuf,
    column: String,
    batch_rows: usize,
    batch_bytes: usize,
    num_rows: u64,
    rows_read: AtomicU64,
    bytes_read: AtomicU64,
    /// `None` once the file is read to its end, or a read failed.
    texts: Mutex<Option<ParquetTexts>>,
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
fn failure_to_py(path: &std::path::Path, failure: Failure) -> PyErr {
    match failure {
        Failure::Read(e) => read_error(path, e),
        Failure::Bug(what) => PyRuntimeError::new_err(format!(
            "internal error in the Parquet reader on {} (a bpeforge bug: please report it): {what}",
            path.display()
        )),
    }
}

#[pymethods]
impl ParquetReader {
    #[new]
    #[pyo3(signature = (path, column = "text", *, batch_rows = None, batch_bytes = None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        column: &str,
        batch_rows: Option<&Bound<'_, PyAny>>,
        batch_bytes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let batch_rows = match batch_rows {
            Some(n) => int_arg(n, "batch_rows", 1, 1 << 30)? as usize,
            None => BATCH_ROWS,
        };
        let batch_bytes = match batch_bytes {
            Some(n) => int_arg(n, "batch_bytes", 1, 1 << 40)? as usize,
            None => BATCH_BYTES,
        };
        let texts = py.detach(|| catch_reader_panics(|| ParquetTexts::open(&path, column))).map_err(|e| failure_to_py(&path, e))?;
        Ok(ParquetReader {
            num_rows: texts.num_rows(),
            path,
            column: column.to_string(),
            batch_rows,
            batch_bytes,
            rows_read: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            texts: Mutex::new(Some(texts)),
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let mut held = match self.texts.try_lock() {
            Ok(held) => held,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(PyRuntimeError::new_err(
                    "this ParquetReader is being read in another thread; read it from one thread at a time",
                ))
            }
        };
        let Some(texts) = held.as_mut() else { return Ok(None) };
        let (rows, bytes) = (self.batch_rows, self.batch_bytes);
        let read = py.detach(|| catch_reader_panics(|| texts.next_batch(rows, bytes).map(|batch| batch.len())));
        self.rows_read.store(texts.rows_read(), Ordering::Relaxed);
        self.bytes_read.store(texts.bytes_read(), Ordering::Relaxed);
        let len = match read {
            Ok(0) => {
                *held = None; // the end: close the file
                return Ok(None);
            }
            Ok(len) => len,
            Err(e) => {
                *held = None;
                return Err(failure_to_py(&self.path, e));
            }
        };
        let batch = texts.last_batch();
        let list = PyList::empty(py);
        for (i, value) in batch[..len].iter().enumerate() {
            let text = PyString::from_bytes(py, value.data());
            match text {
                Ok(text) => list.append(text)?,
                Err(e) => {
                    let row = texts.row_of(i);
                    *held = None;
                    return Err(PyValueError::new_err(format!(
                        "{}: row {row} of column '{}' is not UTF-8 ({})",
                        self.path.display(),
                        self.column,
                        e.value(py)
                    )));
                }
            }
        }
        Ok(Some(list))
    }

    /// The number of rows the file declares, null ones included.
    #[getter]
    fn num_rows(&self) -> u64 {
        self.num_rows
    }

    /// Rows read so far, null ones included.
    #[getter]
    fn rows_read(&self) -> u64 {
        self.rows_read.load(Ordering::Relaxed)
    }

    /// UTF-8 bytes of the strings read so far (those of a batch count once it is read).
    #[getter]
    fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// The file read.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The column read.
    #[getter]
    fn column(&self) -> &str {
        &self.column
    }

    fn __repr__(&self) -> String {
        format!(
            "ParquetReader('{}', column='{}', batch_rows={}, batch_bytes={})",
            self.path.display(),
            self.column,
            self.batch_rows,
            self.batch_bytes
        )
    }
}
