//! The `Trainer` class: its arguments checked, then counting (see `feed.rs`) and the merge loop
//! (see `learn.rs`); its state replaced only when a training succeeds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use super::args::{as_int, int_arg, max_token_length_arg, min_frequency_arg, progress_arg, type_name, vocab_size_arg};
use super::feed::{count_with_patterns, text_of, Texts};
use super::counts::PySpanCounts;
use super::learn::{run_loop, Languages, ParityTrace, SpansToLearn};
use super::recipe::{base_arg, option_error, Base, Recipe};
use super::pool::Pool;
use super::shutdown;
use super::splitter_arg;
use crate::count::{Counted, Spans};
use crate::span_counts::SortedSpans;
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
    /// The id of each token of `vocab`.
    ids: Ids,
    /// How each language fared, after parity-aware training.
    parity: Option<ParityTrace>,
}

/// The ids of a training's tokens, from their places in the merge loop's vocabulary.
#[derive(Clone)]
enum Ids {
    /// Token `k` at id `k`: the 256 single bytes, then the merged tokens.
    Own,
    /// An extended vocabulary's (see `learn`'s `base`).
    Extended(TokenIds),
    /// HuggingFace's layout: `specials` special tokens first, then the `alphabet` single bytes
    /// of the alphabet (the loop's first tokens, in the order of their ids), then the merged
    /// tokens (the loop's from 256 on). The loop's other single bytes are outside the alphabet
    /// and have no id.
    HuggingFace { specials: u32, alphabet: u32 },
}

impl Ids {
    /// The id of the loop's token `k`, `None` for a byte outside the alphabet.
    fn get(&self, k: u32) -> Option<u32> {
        match *self {
            Ids::Own => Some(k),
            Ids::Extended(ref ids) => Some(ids.get(k)),
            Ids::HuggingFace { specials, alphabet } if k < alphabet => Some(specials + k),
            Ids::HuggingFace { .. } if k < 256 => None,
            Ids::HuggingFace { specials, alphabet } => Some(specials + alphabet + (k - 256)),
        }
    }
}

