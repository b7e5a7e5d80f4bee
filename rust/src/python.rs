//! The Python bindings (`bpeforge._core`): type conversion, the GIL, the threads that feed the
//! core from Python and watch for Ctrl-C, and errors. The training itself lives in the core
//! modules, which know nothing of Python.

use std::ops::ControlFlow;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyString};

mod arrow;
mod encode;
mod feed;
mod parquet;
mod pool;
mod shutdown;

use crate::error::STOP_EVERY;
use crate::merge::{learn, LearnOptions, Merge};
use crate::pretokenize::presets;
use crate::vocab::check_ranks as check_ranks_core;
use feed::{count_iterator, text_of, Counted};
use pool::Pool;
use crate::{Error, SpanCounts, Splitter, Vocab};

/// Token ids are u32 in tiktoken; keep the vocabulary well inside that.
const MAX_VOCAB_SIZE: i64 = 1 << 31;

fn to_py(e: Error) -> PyErr {
    match e {
        Error::Split(_) | Error::Internal(_) => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// Trains byte-level BPE ranks from text, as rustbpe does, exactly and deterministically.
#[pyclass(module = "bpeforge._core")]
pub struct Trainer {
    /// Its own pool if made with `num_threads`, else `None` for the pool trainers share.
    pool: Option<Pool>,
    /// Set while a training runs; a second one on the same trainer is refused.
    busy: AtomicBool,
    /// The last successful training (or the initial state): readable while a training runs,
    /// replaced only when one succeeds.
    trained: Mutex<Trained>,
}

#[derive(Clone)]
struct Trained {
    splitter: Splitter,
    vocab: Vocab,
    merges: Vec<Merge>,
    stats: Stats,
}

#[derive(Default, Clone)]
struct Stats {
    texts: u64,
    bytes: u64,
    distinct_spans: usize,
    count_seconds: f64,
    merge_seconds: f64,
}

/// Holds a trainer's `busy` flag for the length of one training.
struct Busy<'a>(&'a AtomicBool);

impl<'a> Busy<'a> {
    fn claim(flag: &'a AtomicBool) -> PyResult<Self> {
        if flag.swap(true, Ordering::SeqCst) {
            return Err(PyRuntimeError::new_err(
                "this Trainer is already training (in another thread, or this call came from its own \
                 iterator or progress callback); use one Trainer per concurrent training",
            ));
        }
        Ok(Busy(flag))
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Records the first failure of a training (an exception from Python, Ctrl-C) and asks every
/// thread working on it to stop.
#[derive(Default)]
struct Stop {
    requested: AtomicBool,
    failure: Mutex<Option<PyErr>>,
}

impl Stop {
    fn fail(&self, e: PyErr) {
        let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        failure.get_or_insert(e);
        self.requested.store(true, Ordering::SeqCst);
    }

    fn requested(&self) -> bool {
        self.requested.load(Ordering::Relaxed)
    }

    fn failure(&self) -> Option<PyErr> {
        self.failure.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The progress callback, checked to be callable before any work starts (not at its first call,
/// part-way through an iterator).
fn progress_arg(py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<Option<Py<PyAny>>> {
    match progress {
        Some(p) if p.is_none(py) => Ok(None),
        Some(p) if !p.bind(py).is_callable() => Err(PyTypeError::new_err(format!(
            "progress must be a callable taking (phase, info), or None; got {}",
            type_name(p.bind(py))
        ))),
        p => Ok(p),
    }
}

/// An int argument within `lo..=hi`, or an error naming it.
fn int_arg(value: &Bound<'_, PyAny>, name: &str, lo: i64, hi: i64) -> PyResult<i64> {
    let Some(int) = as_int(value) else {
        return Err(PyTypeError::new_err(format!("{name} must be an int, got {}", type_name(value))));
    };
    match int.extract::<i64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(PyValueError::new_err(format!("{name} must be between {lo} and {hi}, got {value}"))),
    }
}

/// `value` as a Python int, if it is an integer: an int, or another integer type (NumPy's), by
/// `operator.index`; not a bool (Python's or NumPy's), nor anything `operator.index` refuses.
fn as_int<'py>(value: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    if value.is_instance_of::<PyBool>() {
        return None;
    }
    if value.is_instance_of::<PyInt>() {
        return Some(value.clone());
    }
    if matches!(type_name(value).as_str(), "bool_" | "bool") {
        return None; // numpy.bool_ still has __index__
    }
    value.py().import("operator").ok()?.call_method1("index", (value,)).ok()
}

/// `min_frequency`, 1 (never stop early) if not given.
fn min_frequency_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    Ok(value.map_or(Ok(1), |v| int_arg(v, "min_frequency", 1, i64::MAX))? as u64)
}

fn vocab_size_arg(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    int_arg(value, "vocab_size", 256, MAX_VOCAB_SIZE).map(|v| v as usize).map_err(|e| {
        if e.is_instance_of::<PyValueError>(value.py()) {
            PyValueError::new_err(format!(
                "vocab_size must be at least 256 (the single-byte tokens) and at most {MAX_VOCAB_SIZE}, got {value}"
            ))
        } else {
            e
        }
    })
}

/// How often the merge loop reports progress: every `step` merges (about 0.1% of the total) or
/// every quarter second, whichever comes first.
struct Pacer {
    step: usize,
    last_done: usize,
    last_time: Instant,
}

impl Pacer {
    fn new(total: usize) -> Self {
        Self { step: (total / 1000).max(1), last_done: 0, last_time: Instant::now() }
    }

    fn due(&mut self, done: usize, total: usize) -> bool {
        if done == total || done - self.last_done >= self.step || self.last_time.elapsed().as_millis() >= 250 {
            self.last_done = done;
            self.last_time = Instant::now();
            return true;
        }
        false
    }
}

/// Calls the user's progress callback, if any, with `(phase, info)`.
fn report(py: Python<'_>, progress: Option<&Py<PyAny>>, phase: &str, info: &[(&str, Py<PyAny>)]) -> PyResult<()> {
    let Some(callback) = progress else { return Ok(()) };
    let dict = PyDict::new(py);
    for (k, v) in info {
        dict.set_item(k, v)?;
    }
    callback.call1(py, (phase, dict))?;
    Ok(())
}

fn report_merge(py: Python<'_>, progress: Option<&Py<PyAny>>, done: usize, total: usize, merge: &Merge) -> PyResult<()> {
    report(py, progress, "merge", &[
        ("done", done.into_pyobject(py)?.into_any().unbind()),
        ("total", total.into_pyobject(py)?.into_any().unbind()),
        ("pair", merge.pair.into_pyobject(py)?.into_any().unbind()),
        ("token", merge.token.into_pyobject(py)?.into_any().unbind()),
        ("count", merge.count.into_pyobject(py)?.into_any().unbind()),
    ])
}

/// What one run of the merge loop gives back.
struct LearnRun {
    vocab: Vocab,
    merges: Vec<Merge>,
    distinct_spans: usize,
    seconds: f64,
}

/// The merge loop on counted spans, on a worker thread without the GIL, while this thread (the
/// caller's) watches for Ctrl-C and reports progress. Both are done here: Python runs signal
/// handlers only on its main thread, so a check made on the worker (or on a pool thread) would
/// never see them; and the progress callback then runs on the caller's thread, in its context
/// (context variables, thread-locals), as in the count phase. The worker never touches Python:
/// it leaves its reports for this thread, which makes them in order, and goes on merging.
fn learn_from(
    py: Python<'_>,
    pool: &rayon::ThreadPool,
    counts: SpanCounts,
    vocab_size: usize,
    min_frequency: u64,
    progress: Option<&Py<PyAny>>,
) -> PyResult<LearnRun> {
    let started = Instant::now();
    let distinct_spans = AtomicUsize::new(0);
    let options = LearnOptions { vocab_size, min_frequency };
    let total = vocab_size.saturating_sub(256);
    let stop = Stop::default();
    let done = AtomicBool::new(false);
    // The worker's reports not yet made, in order: (merges done, the last merge).
    let pending: Mutex<Vec<(usize, Merge)>> = Mutex::new(Vec::new());
    let take_pending = || std::mem::take(&mut *pending.lock().unwrap_or_else(PoisonError::into_inner));
    // Merges done at the last report made (`usize::MAX` for none yet).
    let delivered = AtomicUsize::new(usize::MAX);
    let deliver = |py: Python<'_>, reports: Vec<(usize, Merge)>| -> PyResult<()> {
        for (at, merge) in reports {
            if stop.requested() || shutdown::pause_due() {
                break; // stopped (Ctrl-C, or the callback raised), or Python is exiting
            }
            delivered.store(at, Ordering::Relaxed);
            report_merge(py, progress, at, total, &merge)?;
        }
        Ok(())
    };
    let outcome = py.detach(|| {
        let watcher = std::thread::current();
        std::thread::scope(|scope| {
            let worker = std::thread::Builder::new().name("bpeforge-learn".into()).spawn_scoped(scope, || {
                let mut pacer = Pacer::new(total);
                // A panic here would be a bug; catch it so Python sees a RuntimeError, which
                // `except Exception` handles, rather than pyo3's PanicException.
                let learned = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.install(|| {
                        // Any order: the merges do not depend on it.
                        let spans = counts.into_spans(&stop.requested)?;
                        distinct_spans.store(spans.len(), Ordering::Relaxed);
                        crate::memory::release();
                        let learned = learn(spans, &options, &stop.requested, |merge, vocab| {
                            if stop.requested() {
                                return ControlFlow::Break(());
                            }
                            let at = vocab.len() - 256;
                            if progress.is_some() && pacer.due(at, total) {
                                pending.lock().unwrap_or_else(PoisonError::into_inner).push((at, *merge));
                                watcher.unpark();
                            }
                            ControlFlow::Continue(())
                        });
                        crate::memory::release();
                        learned
                    })
                }));
                // `is_finished` turns true only a moment after this, so raise a flag of our own
                // before waking the watcher, or it could go back to sleep for a full period.
                done.store(true, Ordering::SeqCst);
                watcher.unpark();
                learned
            })?;
            while !done.load(Ordering::SeqCst) {
                std::thread::park_timeout(Duration::from_millis(100));
                shutdown::safe_point(); // before taking the GIL (see shutdown.rs)
                if !done.load(Ordering::SeqCst) {
                    let reports = take_pending();
                    if let Err(e) = Python::attach(|py| {
                        py.check_signals()?;
                        deliver(py, reports)
                    }) {
                        stop.fail(e);
                    }
                }
            }
            let joined = worker.join();
            shutdown::safe_point(); // before taking the GIL again (see shutdown.rs)
            Ok::<_, std::io::Error>(joined)
        })
    });
    let outcome = outcome.map_err(|e| PyRuntimeError::new_err(format!("cannot start the merge loop's thread: {e}")))?;
    if let Some(e) = stop.failure() {
        return Err(e);
    }
    let internal = || PyRuntimeError::new_err("internal error in the merge loop (a bpeforge bug: please report it)");
    let learned = outcome.map_err(|_| internal())?.map_err(|_| internal())?.map_err(to_py)?;
    if progress.is_some() {
        // The reports the worker left since this thread last woke; then, if the loop stopped
        // early (no pair left), one that closes the progress where it ended.
        deliver(py, take_pending())?;
        let at = learned.vocab.len() - 256;
        if let Some(&last) = learned.merges.last().filter(|_| delivered.load(Ordering::Relaxed) != at) {
            deliver(py, vec![(at, last)])?;
        }
    }
    let distinct_spans = distinct_spans.load(Ordering::Relaxed);
    Ok(LearnRun { vocab: learned.vocab, merges: learned.merges, distinct_spans, seconds: started.elapsed().as_secs_f64() })
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

