//! `TextReader`, `JsonlReader` and `ParquetReader` (`parquet.rs`): the documents of text, JSONL
//! and Parquet files, read, split, checked and selected (crop, stop, hold out) in Rust by
//! [`crate::readers`], without the GIL; and a reader of the documents of an iterable of Arrow
//! string arrays ([`arrow_documents`]: Parquet as pyarrow reads it), pulled from Python one array
//! at a time and selected the same way. Iterating one from Python gives lists of str;
//! `Trainer.train_from_iterator` recognises one among its items and pushes its documents into the
//! counter itself (see `feed.rs`), without a Python object per document. Each is a
//! `DocumentReader`, which holds what they share: every format's documents go through the one
//! [`Selection`].

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::exceptions::{PyException, PyRecursionError, PyRuntimeError, PyUnicodeDecodeError, PyUnicodeEncodeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyIterator, PyList, PyString};

use super::int_arg;
use super::parquet::failure_to_py;
use crate::count::Batch;
use crate::parquet_errors::Failure;
use crate::readers::bad_lines::BadLines;
use crate::readers::jsonl::{JsonlTexts, Judged};
use crate::readers::open::{self, Compression, Input};
use crate::readers::parquet::ParquetDocuments;
use crate::readers::range;
use crate::readers::selection::{Selection, SelectionOptions};
use crate::readers::text::TextDocuments;

pyo3::create_exception!(
    bpeforge,
    InputError,
    PyException,
    "A problem with the input data: a missing or unreadable file, a bad line, a missing column. \
     The message is one line and names the file (and line, where there is one)."
);

/// A batch handed to Python: this many documents at most...
const BATCH_DOCS: usize = 1024;
/// ... or fewer, once they hold this many bytes.
const BATCH_BYTES: usize = 4 << 20;
/// Bytes pushed into the counter between two looks at Ctrl-C and progress.
const PUSH_BYTES: usize = 8 << 20;

pub(super) enum Documents {
    Text(TextDocuments),
    Jsonl(JsonlTexts),
    Parquet(Box<ParquetDocuments>), // (boxed: the largest by far)
    Arrow(ArrowDocuments),
}

impl Documents {
    /// The bad lines skipped (text and JSONL files; None for the others, which have none).
    fn bad(&self) -> Option<&BadLines> {
        match self {
            Documents::Text(t) => Some(&t.bad),
            Documents::Jsonl(j) => Some(&j.bad),
            Documents::Parquet(_) | Documents::Arrow(_) => None,
        }
    }

    /// Gives back the buffer and closes the file, once nothing more is read.
    fn close(&mut self) {
        match self {
            Documents::Text(t) => t.close(),
            Documents::Jsonl(j) => j.close(),
            Documents::Parquet(p) => p.close(),
            Documents::Arrow(a) => a.close(),
        }
    }
}

/// The documents of an iterable of Arrow string arrays: each array is pulled from Python (with
/// the GIL, briefly), its strings copied through the Arrow C Data Interface (`arrow.rs`, which
/// checks the copy is UTF-8), then handed on without the GIL; null and empty strings are
/// skipped. [`ArrowDocuments::read`] returns at the end of each array.
pub(super) struct ArrowDocuments {
    /// `None` once the arrays are read to their end, or reading failed.
    arrays: Option<Py<PyIterator>>,
    /// What the arrays are the documents of, for errors (a Parquet file).
    path: PathBuf,
    /// The strings of the last array, and the next one to hand on.
    strings: Batch,
    next: usize,
    /// Rows of the arrays pulled so far (nulls included).
    rows: u64,
}

