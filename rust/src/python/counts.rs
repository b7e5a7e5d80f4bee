//! The `SpanCounts` class: span counts as a value, Rust-backed (see `span_counts/sorted.rs`), with the
//! split pattern they were made with and the counting options that change spans; and `count`,
//! which makes them from an iterable of texts.
//!
//! The spans live in an `Arc` that is never changed: adding makes new counts, and training
//! borrows them without the GIL (no copy), so the object is frozen and shared freely between
//! threads.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use rayon::prelude::*;

use pyo3::exceptions::{PyFileNotFoundError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

use super::args::{as_int, int_arg, progress_arg, type_name};
use super::feed::{count_iterator, Texts};
use super::parquet::read_error;
use super::pool::Pool;
use super::shutdown;
use super::splitter_arg;
use super::trainer::read_counts;
use crate::count::Counted;
use crate::parquet_errors::ReadError;
use crate::span_counts::file;
use crate::span_counts::packed::{pack, unpack};
use crate::span_counts::{SortedSpans, WeightedOverflow};
use crate::pretokenize::presets;

/// Span counts: the distinct spans of a corpus (as bytes), how often each occurred, the split
/// pattern that made them and the counting options that change spans.
///
/// Made by `bpeforge.count(texts)`, `SpanCounts.from_mapping`, `SpanCounts.load` or
/// `SpanCounts.from_parquet`; added with `+` or `SpanCounts.merge`, exactly (64-bit counts, an
/// OverflowError past 2^64-1) and in any order or grouping with the same result; trained from
/// with `Tokenizer.train_from_counts`. Counts made with different patterns (or options) cannot
/// be added: a ValueError naming both. Immutable; pickles as compact bytes (`to_bytes`).
#[pyclass(module = "bpeforge._core", name = "SpanCounts", frozen)]
pub(super) struct PySpanCounts {
    pub(super) spans: Arc<SortedSpans>,
    /// The split pattern's regex.
    pub(super) pattern: String,
    /// The counting options that change spans, as canonical JSON (keys sorted): `{}` for none.
    pub(super) options: String,
}

/// A pattern for a message: the first preset's name whose regex it is, else the regex quoted.
pub(super) fn pattern_shown(regex: &str) -> String {
    match presets::NAMED.iter().find(|(_, p)| *p == regex) {
        Some((name, _)) => format!("'{name}'"),
        None => format!("{regex:?}"),
    }
}

/// Canonical JSON of a counting options dict (None for none).
fn options_arg(py: Python<'_>, options: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    let Some(options) = options.filter(|o| !o.is_none()) else {
        return Ok("{}".into());
    };
    if !options.is_instance_of::<PyDict>() {
        return Err(PyTypeError::new_err(format!("options must be a dict, got {}", type_name(options))));
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("sort_keys", true)?;
    let text = py.import("json")?.call_method("dumps", (options,), Some(&kwargs)).map_err(|e| {
        PyValueError::new_err(format!("options must be a dict of str to JSON values (int, str, bool, None): {e}"))
    })?;
    text.extract()
}

impl PySpanCounts {
    /// The `doc_cap` the counts were made with (documents cropped to that many characters), if any.
    pub(super) fn doc_cap(&self) -> Option<u64> {
        Self::doc_cap_of(&self.options)
    }

    /// The `doc_cap` recorded in counting options (canonical JSON), if any.
    fn doc_cap_of(options: &str) -> Option<u64> {
        let options = serde_json::from_str::<serde_json::Value>(options).ok()?;
        options.get("doc_cap").and_then(serde_json::Value::as_u64)
    }

    pub(super) fn new(spans: SortedSpans, pattern: String, options: String) -> Self {
        PySpanCounts { spans: Arc::new(spans), pattern, options }
    }

    /// A ValueError unless `self` and `other` were made with the same pattern and options;
    /// `what` names them in the message (e.g. "the counts added").
    pub(super) fn check_same_kind(&self, other: &PySpanCounts, first: &str, second: &str) -> PyResult<()> {
        if self.pattern != other.pattern {
            return Err(PyValueError::new_err(format!(
                "span counts made with different split patterns cannot be added or trained together: \
                 {first} split by {}, {second} by {}",
                pattern_shown(&self.pattern),
                pattern_shown(&other.pattern)
            )));
        }
        if self.options != other.options {
            return Err(PyValueError::new_err(format!(
                "span counts made with different counting options cannot be added: {first} with {}, {second} with {}",
                self.options, other.options
            )));
        }
        Ok(())
    }

    /// The sum of `parts` (checked to be of one kind), without the GIL.
    pub(super) fn sum(py: Python<'_>, parts: &[&PySpanCounts]) -> PyResult<PySpanCounts> {
        let Some(first) = parts.first() else {
            return Err(PyValueError::new_err("SpanCounts.merge needs at least one SpanCounts (an empty sum has no pattern)"));
        };
        for (i, part) in parts.iter().enumerate().skip(1) {
            first.check_same_kind(part, "part 0", &format!("part {i}"))?;
        }
        if parts.len() == 1 {
            // The same counts: shared, not copied (they never change).
            return Ok(PySpanCounts { spans: Arc::clone(&first.spans), pattern: first.pattern.clone(), options: first.options.clone() });
        }
        let spans: Vec<&SortedSpans> = parts.iter().map(|p| &*p.spans).collect();
        let sum = py.detach(|| SortedSpans::merge(&spans)).map_err(|e| pyo3::exceptions::PyOverflowError::new_err(e.to_string()))?;
        Ok(PySpanCounts::new(sum, first.pattern.clone(), first.options.clone()))
    }
}

#[pymethods]
impl PySpanCounts {
    /// Number of distinct spans.
    fn __len__(&self) -> usize {
        self.spans.len()
    }

    /// The sum of the counts: how many span occurrences were counted.
    #[getter]
    fn total(&self) -> u128 {
        self.spans.total()
    }

    /// The sum of count × length in bytes: the bytes of text the spans cover.
    #[getter]
    fn total_bytes(&self) -> u128 {
        self.spans.total_bytes()
    }

    /// The distinct bytes the spans hold (those counted at least once), sorted: the alphabet
    /// HuggingFace's trainers would find.
    fn byte_set<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let mut seen = [false; 256];
        for (span, n) in self.spans.spans().iter() {
            if n > 0 {
                for &b in span {
                    seen[b as usize] = true;
                }
            }
        }
        let bytes: Vec<u8> = (0..=255u8).filter(|&b| seen[b as usize]).collect();
        PyBytes::new(py, &bytes)
    }

    /// The split pattern (a regex) the texts were split by.
    #[getter]
    fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The counting options that change spans (e.g. `{"doc_cap": 10000}`), `{}` for none.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.options,))
    }

    /// The `n` most counted spans as `[(span_bytes, count)]`, most counted first (the smaller
    /// span first among equal counts); all of them for `n=None`.
    #[pyo3(signature = (n=None))]
    fn most_common<'py>(&self, py: Python<'py>, n: Option<&Bound<'py, PyAny>>) -> PyResult<Vec<(Bound<'py, PyBytes>, u64)>> {
        let n = match n {
            Some(n) if !n.is_none() => int_arg(n, "n", 0, i64::MAX)? as usize,
            _ => self.spans.len(),
        };
        let spans = &self.spans;
        let top = py.detach(|| spans.most_common(n));
        Ok(top.into_iter().map(|i| {
            let (span, count) = spans.get(i);
            (PyBytes::new(py, span), count)
        }).collect())
    }

    /// Every span and its count as `[(span_bytes, count)]`, sorted by bytes.
    fn items<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, u64)> {
        self.spans.spans().iter().map(|(span, n)| (PyBytes::new(py, span), n)).collect()
    }

    /// The count of a span (str or bytes), 0 if it was never counted.
    fn __getitem__(&self, span: &Bound<'_, PyAny>) -> PyResult<u64> {
        if let Ok(b) = span.cast::<PyBytes>() {
            return Ok(self.spans.count_of(b.as_bytes()));
        }
        if let Ok(s) = span.cast::<PyString>() {
            return Ok(self.spans.count_of(s.to_cow()?.as_bytes()));
        }
        Err(PyTypeError::new_err(format!("a span is str or bytes, got {}", type_name(span))))
    }

    /// The sum of these counts and `other`'s (see the class's comment).
    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(other) = other.cast::<PySpanCounts>() else {
            return Ok(py.NotImplemented());
        };
        self.check_same_kind(other.get(), "the left counts", "the right counts")?;
        Ok(Py::new(py, PySpanCounts::sum(py, &[self, other.get()])?)?.into_any())
    }

    /// `0 + counts` is `counts`, so that `sum([c1, c2, ...])` works.
    fn __radd__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if other.extract::<i64>().ok() == Some(0) && !other.is_instance_of::<pyo3::types::PyBool>() {
            return Ok(slf.clone().into_any().unbind());
        }
        Ok(py.NotImplemented())
    }

    /// The sum of a list of SpanCounts, all made with the same pattern and options: one merge
    /// of sorted lists per pair, in a tree, without the GIL.
    #[staticmethod]
    fn merge(py: Python<'_>, parts: &Bound<'_, PyAny>) -> PyResult<PySpanCounts> {
        let mut held = Vec::new();
        for (i, part) in parts.try_iter()?.enumerate() {
            let part = part?;
            let part = part.cast_into::<PySpanCounts>().map_err(|e| {
                PyTypeError::new_err(format!("part {i} of SpanCounts.merge is {}, expected SpanCounts", type_name(e.into_inner().as_any())))
            })?;
            held.push(part);
        }
        let refs: Vec<&PySpanCounts> = held.iter().map(|p| p.get()).collect();
        PySpanCounts::sum(py, &refs)
    }

    /// The sum of weighted span counts: `parts` is an iterable of `(name, counts, weight)`, the
    /// counts all made with the same pattern and options, each weight an int from 1 to 2^64-1,
    /// and every count of a part is multiplied by its weight, exactly, before the parts are
    /// added (without the GIL; the result does not depend on their order). A product or sum past
    /// 2^64-1 is an OverflowError naming the part; `options` (a dict) replaces the parts'
    /// options in the result (`bpeforge.mix` records the mix there). `bpeforge.mix` computes
    /// the weights from the sources' sizes.
    #[staticmethod]
    #[pyo3(signature = (parts, *, options=None))]
    fn weighted_sum(py: Python<'_>, parts: &Bound<'_, PyAny>, options: Option<&Bound<'_, PyAny>>) -> PyResult<PySpanCounts> {
        let mut held: Vec<(String, Bound<'_, PySpanCounts>, u64)> = Vec::new();
        for (i, part) in parts.try_iter()?.enumerate() {
            let part = part?;
            let Ok((name, counts, weight)) = part.extract::<(String, Bound<'_, PyAny>, Bound<'_, PyAny>)>() else {
                return Err(PyTypeError::new_err(format!("part {i} of weighted_sum is {}, expected a (name, SpanCounts, weight) tuple", type_name(&part))));
            };
            let counts = counts.cast_into::<PySpanCounts>().map_err(|e| {
                PyTypeError::new_err(format!("source '{name}': expected SpanCounts, got {}", type_name(e.into_inner().as_any())))
            })?;
            let weight = match as_int(&weight).map(|w| w.extract::<u64>()) {
                Some(Ok(w)) if w >= 1 => w,
                Some(_) => return Err(PyValueError::new_err(format!("source '{name}': a weight is an int from 1 to 2^64-1, got {weight}"))),
                None => return Err(PyTypeError::new_err(format!("source '{name}': a weight is an int, got {}", type_name(&weight)))),
            };
            held.push((name, counts, weight));
        }
        let Some((first_name, first, _)) = held.first() else {
            return Err(PyValueError::new_err("weighted_sum needs at least one part (an empty sum has no pattern)"));
        };
        for (name, part, _) in &held[1..] {
            first.get().check_same_kind(part.get(), &format!("source '{first_name}'"), &format!("source '{name}'"))?;
        }
        let options = match options {
            Some(o) if !o.is_none() => options_arg(py, Some(o))?,
            _ => first.get().options.clone(),
        };
        let pattern = first.get().pattern.clone();
        let weighted: Vec<(&SortedSpans, u64)> = held.iter().map(|(_, c, w)| (&*c.get().spans, *w)).collect();
        let sum = py.detach(|| SortedSpans::weighted_sum(&weighted)).map_err(|e| {
            let part = match &e {
                WeightedOverflow::Product { part, .. } => format!("source '{}': ", held[*part].0),
                WeightedOverflow::Sum(_) => "the sum of the weighted sources: ".to_owned(),
            };
            pyo3::exceptions::PyOverflowError::new_err(format!("{part}{e}"))
        })?;
        Ok(PySpanCounts::new(sum, pattern, options))
    }

    /// Span counts from a mapping `{span: count}` (or an iterable of `(span, count)` pairs):
    /// spans are str or bytes (each taken as one span, not split), counts ints from 0 to
    /// 2^64-1; repeats add up (an OverflowError past 2^64-1), zero counts and empty spans are
    /// left out. `pattern` (a preset's name or a regex) is the one the spans were split by,
    /// `options` the counting options that changed them (a dict, recorded as it is).
    #[staticmethod]
    #[pyo3(signature = (mapping, *, pattern, options=None))]
    fn from_mapping(py: Python<'_>, mapping: &Bound<'_, PyAny>, pattern: &str, options: Option<&Bound<'_, PyAny>>) -> PyResult<PySpanCounts> {
        let splitter = splitter_arg(pattern)?;
        let options = options_arg(py, options)?;
        let pairs = read_counts(py, mapping)?;
        let spans = py.detach(|| SortedSpans::from_unsorted(pairs)).map_err(|e| pyo3::exceptions::PyOverflowError::new_err(e.to_string()))?;
        Ok(PySpanCounts::new(spans, splitter.pattern().to_owned(), options))
    }

    /// The counts as compact bytes: pattern, options, spans and counts, and a checksum
    /// (`from_bytes` reads them back). About the spans' bytes plus 2-3 bytes per span.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let packed = py.detach(|| pack(&self.pattern, &self.options, &self.spans));
        PyBytes::new(py, &packed)
    }

    /// Counts from `to_bytes`'s bytes, checked (format, checksum, order): a ValueError says
    /// what is wrong.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<PySpanCounts> {
        let data = data.extract::<&[u8]>().map_err(|_| PyTypeError::new_err(format!("from_bytes takes bytes, got {}", type_name(data))))?;
        let unpacked = py.detach(|| unpack(data)).map_err(PyValueError::new_err)?;
        Ok(PySpanCounts::new(unpacked.spans, unpacked.pattern, unpacked.options))
    }

    /// Pickled as `to_bytes` (no dict of Python objects).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let from_bytes = py.get_type::<PySpanCounts>().getattr("from_bytes")?;
        let data = slf.get().to_bytes(py);
        PyTuple::new(py, [from_bytes, PyTuple::new(py, [data])?.into_any()])
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PySpanCounts>() {
            Ok(other) => {
                let other = other.get();
                self.pattern == other.pattern && self.options == other.options && self.spans == other.spans
            }
            Err(_) => false,
        }
    }

    /// The counts of the spans counted at least `min_count` times, and the share of span
    /// occurrences left out (0.0 to 1.0): an approximation for corpora whose distinct spans do
    /// not fit in memory (rare spans barely change the merges that matter).
    fn prune(&self, py: Python<'_>, min_count: &Bound<'_, PyAny>) -> PyResult<(PySpanCounts, f64)> {
        let min_count = int_arg(min_count, "min_count", 1, i64::MAX)? as u64;
        let (kept, dropped) = py.detach(|| self.spans.prune(min_count));
        let total = self.spans.total();
        let share = if total == 0 { 0.0 } else { dropped as f64 / total as f64 };
        Ok((PySpanCounts::new(kept, self.pattern.clone(), self.options.clone()), share))
    }

    /// Writes the counts to `path` as Parquet (span bytes as `binary`, counts as `uint64`, sorted
    /// by span; pattern, options, format version, totals and a checksum in the metadata),
    /// atomically: a temporary file in the same folder (created if needed, exclusively under an
    /// unpredictable name, never through a symlink), flushed, renamed into place. See
    /// docs/span-counts.md.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| file::save(&path, &self.pattern, &self.options, &self.spans))
            .map_err(|e| read_error(&path, ReadError::Io(e)))
    }

    /// Reads counts written by `save`: a file, or a folder whose `.parquet` files (those not
    /// starting with a dot) load as their sum. Everything is checked (metadata, schema, order,
    /// totals, checksum, and that a folder's files share their pattern and options): a
    /// ValueError names the file and row of a problem, an OSError a file that cannot be read.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<PySpanCounts> {
        let files = if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
                .map_err(|e| read_error(&path, ReadError::Io(e)))?
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|p| {
                    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    !name.starts_with('.') && name.ends_with(".parquet") && p.is_file()
                })
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(PyFileNotFoundError::new_err(format!("{}: no .parquet span counts files in this folder", path.display())));
            }
            files
        } else {
            vec![path]
        };
        let pool = Pool::shared().get()?;
        let loaded: Vec<(PathBuf, Result<file::CountsFile, ReadError>)> =
            py.detach(|| pool.install(|| files.into_par_iter().map(|f| { let read = file::load(&f); (f, read) }).collect()));
        let mut parts = Vec::with_capacity(loaded.len());
        for (f, read) in loaded {
            let read = read.map_err(|e| read_error(&f, e))?;
            parts.push((f, PySpanCounts::new(read.spans, read.pattern, read.options)));
        }
        for (f, part) in &parts[1..] {
            parts[0].1.check_same_kind(part, &parts[0].0.display().to_string(), &f.display().to_string())?;
        }
        let refs: Vec<&PySpanCounts> = parts.iter().map(|(_, p)| p).collect();
        PySpanCounts::sum(py, &refs)
    }

    /// Counts made elsewhere (Spark, SQL...): any Parquet file with a column of spans (`span`:
    /// binary or string) and a column of counts (`count`: integers), in any order, repeats
    /// added up (an OverflowError past 2^64-1), zero counts left out; a null, a negative count
    /// or an empty span is a ValueError naming its row. `pattern` is the split pattern the
    /// spans were made with (a preset's name or a regex), which the file cannot say.
    #[staticmethod]
    #[pyo3(signature = (path, *, span="span", count="count", pattern, options=None))]
    fn from_parquet(py: Python<'_>, path: PathBuf, span: &str, count: &str, pattern: &str, options: Option<&Bound<'_, PyAny>>) -> PyResult<PySpanCounts> {
        let splitter = splitter_arg(pattern)?;
        let options = options_arg(py, options)?;
        let spans = py.detach(|| file::read_foreign(&path, span, count)).map_err(|e| read_error(&path, e))?;
        Ok(PySpanCounts::new(spans, splitter.pattern().to_owned(), options))
    }

    fn __repr__(&self) -> String {
        format!("SpanCounts(spans={}, total={}, pattern={})", self.spans.len(), self.spans.total(), pattern_shown(&self.pattern))
    }
}

