//! Counting a stream of texts: a [`Counter`] takes texts from the thread that reads them (the
//! feeding thread), cuts them into batches and counts each batch on a worker thread while the
//! feeding thread reads on; [`Counter::finish`] gives the [`CountTables`].
//!
//! How the work is shared:
//! - A batch is full once it holds `batch_texts` texts and at least [`MIN_BATCH_BYTES`] (handing
//!   over many tiny batches costs more than counting them), or as soon as it holds
//!   [`MAX_BATCH_BYTES`], however few texts that is, even in the middle of a buffer of texts: so
//!   memory stays bounded whatever one item of the input holds.
//! - While texts still come, the worker counts each batch on all of the pool's threads but one
//!   (on its own thread, with two), so that the feeding thread keeps a core: it is usually the
//!   slower side (the Python bindings read a Python iterator there), and counting on every
//!   thread would take its core away.
//! - When the feeding thread is the faster side, the queue fills (it holds [`QUEUED_BATCHES`]),
//!   and the feeding thread counts a batch the queue has no room for itself, into a table of
//!   its own (with a pool of one thread it waits for room instead: the worker is the one that
//!   counts). A text longer than a batch is counted there too, where it lies, rather than
//!   copied into a batch of its own (a document of tens of MB would be held twice).
//! - Once no more texts come, what is queued is counted on every thread of the pool, and the
//!   feeding thread's table is handed to the worker, whose first thread counts into it (the
//!   join of the threads' tables then finds most spans in one table).
//!
//! The feeding thread may hold a lock that others wait for (Python's GIL, in the bindings):
//! every piece of heavy work the counter does on that thread (counting a batch or a long text,
//! waiting for room in the queue or for the worker) runs through [`CallerLock::run_unlocked`],
//! so that the caller can release its lock around it. Setting the `stop` flag (the caller's
//! lock may set it, on Ctrl-C say) makes every thread give up soon; the counter then drops the
//! texts it is given, and [`Counter::finish`] fails with [`Error::Interrupted`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use rayon::ThreadPool;

use super::batch::{BatchSize, Batcher, BufferError, TextSink};
use super::queue::BatchQueue;
use super::{Batch, CountTables};
use crate::{Error, Splitter};

/// A batch goes to the worker once it holds `batch_texts` texts and at least this many bytes...
const MIN_BATCH_BYTES: usize = 1 << 20;
/// ... or as soon as it holds this many, however few texts that is (bounded memory).
const MAX_BATCH_BYTES: usize = 2 << 20;

/// How many full batches may wait for the worker (more are counted by the feeding thread).
const QUEUED_BATCHES: usize = 4;

/// The first `n` characters of `text` (all of it if it has fewer).
#[inline]
fn cropped(text: &str, n: u64) -> &str {
    if (text.len() as u64) <= n {
        return text; // bytes bound characters from above
    }
    text.char_indices().nth(n as usize).map_or(text, |(end, _)| &text[..end])
}

/// The lock the feeding thread holds while it feeds a [`Counter`], if any (the Python bindings:
/// the GIL). The counter calls it, on the feeding thread, around work that needs nothing of the
/// caller's and may take a while.
pub trait CallerLock: Sync {
    /// Runs `work` on this thread; the caller may release its lock meanwhile, and may set the
    /// counter's `stop` flag afterwards (on Ctrl-C, say).
    fn run_unlocked(&self, work: &mut (dyn FnMut() + Send));
}

/// For a feeding thread that holds no lock: the work runs as it is.
pub struct NoLock;

impl CallerLock for NoLock {
    fn run_unlocked(&self, work: &mut (dyn FnMut() + Send)) {
        work();
    }
}

/// What counting a stream of texts gives.
#[derive(Debug)]
pub struct Counted {
    pub counts: CountTables,
    /// The texts counted, and their bytes.
    pub texts: u64,
    pub bytes: u64,
}

/// How far counting got (see [`Counter::progress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Texts and bytes handed on to be counted.
    pub texts: u64,
    pub bytes: u64,
    /// Batches handed on (a long text counted on its own is one).
    pub batches: u64,
    /// A lower bound of the distinct spans counted so far.
    pub spans_at_least: usize,
}