#[derive(Default, Clone)]
struct Stats {
    texts: u64,
    bytes: u64,
    distinct_spans: usize,
    /// The distinct spans of the superword stage, if there was one.
    superword_spans: usize,
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
        let trained = Trained { splitter, vocab: Vocab::bytes(), merges: Vec::new(), stats: Stats::default(), ids: Ids::Own, parity: None };
        Ok(Self { pool, busy: AtomicBool::new(false), trained: Mutex::new(trained) })
    }

    /// Trains as `recipe` says (a `Recipe`: every option of the training), from `texts` or from
    /// `counts` (one of them), extending `base` if given, and replaces any earlier training.
    ///
    /// `texts` is an iterable whose items are str, lists of str, Arrow string arrays (any object
    /// with `__arrow_c_array__` of type utf8, large_utf8 or utf8_view, such as a pyarrow
    /// `StringArray` or the chunks of a `ChunkedArray`) or bpeforge's readers. Lists and arrays
    /// are cheap ways to hand over batches; an array's strings are copied straight from its
    /// buffers, without a Python str per text, and its null entries are skipped (each non-null
    /// entry, empty or not, is one text). Texts are pulled in batches of `buffer_size` (more
    /// while a batch holds under 1 MiB of text, fewer once it holds 2 MiB, even in the middle of
    /// a list or array, so that memory stays bounded whatever an item holds) and split and
    /// counted without the GIL while the next batches are pulled: on all threads but one while
    /// Python pulls (it keeps a core; the calling thread counts a batch itself when four wait),
    /// on all of them once it is done. The iterable is consumed once and never held whole.
    ///
    /// `counts` is a `SpanCounts` (made with the recipe's pattern and `doc_cap`, else an
    /// `OptionError` naming the option; borrowed, not copied; mixed counts read `min_frequency`
    /// in occurrences of the mixed corpus), or maps each span (str or bytes, taken as one span,
    /// not split) to how often it occurs (a non-negative int below 2^64): a mapping, or an
    /// iterable of (span, count) pairs. Counts of repeated spans add up (an OverflowError past
    /// 2^64-1).
    ///
    /// `base` is a tokenizer to extend (a `bpeforge.Tokenizer`): its split pattern and special
    /// tokens must be the recipe's, and its ids are all kept; each distinct span starts as the
    /// base's encoding of it (as tiktoken would make it), merging goes on by the same rule, and
    /// the new tokens are numbered from the base's `n_vocab` on, up to the recipe's `vocab_size`.
    /// A base with a token that merging its bytes does not make (ranks not made by BPE
    /// training) is refused with a ValueError naming it.
    ///
    /// Training stops earlier if no pair is left or the best pair occurs fewer than
    /// `min_frequency` times. `progress`, if given, is called as `progress(phase, info)`: phase
    /// "count" after each item that filled a batch, and at the end (info: texts and bytes so
    /// far, and spans, a lower bound of the distinct spans so far: the exact number is in
    /// `stats` at the end) and phase "merge" about every 0.1% of the merges (info: done, total,
    /// pair, token, count). An exception raised by the callback or the iterator stops training
    /// and propagates; the trainer keeps its old state. Returns the number of ranks asked for
    /// (the base's or the 256 single bytes, and the new ones).
    ///
    /// A recipe with `parity` learns from one `SpanCounts` per language: `counts` is their list,
    /// `dev` (optional) a list of each language's dev counts (the same order), which the
    /// selection measures, and `ratio` (optional, not with `dev`) each language's target
    /// compression rate; `parity_trace` tells afterwards how each language fared.
    #[pyo3(
        signature = (recipe, *, texts=None, counts=None, base=None, buffer_size=None, progress=None, superword_counts=None, dev=None, ratio=None),
        text_signature = "(self, recipe, *, texts=None, counts=None, base=None, buffer_size=8192, progress=None, superword_counts=None, dev=None, ratio=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn learn(
        &self,
        py: Python<'_>,
        recipe: &Bound<'_, Recipe>,
        texts: Option<&Bound<'_, PyAny>>,
        counts: Option<&Bound<'_, PyAny>>,
        base: Option<&Bound<'_, PyAny>>,
        buffer_size: Option<&Bound<'_, PyAny>>,
        progress: Option<Py<PyAny>>,
        superword_counts: Option<&Bound<'_, PyAny>>,
        dev: Option<&Bound<'_, PyAny>>,
        ratio: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let (dev, ratio) = (dev.filter(|d| !d.is_none()), ratio.filter(|r| !r.is_none()));
        if recipe.get().has_parity() {
            let refused = [("texts", texts), ("base", base), ("superword_counts", superword_counts)];
            if let Some((name, _)) = refused.iter().find(|(_, v)| v.is_some_and(|v| !v.is_none())) {
                return Err(PyTypeError::new_err(format!("a recipe with parity learns from counts (one SpanCounts per language), not {name}")));
            }
            let Some(counts) = counts.filter(|c| !c.is_none()) else {
                return Err(PyTypeError::new_err("a recipe with parity learns from counts: a list of one SpanCounts per language"));
            };
            let train = counts_list(counts, "counts")?;
            let dev = dev.map(|d| counts_list(d, "dev")).transpose()?;
            if dev.as_ref().is_some_and(|d| d.len() != train.len()) {
                return Err(PyValueError::new_err(format!("{} dev counts for {} languages: give one per language", dev.map_or(0, |d| d.len()), train.len())));
            }
            if dev.is_some() && ratio.is_some() {
                return Err(PyTypeError::new_err("give dev (measured compression) or ratio (target compression rates), not both"));
            }
            let ratio = ratio.map(|r| r.extract::<Vec<f64>>().map_err(|_| PyTypeError::new_err(format!("ratio must be a list of numbers, got {}", type_name(r))))).transpose()?;
            let material = Material::Languages { train, dev, ratio };
            return self.run(py, recipe.get(), material, None, 0, progress);
        }
        if let Some((name, _)) = [("dev", dev), ("ratio", ratio)].iter().find(|(_, v)| v.is_some()) {
            return Err(PyTypeError::new_err(format!("{name} goes with a recipe with parity (parity-aware training)")));
        }
        let superword_counts = match superword_counts.filter(|c| !c.is_none()) {
            None => None,
            Some(c) => Some(c.cast::<PySpanCounts>().map_err(|_| {
                PyTypeError::new_err(format!("superword_counts must be a SpanCounts (made with the superword pattern), got {}", type_name(c)))
            })?),
        };
        let material = match (texts.filter(|t| !t.is_none()), counts.filter(|c| !c.is_none())) {
            (Some(_), None) if superword_counts.is_some() => {
                return Err(PyTypeError::new_err("superword_counts go with counts: from texts, both stages are counted at once"))
            }
            (Some(texts), None) => Material::Texts(texts),
            (None, Some(counts)) => Material::Counts(counts, superword_counts.cloned()),
            (Some(_), Some(_)) => return Err(PyTypeError::new_err("learn takes texts or counts, not both")),
            (None, None) => return Err(PyTypeError::new_err("learn needs texts or counts to learn from")),
        };
        let base = base.filter(|b| !b.is_none()).map(base_arg).transpose()?;
        let buffer_size = buffer_size.map_or(Ok(8192), |b| int_arg(b, "buffer_size", 1, 1 << 40))? as usize;
        self.run(py, recipe.get(), material, base.as_ref(), buffer_size, progress)
    }

    /// Trains on an iterable of texts (as `learn` reads them), replacing any earlier training:
    /// rustbpe's method. `vocab_size` counts the 256 byte tokens (there are no special tokens
    /// here); `pattern`, if given (as for the constructor), replaces the trainer's split
    /// pattern. `min_frequency`, `max_token_length` and `progress` as a `Recipe` and `learn`
    /// take them.
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
        let splitter = match pattern {
            Some(p) => splitter_arg(p)?,
            None => self.state().splitter.clone(),
        };
        let recipe = Recipe::of_ranks(splitter, vocab_size_arg(vocab_size)?, min_frequency_arg(min_frequency)?, max_token_length_arg(max_token_length)?, None);
        let buffer_size = buffer_size.map_or(Ok(8192), |b| int_arg(b, "buffer_size", 1, 1 << 40))? as usize;
        self.run(py, &recipe, Material::Texts(iterator), None, buffer_size, progress).map(drop)
    }

    /// Trains from already counted spans (as `learn` reads them), with the trainer's split
    /// pattern (`SpanCounts` made with another raise a ValueError naming both) and the
    /// counts' `doc_cap`. Same options as `train_from_iterator`; pair counts are 64-bit, so
    /// counts in the billions are exact.
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
        let doc_cap = counts.cast::<PySpanCounts>().ok().and_then(|c| c.get().doc_cap());
        let splitter = self.state().splitter.clone();
        let recipe = Recipe::of_ranks(splitter, vocab_size_arg(vocab_size)?, min_frequency_arg(min_frequency)?, max_token_length_arg(max_token_length)?, doc_cap);
        self.run(py, &recipe, Material::Counts(counts, None), None, 0, progress).map(drop)
    }

    /// Figures of the last training: texts, bytes, distinct_spans, count_seconds, merge_seconds.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.state().stats.clone();
        let d = PyDict::new(py);
        d.set_item("texts", stats.texts)?;
        d.set_item("bytes", stats.bytes)?;
        d.set_item("distinct_spans", stats.distinct_spans)?;
        if stats.superword_spans > 0 {
            d.set_item("superword_spans", stats.superword_spans)?;
        }
        d.set_item("count_seconds", stats.count_seconds)?;
        d.set_item("merge_seconds", stats.merge_seconds)?;
        Ok(d)
    }

    /// How each language fared in the last training, if it was parity-aware (else None): a
    /// dict of `chosen` (the language of each merge, in the order of `counts`; None for a
    /// global merge), `lengths` (each language's length in tokens of its measured text, a list
    /// per language: before the first merge, then after each), `on_dev` (whether that text
    /// was the dev counts, else the training counts) and `exhausted` (for each language, the
    /// merges made when it ran out of pairs counted `min_frequency` times, or None).
    #[getter]
    fn parity_trace<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let state = self.state();
        let Some(trace) = &state.parity else { return Ok(None) };
        let languages = trace.exhausted.len().max(1);
        let d = PyDict::new(py);
        d.set_item("chosen", trace.chosen.clone())?;
        let per_language: Vec<Vec<i64>> = (0..languages).map(|l| trace.lengths.iter().skip(l).step_by(languages).copied().collect()).collect();
        d.set_item("lengths", per_language)?;
        d.set_item("on_dev", trace.on_dev)?;
        d.set_item("exhausted", trace.exhausted.clone())?;
        Ok(Some(d))
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
    /// (after extending a base: the base's ranks with their ids, then the new tokens; with
    /// HuggingFace's tie-break, its ids: the alphabet's bytes after the special tokens, then the
    /// learned tokens).
    fn get_mergeable_ranks<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, u32)> {
        let state = self.state();
        let tokens = state.vocab.tokens().enumerate();
        tokens.filter_map(|(k, t)| state.ids.get(k as u32).map(|id| (PyBytes::new(py, t), id))).collect()
    }

    /// Every merge in order as `(left_id, right_id, token_id, count)`; merge `k` makes token
    /// `256 + k` (after extending a base: the base's `n_vocab + k`).
    fn get_merges(&self) -> Vec<(u32, u32, u32, u64)> {
        let state = self.state();
        // A merged pair never holds a byte outside the alphabet (no span does).
        let id = |k: u32| state.ids.get(k).unwrap_or(u32::MAX);
        state.merges.iter().map(|m| (id(m.pair.0), id(m.pair.1), id(m.token), m.count)).collect()
    }

    fn __repr__(&self) -> String {
        let state = self.state();
        format!("Trainer(vocab_size={}, pattern={:?})", state.vocab.len(), state.splitter.pattern())
    }
}

