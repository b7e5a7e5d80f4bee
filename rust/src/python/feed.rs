//! Counting the texts of a Python iterator: this thread, holding the GIL, pulls the items (str,
//! lists of str, Arrow string arrays, readers) into the core's [`Counter`], which counts them on its
//! worker and the pool; the GIL is released around every piece of heavy work the counter does
//! on this thread (see [`CallerLock`]), and Ctrl-C is looked for after each.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyIterator, PyList, PyString};

use super::progress::report;
use super::readers::{DocumentReader, Sink};
use super::{arrow, shutdown, to_py, type_name};
use crate::count::{BufferError, CallerLock, Counted, Counter, Progress, TextSink};
use crate::Splitter;

/// The text of a str `item`, or an error naming `what` it is (e.g. "item 3 of the iterator")
/// and what was `expected` there. (`what` is only formatted for an error: this runs once per
/// text.)
pub(super) fn text_of<'a>(item: &'a Bound<'_, PyAny>, what: impl Fn() -> String, expected: &str) -> PyResult<Cow<'a, str>> {
    let Ok(s) = item.cast::<PyString>() else {
        let missing = item.is_none() || item.extract::<f64>().is_ok_and(f64::is_nan);
        let hint = if arrow::is_stream(item) {
            " (an Arrow stream such as a ChunkedArray: pass its chunks, e.g. chunked_array.chunks)"
        } else if missing {
            " (a missing value, as pandas gives for an empty cell? drop them first, e.g. series.dropna())"
        } else {
            ""
        };
        return Err(PyTypeError::new_err(format!("{} is {}, expected {expected}{hint}", what(), type_name(item))));
    };
    s.to_cow().map_err(|_| {
        PyValueError::new_err(format!(
            "{} contains a lone surrogate (not valid Unicode); \
             clean it first, e.g. s.encode('utf-8', 'replace').decode('utf-8')",
            what()
        ))
    })
}

/// The GIL as the counter's [`CallerLock`]: released around the counter's heavy work, after
/// which Ctrl-C is looked for (between two batches, even in the middle of an item: a list or an
/// Arrow array of gigabytes is read without returning to the iterator loop).
struct Gil {
    /// Set while the feeding thread pushes texts without the GIL (an Arrow array's).
    released: AtomicBool,
    /// The counter's stop flag, set when Ctrl-C's handler raised (so that the counter stops:
    /// the feeding loop looks for what was raised only then).
    stop: Arc<AtomicBool>,
    /// What Ctrl-C's handler raised, until the feeding loop raises it.
    interrupted: Mutex<Option<PyErr>>,
}

impl Gil {
    fn new(stop: Arc<AtomicBool>) -> Self {
        Gil { released: AtomicBool::new(false), stop, interrupted: Mutex::new(None) }
    }

    /// What Ctrl-C's handler raised while the counter worked, if it ran.
    fn take_interrupted(&self) -> Option<PyErr> {
        self.interrupted.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Runs `push`, which pushes texts into the counter without the GIL (so the counter's work
    /// runs as it is, and the GIL is taken only to look for Ctrl-C).
    fn released<R>(&self, push: impl FnOnce() -> R) -> R {
        self.released.store(true, Ordering::Relaxed);
        let pushed = push();
        self.released.store(false, Ordering::Relaxed);
        pushed
    }
}

impl CallerLock for Gil {
    fn run_unlocked(&self, work: &mut (dyn FnMut() + Send)) {
        let mut unlocked = || {
            work();
            shutdown::safe_point(); // before taking the GIL again (see shutdown.rs)
        };
        if self.released.load(Ordering::Relaxed) {
            unlocked();
        } else {
            Python::attach(|py| py.detach(unlocked));
        }
        if self.stop.load(Ordering::Relaxed) {
            return; // stopping already (the caller's error, or the counter's): nothing to look for
        }
        if let Err(e) = Python::attach(|py| py.check_signals()) {
            *self.interrupted.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
            self.stop.store(true, Ordering::SeqCst);
        }
    }
}

/// The counters of one pass over the texts: one per split pattern (a training with a superword
/// stage counts each text with both of its patterns, reading the texts once).
pub(super) struct Counters<'a>(Vec<Counter<'a>>);

impl Counters<'_> {
    #[inline]
    fn push(&mut self, text: &str) {
        for counter in &mut self.0 {
            counter.push(text);
        }
    }

    /// Whether a counter stopped (see [`Counter::is_stopped`]).
    fn is_stopped(&self) -> bool {
        self.0.iter().any(Counter::is_stopped)
    }

    /// How far counting got (the first counter's: each sees the same texts).
    fn progress(&self) -> Progress {
        self.0[0].progress()
    }