impl ArrowDocuments {
    fn read(&mut self, take: &mut dyn FnMut(&str) -> bool) -> Result<bool, ReadFailure> {
        if self.next == self.strings.len() {
            let Some(arrays) = self.arrays.as_ref() else { return Ok(false) };
            self.strings.clear();
            self.next = 0;
            let (strings, path, rows) = (&mut self.strings, &self.path, self.rows);
            let pulled = Python::attach(|py| -> PyResult<Option<u64>> {
                let Some(array) = arrays.bind(py).clone().next() else { return Ok(None) };
                let array = array?;
                let len = array.len()? as u64;
                // Named by its rows (nulls included), which is what a user can look up.
                let what = format!("the array of rows {rows} to {}", (rows + len).saturating_sub(1));
                super::arrow::push_array(&array, &what, strings).map_err(|e| {
                    // A string that is not UTF-8, or an array pyarrow should not have made.
                    InputError::new_err(format!("{}: cannot read ({})", path.display(), e.value(py)))
                })?;
                Ok(Some(len))
            });
            match pulled {
                Ok(Some(len)) => self.rows += len,
                Ok(None) | Err(_) => {
                    self.close();
                    return pulled.map(|_| false).map_err(ReadFailure::Python);
                }
            }
        }
        while self.next < self.strings.len() {
            let doc = self.strings.get(self.next);
            self.next += 1;
            if !doc.is_empty() && !take(doc) {
                return Ok(true);
            }
        }
        Ok(true)
    }

    fn close(&mut self) {
        if let Some(arrays) = self.arrays.take() {
            Python::attach(|_| drop(arrays)); // (a generator is closed when dropped)
        }
        self.strings = Batch::new();
    }
}

/// Why reading failed: a text or JSONL file's problem, a Parquet file's (its reader's own
/// exceptions, see `parquet.rs`), or an exception raised in Python (by an iterator of arrays).
pub(super) enum ReadFailure {
    Input(open::InputError),
    Parquet(Failure),
    Python(PyErr),
}

impl From<open::InputError> for ReadFailure {
    fn from(e: open::InputError) -> Self {
        ReadFailure::Input(e)
    }
}

struct Reading {
    documents: Documents,
    selection: Selection,
    /// The input is read to its end, reading stopped at `max_chars`, or failed.
    done: bool,
}

impl Reading {
    /// Reads on, handing the documents the selection keeps to `push` until it returns false;
    /// returns whether documents may remain.
    fn read(&mut self, push: &mut dyn FnMut(&str) -> bool) -> Result<bool, ReadFailure> {
        if self.done {
            return Ok(false);
        }
        let selection = &mut self.selection;
        let mut take = |doc: &str| match selection.take(doc) {
            Some(kept) => push(kept) && !selection.stopped,
            None => !selection.stopped,
        };
        let read = match &mut self.documents {
            Documents::Text(t) => t.read(&mut take).map_err(ReadFailure::from),
            Documents::Jsonl(j) => {
                let field = j.field().to_string();
                let path = j.path().to_path_buf();
                let mut judge = |line: &[u8], n: u64| Python::attach(|py| judge_line(py, line, n, &field, &path));
                j.read(&mut judge, &mut take).map_err(ReadFailure::from)
            }
            Documents::Parquet(p) => p.read(&mut take).map_err(ReadFailure::Parquet),
            Documents::Arrow(a) => a.read(&mut take),
        };
        let more = matches!(read, Ok(true)) && !self.selection.stopped;
        self.done = !more;
        if self.done {
            self.documents.close();
        }
        read.map(|_| more)
    }
}