/// The counted spans joined and sorted, on `pool` without the GIL, while this thread looks for
/// Ctrl-C every 50 ms: joining and sorting take seconds on tens of millions of spans. Ctrl-C
/// stops the join soon (its stop flag), or is raised once the sort under way ends (a second or
/// two for ten million spans), and what the worker made is dropped.
fn join_and_sort(py: Python<'_>, pool: &rayon::ThreadPool, counts: crate::count::CountTables) -> PyResult<SortedSpans> {
    let stop = AtomicBool::new(false);
    let mut interrupted = None;
    let joined = py.detach(|| {
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                pool.install(|| {
                    let spans = counts.into_spans(&stop)?;
                    crate::memory::release();
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return Err(crate::Error::Interrupted); // Ctrl-C while joining: no sort
                    }
                    Ok::<_, crate::Error>(SortedSpans::from_distinct(spans))
                })
            });
            while !worker.is_finished() {
                std::thread::sleep(std::time::Duration::from_millis(50));
                shutdown::safe_point(); // before taking the GIL (see shutdown.rs)
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    interrupted = Some(e);
                    stop.store(true, std::sync::atomic::Ordering::SeqCst);
                    break;
                }
            }
            worker.join()
        })
    });
    if let Some(e) = interrupted {
        return Err(e);
    }
    let joined = joined.map_err(|_| PyRuntimeError::new_err("internal error joining the span counts (a bpeforge bug: please report it)"))?;
    joined.map_err(super::to_py)
}