impl Trainer {
    /// The last successful training. The lock is held only to read or replace it.
    fn state(&self) -> MutexGuard<'_, Trained> {
        self.trained.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The threads training runs on: the trainer's own pool, or the shared one.
    fn threads(&self) -> PyResult<std::sync::Arc<rayon::ThreadPool>> {
        match &self.pool {
            Some(pool) => pool.get(),
            None => Pool::shared().get(),
        }
    }
}

#[pymethods]
impl Trainer {
    /// Creates a trainer. `pattern` is a preset's name (see `PRESETS`), a regex (fancy-regex
    /// syntax) that never matches an empty string, or None for GPT-4's split pattern (as
    /// cl100k_base and rustbpe). `num_threads=None` uses all cores.
    #[new]
    #[pyo3(signature = (pattern=None, *, num_threads=None))]
    fn new(pattern: Option<&str>, num_threads: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let splitter = splitter_arg(pattern.unwrap_or(presets::GPT4))?;
        let pool = match num_threads {
            None => None,
            Some(n) => {
                let pool = Pool::new(Some(int_arg(n, "num_threads", 1, 1024)? as usize));
                pool.get()?; // started now, so that a trainer that cannot start them is refused
                Some(pool)
            }
        };
        let trained = Trained { splitter, vocab: Vocab::bytes(), merges: Vec::new(), stats: Stats::default() };
        Ok(Self { pool, busy: AtomicBool::new(false), trained: Mutex::new(trained) })
    }