/// What Python's `json` and the Python package's JSONL reader say a line holds (see
/// `readers/jsonl.rs`): the same checks, in the same order, with the same messages.
fn judge_line(py: Python<'_>, line: &[u8], n: u64, field: &str, path: &Path) -> Result<Judged, open::InputError> {
    // Without its line end, as the Python reader reads it (a line cut inside a string is then
    // an "Unterminated string", not an "Invalid control character").
    let line = &line[..line.len() - line.iter().rev().take_while(|&&b| b == b'\n' || b == b'\r').count()];
    let judged = || -> PyResult<Judged> {
        let skip = if n == 1 && line.starts_with(b"\xef\xbb\xbf") { 3 } else { 0 };
        let text = match PyBytes::new(py, &line[skip..]).call_method1(intern!(py, "decode"), ("utf-8",)) {
            Ok(text) => text,
            Err(e) if e.is_instance_of::<PyUnicodeDecodeError>(py) => {
                let (v, reason) = (e.value(py), e.value(py).getattr("reason")?);
                let start: usize = v.getattr("start")?.extract()?;
                return Ok(Judged::Bad(format!("not valid UTF-8 ({reason} at byte {})", start + skip)));
            }
            Err(e) => return Err(e),
        };
        let obj = match py.import(intern!(py, "json"))?.call_method1(intern!(py, "loads"), (text,)) {
            Ok(obj) => obj,
            Err(e) if e.is_instance_of::<PyRecursionError>(py) => return Ok(Judged::Bad("not readable JSON (nested too deeply)".into())),
            Err(e) if e.is_instance_of::<PyValueError>(py) => return Ok(Judged::Bad(format!("not valid JSON ({})", e.value(py)))),
            Err(e) => return Err(e),
        };
        let field_repr = PyString::new(py, field).repr()?;
        let Ok(obj) = obj.cast::<PyDict>() else {
            return Ok(Judged::Bad(format!("expected a JSON object, got {}", obj.get_type().name()?)));
        };
        let Some(value) = obj.get_item(field)? else {
            let keys: Vec<String> = obj.keys().iter().take(10).map(|k| k.str().map(|s| s.to_string())).collect::<PyResult<_>>()?;
            let fields = if keys.is_empty() { "none".to_string() } else { keys.join(", ") };
            return Ok(Judged::Bad(format!("no {field_repr} field (fields: {fields}); choose one with --text-column")));
        };
        if value.is_none() {
            return Ok(Judged::Skip);
        }
        let Ok(value) = value.cast::<PyString>() else {
            return Ok(Judged::Bad(format!("field {field_repr} is a {}, expected a string", value.get_type().name()?)));
        };
        match value.call_method1(intern!(py, "encode"), ("utf-8",)) {
            Ok(bytes) => Ok(Judged::Text(String::from_utf8_lossy(bytes.cast::<PyBytes>()?.as_bytes()).into_owned())),
            Err(e) if e.is_instance_of::<PyUnicodeEncodeError>(py) => {
                let start: usize = e.value(py).getattr("start")?.extract()?;
                let ch = py.import(intern!(py, "builtins"))?.call_method1(intern!(py, "ascii"), (value.get_item(start)?,))?;
                Ok(Judged::Bad(format!(
                    "field {field_repr} holds a lone surrogate {ch} at character {start} (not valid Unicode)"
                )))
            }
            Err(e) => Err(e),
        }
    };
    judged().map_err(|e| open::InputError::Bad(format!("{}:{n}: cannot read the line ({})", path.display(), e.value(py))))
}

/// What `TextReader`, `JsonlReader` and `ParquetReader` share: iterating gives lists of str,
/// and the counts, held-out documents and sample of what was read so far (see `TextReader`).
#[pyclass(module = "bpeforge._core", subclass)]
pub struct DocumentReader {
    path: PathBuf,
    repr: String,
    batch_docs: usize,
    batch_bytes: usize,
    /// A Parquet file that cannot be read raises `InputError` (naming it), not the exceptions
    /// `ParquetReader` promises (as the command line's corpus reads it).
    parquet_input_errors: bool,
    reading: Mutex<Reading>,
}

fn input_error(e: open::InputError) -> PyErr {
    match e {
        open::InputError::Bad(message) => InputError::new_err(message),
        open::InputError::OutOfMemory(message) => pyo3::exceptions::PyMemoryError::new_err(message),
    }
}

/// The compression of `path`: `compression` if given (`"gzip"`, `"zstd"`, `"none"`), else
/// from its name (`.gz`, `.zst`, `.zstd`).
fn compression_of(path: &Path, compression: Option<&str>) -> PyResult<Compression> {
    match compression {
        Some("none") => Ok(Compression::None),
        Some(name) => Compression::parse(Some(name)).map_err(PyValueError::new_err),
        None => {
            let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
            Ok(match ext.as_deref() {
                Some("gz") => Compression::Gzip,
                Some("zst" | "zstd") => Compression::Zstd,
                _ => Compression::None,
            })
        }
    }
}

