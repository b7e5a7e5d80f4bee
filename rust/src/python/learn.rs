//! The merge loop run from Python: on a worker thread without the GIL, while the caller's thread
//! watches for Ctrl-C and reports progress.
//!
//! Both are done on the caller's thread: Python runs signal handlers only on its main thread,
//! so a check made on the worker (or on a pool thread) would never see them; and the progress
//! callback then runs on the caller's thread, in its context (context variables,
//! thread-locals), as in the count phase. The worker never touches Python: it leaves its
//! reports for the caller's thread, which makes them in order, and goes on merging.

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use super::progress::{report_merge, Pacer};
use super::{shutdown, to_py};
use crate::count::Spans;
use crate::span_counts::SortedSpans;
use crate::merge::{extend, learn, learn_parity, Alphabet, AlphabetRule, ExtendBase, Learned, LearnOptions, Merge, ParityOptions};
use crate::{CountTables, Error, Vocab};

/// The spans the merge loop learns from: counted by a training (its threads' tables, joined and
/// then freed once the loop holds them), spans given to it (freed alike), or span counts the
/// caller keeps (borrowed, not copied).
pub(super) enum SpansToLearn {
    Counted(CountTables),
    /// Spans the loop owns (freed once its table holds them).
    Owned(Spans),
    Sorted(Arc<SortedSpans>),
    /// Parity-aware training: each language's span counts (borrowed).
    Languages(Languages),
}

/// What parity-aware training learns from: each language's span counts, its dev counts if
/// any, and how the merges' languages are chosen (the target ratios included).
pub(super) struct Languages {
    pub train: Vec<Arc<SortedSpans>>,
    pub dev: Option<Vec<Arc<SortedSpans>>>,
    pub parity: ParityOptions,
}

/// How each language fared in a parity-aware training (see `merge::ParityLearned`).
#[derive(Clone, Default)]
pub(super) struct ParityTrace {
    pub chosen: Vec<Option<u32>>,
    pub lengths: Vec<i64>,
    pub on_dev: bool,
    pub exhausted: Vec<Option<u32>>,
}

/// What one run of the merge loop gives back.
pub(super) struct LearnRun {
    pub vocab: Vocab,
    pub merges: Vec<Merge>,
    /// How many of the first tokens of `vocab` are the alphabet (see `merge::Learned`).
    pub alphabet: usize,
    pub distinct_spans: usize,
    pub seconds: f64,
    /// With parity-aware training, how each language fared.
    pub parity: Option<ParityTrace>,
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

/// What the worker and the watching thread share during one run of the merge loop.
struct Run<'a> {
    progress: Option<&'a Py<PyAny>>,
    /// The ranks to extend, or `None` to start from the 256 single bytes.
    base: Option<&'a ExtendBase>,
    /// With HuggingFace's layout, the special tokens before the alphabet (see `Recipe::plan`).
    specials_first: Option<u32>,
    /// The alphabet's single bytes, 256 but with HuggingFace's (set by [`Run::work`]).
    alphabet: AtomicUsize,
    /// The number of tokens before the first merge.
    first: usize,
    /// The number of merges to make (the vocabulary size less the tokens before the first
    /// merge: with HuggingFace's alphabet, known once the spans are, see [`Run::work`]).
    total: AtomicUsize,
    stop: Stop,
    /// Set by the worker once it is done (see [`Run::work`]).
    done: AtomicBool,
    /// The worker's reports not yet made, in order: (merges done, the last merge).
    pending: Mutex<Vec<(usize, Merge)>>,
    /// Merges done at the last report made (`usize::MAX` for none yet).
    delivered: AtomicUsize,
    distinct_spans: AtomicUsize,
    /// Set by a parity-aware run (see [`Run::work`]).
    parity: Mutex<Option<ParityTrace>>,
}

