//! The feeding end of the queue of batches to the counting worker. A batch the queue has no
//! room for (counting is then the slower side) is counted by the feeding thread itself, so that
//! neither side waits for the other.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use super::batch::BatchReceiver;
use super::counter::CallerLock;
use super::{Batch, CountTables};
use crate::{Error, Splitter};

/// The feeding thread's end of the queue of batches to the counting worker. Its heavy work
/// (counting a batch, waiting for room) runs through the caller's [`CallerLock`].
pub(super) struct BatchQueue<'a> {
    /// `None` once the queue is closed.
    to_worker: Option<SyncSender<Batch>>,
    /// Counted batches come back here to be filled again: their memory is already mapped, so
    /// filling one does not fault in fresh pages. `None` once the queue is closed (the batches
    /// the worker gives back then are dropped at once).
    returned: Option<Receiver<Batch>>,
    /// Whether a batch the queue has no room for is counted by the feeding thread (else it
    /// waits for room).
    count_when_full: bool,
    /// What the feeding thread counted.
    feeder_counts: CountTables,
    failed: Option<Error>,
    splitter: Arc<Splitter>,
    stop: Arc<AtomicBool>,
    caller: &'a dyn CallerLock,
    /// Texts and bytes handed on (queued or counted by the feeding thread), and how many
    /// batches (a long text counted on its own, see [`BatchQueue::count_long_text`], counts as
    /// one).
    pub(super) texts: u64,
    pub(super) bytes: u64,
    pub(super) batches: u64,
    /// Set once the worker is gone, counting failed or `stop` was set: batches handed on from
    /// then on are dropped.
    pub(super) closed: bool,
}

impl<'a> BatchQueue<'a> {
    /// `count_when_full`: whether a batch the queue has no room for is counted by the feeding
    /// thread (else it waits for room: for when the worker is to be the only thread that counts).
    pub(super) fn new(
        to_worker: SyncSender<Batch>,
        returned: Receiver<Batch>,
        count_when_full: bool,
        splitter: Arc<Splitter>,
        stop: Arc<AtomicBool>,
        caller: &'a dyn CallerLock,
    ) -> Self {
        BatchQueue {
            to_worker: Some(to_worker),
            returned: Some(returned),
            count_when_full,
            feeder_counts: CountTables::new(),
            failed: None,
            splitter,
            stop,
            caller,
            texts: 0,
            bytes: 0,
            batches: 0,
            closed: false,
        }
    }

    /// From now on a batch the queue has no room for waits for room: for the last batch, once
    /// the worker counts on every thread (counting it here too would only crowd them).
    pub(super) fn wait_when_full(&mut self) {
        self.count_when_full = false;
    }

    /// Whether a batch the queue has no room for is counted by the feeding thread.
    pub(super) fn counts_when_full(&self) -> bool {
        self.count_when_full
    }

    /// Runs `work` through the caller's lock, then closes the queue if `stop` was set meanwhile
    /// (the caller's lock may set it: on Ctrl-C, say).
    fn run_unlocked(&mut self, work: impl FnOnce(&mut Self) + Send) {
        let caller = self.caller;
        let mut work = Some(work);
        caller.run_unlocked(&mut || {
            if let Some(work) = work.take() {
                work(self);
            }
        });
        if self.stop.load(Ordering::Relaxed) {
            self.closed = true;
        }
    }

    /// Queues `full` for the worker, or counts it on this thread if the queue is full. Returns a
    /// batch to fill next (not cleared).
    fn send(&mut self, full: Batch) -> Batch {
        let Some(to_worker) = &self.to_worker else { return full };
        self.texts += full.len() as u64;
        self.bytes += full.bytes() as u64;
        self.batches += 1;
        let sent = if self.count_when_full {
            to_worker.try_send(full)
        } else {
            to_worker.send(full).map_err(|e| TrySendError::Disconnected(e.0))
        };
        match sent {
            Ok(()) => self.returned.as_ref().and_then(|returned| returned.try_recv().ok()).unwrap_or_default(),
            Err(TrySendError::Full(full)) => {
                let counted = self.feeder_counts.add_batch_on_this_thread(&full, &self.splitter, &self.stop);
                self.fail_on(counted);
                full
            }
            Err(TrySendError::Disconnected(full)) => {
                self.closed = true;
                full
            }
        }
    }