fn batch_sizes(batch_docs: Option<&Bound<'_, PyAny>>, batch_bytes: Option<&Bound<'_, PyAny>>) -> PyResult<(usize, usize)> {
    Ok((
        batch_docs.map(|n| int_arg(n, "batch_docs", 1, 1 << 30)).transpose()?.map_or(BATCH_DOCS, |n| n as usize),
        batch_bytes.map(|n| int_arg(n, "batch_bytes", 1, 1 << 40)).transpose()?.map_or(BATCH_BYTES, |n| n as usize),
    ))
}

impl DocumentReader {
    fn lock(&self) -> PyResult<MutexGuard<'_, Reading>> {
        match self.reading.try_lock() {
            Ok(held) => Ok(held),
            Err(TryLockError::Poisoned(e)) => Ok(e.into_inner()),
            Err(TryLockError::WouldBlock) => Err(PyRuntimeError::new_err(
                "this reader is being read in another thread; read it from one thread at a time",
            )),
        }
    }

    /// The Python exception for a failure of [`Reading::read`].
    fn failure_to_py(&self, e: ReadFailure) -> PyErr {
        match e {
            ReadFailure::Input(e) => input_error(e),
            ReadFailure::Parquet(Failure::Read(e)) if self.parquet_input_errors => {
                InputError::new_err(format!("{}: {e}", self.path.display()))
            }
            ReadFailure::Parquet(e) => failure_to_py(&self.path, e),
            ReadFailure::Python(e) => e,
        }
    }

    /// A Parquet file's rows (null ones included) and bytes of strings read so far.
    pub(super) fn parquet_read(&self) -> PyResult<(u64, u64)> {
        Ok(match &self.lock()?.documents {
            Documents::Parquet(p) => (p.rows_read(), p.bytes_read()),
            _ => (0, 0),
        })
    }

    /// Pushes every document left into `sink` (see [`Sink`]), reading without the GIL.
    pub(super) fn push_into(&self, py: Python<'_>, sink: &mut dyn Sink) -> PyResult<()> {
        loop {
            let read = {
                let mut held = self.lock()?;
                let reading: &mut Reading = &mut held;
                let mut bytes = 0;
                py.detach(|| {
                    let read = reading.read(&mut |doc| {
                        bytes += doc.len();
                        sink.push(doc) && bytes < PUSH_BYTES
                    });
                    super::shutdown::safe_point(); // before taking the GIL again (see shutdown.rs)
                    read
                })
            };
            let more = read.map_err(|e| self.failure_to_py(e))?;
            if !sink.after_batch(py)? || !more {
                return Ok(());
            }
        }
    }

    fn with_selection<T>(&self, f: impl FnOnce(&Selection) -> T) -> PyResult<T> {
        Ok(f(&self.lock()?.selection))
    }
}

