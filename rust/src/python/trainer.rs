//! The `Trainer` class: its arguments checked, then counting (see `feed.rs`) and the merge loop
//! (see `learn.rs`); its state replaced only when a training succeeds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use super::args::{as_int, int_arg, max_token_length_arg, min_frequency_arg, progress_arg, type_name, vocab_size_arg};
use super::feed::{count_iterator, text_of};
use super::counts::{pattern_shown, PySpanCounts};
use super::learn::{extend_from, learn_from, SpansToLearn};
use super::pool::Pool;
use super::shutdown;
use super::splitter_arg;
use crate::count::{Counted, SortedSpans, Spans};
use crate::error::STOP_EVERY;
use crate::merge::{ExtendBase, LearnOptions, Merge, TokenIds};
use crate::pretokenize::presets;
use crate::{Splitter, Vocab};

/// Trains byte-level BPE ranks from text, as rustbpe does, exactly and deterministically.
#[pyclass(module = "bpeforge._core")]
pub(super) struct Trainer {
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
    /// The ids of an extended vocabulary's tokens (see `extend_from_iterator`); `None`: each
    /// token's id is its place in `vocab`.
    ids: Option<TokenIds>,
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

impl Trainer {
    /// The last successful training. The lock is held only to read or replace it.
    fn state(&self) -> MutexGuard<'_, Trained> {
        self.trained.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The threads training runs on: the trainer's own pool, or the shared one.
    fn threads(&self) -> PyResult<Arc<rayon::ThreadPool>> {
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
        let trained = Trained { splitter, vocab: Vocab::bytes(), merges: Vec::new(), stats: Stats::default(), ids: None };
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
    /// counted without the GIL while the next batches are pulled: on all threads but one while
    /// Python pulls (it keeps a core; the calling thread counts a batch itself when four wait),
    /// on all of them once it is done. The iterable is consumed once and never held whole.
    /// `vocab_size` counts the 256 byte tokens; training stops earlier if no pair is left or
    /// the best pair occurs fewer than `min_frequency` times. `pattern`, if given (as for the
    /// constructor), replaces the trainer's split pattern. `progress`, if given, is called as `progress(phase, info)`:
    /// phase "count" after each item that filled a batch, and at the end (info: texts and
    /// bytes so far, and spans, a lower bound of the distinct spans so far: the exact number
    /// is in `stats` at the end) and phase "merge" about every 0.1% of the merges (info:
    /// done, total, pair, token, count). An exception raised by the
    /// callback or the iterator stops training and propagates; the trainer keeps its old state.
    /// `max_token_length`, if given (2 or more), skips every merge whose token would be longer
    /// than that many bytes: the best pair among those that fit is merged.
    #[pyo3(
        signature = (iterator, vocab_size, buffer_size=None, pattern=None, *, min_frequency=None, progress=None, max_token_length=None),
        text_signature = "(self, iterator, vocab_size, buffer_size=8192, pattern=None, *, min_frequency=1, progress=None, max_token_length=None)"
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
        max_token_length: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _busy = Busy::claim(&self.busy)?;
        let _running = shutdown::Running::start();
        let vocab_size = vocab_size_arg(vocab_size)?;
        let max_token_length = max_token_length_arg(max_token_length)?;
        let buffer_size = buffer_size.map_or(Ok(8192), |b| int_arg(b, "buffer_size", 1, 1 << 40))? as usize;
        let min_frequency = min_frequency_arg(min_frequency)?;
        let progress = progress_arg(py, progress)?;
        let splitter = match pattern {
            Some(p) => splitter_arg(p)?,
            None => self.state().splitter.clone(),
        };
        let pool = self.threads()?;
        let (Counted { counts, texts, bytes }, count_seconds) = count_texts(py, iterator, &splitter, &pool, buffer_size, progress.as_ref())?;
        let options = LearnOptions { vocab_size, min_frequency, max_token_length };
        let run = learn_from(py, &pool, SpansToLearn::Counted(counts), options, progress.as_ref())?;
        let stats = Stats { texts, bytes, distinct_spans: run.distinct_spans, count_seconds, merge_seconds: run.seconds };
        *self.state() = Trained { splitter, vocab: run.vocab, merges: run.merges, stats, ids: None };
        Ok(())
    }