/// What the feeding thread and the worker share.
struct Shared {
    splitter: Arc<Splitter>,
    pool: Arc<ThreadPool>,
    stop: Arc<AtomicBool>,
    /// Whether texts may still come (then the worker leaves a core to the feeding thread).
    feeding: AtomicBool,
    /// The table the feeding thread counted into, handed to the worker once feeding is over.
    feeder_counts: Mutex<Option<CountTables>>,
    /// The size of the worker's largest table: a lower bound of the distinct spans.
    spans_seen: AtomicUsize,
}

impl Shared {
    /// Puts the feeding thread's table, if it was handed over, first among `counts`' tables.
    fn take_feeder_counts(&self, counts: &mut CountTables) {
        if let Some(feeder_counts) = self.feeder_counts.lock().unwrap_or_else(PoisonError::into_inner).take() {
            counts.absorb_first(feeder_counts);
        }
    }
}

/// Splits and counts texts on a worker thread and on the pool, while the caller feeds them (see
/// the module's comment). Dropping it before [`Counter::finish`] stops the worker and waits for
/// it.
pub struct Counter<'a> {
    batcher: Batcher<BatchQueue<'a>>,
    shared: Arc<Shared>,
    /// The worker, until it is joined.
    worker: Option<JoinHandle<Result<CountTables, Error>>>,
    caller: &'a dyn CallerLock,
    /// Each text is cropped to its first this many characters (a training's `doc_cap`).
    doc_cap: Option<u64>,
}

impl<'a> Counter<'a> {
    /// Starts the worker: texts are split with `splitter` and counted on `pool`; a batch is full
    /// once it holds `batch_texts` texts (and 1 MiB), or 2 MiB. `stop` and `caller`: see the
    /// module's comment. Fails only if the worker thread cannot be started.
    pub fn new(
        splitter: &Splitter,
        pool: Arc<ThreadPool>,
        batch_texts: usize,
        stop: Arc<AtomicBool>,
        caller: &'a dyn CallerLock,
    ) -> std::io::Result<Self> {
        let size = BatchSize { texts: batch_texts.max(1), min_bytes: MIN_BATCH_BYTES, max_bytes: MAX_BATCH_BYTES };
        Self::with_batch_size(splitter, pool, size, stop, caller)
    }

    /// [`Counter::new`] with batches full at `size`.
    fn with_batch_size(
        splitter: &Splitter,
        pool: Arc<ThreadPool>,
        size: BatchSize,
        stop: Arc<AtomicBool>,
        caller: &'a dyn CallerLock,
    ) -> std::io::Result<Self> {
        let threads = pool.current_num_threads();
        let splitter = Arc::new(splitter.clone());
        let shared = Arc::new(Shared {
            splitter: Arc::clone(&splitter),
            pool,
            stop: Arc::clone(&stop),
            feeding: AtomicBool::new(true),
            feeder_counts: Mutex::new(None),
            spans_seen: AtomicUsize::new(0),
        });
        let (to_worker, queued) = mpsc::sync_channel::<Batch>(QUEUED_BATCHES);
        let (to_feeder, returned) = mpsc::channel::<Batch>();
        let for_worker = Arc::clone(&shared);
        let worker = std::thread::Builder::new()
            .name("bpeforge-count".into())
            .spawn(move || count_queued(&for_worker, queued, to_feeder, threads))?;
        // With a pool of one thread, the worker is the one that counts.
        let queue = BatchQueue::new(to_worker, returned, threads > 1, splitter, stop, caller);
        Ok(Counter { batcher: Batcher::new(size, queue), shared, worker: Some(worker), caller, doc_cap: None })
    }

    /// Crops every text pushed from now on to its first `doc_cap` characters (`None`: whole).
    pub fn crop_texts_to(&mut self, doc_cap: Option<u64>) {
        self.doc_cap = doc_cap;
    }