    /// Counts one text on this thread, at once, as if it were a batch of its own handed on:
    /// for a text longer than a batch, which would otherwise be copied into one.
    pub(super) fn count_long_text(&mut self, text: &str) {
        if self.closed {
            return;
        }
        self.run_unlocked(|queue| {
            queue.texts += 1;
            queue.bytes += text.len() as u64;
            queue.batches += 1;
            let counted = queue.feeder_counts.add_text_on_this_thread(text, &queue.splitter, &queue.stop);
            queue.fail_on(counted);
        });
    }

    /// What the feeding thread counted, once it counts no more (after
    /// [`BatchQueue::wait_when_full`]), for the worker to count into as well (see
    /// [`CountTables::absorb_first`]). `None` if counting failed (then [`BatchQueue::close`]
    /// gives the error) or counted nothing.
    pub(super) fn take_feeder_counts(&mut self) -> Option<CountTables> {
        if self.count_when_full || self.failed.is_some() || self.feeder_counts.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.feeder_counts))
    }

    /// Keeps the error if counting failed: batches handed on from then on are dropped, and
    /// [`BatchQueue::close`] gives it back.
    fn fail_on(&mut self, counted: Result<(), Error>) {
        if let Err(e) = counted {
            self.failed = Some(e);
            self.closed = true;
        }
    }

    /// Closes the queue (the worker ends once it has counted what is queued) and gives what
    /// the feeding thread counted (to add to the worker's counts), or what counting it failed
    /// with.
    pub(super) fn close(&mut self) -> Result<CountTables, Error> {
        self.to_worker = None;
        self.returned = None;
        self.closed = true;
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(std::mem::take(&mut self.feeder_counts)),
        }
    }
}