    /// Extends the ranks `base_ranks` (a list of `(bytes, id)`; ids may have gaps) with tokens
    /// learned from `iterator` (as `train_from_iterator` reads it), numbered from `first_id` on,
    /// which must be above every id of the base, its special tokens included. Each distinct span
    /// starts as the base's encoding of it (as tiktoken would make it), and merging goes on by
    /// the same rule until `new_tokens` tokens are made. A base with a token that merging its
    /// bytes does not make (ranks not made by BPE training) is refused with a ValueError naming
    /// it. The ranks afterwards are the base's with their ids, then the new tokens.
    /// `max_token_length` as for `train_from_iterator` (a base's longer tokens are kept, and
    /// never merged further).
    #[pyo3(
        signature = (iterator, base_ranks, first_id, new_tokens, buffer_size=None, *, min_frequency=None, progress=None, max_token_length=None),
        text_signature = "(self, iterator, base_ranks, first_id, new_tokens, buffer_size=8192, *, min_frequency=1, progress=None, max_token_length=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn extend_from_iterator(
        &self,
        py: Python<'_>,
        iterator: &Bound<'_, PyAny>,
        base_ranks: Vec<(Vec<u8>, u32)>,
        first_id: &Bound<'_, PyAny>,
        new_tokens: &Bound<'_, PyAny>,
        buffer_size: Option<&Bound<'_, PyAny>>,
        min_frequency: Option<&Bound<'_, PyAny>>,
        progress: Option<Py<PyAny>>,
        max_token_length: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _busy = Busy::claim(&self.busy)?;
        let _running = shutdown::Running::start();
        let args = ExtensionArgs::new(first_id, new_tokens, min_frequency, max_token_length)?;
        let buffer_size = buffer_size.map_or(Ok(8192), |b| int_arg(b, "buffer_size", 1, 1 << 40))? as usize;
        let progress = progress_arg(py, progress)?;
        let base = py.detach(|| ExtendBase::new(base_ranks, args.first_id)).map_err(super::to_py)?;
        let splitter = self.state().splitter.clone();
        let pool = self.threads()?;
        let (Counted { counts, texts, bytes }, count_seconds) = count_texts(py, iterator, &splitter, &pool, buffer_size, progress.as_ref())?;
        let run = extend_from(py, &pool, SpansToLearn::Counted(counts), &base, args.options(&base), progress.as_ref())?;
        let stats = Stats { texts, bytes, distinct_spans: run.distinct_spans, count_seconds, merge_seconds: run.seconds };
        *self.state() = Trained { splitter, vocab: run.vocab, merges: run.merges, stats, ids: Some(base.ids().clone()) };
        Ok(())
    }