    /// Trains on an iterable whose items are str, lists of str, or Arrow string arrays (any
    /// object with `__arrow_c_array__` of type utf8, large_utf8 or utf8_view, such as a pyarrow
    /// `StringArray` or the chunks of a `ChunkedArray`), replacing any earlier training. Lists
    /// and arrays are cheap ways to hand over batches; an array's strings are copied straight
    /// from its buffers, without a Python str per text, and its null entries are skipped (each
    /// non-null entry, empty or not, is one text). Texts are pulled in batches of `buffer_size`
    /// (more while a batch holds under 1 MiB of text, fewer once it holds 2 MiB, even in the
    /// middle of a list or array, so that memory stays bounded whatever an item holds) and split and
    /// counted without the GIL while the next batches are pulled: on one thread while Python
    /// pulls (it keeps a core), on all of them once it is done or four batches wait. The
    /// iterable is consumed once and never held whole.
    /// `vocab_size` counts the 256 byte tokens; training stops earlier if no pair is left or
    /// the best pair occurs fewer than `min_frequency` times. `pattern`, if given (as for the
    /// constructor), replaces the trainer's split pattern. `progress`, if given, is called as `progress(phase, info)`:
    /// phase "count" after each item that filled a batch, and at the end (info: texts and
    /// bytes so far, and spans, a lower bound of the distinct spans so far: the exact number
    /// is in `stats` at the end) and phase "merge" about every 0.1% of the merges (info:
    /// done, total, pair, token, count). An exception raised by the
    /// callback or the iterator stops training and propagates; the trainer keeps its old state.
    #[pyo3(
        signature = (iterator, vocab_size, buffer_size=None, pattern=None, *, min_frequency=None, progress=None),
        text_signature = "(self, iterator, vocab_size, buffer_size=8192, pattern=None, *, min_frequency=1, progress=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn train_from_iterator(
        &self,
        py: Python<'_>,
        iterator: &Bound<'_, PyAny>,
        vocab_size: &Bound<'_, PyAny>,
        buffer_size: Option<&Bound<'_, PyAny>>,
        pattern: Option<&str>,
        min_frequency: Option<&Bound<'_, PyAny>>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let _busy = Busy::claim(&self.busy)?;
        let _running = shutdown::Running::start();
        let vocab_size = vocab_size_arg(vocab_size)?;
        let buffer_size = buffer_size.map_or(Ok(8192), |b| int_arg(b, "buffer_size", 1, 1 << 40))? as usize;
        let min_frequency = min_frequency_arg(min_frequency)?;
        let progress = progress_arg(py, progress)?;
        let splitter = match pattern {
            Some(p) => splitter_arg(p)?,
            None => self.state().splitter.clone(),
        };
        if iterator.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "expected an iterable of texts, got a str (which would be read as one text per character); pass [text]",
            ));
        }
        let iterator = iterator
            .try_iter()
            .map_err(|_| PyTypeError::new_err(format!("expected an iterable of str, got {}", type_name(iterator))))?;
        let pool = self.threads()?;
        let started = Instant::now();
        let Counted { counts, texts, bytes } =
            count_iterator(py, iterator, &splitter, &pool, buffer_size, progress.as_ref())?;
        let count_seconds = started.elapsed().as_secs_f64();
        let run = learn_from(py, &pool, counts, vocab_size, min_frequency, progress.as_ref())?;
        let stats = Stats { texts, bytes, distinct_spans: run.distinct_spans, count_seconds, merge_seconds: run.seconds };
        *self.state() = Trained { splitter, vocab: run.vocab, merges: run.merges, stats };
        Ok(())
    }

    /// Trains from already counted spans: `counts` maps each span (str or bytes, taken as one
    /// span, not split) to how often it occurs (a non-negative int below 2^64): a mapping, or
    /// an iterable of (span, count) pairs. Counts of
    /// repeated spans add up. Same stopping rules and progress callback as
    /// `train_from_iterator` (its phase "merge": nothing is counted here); pair counts are 64-bit, so counts in the billions are exact.
    #[pyo3(
        signature = (counts, vocab_size, *, min_frequency=None, progress=None),
        text_signature = "(self, counts, vocab_size, *, min_frequency=1, progress=None)"
    )]
    fn train_from_counts(
        &self,
        py: Python<'_>,
        counts: &Bound<'_, PyAny>,
        vocab_size: &Bound<'_, PyAny>,
        min_frequency: Option<&Bound<'_, PyAny>>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let _busy = Busy::claim(&self.busy)?;
        let _running = shutdown::Running::start();
        let vocab_size = vocab_size_arg(vocab_size)?;
        let min_frequency = min_frequency_arg(min_frequency)?;
        let progress = progress_arg(py, progress)?;
        // A mapping (dict, Counter, any Mapping) gives its items (as a view, read as it goes:
        // a dict's list of items would be made whole first); anything else must be an iterable
        // of (span, count) pairs.
        let mapping = counts.is_instance_of::<PyDict>() || counts.is_instance(&py.import("collections.abc")?.getattr("Mapping")?)?;
        let items = if mapping { counts.call_method0("items")? } else { counts.clone() };
        let mut spans = SpanCounts::new();
        for (position, item) in items.try_iter()?.enumerate() {
            if position % STOP_EVERY == STOP_EVERY - 1 {
                py.check_signals()?; // Ctrl-C while reading millions of counts
                shutdown::pause_point(py);
            }
            let item = item?;
            let (span, n): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract().map_err(|_| {
                PyTypeError::new_err(format!("item {position} of counts is {}, expected a (span, count) pair", type_name(&item)))
            })?;
            let Some(int) = as_int(&n) else {
                return Err(PyTypeError::new_err(format!("the count of item {position} must be an int, got {}", type_name(&n))));
            };
            let n: u64 = int.extract().map_err(|_| {
                PyValueError::new_err(format!("the count of item {position} must be between 0 and 2^64-1, got {n}"))
            })?;
            if let Ok(b) = span.cast::<PyBytes>() {
                spans.add(b.as_bytes(), n);
            } else {
                let text = text_of(&span, || format!("the span of item {position} of counts"), "str or bytes")?;
                spans.add(text.as_bytes(), n);
            }
        }
        let pool = self.threads()?;
        let run = learn_from(py, &pool, spans, vocab_size, min_frequency, progress.as_ref())?;
        let mut state = self.state();
        state.stats = Stats { distinct_spans: run.distinct_spans, merge_seconds: run.seconds, ..Stats::default() };
        state.vocab = run.vocab;
        state.merges = run.merges;
        Ok(())
    }

    /// Figures of the last training: texts, bytes, distinct_spans, count_seconds, merge_seconds.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.state().stats.clone();
        let d = PyDict::new(py);
        d.set_item("texts", stats.texts)?;
        d.set_item("bytes", stats.bytes)?;
        d.set_item("distinct_spans", stats.distinct_spans)?;
        d.set_item("count_seconds", stats.count_seconds)?;
        d.set_item("merge_seconds", stats.merge_seconds)?;
        Ok(d)
    }

    /// The split pattern.
    fn get_pattern(&self) -> String {
        self.state().splitter.pattern().to_owned()
    }

    /// Number of ranks: 256 byte tokens + learned tokens.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.state().vocab.len()
    }

    /// The ranks as `[(token_bytes, rank)]`: the 256 single bytes, then learned tokens in order.
    fn get_mergeable_ranks<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, u32)> {
        self.state().vocab.tokens().enumerate().map(|(rank, t)| (PyBytes::new(py, t), rank as u32)).collect()
    }

    /// Every merge in order as `(left_id, right_id, token_id, count)`; merge `k` makes token
    /// `256 + k`.
    fn get_merges(&self) -> Vec<(u32, u32, u32, u64)> {
        self.state().merges.iter().map(|m| (m.pair.0, m.pair.1, m.token, m.count)).collect()
    }

    fn __repr__(&self) -> String {
        let state = self.state();
        format!("Trainer(vocab_size={}, pattern={:?})", state.vocab.len(), state.splitter.pattern())
    }
}