    /// Adds one text (cropped to `doc_cap` characters, if set). A text longer than a batch is
    /// counted at once, where it lies (on a pool of two threads or more); other texts go into
    /// the batch being filled, which is handed on if that filled it.
    #[inline]
    pub fn push(&mut self, text: &str) {
        let text = match self.doc_cap {
            Some(cap) => cropped(text, cap),
            None => text,
        };
        if text.len() > self.batcher.size().max_bytes && self.batcher.receiver.counts_when_full() {
            self.count_long_text(text);
        } else if self.batcher.add(text) {
            self.batcher.flush();
        }
    }

    /// Counts a text longer than a batch on this thread, after handing on the batch being
    /// filled.
    fn count_long_text(&mut self, text: &str) {
        if !self.batcher.batch().is_empty() {
            self.batcher.flush();
        }
        self.batcher.receiver.count_long_text(text);
    }

    /// Whether the counter drops what it is given: `stop` was set, or counting failed
    /// ([`Counter::finish`] tells why).
    #[inline]
    pub fn is_stopped(&self) -> bool {
        self.batcher.receiver.closed
    }

    /// How far counting got.
    pub fn progress(&self) -> Progress {
        let queue = &self.batcher.receiver;
        Progress {
            texts: queue.texts,
            bytes: queue.bytes,
            batches: queue.batches,
            spans_at_least: self.shared.spans_seen.load(Ordering::Relaxed),
        }
    }

    /// Counts what is left and gives all the counts, once every text was pushed.
    pub fn finish(mut self) -> Result<Counted, Error> {
        // No more texts come: what is queued from now on is counted on every thread, one of
        // them into the table the feeding thread counted (handed over before the worker can see
        // that feeding is over).
        let queue = &mut self.batcher.receiver;
        queue.wait_when_full();
        let feeder_counts = queue.take_feeder_counts();
        *self.shared.feeder_counts.lock().unwrap_or_else(PoisonError::into_inner) = feeder_counts;
        self.shared.feeding.store(false, Ordering::SeqCst);
        if !self.batcher.batch().is_empty() {
            self.batcher.flush();
        }
        let (texts, bytes) = (self.batcher.receiver.texts, self.batcher.receiver.bytes);
        let counts = self.close()?;
        if self.shared.stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted); // (texts may have been dropped)
        }
        Ok(Counted { counts, texts, bytes })
    }

    /// Closes the queue, waits for the worker to count what it holds, and adds what the
    /// feeding thread counted to the worker's counts.
    fn close(&mut self) -> Result<CountTables, Error> {
        self.shared.feeding.store(false, Ordering::SeqCst);
        let feeder_counts = self.batcher.receiver.close();
        let mut joined = None;
        let mut worker = self.worker.take();
        self.caller.run_unlocked(&mut || joined = worker.take().map(JoinHandle::join));
        let mut counts = match joined {
            Some(Ok(counted)) => counted?,
            Some(Err(_)) => return Err(Error::Internal("the counting thread panicked".into())),
            None => return Err(Error::Internal("the counting thread was joined twice".into())),
        };
        counts.absorb(feeder_counts?);
        Ok(counts)
    }
}

impl Drop for Counter<'_> {
    /// Stops the worker (nothing it counts will be used) and waits for it.
    fn drop(&mut self) {
        if self.worker.is_some() {
            self.shared.stop.store(true, Ordering::SeqCst);
            let _ = self.close();
        }
    }
}

/// Texts given as buffers (Arrow string arrays) go into batches, whatever their length, cropped
/// to `doc_cap` characters if it is set.
impl TextSink for Counter<'_> {
    fn push(&mut self, text: &str) {
        match self.doc_cap {
            Some(cap) => self.batcher.push(cropped(text, cap)),
            None => self.batcher.push(text),
        }
    }

    fn push_buffer(&mut self, data: &[u8], ends: &[usize]) -> Result<(), BufferError> {
        let Some(cap) = self.doc_cap else {
            return self.batcher.push_buffer(data, ends);
        };
        // Checked as a batch checks them, then each cropped (a copy more, only with doc_cap).
        let mut texts = Batch::new();
        texts.extend_from_buffer(data, ends.iter().copied())?;
        for i in 0..texts.len() {
            self.batcher.push(cropped(texts.get(i), cap));
        }
        Ok(())
    }
}