/// Counts the spans of an iterable of texts (the items `Trainer.train_from_iterator` takes: str,
/// lists of str, Arrow string arrays, a ParquetReader's batches), splitting and counting
/// without the GIL while the next texts are pulled, and gives their `SpanCounts`, sorted.
/// `pattern`: a preset's name, a regex or None for GPT-4's. `options`: the counting options
/// that changed the texts (recorded; `{"doc_cap": N}` crops each text to its first N characters). `progress(phase, info)` as
/// in `Trainer.train_from_iterator`'s phase "count". Returns the counts and the number of texts
/// and of bytes read.
#[pyfunction]
#[pyo3(signature = (texts, pattern=None, *, num_threads=None, buffer_size=None, progress=None, options=None))]
pub(super) fn count_texts(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    pattern: Option<&str>,
    num_threads: Option<&Bound<'_, PyAny>>,
    buffer_size: Option<&Bound<'_, PyAny>>,
    progress: Option<Py<PyAny>>,
    options: Option<&Bound<'_, PyAny>>,
) -> PyResult<(PySpanCounts, u64, u64)> {
    let _running = shutdown::Running::start();
    let splitter = splitter_arg(pattern.unwrap_or(presets::GPT4))?;
    let buffer_size = buffer_size.map_or(Ok(8192), |b| int_arg(b, "buffer_size", 1, 1 << 40))? as usize;
    let progress = progress_arg(py, progress)?;
    let options = options_arg(py, options)?;
    let texts = Texts::of(texts)?;
    let pool = match num_threads {
        Some(n) if !n.is_none() => Pool::new(Some(int_arg(n, "num_threads", 1, 1024)? as usize)).get()?,
        _ => Pool::shared().get()?,
    };
    // The counts say what they were counted with: a `doc_cap` recorded crops every text here.
    let doc_cap = PySpanCounts::doc_cap_of(&options);
    let Counted { counts, texts, bytes } = count_iterator(py, texts, &splitter, doc_cap, Arc::clone(&pool), buffer_size, progress.as_ref())?;
    let sorted = join_and_sort(py, &pool, counts)?;
    crate::memory::release();
    Ok((PySpanCounts::new(sorted, splitter.pattern().to_owned(), options), texts, bytes))
}

