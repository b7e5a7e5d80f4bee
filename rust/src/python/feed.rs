//! Counting the texts of a Python iterator. This thread, holding the GIL, reads the items (str,
//! lists of str, Arrow string arrays) into batches, and a worker counts each batch without the
//! GIL while the next one fills; when the worker is behind (its queue full), this thread counts
//! the batch itself, without the GIL, before it reads on. A batch is handed on as soon as it is
//! full, in the middle of an item if need be, so that memory stays bounded by the batch size
//! whatever an item holds.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, PoisonError};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyIterator, PyList, PyString};

use super::{arrow, report, shutdown, to_py, type_name};
use crate::count::{Batch, BatchSize, Filler, HandOn, ToQueue};
use crate::{Error, SpanCounts, Splitter};

/// A batch goes to the counting worker once it holds `buffer_size` texts and at least this
/// many bytes (handing over many tiny batches costs more than counting them)...
const MIN_BATCH_BYTES: usize = 1 << 20;
/// ... or as soon as it holds this many, however few texts that is (bounded memory).
const MAX_BATCH_BYTES: usize = 2 << 20;

/// How many filled batches may wait for the counting worker (more are counted by the feeder).
const QUEUED_BATCHES: usize = 4;

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

/// Where the feeder's full batches go: to the counting worker (see [`ToQueue`]), then Ctrl-C
/// is checked.
struct ToWorker<'a> {
    queue: ToQueue<'a>,
    /// What a signal handler (Ctrl-C's) raised when checked after a batch was handed on.
    interrupted: Option<PyErr>,
}

/// Call it without the GIL: it may count a batch.
impl HandOn for ToWorker<'_> {
    fn hand_on(&mut self, full: Batch) -> Batch {
        if self.queue.gone {
            return full;
        }
        let fresh = self.queue.hand_on(full);
        // Between two batches, even in the middle of an item (a list or an Arrow array of
        // gigabytes is read without returning to the iterator loop), Ctrl-C stops the reading.
        // (This runs without the GIL: see shutdown.rs before taking it.)
        shutdown::safe_point();
        if let Err(e) = Python::attach(|py| py.check_signals()) {
            self.interrupted = Some(e);
            self.queue.gone = true;
        }
        fresh
    }
}

type Feeder<'a> = Filler<ToWorker<'a>>;

/// Appends one text, and hands the batch on if that filled it, without the GIL while it waits
/// for room in the queue; then raises what Ctrl-C's handler raised, if it ran meanwhile (before
/// a later text of the same item can raise something else).
fn push_str(py: Python<'_>, feeder: &mut Feeder<'_>, text: &str) -> PyResult<()> {
    if text.len() > MAX_BATCH_BYTES && feeder.out.queue.counts_here() {
        return count_long(py, feeder, text);
    }
    if feeder.add(text) {
        flush(py, feeder)?;
    }
    Ok(())
}