/// Where [`DocumentReader::push_into`] puts documents: the counter, in the bindings.
pub(super) trait Sink: Send {
    /// Takes one document (without the GIL); false: stop reading.
    fn push(&mut self, text: &str) -> bool;
    /// Called with the GIL after every few MB; false: stop reading.
    fn after_batch(&mut self, py: Python<'_>) -> PyResult<bool>;
}

#[pymethods]
impl DocumentReader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let mut held = self.lock()?;
        let reading: &mut Reading = &mut held;
        let (max_docs, max_bytes) = (self.batch_docs, self.batch_bytes);
        let mut text = String::new();
        let mut ends: Vec<usize> = Vec::new();
        let mut short = None; // the size `text` could not grow to
        let read = py.detach(|| loop {
            // (A Parquet file's or an Arrow array's reading returns after each of its batches:
            // read on past those whose documents were all held out or skipped.)
            let read = reading.read(&mut |doc| {
                if text.try_reserve(doc.len()).is_err() {
                    short = Some(text.len().saturating_add(doc.len()));
                    return false;
                }
                text.push_str(doc);
                ends.push(text.len());
                ends.len() < max_docs && text.len() < max_bytes
            });
            super::shutdown::safe_point();
            if !matches!(read, Ok(true)) || !ends.is_empty() || short.is_some() {
                break read;
            }
            // Ctrl-C is looked at between such batches: a long stretch of them returns no list.
            if let Err(e) = Python::attach(|py| py.check_signals()) {
                break Err(ReadFailure::Python(e));
            }
        });
        read.map_err(|e| self.failure_to_py(e))?;
        if let Some(bytes) = short {
            // The document that did not fit was taken (counted, within `max_chars`): reading
            // stops here rather than going on without it.
            reading.done = true;
            reading.documents.close();
            let message = crate::memory::out_of_memory_message(format!("reading {}", self.path.display()), bytes);
            return Err(pyo3::exceptions::PyMemoryError::new_err(message));
        }
        if ends.is_empty() {
            return Ok(None);
        }
        let list = PyList::empty(py);
        let mut start = 0;
        for end in ends {
            list.append(PyString::new(py, &text[start..end]))?;
            start = end;
        }
        Ok(Some(list))
    }

    /// The file read.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Training documents handed on so far (held-out ones not included).
    #[getter]
    fn documents(&self) -> PyResult<u64> {
        self.with_selection(|s| s.documents)
    }

    /// Characters of the training documents handed on so far.
    #[getter]
    fn chars(&self) -> PyResult<u64> {
        self.with_selection(|s| s.chars)
    }

    /// UTF-8 bytes of the training documents handed on so far.
    #[getter]
    fn bytes(&self) -> PyResult<u64> {
        self.with_selection(|s| s.bytes)
    }

    /// The documents held out (every `holdout_every`-th, within `holdout_max_bytes`).
    #[getter]
    fn heldout(&self) -> PyResult<Vec<String>> {
        self.with_selection(|s| s.heldout.clone())
    }

    /// Characters of the documents held out.
    #[getter]
    fn heldout_chars(&self) -> PyResult<u64> {
        self.with_selection(|s| s.heldout_chars)
    }

    /// UTF-8 bytes of the documents held out.
    #[getter]
    fn heldout_bytes(&self) -> PyResult<u64> {
        self.with_selection(|s| s.heldout_bytes)
    }

    /// The start of the training text, up to `sample_max_bytes` bytes (the last document
    /// cropped to fit, at a character boundary).
    #[getter]
    fn sample(&self) -> PyResult<Vec<String>> {
        self.with_selection(|s| s.sample.clone())
    }

    /// UTF-8 bytes of the sample.
    #[getter]
    fn sample_bytes(&self) -> PyResult<u64> {
        self.with_selection(|s| s.sample_bytes)
    }

    /// Whether the sample's last document is cropped (the sample takes no more).
    #[getter]
    fn sample_cropped(&self) -> PyResult<bool> {
        self.with_selection(|s| s.sample_cropped)
    }

    /// Whether reading stopped at `max_chars`.
    #[getter]
    fn stopped_early(&self) -> PyResult<bool> {
        self.with_selection(|s| s.stopped)
    }

    /// Bad lines (JSONL) or documents that are not UTF-8 (text) skipped so far (none for
    /// Parquet, whose strings that are not UTF-8 are an error).
    #[getter]
    fn bad_lines(&self) -> PyResult<u64> {
        Ok(self.lock()?.documents.bad().map_or(0, |b| b.count))
    }

    /// The messages of the first few of them.
    #[getter]
    fn bad_line_examples(&self) -> PyResult<Vec<String>> {
        Ok(self.lock()?.documents.bad().map_or_else(Vec::new, |b| b.examples.clone()))
    }

    fn __repr__(&self) -> String {
        self.repr.clone()
    }
}