/// What a training learns from: an iterable of texts, or span counts (and, for a superword
/// stage, the counts of the same texts split by its pattern).
enum Material<'a, 'py> {
    Texts(&'a Bound<'py, PyAny>),
    Counts(&'a Bound<'py, PyAny>, Option<Bound<'py, PySpanCounts>>),
    /// Parity-aware training's: each language's counts, its dev counts, target ratios.
    Languages { train: Vec<Bound<'py, PySpanCounts>>, dev: Option<Vec<Bound<'py, PySpanCounts>>>, ratio: Option<Vec<f64>> },
}

/// A list of `SpanCounts`, one per language (the argument `name`).
fn counts_list<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Vec<Bound<'py, PySpanCounts>>> {
    if value.cast::<PySpanCounts>().is_ok() || value.is_instance_of::<PyString>() || value.is_instance_of::<PyDict>() {
        return Err(PyTypeError::new_err(format!("{name} must be a list of SpanCounts, one per language, got {}", type_name(value))));
    }
    let items = value.try_iter().map_err(|_| PyTypeError::new_err(format!("{name} must be a list of SpanCounts, one per language, got {}", type_name(value))))?;
    let mut list = Vec::new();
    for (i, item) in items.enumerate() {
        let item = item?;
        let counts = item.cast::<PySpanCounts>().map_err(|_| PyTypeError::new_err(format!("{name}[{i}] must be a SpanCounts, got {}", type_name(&item))))?;
        list.push(counts.clone());
    }
    if list.is_empty() {
        return Err(PyValueError::new_err(format!("{name} is empty: parity-aware training needs the counts of at least one language")));
    }
    Ok(list)
}