/// Raises ValueError unless `ranks` (a list of `(bytes, rank)`) satisfies tiktoken's
/// invariants: ranks 0..n, the single bytes first, distinct bytes, and every later token the
/// concatenation of two lower-ranked tokens.
#[pyfunction]
fn check_ranks(py: Python<'_>, ranks: Vec<(Vec<u8>, u64)>) -> PyResult<()> {
    py.detach(|| check_ranks_core(&ranks)).map_err(to_py)
}

/// The regex of a `pattern` argument: a preset's name (see `PRESETS`) or a regex. A string with
/// no regex syntax at all (which would split out only copies of itself) is taken for a misspelt
/// preset name: a ValueError. (The Python package's `resolve_pattern` calls this too.)
#[pyfunction]
#[pyo3(name = "resolve_pattern")]
fn pattern_regex(pattern: &str) -> PyResult<&str> {
    if let Some((_, regex)) = presets::PRESETS.iter().find(|(name, _)| *name == pattern) {
        return Ok(regex);
    }
    const SYNTAX: &str = "\\[](){}|?*+^$.";
    if !pattern.chars().any(|c| SYNTAX.contains(c)) {
        let names: Vec<&str> = presets::PRESETS.iter().map(|(name, _)| *name).collect();
        let syntax: Vec<String> = SYNTAX.chars().map(String::from).collect();
        return Err(PyValueError::new_err(format!(
            "'{pattern}': no such preset (choose from {}); a regex needs at least one of {}",
            names.join(", "),
            syntax.join(" ")
        )));
    }
    Ok(pattern)
}