/// Reads the documents of a text file, in batches, with little memory.
///
/// `TextReader(path, separator="\n", *, compression=None, skip_bad_lines=False, doc_cap=None,
/// max_chars=None, holdout_every=0, holdout_max_bytes=1_000_000, documents_before=0,
/// sample_max_bytes=0, batch_docs=1024, batch_bytes=4 << 20)` opens `path` (`"-"`: standard
/// input; `.gz`, `.zst` and `.zstd` are decompressed, or as `compression` says: "gzip", "zstd"
/// or "none"). Documents are its lines (ending in `\n` or `\r\n`), or the pieces between
/// `separator`s, or (`""`) the whole file; empty ones are skipped, a UTF-8 byte-order mark
/// opening the file is dropped. Bytes that are not UTF-8 raise `InputError` naming the file
/// and line, or with `skip_bad_lines` the documents holding them are skipped and counted
/// (`bad_lines`, `bad_line_examples`).
///
/// On the way (as `bpeforge train` reads): each document is cropped to `doc_cap` characters;
/// reading stops once `max_chars` characters were read (the last document cropped to fit);
/// every `holdout_every`-th document (counting on from `documents_before`) is held out into
/// `heldout` if it fits in what is left of `holdout_max_bytes` bytes; the start of the training
/// text is kept in `sample`, up to `sample_max_bytes` bytes. By default every document is taken
/// whole. Iterating gives lists of str: `batch_docs` documents, or fewer once they hold
/// `batch_bytes` bytes. `Trainer.train_from_iterator` takes the reader itself, as the iterable
/// or as one of its items, and reads it in Rust, without a Python str per document.
///
/// `byte_range=(start, end)` reads only the documents that start in those bytes of an
/// uncompressed file (beginning after the first separator that ends at or past `start`, and
/// finishing the last document past `end`), so that ranges tiling a file read each document
/// once; line numbers stay those of the whole file. The separator must be one no two of whose
/// occurrences can overlap (`"\n"`, `"<|endoftext|>"`; not `"\n\n"`): ValueError otherwise.
#[pyclass(module = "bpeforge._core", extends = DocumentReader)]
pub struct TextReader;

#[pymethods]
impl TextReader {
    #[new]
    #[pyo3(signature = (path, separator = "\n", *, compression = None, skip_bad_lines = false, doc_cap = None, max_chars = None,
        holdout_every = None, holdout_max_bytes = None, documents_before = None, sample_max_bytes = None, batch_docs = None, batch_bytes = None,
        byte_range = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        separator: &str,
        compression: Option<&str>,
        skip_bad_lines: bool,
        doc_cap: Option<&Bound<'_, PyAny>>,
        max_chars: Option<&Bound<'_, PyAny>>,
        holdout_every: Option<&Bound<'_, PyAny>>,
        holdout_max_bytes: Option<&Bound<'_, PyAny>>,
        documents_before: Option<&Bound<'_, PyAny>>,
        sample_max_bytes: Option<&Bound<'_, PyAny>>,
        batch_docs: Option<&Bound<'_, PyAny>>,
        batch_bytes: Option<&Bound<'_, PyAny>>,
        byte_range: Option<(u64, u64)>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let options = options_of(doc_cap, max_chars, holdout_every, holdout_max_bytes, documents_before, sample_max_bytes)?;
        let (batch_docs, batch_bytes) = batch_sizes(batch_docs, batch_bytes)?;
        let compression = compression_of(&path, compression)?;
        let (input, lines_before) = open_input(py, &path, compression, separator, byte_range)?;
        let repr = format!("TextReader('{}', separator={:?})", path.display(), separator);
        let documents = Documents::Text(TextDocuments::new(input, separator, skip_bad_lines).in_range(lines_before, byte_range.is_some_and(|r| r.0 > 0)));
        Ok(PyClassInitializer::from(reader(path, repr, batch_docs, batch_bytes, documents, options)).add_subclass(TextReader))
    }
}