/// Hands the batch on, without the GIL while it waits for room in the queue; then raises what
/// Ctrl-C's handler raised, if it ran meanwhile.
fn flush(py: Python<'_>, feeder: &mut Feeder<'_>) -> PyResult<()> {
    py.detach(|| feeder.flush());
    match feeder.out.interrupted.take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Counts a text longer than a batch on this thread, where it is, rather than copy it into a
/// batch of its own (a document of tens of MB would be held twice). The batch being filled is
/// handed on first.
fn count_long(py: Python<'_>, feeder: &mut Feeder<'_>, text: &str) -> PyResult<()> {
    if !feeder.batch().is_empty() {
        flush(py, feeder)?;
    }
    py.detach(|| {
        feeder.out.queue.count_text_here(text);
        shutdown::safe_point(); // before taking the GIL again (see shutdown.rs)
    });
    py.check_signals().inspect_err(|_| feeder.out.queue.gone = true)
}

/// Adds the text(s) of one iterator item: a str, a list of str, or an Arrow string array (its
/// non-null entries).
fn push_item(py: Python<'_>, item: &Bound<'_, PyAny>, position: u64, feeder: &mut Feeder<'_>) -> PyResult<()> {
    // A str first: most iterators yield one per text, and this runs once per item.
    if item.is_instance_of::<PyString>() {
        return push_str(py, feeder, &text_of(item, || format!("item {position} of the iterator"), "str")?);
    }
    if let Ok(list) = item.cast::<PyList>() {
        for (i, text) in list.iter().enumerate() {
            push_str(py, feeder, &text_of(&text, || format!("item {position}[{i}] of the iterator"), "str")?)?;
        }
        return Ok(());
    }
    if arrow::is_array(item)? {
        return arrow::push_array(item, &position.to_string(), feeder);
    }
    let expected = "str, a list of str or an Arrow string array";
    push_str(py, feeder, &text_of(item, || format!("item {position} of the iterator"), expected)?)
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

/// What counting an iterator gives back.
pub(super) struct Counted {
    pub counts: SpanCounts,
    pub texts: u64,
    pub bytes: u64,
}

/// Splits and counts the texts of `iterator` (see the module's comment), reporting progress
/// after each item that filled a batch (an item may fill several) and once all is counted, and
/// stopping on Ctrl-C or on the first error.
pub(super) fn count_iterator(
    py: Python<'_>,
    iterator: Bound<'_, PyIterator>,
    splitter: &Splitter,
    pool: &rayon::ThreadPool,
    buffer_size: usize,
    progress: Option<&Py<PyAny>>,
) -> PyResult<Counted> {
    let spans_seen = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    // While Python is still feeding, the worker counts on all of the pool's threads but one (on
    // its own thread, with two), so that Python keeps a core: counting on every thread then
    // would take Python's core away, and Python, not counting, is usually the slower side. When
    // it is not, the feeder counts the batches the queue has no room for (with one thread, it
    // waits for room). Once the feeder is done, what is queued is counted on every thread.
    let threads = pool.current_num_threads();
    let (to_worker, batches) = mpsc::sync_channel::<Batch>(QUEUED_BATCHES);
    let (to_feeder, emptied) = mpsc::channel::<Batch>();
    let feeding = AtomicBool::new(true);
    // What the feeder counted, handed to the worker once feeding is over.
    let handed: Mutex<Option<SpanCounts>> = Mutex::new(None);
    std::thread::scope(|scope| -> PyResult<Counted> {
        let (stop, spans_seen, feeding, handed) = (&stop, &spans_seen, &feeding, &handed);
        let worker = std::thread::Builder::new().name("bpeforge-count".into()).spawn_scoped(scope, move || -> Result<SpanCounts, Error> {
            let mut counts = SpanCounts::new();
            let take_handed = |counts: &mut SpanCounts| {
                if let Some(theirs) = handed.lock().unwrap_or_else(PoisonError::into_inner).take() {
                    counts.absorb_first(theirs);
                }
            };
            while let Ok(batch) = batches.recv() {
                if !feeding.load(Ordering::SeqCst) {
                    take_handed(&mut counts);
                    pool.install(|| counts.add_batch(&batch, splitter, stop))?;
                } else if threads > 2 {
                    pool.install(|| counts.add_batch_on(&batch, splitter, stop, threads - 1))?;
                } else {
                    counts.add_batch_here(&batch, splitter, stop)?;
                }
                spans_seen.store(counts.len_at_least(), Ordering::Relaxed);
                let _ = to_feeder.send(batch); // the feeder may be gone already: then it is dropped
            }
            take_handed(&mut counts); // if no batch came after it was handed over
            Ok(counts)
        });
        let worker = worker.map_err(|e| PyRuntimeError::new_err(format!("cannot start the counting thread: {e}")))?;
        let size = BatchSize { texts: buffer_size, min_bytes: MIN_BATCH_BYTES, max_bytes: MAX_BATCH_BYTES };
        // With one thread to count on, the worker is the one that counts.
        let out = ToWorker { queue: ToQueue::new(to_worker, emptied, threads > 1, splitter, stop), interrupted: None };
        let mut feeder = Filler::new(size, out);
        let fed = (|| -> PyResult<()> {
            let mut reported = 0;
            for (position, item) in iterator.enumerate() {
                shutdown::pause_point(py); // see shutdown.rs
                let pushed = push_item(py, &item?, position as u64, &mut feeder);
                // Ctrl-C first: an error found later in the same item is not what stopped it.
                if let Some(e) = feeder.out.interrupted.take() {
                    return Err(e);
                }
                pushed?;
                if feeder.out.queue.gone {
                    return Ok(()); // the worker stopped on an error, reported below
                }
                if feeder.out.queue.sent != reported {
                    reported = feeder.out.queue.sent;
                    py.check_signals()?;
                    report_count(py, progress, feeder.out.queue.texts, feeder.out.queue.bytes, spans_seen.load(Ordering::Relaxed))?;
                }
            }
            // No one feeds any more: what is queued from now on is counted on every thread,
            // one of them into the table counted here (handed over before the worker can see
            // that feeding is over).
            feeder.out.queue.wait_for_room();
            *handed.lock().unwrap_or_else(PoisonError::into_inner) = feeder.out.queue.hand_over_here();
            feeding.store(false, Ordering::SeqCst);
            if !feeder.batch().is_empty() {
                flush(py, &mut feeder)?;
            }
            py.check_signals()
        })();
        if fed.is_err() {
            stop.store(true, Ordering::SeqCst); // don't finish counting what no one will use
        }
        feeding.store(false, Ordering::SeqCst);
        let (texts, bytes) = (feeder.out.queue.texts, feeder.out.queue.bytes);
        let here = feeder.out.queue.finish(); // closes the queue: the worker ends once it has counted what is queued
        let counted = py
            .detach(|| {
                let joined = worker.join();
                shutdown::safe_point(); // before taking the GIL again (see shutdown.rs)
                joined
            })
            .map_err(|_| PyRuntimeError::new_err("internal error while counting (a bpeforge bug: please report it)"))?;
        fed?;
        let mut counts = counted.map_err(to_py)?;
        counts.absorb(here.map_err(to_py)?);
        // The last report comes once everything is counted, so its spans are those of the
        // whole corpus (as a lower bound: the threads' tables are not joined yet).
        report_count(py, progress, texts, bytes, counts.len_at_least())?;
        Ok(Counted { counts, texts, bytes })
    })
}