/// The splitter of a `pattern` argument (see [`pattern_regex`]) that never matches an empty
/// string.
fn splitter_arg(pattern: &str) -> PyResult<Splitter> {
    checked_splitter(pattern_regex(pattern)?)
}

/// The splitter of a regex that compiles and never matches an empty string (tiktoken panics on
/// empty matches, so such a pattern cannot encode; and training would lose text after one).
fn checked_splitter(pattern: &str) -> PyResult<Splitter> {
    let splitter = Splitter::new(pattern).map_err(to_py)?;
    if splitter.can_match_empty() {
        return Err(PyValueError::new_err(format!(
            "the split pattern '{pattern}' can match an empty string, which tiktoken cannot encode with; \
             make every alternative consume at least one character (e.g. `+` instead of `*`)"
        )));
    }
    Ok(splitter)
}

/// Raises ValueError unless `pattern` compiles and never matches an empty string (tiktoken
/// panics on empty matches, so such a pattern cannot encode).
#[pyfunction]
fn check_pattern(pattern: &str) -> PyResult<()> {
    checked_splitter(pattern).map(drop)
}

/// Splits `text` into spans with `pattern` (a preset's name or a regex), as training does (for
/// tests and inspection). Preset patterns use the fast scanner unless `fast=False`, which forces
/// fancy-regex.
#[pyfunction]
#[pyo3(signature = (text, pattern, *, fast=true))]
fn split(text: &str, pattern: &str, fast: bool) -> PyResult<Vec<String>> {
    let regex = pattern_regex(pattern)?;
    let splitter = if fast { Splitter::new(regex) } else { Splitter::with_regex(regex) }.map_err(to_py)?;
    Ok(splitter.spans(text).map_err(to_py)?.into_iter().map(str::to_owned).collect())
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Trainer>()?;
    m.add_class::<parquet::ParquetReader>()?;
    m.add_class::<encode::Encoder>()?;
    m.add_function(wrap_pyfunction!(check_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(split, m)?)?;
    m.add_function(wrap_pyfunction!(check_pattern, m)?)?;
    m.add_function(wrap_pyfunction!(pattern_regex, m)?)?;
    m.add("DEFAULT_PATTERN", presets::GPT4)?;
    m.add("PRESETS", presets::PRESETS.iter().map(|(n, p)| (*n, *p)).collect::<Vec<_>>())?;
    shutdown::register(m)?;
    Ok(())
}