/// Reads the texts of a JSONL file, in batches, with little memory.
///
/// `JsonlReader(path, text_field="text", *, ...)` takes the same keyword arguments as
/// `TextReader` (but `separator`). Each non-blank line must be a JSON object whose `text_field`
/// is a string (null: skipped), as Python's `json` reads it; any other line is a bad line
/// (`InputError` naming the file and line, or skipped and counted with `skip_bad_lines`), and
/// so is a line that is not UTF-8, or whose text holds a lone surrogate (a `"\ud800"` escape:
/// such a str cannot be UTF-8 text). serde_json parses the lines; those it refuses and Python's
/// `json` may take (`NaN`, numbers beyond a double, a lone surrogate elsewhere in the line,
/// deep nesting) are read by Python's `json`, so that both agree on every line.
/// `byte_range=(start, end)`: the lines that start in those bytes (see `TextReader`).
#[pyclass(module = "bpeforge._core", extends = DocumentReader)]
pub struct JsonlReader;

#[pymethods]
impl JsonlReader {
    #[new]
    #[pyo3(signature = (path, text_field = "text", *, compression = None, skip_bad_lines = false, doc_cap = None, max_chars = None,
        holdout_every = None, holdout_max_bytes = None, documents_before = None, sample_max_bytes = None, batch_docs = None, batch_bytes = None,
        byte_range = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        text_field: &str,
        compression: Option<&str>,
        skip_bad_lines: bool,
        doc_cap: Option<&Bound<'_, PyAny>>,
        max_chars: Option<&Bound<'_, PyAny>>,
        holdout_every: Option<&Bound<'_, PyAny>>,
        holdout_max_bytes: Option<&Bound<'_, PyAny>>,
        documents_before: Option<&Bound<'_, PyAny>>,
        sample_max_bytes: Option<&Bound<'_, PyAny>>,
        batch_docs: Option<&Bound<'_, PyAny>>,
        batch_bytes: Option<&Bound<'_, PyAny>>,
        byte_range: Option<(u64, u64)>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let options = options_of(doc_cap, max_chars, holdout_every, holdout_max_bytes, documents_before, sample_max_bytes)?;
        let (batch_docs, batch_bytes) = batch_sizes(batch_docs, batch_bytes)?;
        let compression = compression_of(&path, compression)?;
        let (input, lines_before) = open_input(py, &path, compression, "\n", byte_range)?;
        let repr = format!("JsonlReader('{}', text_field={:?})", path.display(), text_field);
        let documents = Documents::Jsonl(JsonlTexts::new(input, text_field, skip_bad_lines).in_range(lines_before));
        Ok(PyClassInitializer::from(reader(path, repr, batch_docs, batch_bytes, documents, options)).add_subclass(JsonlReader))
    }
}

/// The input of a reader: the file (decompressed), or with `byte_range=(start, end)` the
/// documents of an uncompressed file that start in that range (`readers::range`), with the
/// `\n` before them (for line numbers).
fn open_input(py: Python<'_>, path: &Path, compression: Compression, separator: &str, byte_range: Option<(u64, u64)>) -> PyResult<(Input, u64)> {
    let Some((start, end)) = byte_range else {
        return Ok((py.detach(|| open::open(path, compression)).map_err(input_error)?, 0));
    };
    if compression != Compression::None || path.as_os_str() == "-" {
        return Err(PyValueError::new_err(format!("{}: byte_range reads an uncompressed file, not a stream", path.display())));
    }
    if !range::splittable(separator.as_bytes()) || start > end {
        return Err(PyValueError::new_err(format!("{}: cannot read bytes {start}..{end} cut on a separator of {separator:?}", path.display())));
    }
    py.detach(|| range::open_range(path, separator.as_bytes(), start, end)).map_err(input_error)
}