impl Run<'_> {
    fn take_pending(&self) -> Vec<(usize, Merge)> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Makes the worker's reports, in order, until a stop is asked or Python is exiting.
    fn deliver(&self, py: Python<'_>, reports: Vec<(usize, Merge)>) -> PyResult<()> {
        for (at, merge) in reports {
            if self.stop.requested() || shutdown::pause_due() {
                break; // stopped (Ctrl-C, or the callback raised), or Python is exiting
            }
            self.delivered.store(at, Ordering::Relaxed);
            let merge = self.ids(merge); // the ids the caller sees
            report_merge(py, self.progress, at, self.total.load(Ordering::Relaxed), &merge)?;
        }
        Ok(())
    }

    /// `merge` with the ids the caller sees: the base's (extending), HuggingFace's (the special
    /// tokens, then the alphabet's bytes, then the merged tokens), or the loop's own.
    fn ids(&self, merge: Merge) -> Merge {
        if let Some(base) = self.base {
            return base.ids().merge(&merge);
        }
        let Some(specials) = self.specials_first else { return merge };
        let alphabet = self.alphabet.load(Ordering::Relaxed) as u32;
        // A merged pair never holds a byte outside the alphabet (ids alphabet..256): no span does.
        let id = |t: u32| if t < alphabet { specials + t } else { specials + alphabet + t.saturating_sub(256) };
        Merge { pair: (id(merge.pair.0), id(merge.pair.1)), token: id(merge.token), count: merge.count }
    }

    /// The worker: joins the counts into spans (or takes spans given, or borrows sorted ones)
    /// and runs the merge loop on `pool`, leaving a report for `watcher` about every 0.1% of
    /// the merges. A panic here would be a bug: it is caught, so that Python sees a
    /// RuntimeError (which `except Exception` handles) rather than pyo3's PanicException.
    fn work(&self, pool: &rayon::ThreadPool, spans: SpansToLearn, options: &LearnOptions, watcher: &Thread) -> std::thread::Result<Result<Learned, Error>> {
        let learned = std::panic::catch_unwind(AssertUnwindSafe(|| {
            pool.install(|| {
                let sorted;
                let spans = match spans {
                    SpansToLearn::Languages(languages) => return self.learn_languages(&languages, options, watcher),
                    SpansToLearn::Counted(counts) => {
                        // Any order: the merges do not depend on it.
                        Cow::Owned(counts.into_spans(&self.stop.requested)?)
                    }
                    SpansToLearn::Owned(spans) => Cow::Owned(spans),
                    SpansToLearn::Sorted(kept) => {
                        sorted = kept;
                        Cow::Borrowed(sorted.spans())
                    }
                };
                // What joining or sorting freed goes back to the system before the loop's tables
                // (not after a small count, which freed little: the release walks every arena).
                let large = spans.len() >= RELEASE_FROM;
                if large {
                    crate::memory::release();
                }
                self.distinct_spans.store(spans.len(), Ordering::Relaxed);
                // HuggingFace's alphabet (the bytes the spans hold) fills the vocabulary first:
                // found here once, it is given to the loop, and the merges to make are known.
                let options = match &options.alphabet {
                    AlphabetRule::Bytes => Cow::Borrowed(options),
                    rule => {
                        let alphabet = Alphabet::of(rule, &spans);
                        self.total.store(options.vocab_size.saturating_sub(alphabet.len()), Ordering::Relaxed);
                        self.alphabet.store(alphabet.len(), Ordering::Relaxed);
                        Cow::Owned(LearnOptions { alphabet: AlphabetRule::Given(alphabet), ..options.clone() })
                    }
                };
                let on_merge = self.on_merge(watcher);
                let learned = match self.base {
                    None => learn(spans, &options, &self.stop.requested, on_merge),
                    Some(base) => extend(spans, base, &options, &self.stop.requested, on_merge),
                };
                if large {
                    crate::memory::release();
                }
                learned
            })
        }));
        // `is_finished` turns true only a moment after this, so raise a flag of our own before
        // waking the watcher, or it could go back to sleep for a full period.
        self.done.store(true, Ordering::SeqCst);
        watcher.unpark();
        learned
    }

    /// The merge loop's callback (once the merges to make are known): stops it when asked, and
    /// leaves a report for `watcher` about every 0.1% of the merges.
    fn on_merge<'s>(&'s self, watcher: &'s Thread) -> impl FnMut(&Merge, &Vocab) -> ControlFlow<()> + 's {
        let total = self.total.load(Ordering::Relaxed);
        let mut pacer = Pacer::new(total);
        move |merge: &Merge, vocab: &Vocab| {
            if self.stop.requested() {
                return ControlFlow::Break(());
            }
            let at = vocab.len() - self.first;
            if self.progress.is_some() && pacer.due(at, total) {
                self.pending.lock().unwrap_or_else(PoisonError::into_inner).push((at, *merge));
                watcher.unpark();
            }
            ControlFlow::Continue(())
        }
    }

    /// The worker's part for parity-aware training (see [`Run::work`]): the alphabet found over
    /// all languages first, so that the merges to make are known.
    fn learn_languages(&self, languages: &Languages, options: &LearnOptions, watcher: &Thread) -> Result<Learned, Error> {
        let train: Vec<&Spans> = languages.train.iter().map(|s| s.spans()).collect();
        let dev: Option<Vec<&Spans>> = languages.dev.as_ref().map(|d| d.iter().map(|s| s.spans()).collect());
        self.distinct_spans.store(train.iter().map(|s| s.len()).sum(), Ordering::Relaxed);
        let mut all = train.clone();
        all.extend(dev.iter().flatten());
        let alphabet = Alphabet::of_all(&options.alphabet, &all);
        self.total.store(options.vocab_size.saturating_sub(alphabet.len()), Ordering::Relaxed);
        self.alphabet.store(alphabet.len(), Ordering::Relaxed);
        let options = LearnOptions { alphabet: AlphabetRule::Given(alphabet), ..options.clone() };
        let on_merge = self.on_merge(watcher);
        let learned = learn_parity(&train, dev.as_deref(), &options, &languages.parity, &self.stop.requested, on_merge)?;
        let trace = ParityTrace { chosen: learned.chosen, lengths: learned.lengths, on_dev: learned.on_dev, exhausted: learned.exhausted };
        *self.parity.lock().unwrap_or_else(PoisonError::into_inner) = Some(trace);
        Ok(learned.learned)
    }

    /// The watching thread, without the GIL until the worker is done: every 100 ms or when the
    /// worker leaves a report, takes the GIL to look for Ctrl-C and make the reports.
    fn watch(&self) {
        while !self.done.load(Ordering::SeqCst) {
            std::thread::park_timeout(Duration::from_millis(100));
            shutdown::safe_point(); // before taking the GIL (see shutdown.rs)
            if !self.done.load(Ordering::SeqCst) {
                let reports = self.take_pending();
                if let Err(e) = Python::attach(|py| {
                    py.check_signals()?;
                    self.deliver(py, reports)
                }) {
                    self.stop.fail(e);
                }
            }
        }
    }

    /// The reports the worker left since the watcher last woke; then, if the loop stopped early
    /// (no pair left), one that closes the progress where it ended.
    fn deliver_the_rest(&self, py: Python<'_>, learned: &Learned) -> PyResult<()> {
        self.deliver(py, self.take_pending())?;
        let at = learned.vocab.len() - self.first;
        if let Some(&last) = learned.merges.last().filter(|_| self.delivered.load(Ordering::Relaxed) != at) {
            self.deliver(py, vec![(at, last)])?;
        }
        Ok(())
    }
}