impl Trainer {
    /// The one way every training runs (see `learn`): the recipe made concrete for what it
    /// learns from, the texts counted (or the counts taken), the merge loop from the single
    /// bytes or from `base`, and the trainer's state replaced if all of it succeeded. Returns
    /// the ranks asked for.
    fn run(
        &self,
        py: Python<'_>,
        recipe: &Recipe,
        material: Material<'_, '_>,
        base: Option<&Base>,
        buffer_size: usize,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<usize> {
        let _busy = Busy::claim(&self.busy)?;
        let _running = shutdown::Running::start();
        let progress = progress_arg(py, progress)?;
        let (span_counts, superword_counts) = match &material {
            Material::Counts(counts, superword) => (counts.cast::<PySpanCounts>().ok(), superword.as_ref()),
            Material::Texts(_) | Material::Languages { .. } => (None, None),
        };
        let mut languages: Vec<Bound<'_, PySpanCounts>> = Vec::new();
        if let Material::Languages { train, dev, .. } = &material {
            languages.extend(train.iter().chain(dev.iter().flatten()).cloned());
        }
        let plan = recipe.plan(py, span_counts, &languages, superword_counts, base)?;
        if let (Some(_), Material::Counts(_, None)) = (&plan.superword, &material) {
            return Err(option_error(py, "superword_transition", "a superword stage learns from the texts, or from counts of them split by \
                 the superword pattern as well: give them as superword_counts (bpeforge count --pattern superword)".into()));
        }
        let base = match base {
            Some(base) => Some(py.detach(|| ExtendBase::new(base.ranks(), base.first_id())).map_err(super::to_py)?),
            None => None,
        };
        let pool = self.threads()?;
        let mut stats = Stats::default();
        let (spans, superword_spans) = match material {
            Material::Texts(texts) => {
                let mut splitters = vec![&plan.splitter];
                splitters.extend(plan.superword.as_ref().map(|s| &s.splitter));
                let (counted, count_seconds) = count_texts(py, texts, &splitters, recipe.doc_cap_chars(), &pool, buffer_size, progress.as_ref())?;
                let mut each = counted.into_iter().map(|Counted { counts, texts, bytes }| (SpansToLearn::Counted(counts), texts, bytes));
                let Some((spans, texts, bytes)) = each.next() else {
                    return Err(PyRuntimeError::new_err("internal error: no counts (a bpeforge bug: please report it)"));
                };
                (stats.texts, stats.bytes, stats.count_seconds) = (texts, bytes, count_seconds);
                (spans, each.next().map(|(superword, _, _)| superword))
            }
            Material::Counts(counts, superword) => {
                let (spans, bytes) = spans_to_learn(py, counts)?;
                stats.bytes = bytes;
                (spans, superword.map(|c| SpansToLearn::Sorted(Arc::clone(&c.get().spans))))
            }
            Material::Languages { train, dev, ratio } => {
                let Some(parity) = plan.parity.clone() else {
                    return Err(PyRuntimeError::new_err("internal error: languages without parity (a bpeforge bug: please report it)"));
                };
                let sorted = |list: &[Bound<'_, PySpanCounts>]| list.iter().map(|c| Arc::clone(&c.get().spans)).collect::<Vec<_>>();
                stats.bytes = train.iter().map(|c| u64::try_from(c.get().spans.total_bytes()).unwrap_or(u64::MAX)).fold(0u64, u64::saturating_add);
                let parity = crate::merge::ParityOptions { ratio, ..parity };
                (SpansToLearn::Languages(Languages { train: sorted(&train), dev: dev.as_deref().map(sorted), parity }), None)
            }
        };
        let run = match (plan.superword, superword_spans) {
            (Some(superword), Some(superword_spans)) => {
                // The first stage trains to the transition; the second extends what it made, each
                // superword span starting as the first stage's merges encode it. (The recipe
                // refuses HuggingFace's layout with a superword stage.)
                let first = LearnOptions { vocab_size: superword.first_ranks, ..plan.options.clone() };
                let subwords = run_loop(py, &pool, spans, None, None, first, progress.as_ref())?;
                let ranks = subwords.vocab.tokens().zip(0..).map(|(t, id)| (t.to_vec(), id)).collect();
                let made = py.detach(|| ExtendBase::new(ranks, subwords.vocab.len() as u32)).map_err(super::to_py)?;
                let mut superwords = run_loop(py, &pool, superword_spans, Some(&made), None, plan.options, progress.as_ref())?;
                stats.superword_spans = superwords.distinct_spans;
                superwords.merges.splice(0..0, subwords.merges);
                (superwords.distinct_spans, superwords.seconds) = (subwords.distinct_spans, subwords.seconds + superwords.seconds);
                superwords
            }
            _ => run_loop(py, &pool, spans, base.as_ref(), plan.specials_first, plan.options, progress.as_ref())?,
        };
        (stats.distinct_spans, stats.merge_seconds) = (run.distinct_spans, run.seconds);
        let ids = match (base, plan.specials_first) {
            (Some(base), _) => Ids::Extended(base.ids().clone()),
            (None, Some(specials)) => Ids::HuggingFace { specials, alphabet: run.alphabet as u32 },
            (None, None) => Ids::Own,
        };
        let splitter = plan.superword_splitter.unwrap_or(plan.splitter);
        *self.state() = Trained { splitter, vocab: run.vocab, merges: run.merges, stats, ids, parity: run.parity };
        Ok(plan.ranks_asked)
    }
}

/// The spans of `counts` for the merge loop, and the bytes they cover (0 when not known): a
/// `SpanCounts` is borrowed; a mapping or pairs are summed and sorted.
fn spans_to_learn(py: Python<'_>, counts: &Bound<'_, PyAny>) -> PyResult<(SpansToLearn, u64)> {
    Ok(match counts.cast::<PySpanCounts>() {
        Ok(counts) => {
            let bytes = u64::try_from(counts.get().spans.total_bytes()).unwrap_or(u64::MAX);
            (SpansToLearn::Sorted(Arc::clone(&counts.get().spans)), bytes)
        }
        Err(_) => {
            let pairs = read_counts(py, counts)?;
            let sorted = py.detach(|| SortedSpans::from_unsorted(pairs)).map_err(|e| PyOverflowError::new_err(e.to_string()))?;
            (SpansToLearn::Owned(sorted.into_spans()), 0)
        }
    })
}

/// Counts the texts of `iterator`, an iterable of the items `learn` takes (a str is refused: it
/// would be read as one text per character), each cropped to `doc_cap` characters if given,
/// split by each of `splitters` on `pool`: the counts, texts and bytes of each, and the seconds
/// it took.
fn count_texts(
    py: Python<'_>,
    iterator: &Bound<'_, PyAny>,
    splitters: &[&Splitter],
    doc_cap: Option<u64>,
    pool: &Arc<rayon::ThreadPool>,
    buffer_size: usize,
    progress: Option<&Py<PyAny>>,
) -> PyResult<(Vec<Counted>, f64)> {
    let texts = Texts::of(iterator)?;
    let started = Instant::now();
    let counted = count_with_patterns(py, texts, splitters, doc_cap, Arc::clone(pool), buffer_size, progress)?;
    Ok((counted, started.elapsed().as_secs_f64()))
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