/// The selection options of the readers' keyword arguments (None: the default).
#[allow(clippy::too_many_arguments)]
pub(super) fn options_of(
    doc_cap: Option<&Bound<'_, PyAny>>,
    max_chars: Option<&Bound<'_, PyAny>>,
    holdout_every: Option<&Bound<'_, PyAny>>,
    holdout_max_bytes: Option<&Bound<'_, PyAny>>,
    documents_before: Option<&Bound<'_, PyAny>>,
    sample_max_bytes: Option<&Bound<'_, PyAny>>,
) -> PyResult<SelectionOptions> {
    let int = |v: Option<&Bound<'_, PyAny>>, name: &str, lo: i64| -> PyResult<Option<u64>> {
        match v {
            Some(v) if !v.is_none() => Ok(Some(int_arg(v, name, lo, i64::MAX)? as u64)),
            _ => Ok(None),
        }
    };
    Ok(SelectionOptions {
        doc_cap: int(doc_cap, "doc_cap", 1)?,
        max_chars: int(max_chars, "max_chars", 1)?,
        holdout_every: int(holdout_every, "holdout_every", 0)?.unwrap_or(0),
        holdout_max_bytes: int(holdout_max_bytes, "holdout_max_bytes", 0)?.unwrap_or(1_000_000),
        documents_before: int(documents_before, "documents_before", 0)?.unwrap_or(0),
        sample_max_bytes: int(sample_max_bytes, "sample_max_bytes", 0)?.unwrap_or(0),
    })
}

pub(super) fn reader(path: PathBuf, repr: String, batch_docs: usize, batch_bytes: usize, documents: Documents, options: SelectionOptions) -> DocumentReader {
    let reading = Reading { documents, selection: Selection::new(options), done: false };
    DocumentReader { path, repr, batch_docs, batch_bytes, parquet_input_errors: false, reading: Mutex::new(reading) }
}

impl DocumentReader {
    /// Raise `InputError` for a Parquet file that cannot be read (see the field).
    pub(super) fn with_input_errors(self) -> Self {
        DocumentReader { parquet_input_errors: true, ..self }
    }
}

/// The documents of the Arrow string arrays `arrays` yields (objects with `__arrow_c_array__`:
/// the column of pyarrow's record batches of the Parquet file `path`), selected as `TextReader`'s
/// keyword arguments say; a `DocumentReader`. Nulls and empty strings are skipped; strings that
/// are not UTF-8 raise `InputError` naming `path`, and what the iterator raises goes through.
/// For the command line's reading of Parquet with pyarrow (`bpeforge._inputs`).
#[pyfunction]
#[pyo3(signature = (arrays, path, *, doc_cap = None, max_chars = None, holdout_every = None, holdout_max_bytes = None,
    documents_before = None, sample_max_bytes = None, batch_docs = None, batch_bytes = None))]
#[allow(clippy::too_many_arguments)]
pub fn arrow_documents(
    arrays: &Bound<'_, PyAny>,
    path: PathBuf,
    doc_cap: Option<&Bound<'_, PyAny>>,
    max_chars: Option<&Bound<'_, PyAny>>,
    holdout_every: Option<&Bound<'_, PyAny>>,
    holdout_max_bytes: Option<&Bound<'_, PyAny>>,
    documents_before: Option<&Bound<'_, PyAny>>,
    sample_max_bytes: Option<&Bound<'_, PyAny>>,
    batch_docs: Option<&Bound<'_, PyAny>>,
    batch_bytes: Option<&Bound<'_, PyAny>>,
) -> PyResult<DocumentReader> {
    let options = options_of(doc_cap, max_chars, holdout_every, holdout_max_bytes, documents_before, sample_max_bytes)?;
    let (batch_docs, batch_bytes) = batch_sizes(batch_docs, batch_bytes)?;
    let arrays = arrays.try_iter()?.unbind();
    let repr = format!("arrow_documents(..., '{}')", path.display());
    let documents = Documents::Arrow(ArrowDocuments { arrays: Some(arrays), path: path.clone(), strings: Batch::new(), next: 0, rows: 0 });
    Ok(reader(path, repr, batch_docs, batch_bytes, documents, options))
}