    /// `extend_from_iterator` from already counted spans, read as `train_from_counts` reads
    /// them (each span taken whole, not split: count them with the base's pattern).
    #[pyo3(
        signature = (counts, base_ranks, first_id, new_tokens, *, min_frequency=None, progress=None, max_token_length=None),
        text_signature = "(self, counts, base_ranks, first_id, new_tokens, *, min_frequency=1, progress=None, max_token_length=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn extend_from_counts(
        &self,
        py: Python<'_>,
        counts: &Bound<'_, PyAny>,
        base_ranks: Vec<(Vec<u8>, u32)>,
        first_id: &Bound<'_, PyAny>,
        new_tokens: &Bound<'_, PyAny>,
        min_frequency: Option<&Bound<'_, PyAny>>,
        progress: Option<Py<PyAny>>,
        max_token_length: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _busy = Busy::claim(&self.busy)?;
        let _running = shutdown::Running::start();
        let args = ExtensionArgs::new(first_id, new_tokens, min_frequency, max_token_length)?;
        let progress = progress_arg(py, progress)?;
        let base = py.detach(|| ExtendBase::new(base_ranks, args.first_id)).map_err(super::to_py)?;
        let (spans, _) = self.spans_to_learn(py, counts)?;
        let pool = self.threads()?;
        let run = extend_from(py, &pool, spans, &base, args.options(&base), progress.as_ref())?;
        let mut state = self.state();
        state.stats = Stats { distinct_spans: run.distinct_spans, merge_seconds: run.seconds, ..Stats::default() };
        (state.vocab, state.merges, state.ids) = (run.vocab, run.merges, Some(base.ids().clone()));
        Ok(())
    }

    /// Trains from already counted spans: `counts` is a `SpanCounts` (made with this trainer's
    /// pattern, else a ValueError naming both; borrowed, not copied), or maps each span (str or
    /// bytes, taken as one span, not split) to how often it occurs (a non-negative int below
    /// 2^64): a mapping, or an iterable of (span, count) pairs. Counts of repeated spans add up
    /// (an OverflowError past 2^64-1). Same stopping rules and progress callback as
    /// `train_from_iterator` (its phase "merge": nothing is counted here); pair counts are 64-bit, so counts in the billions are exact.
    /// `max_token_length` as for `train_from_iterator`.
    #[pyo3(
        signature = (counts, vocab_size, *, min_frequency=None, progress=None, max_token_length=None),
        text_signature = "(self, counts, vocab_size, *, min_frequency=1, progress=None, max_token_length=None)"
    )]
    fn train_from_counts(
        &self,
        py: Python<'_>,
        counts: &Bound<'_, PyAny>,
        vocab_size: &Bound<'_, PyAny>,
        min_frequency: Option<&Bound<'_, PyAny>>,
        progress: Option<Py<PyAny>>,
        max_token_length: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _busy = Busy::claim(&self.busy)?;
        let _running = shutdown::Running::start();
        let vocab_size = vocab_size_arg(vocab_size)?;
        let min_frequency = min_frequency_arg(min_frequency)?;
        let max_token_length = max_token_length_arg(max_token_length)?;
        let progress = progress_arg(py, progress)?;
        let (spans, bytes) = self.spans_to_learn(py, counts)?;
        let pool = self.threads()?;
        let options = LearnOptions { vocab_size, min_frequency, max_token_length };
        let run = learn_from(py, &pool, spans, options, progress.as_ref())?;
        let mut state = self.state();
        state.stats = Stats { bytes, distinct_spans: run.distinct_spans, merge_seconds: run.seconds, ..Stats::default() };
        state.vocab = run.vocab;
        state.merges = run.merges;
        state.ids = None;
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

    /// The ranks as `[(token_bytes, rank)]`: the 256 single bytes, then learned tokens in order
    /// (after `extend_from_iterator`: the base's ranks, then the new tokens).
    fn get_mergeable_ranks<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, u32)> {
        let state = self.state();
        let id = |k: usize| state.ids.as_ref().map_or(k as u32, |ids| ids.get(k as u32));
        state.vocab.tokens().enumerate().map(|(k, t)| (PyBytes::new(py, t), id(k))).collect()
    }

    /// Every merge in order as `(left_id, right_id, token_id, count)`; merge `k` makes token
    /// `256 + k` (after `extend_from_iterator`: `first_id + k`).
    fn get_merges(&self) -> Vec<(u32, u32, u32, u64)> {
        let state = self.state();
        let id = |m: &Merge| state.ids.as_ref().map_or(*m, |ids| ids.merge(m));
        state.merges.iter().map(id).map(|m| (m.pair.0, m.pair.1, m.token, m.count)).collect()
    }

    fn __repr__(&self) -> String {
        let state = self.state();
        format!("Trainer(vocab_size={}, pattern={:?})", state.vocab.len(), state.splitter.pattern())
    }
}