impl BatchReceiver for BatchQueue<'_> {
    fn receive(&mut self, full: Batch) -> Batch {
        if self.closed {
            return full;
        }
        let mut next = None;
        self.run_unlocked(|queue| next = Some(queue.send(full)));
        next.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::counter::NoLock;
    use crate::pretokenize::presets::GPT4;
    use std::sync::{mpsc, OnceLock};
    use std::time::Duration;

    static GO: AtomicBool = AtomicBool::new(false);

    fn splitter() -> &'static Splitter {
        static SPLITTER: OnceLock<Splitter> = OnceLock::new();
        SPLITTER.get_or_init(|| Splitter::new(GPT4).unwrap())
    }

    /// A feeding end with a queue of `room` batches, and the queue's other end (no batch comes
    /// back to be filled again: a fresh one is made each time).
    fn queue(room: usize, count_when_full: bool, stopped: bool) -> (BatchQueue<'static>, mpsc::Receiver<Batch>) {
        let (to_worker, queued) = mpsc::sync_channel(room);
        let (_, returned) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(stopped));
        (BatchQueue::new(to_worker, returned, count_when_full, Arc::new(splitter().clone()), stop, &NoLock), queued)
    }

    fn batch_of<S: AsRef<str>>(texts: &[S]) -> Batch {
        let mut b = Batch::new();
        texts.iter().for_each(|t| b.push(t.as_ref()));
        b
    }

    /// A worker that starts taking batches after a while and gives back their lengths.
    fn slow_worker(queued: mpsc::Receiver<Batch>) -> impl FnOnce() -> Vec<usize> {
        move || {
            std::thread::sleep(Duration::from_millis(50));
            queued.iter().map(|b| b.len()).collect()
        }
    }

    #[test]
    fn batches_the_queue_has_no_room_for_are_counted_by_the_feeding_thread() {
        let mut next = crate::test_random(7);
        let words = ["the", " cat", " sat", "\n", " 42", "!", " über", " the"];
        let texts: Vec<String> =
            (0..400).map(|_| (0..1 + next(30)).map(|_| words[next(words.len() as u64) as usize]).collect()).collect();
        let chunks: Vec<&[String]> = texts.chunks(37).collect();
        let mut all = CountTables::new();
        all.add_texts(&texts, splitter()).unwrap();

        // No one takes from a queue of two: the first two batches wait there, the rest are
        // counted by the feeding thread; together they are all the texts' counts.
        let (mut out, queued) = queue(2, true, false);
        for chunk in &chunks {
            let mut again = out.receive(batch_of(chunk));
            again.clear();
            assert!(again.is_empty());
        }
        assert_eq!((out.batches, out.texts), (chunks.len() as u64, texts.len() as u64));
        assert_eq!(out.bytes, texts.iter().map(|t| t.len() as u64).sum::<u64>());
        let mut counts = out.close().unwrap();
        let waiting: Vec<Batch> = queued.try_iter().collect();
        assert_eq!(waiting.len(), 2);
        let mut queued_counts = CountTables::new();
        for b in &waiting {
            queued_counts.add_batch_on_this_thread(b, splitter(), &GO).unwrap();
        }
        counts.absorb(queued_counts);
        let sorted = |spans: crate::count::Spans| {
            let mut v: Vec<(Vec<u8>, u64)> = spans.iter().map(|(b, n)| (b.to_vec(), n)).collect();
            v.sort();
            v
        };
        assert_eq!(sorted(counts.into_spans(&GO).unwrap()), sorted(all.into_spans(&GO).unwrap()));
    }

    #[test]
    fn without_counting_when_full_a_full_queue_waits_for_room() {
        let (mut out, queued) = queue(1, false, false);
        let worker = std::thread::spawn(slow_worker(queued));
        for n in 1..=4 {
            out.receive(batch_of(&vec!["a b"; n]));
        }
        assert_eq!(out.close().unwrap().len(), 0, "nothing counted by the feeding thread");
        assert_eq!(worker.join().unwrap(), [1, 2, 3, 4], "every batch went to the worker, in order");
    }

    #[test]
    fn after_wait_when_full_a_full_queue_waits() {
        let (mut out, queued) = queue(1, true, false);
        out.receive(batch_of(&["a b"])); // queued
        out.receive(batch_of(&["c d"])); // no room: counted by the feeding thread
        out.wait_when_full();
        let worker = std::thread::spawn(slow_worker(queued));
        out.receive(batch_of(&["e f"; 3])); // waits for the worker
        assert_eq!(out.close().unwrap().len(), 2, "only the second batch's spans were counted by the feeding thread");
        assert_eq!(worker.join().unwrap(), [1, 3]);
    }

    #[test]
    fn the_feeder_counts_are_handed_over_once_the_feeder_counts_no_more() {
        let (mut out, queued) = queue(1, true, false);
        out.receive(batch_of(&["a b"])); // queued
        out.receive(batch_of(&["c d"])); // no room: counted by the feeding thread
        assert!(out.take_feeder_counts().is_none(), "the feeding thread may count more: nothing to hand over yet");
        out.wait_when_full();
        let feeder_counts = out.take_feeder_counts().expect("the second batch was counted by the feeding thread");
        assert_eq!((feeder_counts.len(), feeder_counts.get(b"c"), feeder_counts.get(b" d"), feeder_counts.get(b"a")), (2, 1, 1, 0));
        assert!(out.take_feeder_counts().is_none(), "handed over once");
        let worker = std::thread::spawn(slow_worker(queued));
        out.receive(batch_of(&["e f"])); // waits for the worker
        assert_eq!(out.close().unwrap().len(), 0, "nothing left with the feeding thread");
        assert_eq!(worker.join().unwrap(), [1, 1]);
    }

    #[test]
    fn a_worker_gone_drops_what_comes() {
        let (mut out, queued) = queue(2, true, false);
        drop(queued);
        out.receive(batch_of(&["a b"]));
        assert!(out.closed);
        out.receive(batch_of(&["c d"]));
        assert_eq!(out.batches, 1, "nothing is handed on once the worker is gone");
        assert_eq!(out.close().unwrap().len(), 0);
    }

    #[test]
    fn counting_on_the_feeding_thread_stops_when_asked() {
        let (mut out, _queued) = queue(0, true, true);
        let big: Vec<String> = (0..200_000).map(|i| format!("w{i} ")).collect();
        out.receive(batch_of(&big));
        assert!(out.closed);
        assert!(matches!(out.close(), Err(Error::Interrupted)));
    }
}