/// A run of this many distinct spans or more gives freed memory back to the system (see
/// `memory::release`) before and after its merge loop; a smaller one has little to give.
const RELEASE_FROM: usize = 1 << 14;

/// The merge loop on counted, given or sorted spans, from the single bytes or from `base` (the
/// loop goes on from the spans encoded with its ranks); see the module's comment.
pub(super) fn run_loop(
    py: Python<'_>,
    pool: &rayon::ThreadPool,
    spans: SpansToLearn,
    base: Option<&ExtendBase>,
    specials_first: Option<u32>,
    options: LearnOptions,
    progress: Option<&Py<PyAny>>,
) -> PyResult<LearnRun> {
    let started = Instant::now();
    let first = base.map_or(256, ExtendBase::len);
    let run = Run {
        progress,
        base,
        specials_first,
        alphabet: AtomicUsize::new(256),
        first,
        total: AtomicUsize::new(options.vocab_size.saturating_sub(first)),
        stop: Stop::default(),
        done: AtomicBool::new(false),
        pending: Mutex::new(Vec::new()),
        delivered: AtomicUsize::new(usize::MAX),
        distinct_spans: AtomicUsize::new(0),
        parity: Mutex::new(None),
    };
    let outcome = py.detach(|| {
        let watcher = std::thread::current();
        std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("bpeforge-learn".into())
                .spawn_scoped(scope, || run.work(pool, spans, &options, &watcher))?;
            run.watch();
            let joined = worker.join();
            shutdown::safe_point(); // before taking the GIL again (see shutdown.rs)
            Ok::<_, std::io::Error>(joined)
        })
    });
    let outcome = outcome.map_err(|e| PyRuntimeError::new_err(format!("cannot start the merge loop's thread: {e}")))?;
    if let Some(e) = run.stop.failure() {
        return Err(e);
    }
    let internal = || PyRuntimeError::new_err("internal error in the merge loop (a bpeforge bug: please report it)");
    let learned = outcome.map_err(|_| internal())?.map_err(|_| internal())?.map_err(to_py)?;
    if progress.is_some() {
        run.deliver_the_rest(py, &learned)?;
    }
    Ok(LearnRun {
        distinct_spans: run.distinct_spans.load(Ordering::Relaxed),
        vocab: learned.vocab,
        merges: learned.merges,
        alphabet: learned.alphabet,
        seconds: started.elapsed().as_secs_f64(),
        parity: run.parity.into_inner().unwrap_or_else(PoisonError::into_inner),
    })
}