impl Trainer {
    /// The spans of `counts` for the merge loop, and the bytes they cover (0 when not known): a
    /// `SpanCounts` (split by this trainer's pattern, or a ValueError naming both) is borrowed;
    /// a mapping or pairs are summed and sorted.
    fn spans_to_learn(&self, py: Python<'_>, counts: &Bound<'_, PyAny>) -> PyResult<(SpansToLearn, u64)> {
        Ok(match counts.cast::<PySpanCounts>() {
            Ok(counts) => {
                let counts = counts.get();
                let pattern = self.state().splitter.pattern().to_owned();
                if counts.pattern != pattern {
                    return Err(PyValueError::new_err(format!(
                        "the span counts were split by {}, this trainer splits by {}: make the trainer with the counts' \
                         pattern (Trainer(counts.pattern))",
                        pattern_shown(&counts.pattern),
                        pattern_shown(&pattern)
                    )));
                }
                let bytes = u64::try_from(counts.spans.total_bytes()).unwrap_or(u64::MAX);
                (SpansToLearn::Sorted(Arc::clone(&counts.spans)), bytes)
            }
            Err(_) => {
                let pairs = read_counts(py, counts)?;
                let sorted = py.detach(|| SortedSpans::from_unsorted(pairs)).map_err(|e| PyOverflowError::new_err(e.to_string()))?;
                (SpansToLearn::Owned(sorted.into_spans()), 0)
            }
        })
    }
}


/// Counts the texts of `iterator`, an iterable of the items `train_from_iterator` takes (a str
/// is refused: it would be read as one text per character), split by `splitter` on `pool`: the
/// counts, texts and bytes, and the seconds it took.
fn count_texts(
    py: Python<'_>,
    iterator: &Bound<'_, PyAny>,
    splitter: &Splitter,
    pool: &Arc<rayon::ThreadPool>,
    buffer_size: usize,
    progress: Option<&Py<PyAny>>,
) -> PyResult<(Counted, f64)> {
    if iterator.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("expected an iterable of texts, got a str (which would be read as one text per character); pass [text]"));
    }
    let iterator = iterator
        .try_iter()
        .map_err(|_| PyTypeError::new_err(format!("expected an iterable of str, got {}", type_name(iterator))))?;
    let started = Instant::now();
    let counted = count_iterator(py, iterator, splitter, Arc::clone(pool), buffer_size, progress)?;
    Ok((counted, started.elapsed().as_secs_f64()))
}

/// An extension's arguments, checked: both ways of extending take them.
struct ExtensionArgs {
    /// The id of the first new token.
    first_id: u32,
    /// How many new tokens to make at most.
    new_tokens: usize,
    min_frequency: u64,
    max_token_length: Option<usize>,
}

impl ExtensionArgs {
    /// `first_id` and `new_tokens` checked to fit the 32-bit ids, and the options as training
    /// checks them.
    fn new(
        first_id: &Bound<'_, PyAny>,
        new_tokens: &Bound<'_, PyAny>,
        min_frequency: Option<&Bound<'_, PyAny>>,
        max_token_length: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let first_id = int_arg(first_id, "first_id", 0, i64::from(u32::MAX))? as u32;
        let new_tokens = int_arg(new_tokens, "new_tokens", 0, i64::from(u32::MAX - first_id))? as usize;
        let min_frequency = min_frequency_arg(min_frequency)?;
        let max_token_length = max_token_length_arg(max_token_length)?;
        Ok(ExtensionArgs { first_id, new_tokens, min_frequency, max_token_length })
    }

    /// The merge loop's options for extending `base`.
    fn options(&self, base: &ExtendBase) -> LearnOptions {
        LearnOptions { vocab_size: base.len() + self.new_tokens, min_frequency: self.min_frequency, max_token_length: self.max_token_length }
    }
}

/// The spans and counts of `train_from_counts`'s `counts`: a mapping (dict, Counter, any
/// Mapping) gives its items (as a view, read as it goes: a dict's list of items would be made
/// whole first); anything else must be an iterable of (span, count) pairs. Repeated spans are
/// kept as they come (sorting adds them up).
pub(super) fn read_counts(py: Python<'_>, counts: &Bound<'_, PyAny>) -> PyResult<Spans> {
    let mapping = counts.is_instance_of::<PyDict>() || counts.is_instance(&py.import("collections.abc")?.getattr("Mapping")?)?;
    let items = if mapping { counts.call_method0("items")? } else { counts.clone() };
    let mut spans = Spans::default();
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
            spans.push(b.as_bytes(), n);
        } else {
            let text = text_of(&span, || format!("the span of item {position} of counts"), "str or bytes")?;
            spans.push(text.as_bytes(), n);
        }
    }
    Ok(spans)
}