/// The worker: counts the batches of the queue until it is closed, and gives them back to be
/// filled again. While texts still come it leaves a core to the feeding thread (see the
/// module's comment); once they stop, it counts on every thread, into the feeding thread's
/// table too.
fn count_queued(shared: &Shared, queued: Receiver<Batch>, to_feeder: Sender<Batch>, threads: usize) -> Result<CountTables, Error> {
    let (splitter, stop, pool) = (&*shared.splitter, &*shared.stop, &shared.pool);
    let mut counts = CountTables::new();
    while let Ok(batch) = queued.recv() {
        if !shared.feeding.load(Ordering::SeqCst) {
            shared.take_feeder_counts(&mut counts);
            pool.install(|| counts.add_batch(&batch, splitter, stop))?;
        } else if threads > 2 {
            pool.install(|| counts.add_batch_on_threads(&batch, splitter, stop, threads - 1))?;
        } else {
            counts.add_batch_on_this_thread(&batch, splitter, stop)?;
        }
        shared.spans_seen.store(counts.len_at_least(), Ordering::Relaxed);
        let _ = to_feeder.send(batch); // the feeding thread may be gone already: then it is dropped
    }
    shared.take_feeder_counts(&mut counts); // if no batch came after it was handed over
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{learn, LearnOptions};
    use crate::pretokenize::presets;
    use crate::Vocab;
    use std::collections::BTreeMap;
    use std::ops::ControlFlow;

    const VOCAB: usize = 256 + 60;

    /// Random texts: words, numbers, punctuation, non-ASCII letters and blank lines, of 0 to a
    /// few hundred bytes, and a few much longer ones.
    fn random_texts(seed: u64) -> Vec<String> {
        let mut next = crate::test_random(seed);
        let words = ["the", " cat", " sat", " on", " mat", "\n", "\n\n", " 1234", "!", " über", " naïve", "  ", " x", "'s", " éé"];
        let mut texts: Vec<String> = (0..1500)
            .map(|_| (0..next(40)).map(|_| words[next(words.len() as u64) as usize]).collect())
            .collect();
        for i in 0..4 {
            let long: String = (0..2000).map(|_| words[next(words.len() as u64) as usize]).collect();
            texts.insert(300 * i + 7, long);
        }
        texts
    }

    /// Splits and counts `texts` with a counter on `threads` threads, with small batches so
    /// that there are many (some counted by the feeding thread, some texts longer than a batch),
    /// some of them given as one buffer (as an Arrow array gives them).
    fn count(texts: &[String], splitter: &Splitter, pool: &Arc<ThreadPool>, batch_texts: usize) -> Counted {
        let size = BatchSize { texts: batch_texts, min_bytes: 256, max_bytes: 1024 };
        let stop = Arc::new(AtomicBool::new(false));
        let mut counter = Counter::with_batch_size(splitter, Arc::clone(pool), size, stop, &NoLock).unwrap();
        for (k, chunk) in texts.chunks(50).enumerate() {
            if k % 3 == 2 {
                let data = chunk.concat();
                let ends: Vec<usize> = chunk.iter().scan(0, |end, t| Some(*end + t.len()).inspect(|e| *end = *e)).collect();
                counter.push_buffer(data.as_bytes(), &ends).unwrap();
            } else {
                chunk.iter().for_each(|t| counter.push(t));
            }
        }
        assert!(!counter.is_stopped());
        counter.finish().unwrap()
    }

    #[test]
    fn trains_without_python_as_the_naive_reference_does() {
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let texts = random_texts(5);
        let mut spans = BTreeMap::<Vec<u8>, u64>::new();
        for text in &texts {
            for span in splitter.spans(text).unwrap() {
                *spans.entry(span.as_bytes().to_vec()).or_default() += 1;
            }
        }
        let want = crate::merge::tests::naive(&spans.into_iter().collect::<Vec<_>>(), VOCAB);
        assert_eq!(want.len(), VOCAB - 256);
        let mut ranks = Vocab::bytes();
        for m in &want {
            ranks.push_merge(m.pair.0, m.pair.1);
        }
        let ranks: Vec<Vec<u8>> = ranks.tokens().map(<[u8]>::to_vec).collect();
        let bytes: u64 = texts.iter().map(|t| t.len() as u64).sum();
        for threads in [1, 2, 3, 4] {
            let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap());
            for batch_texts in [1, 9, 100_000] {
                let counted = count(&texts, &splitter, &pool, batch_texts);
                assert_eq!((counted.texts, counted.bytes), (texts.len() as u64, bytes));
                let stop = AtomicBool::new(false);
                let options = LearnOptions { vocab_size: VOCAB, min_frequency: 1, max_token_length: None, ..Default::default() };
                let learned = pool.install(|| {
                    let spans = counted.counts.into_spans(&stop)?;
                    learn(spans, &options, &stop, |_, _| ControlFlow::Continue(()))
                });
                let learned = learned.unwrap();
                assert_eq!(learned.merges, want, "{threads} threads, batches of {batch_texts} texts");
                assert_eq!(learned.vocab.tokens().map(<[u8]>::to_vec).collect::<Vec<_>>(), ranks);
            }
        }
    }

    /// A caller lock that counts the work run through it.
    #[derive(Default)]
    struct CountingLock(AtomicUsize);

    impl CallerLock for CountingLock {
        fn run_unlocked(&self, work: &mut (dyn FnMut() + Send)) {
            self.0.fetch_add(1, Ordering::Relaxed);
            work();
        }
    }

    #[test]
    fn heavy_work_on_the_feeding_thread_runs_through_the_caller_lock() {
        // Each batch handed on, each long text, and the wait for the worker: one call each.
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap());
        let lock = CountingLock::default();
        let size = BatchSize { texts: 1, min_bytes: 0, max_bytes: 100 };
        let mut counter = Counter::with_batch_size(&splitter, pool, size, Arc::new(AtomicBool::new(false)), &lock).unwrap();
        for text in ["a b", "c d", &"long text ".repeat(20), "e f"] {
            counter.push(text);
        }
        assert_eq!(counter.progress().batches, 4);
        assert_eq!(lock.0.load(Ordering::Relaxed), 4);
        let counted = counter.finish().unwrap();
        assert_eq!(lock.0.load(Ordering::Relaxed), 5, "and one for the worker's join");
        assert_eq!((counted.texts, counted.counts.get(b" text"), counted.counts.get(b"e")), (4, 20, 1));
    }

    /// A caller lock that sets the stop flag after its `after`-th call, as Ctrl-C would.
    struct StoppingLock {
        calls: AtomicUsize,
        after: usize,
        stop: Arc<AtomicBool>,
    }

    impl CallerLock for StoppingLock {
        fn run_unlocked(&self, work: &mut (dyn FnMut() + Send)) {
            work();
            if self.calls.fetch_add(1, Ordering::Relaxed) + 1 == self.after {
                self.stop.store(true, Ordering::SeqCst);
            }
        }
    }

    #[test]
    fn a_stop_asked_by_the_caller_lock_drops_the_rest_and_fails_finish() {
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let texts = random_texts(9);
        for threads in [1, 3] {
            let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap());
            let stop = Arc::new(AtomicBool::new(false));
            let lock = StoppingLock { calls: AtomicUsize::new(0), after: 3, stop: Arc::clone(&stop) };
            let size = BatchSize { texts: 10, min_bytes: 0, max_bytes: 1 << 20 };
            let mut counter = Counter::with_batch_size(&splitter, pool, size, stop, &lock).unwrap();
            texts.iter().for_each(|t| counter.push(t));
            assert!(counter.is_stopped());
            assert_eq!(counter.progress().batches, 3, "nothing handed on after the stop");
            assert_eq!(counter.finish().err(), Some(Error::Interrupted));
        }
    }

    #[test]
    fn a_counter_dropped_unfinished_stops_its_worker() {
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let size = BatchSize { texts: 1, min_bytes: 0, max_bytes: 1 << 20 };
        let mut counter = Counter::with_batch_size(&splitter, pool, size, Arc::clone(&stop), &NoLock).unwrap();
        random_texts(3).iter().for_each(|t| counter.push(t));
        drop(counter); // joins the worker: returning at all is the test
        assert!(stop.load(Ordering::Relaxed));
    }
}