    /// Each counter's counts, in the order of their patterns.
    fn finish(self) -> Result<Vec<Counted>, crate::Error> {
        self.0.into_iter().map(Counter::finish).collect()
    }
}

impl TextSink for Counters<'_> {
    fn push(&mut self, text: &str) {
        for counter in &mut self.0 {
            TextSink::push(counter, text);
        }
    }

    fn push_buffer(&mut self, data: &[u8], ends: &[usize]) -> Result<(), BufferError> {
        self.0.iter_mut().try_for_each(|counter| counter.push_buffer(data, ends))
    }
}

/// Adds one text, and raises what Ctrl-C's handler raised if it ran while the counter worked on
/// it (before a later text of the same item can raise something else).
#[inline]
fn push_str(counter: &mut Counters<'_>, gil: &Gil, text: &str) -> PyResult<()> {
    counter.push(text);
    if counter.is_stopped() {
        if let Some(e) = gil.take_interrupted() {
            return Err(e);
        }
    }
    Ok(())
}

/// Adds the text(s) of one iterator item: a str, a list of str, or an Arrow string array (its
/// non-null entries, copied without the GIL).
fn push_item(item: &Bound<'_, PyAny>, position: u64, counter: &mut Counters<'_>, gil: &Gil) -> PyResult<()> {
    // A str first: most iterators yield one per text, and this runs once per item.
    if item.is_instance_of::<PyString>() {
        return push_str(counter, gil, &text_of(item, || format!("item {position} of the iterator"), "str")?);
    }
    if let Ok(list) = item.cast::<PyList>() {
        for (i, text) in list.iter().enumerate() {
            push_str(counter, gil, &text_of(&text, || format!("item {position}[{i}] of the iterator"), "str")?)?;
        }
        return Ok(());
    }
    if arrow::is_array(item)? {
        let what = format!("item {position} of the iterator");
        return gil.released(|| arrow::push_array(item, &what, counter));
    }
    let expected = "str, a list of str or an Arrow string array";
    push_str(counter, gil, &text_of(item, || format!("item {position} of the iterator"), expected)?)
}

/// A text or JSONL reader's documents go into the counter as the reader reads them, without
/// the GIL; between every few MB, Ctrl-C is looked for and progress reported.
struct ReaderSink<'c, 'a> {
    counter: &'c mut Counters<'a>,
    gil: &'c Gil,
    progress: Option<&'c Py<PyAny>>,
    reported: &'c mut u64,
}

impl Sink for ReaderSink<'_, '_> {
    fn push(&mut self, text: &str) -> bool {
        self.counter.push(text);
        !self.counter.is_stopped()
    }

    fn after_batch(&mut self, py: Python<'_>) -> PyResult<bool> {
        if self.counter.is_stopped() {
            return match self.gil.take_interrupted() {
                Some(e) => Err(e),
                None => Ok(false), // the counter's own error, which finishing gives
            };
        }
        py.check_signals()?;
        let now = self.counter.progress();
        if now.batches != *self.reported {
            *self.reported = now.batches;
            report_count(py, self.progress, now.texts, now.bytes, now.spans_at_least)?;
        }
        Ok(true)
    }
}

/// Pushes the documents of a `TextReader` or `JsonlReader` item into the counter.
fn push_reader(
    py: Python<'_>,
    reader: &DocumentReader,
    counter: &mut Counters<'_>,
    gil: &Gil,
    progress: Option<&Py<PyAny>>,
    reported: &mut u64,
) -> PyResult<()> {
    let mut sink = ReaderSink { counter, gil, progress, reported };
    gil.released(|| reader.push_into(py, &mut sink))
}

/// Calls the progress callback, if any, with the texts and bytes handed on so far and a lower
/// bound of the distinct spans counted so far.
fn report_count(py: Python<'_>, progress: Option<&Py<PyAny>>, texts: u64, bytes: u64, spans: usize) -> PyResult<()> {
    report(py, progress, "count", &[
        ("texts", texts.into_pyobject(py)?.into_any().unbind()),
        ("bytes", bytes.into_pyobject(py)?.into_any().unbind()),
        ("spans", spans.into_pyobject(py)?.into_any().unbind()),
    ])
}

/// What `Trainer.train_from_iterator` (and `learn`, `count`) count the texts of.
pub(super) enum Texts<'py> {
    /// An iterable of items: str, lists of str, Arrow string arrays, readers.
    Items(Bound<'py, PyIterator>),
    /// A `TextReader` or `JsonlReader` given as the iterable itself: read in Rust as when it is
    /// an item (iterating it would make a Python str of every document, and cost more than
    /// Python reading the file).
    Reader(Bound<'py, DocumentReader>),
}

impl<'py> Texts<'py> {
    /// The texts of `texts`, or a TypeError: a str is refused (it would be read as one text
    /// per character), and so is anything that is not iterable.
    pub(super) fn of(texts: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(reader) = texts.cast::<DocumentReader>() {
            return Ok(Texts::Reader(reader.clone()));
        }
        if texts.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "expected an iterable of texts, got a str (which would be read as one text per character); pass [text]",
            ));
        }
        let items = texts.try_iter().map_err(|_| PyTypeError::new_err(format!("expected an iterable of str, got {}", type_name(texts))))?;
        Ok(Texts::Items(items))
    }
}

/// After one item was pushed: whether to go on, or what stopped the feeding. Ctrl-C comes
/// first (it stops the counter): an error found later in the same item is not what stopped it.
/// A counter stopped on an error of its own ends the feeding without one (finishing gives it).
fn after_item(pushed: PyResult<()>, counter: &Counters<'_>, gil: &Gil) -> PyResult<bool> {
    if counter.is_stopped() {
        if let Some(e) = gil.take_interrupted() {
            return Err(e);
        }
        pushed?;
        return Ok(false);
    }
    pushed.map(|()| true)
}

/// Pulls the texts into the counter, reporting progress after each item that filled a batch
/// (an item may fill several), until they end, an error, Ctrl-C, or the counter stops (on an
/// error of its own, which [`Counter::finish`] gives).
fn feed(py: Python<'_>, texts: Texts<'_>, counter: &mut Counters<'_>, gil: &Gil, progress: Option<&Py<PyAny>>) -> PyResult<()> {
    let mut reported = 0;
    let iterator = match texts {
        Texts::Reader(reader) => {
            let pushed = push_reader(py, &reader.borrow(), counter, gil, progress, &mut reported);
            return after_item(pushed, counter, gil).map(drop);
        }
        Texts::Items(iterator) => iterator,
    };
    for (position, item) in iterator.enumerate() {
        shutdown::pause_point(py); // see shutdown.rs
        let item = item?;
        let pushed = match item.cast::<DocumentReader>() {
            Ok(reader) => push_reader(py, &reader.borrow(), counter, gil, progress, &mut reported),
            Err(_) => push_item(&item, position as u64, counter, gil),
        };
        if !after_item(pushed, counter, gil)? {
            return Ok(());
        }
        let now = counter.progress();
        if now.batches != reported {
            reported = now.batches;
            py.check_signals()?;
            report_count(py, progress, now.texts, now.bytes, now.spans_at_least)?;
        }
    }
    Ok(())
}

/// Splits and counts `texts` (see the module's comment), each cropped to
/// `doc_cap` characters if given, reporting progress
/// after each item that filled a batch and once all is counted, and stopping on Ctrl-C or on
/// the first error.
pub(super) fn count_iterator(
    py: Python<'_>,
    texts: Texts<'_>,
    splitter: &Splitter,
    doc_cap: Option<u64>,
    pool: Arc<rayon::ThreadPool>,
    buffer_size: usize,
    progress: Option<&Py<PyAny>>,
) -> PyResult<Counted> {
    let mut counted = count_with_patterns(py, texts, &[splitter], doc_cap, pool, buffer_size, progress)?;
    Ok(counted.remove(0))
}

/// [`count_iterator`] splitting every text by each of `splitters` (in one pass): the counts of
/// each, in their order.
pub(super) fn count_with_patterns(
    py: Python<'_>,
    texts: Texts<'_>,
    splitters: &[&Splitter],
    doc_cap: Option<u64>,
    pool: Arc<rayon::ThreadPool>,
    buffer_size: usize,
    progress: Option<&Py<PyAny>>,
) -> PyResult<Vec<Counted>> {
    let stop = Arc::new(AtomicBool::new(false));
    let gil = Gil::new(Arc::clone(&stop));
    let mut counters = Vec::with_capacity(splitters.len());
    for splitter in splitters {
        let mut counter = Counter::new(splitter, Arc::clone(&pool), buffer_size, Arc::clone(&stop), &gil)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the counting thread: {e}")))?;
        counter.crop_texts_to(doc_cap);
        counters.push(counter);
    }
    let mut counters = Counters(counters);
    // On an error the counters are dropped, which stops their workers (nothing they count will
    // be used) and waits for them without the GIL.
    feed(py, texts, &mut counters, &gil, progress)?;
    let counted = counters.finish();
    if let Some(e) = gil.take_interrupted() {
        return Err(e);
    }
    py.check_signals()?;
    // An internal error's message says it is a bug, and what went wrong (a thread's panic).
    let counted = counted.map_err(to_py)?;
    // The last report comes once everything is counted, so its spans are those of the whole
    // corpus (as a lower bound: the threads' tables are not joined yet).
    let first = &counted[0];
    report_count(py, progress, first.texts, first.bytes, first.counts.len_at_least())?;
    Ok(counted)
}
