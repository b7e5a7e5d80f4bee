//! Handing full batches to a counting worker through a bounded queue: when the queue is full
//! (counting is the slower side), the batch is counted by whoever filled it instead, so that
//! neither side waits for the other.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

use super::{Batch, SpanCounts};
use crate::{Error, Splitter};

/// The feeding side of a queue of batches to a counting worker.
pub struct ToQueue<'a> {
    to_worker: SyncSender<Batch>,
    /// Counted batches come back here to be filled again: their memory is already mapped, so
    /// filling one does not fault in fresh pages.
    emptied: Receiver<Batch>,
    /// Whether a batch the queue has no room for is counted here (else this waits for room).
    count_here: bool,
    /// The batches counted here.
    here: SpanCounts,
    failed: Option<Error>,
    splitter: &'a Splitter,
    stop: &'a AtomicBool,
    /// Texts and bytes handed on (queued or counted here), and how many batches (a text counted
    /// on its own, see [`ToQueue::count_text_here`], counts as one).
    pub texts: u64,
    pub bytes: u64,
    pub sent: u64,
    /// The worker is gone, or counting here failed: batches handed on now are dropped.
    pub gone: bool,
}

impl<'a> ToQueue<'a> {
    /// `count_here`: whether a batch the queue has no room for is counted by the caller of
    /// [`ToQueue::hand_on`] (else it waits for room: for when the worker is to be the only
    /// thread that counts).
    pub fn new(
        to_worker: SyncSender<Batch>,
        emptied: Receiver<Batch>,
        count_here: bool,
        splitter: &'a Splitter,
        stop: &'a AtomicBool,
    ) -> Self {
        let here = SpanCounts::new();
        ToQueue { to_worker, emptied, count_here, here, failed: None, splitter, stop, texts: 0, bytes: 0, sent: 0, gone: false }
    }

    /// From now on a batch the queue has no room for waits for room: for the last batch, once
    /// the worker counts on every thread (counting it here too would only crowd them).
    pub fn wait_for_room(&mut self) {
        self.count_here = false;
    }

    /// Queues `full` for the worker, or counts it here if the queue is full. Returns a batch to
    /// fill next (not cleared). Call it without holding up others: it may count a batch.
    pub fn hand_on(&mut self, full: Batch) -> Batch {
        if self.gone {
            return full;
        }
        self.texts += full.len() as u64;
        self.bytes += full.bytes() as u64;
        self.sent += 1;
        let sent = if self.count_here {
            self.to_worker.try_send(full)
        } else {
            self.to_worker.send(full).map_err(|e| TrySendError::Disconnected(e.0))
        };
        match sent {
            Ok(()) => self.emptied.try_recv().unwrap_or_default(),
            Err(TrySendError::Full(full)) => {
                let counted = self.here.add_batch_here(&full, self.splitter, self.stop);
                self.fail_on(counted);
                full
            }
            Err(TrySendError::Disconnected(full)) => {
                self.gone = true;
                full
            }
        }
    }

    /// Whether a batch the queue has no room for is counted here (see [`ToQueue::new`]).
    pub fn counts_here(&self) -> bool {
        self.count_here
    }

    /// Counts one text here, at once, as if it were a batch of its own handed on: for a text
    /// longer than a batch, which would otherwise be copied into one. Call it without holding
    /// up others.
    pub fn count_text_here(&mut self, text: &str) {
        if self.gone {
            return;
        }
        self.texts += 1;
        self.bytes += text.len() as u64;
        self.sent += 1;
        let counted = self.here.add_text_here(text, self.splitter, self.stop);
        self.fail_on(counted);
    }

    /// What was counted here, once nothing more will be (after [`ToQueue::wait_for_room`]),
    /// for the worker to count into as well (see [`SpanCounts::absorb_first`]).
    /// `None` if counting here failed (then [`ToQueue::finish`] gives the error) or counted
    /// nothing.
    pub fn hand_over_here(&mut self) -> Option<SpanCounts> {
        if self.count_here || self.failed.is_some() || self.here.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.here))
    }

    /// Keeps the error if counting here failed: batches handed on from then on are dropped,
    /// and [`ToQueue::finish`] gives it back.
    fn fail_on(&mut self, counted: Result<(), Error>) {
        if let Err(e) = counted {
            self.failed = Some(e);
            self.gone = true;
        }
    }

    /// What was counted here (to add to the worker's counts), or what counting it failed with.
    /// Closes the queue.
    pub fn finish(self) -> Result<SpanCounts, Error> {
        match self.failed {
            Some(e) => Err(e),
            None => Ok(self.here),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::presets::GPT4;
    use std::sync::{mpsc, OnceLock};
    use std::time::Duration;

    static GO: AtomicBool = AtomicBool::new(false);
    static STOPPED: AtomicBool = AtomicBool::new(true);

    fn splitter() -> &'static Splitter {
        static SPLITTER: OnceLock<Splitter> = OnceLock::new();
        SPLITTER.get_or_init(|| Splitter::new(GPT4).unwrap())
    }

    /// A feeding side with a queue of `room` batches, and the queue's other end (no batch comes
    /// back to be filled again: a fresh one is made each time).
    fn queue(room: usize, count_here: bool, stop: &'static AtomicBool) -> (ToQueue<'static>, mpsc::Receiver<Batch>) {
        let (to_worker, queued) = mpsc::sync_channel(room);
        let (_, emptied) = mpsc::channel();
        (ToQueue::new(to_worker, emptied, count_here, splitter(), stop), queued)
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
    fn batches_the_queue_has_no_room_for_are_counted_here() {
        let mut next = crate::test_random(7);
        let words = ["the", " cat", " sat", "\n", " 42", "!", " über", " the"];
        let texts: Vec<String> =
            (0..400).map(|_| (0..1 + next(30)).map(|_| words[next(words.len() as u64) as usize]).collect()).collect();
        let chunks: Vec<&[String]> = texts.chunks(37).collect();
        let mut all = SpanCounts::new();
        all.add_texts(&texts, splitter()).unwrap();

        // No one takes from a queue of two: the first two batches wait there, the rest are
        // counted here; together they are all the texts' counts.
        let (mut out, queued) = queue(2, true, &GO);
        for chunk in &chunks {
            let mut again = out.hand_on(batch_of(chunk));
            again.clear();
            assert!(again.is_empty());
        }
        assert_eq!((out.sent, out.texts), (chunks.len() as u64, texts.len() as u64));
        assert_eq!(out.bytes, texts.iter().map(|t| t.len() as u64).sum::<u64>());
        let mut counts = out.finish().unwrap();
        let waiting: Vec<Batch> = queued.try_iter().collect();
        assert_eq!(waiting.len(), 2);
        let mut there = SpanCounts::new();
        for b in &waiting {
            there.add_batch_here(b, splitter(), &GO).unwrap();
        }
        counts.absorb(there);
        let sorted = |spans: crate::count::Spans| {
            let mut v: Vec<(Vec<u8>, u64)> = spans.iter().map(|(b, n)| (b.to_vec(), n)).collect();
            v.sort();
            v
        };
        assert_eq!(sorted(counts.into_spans(&GO).unwrap()), sorted(all.into_spans(&GO).unwrap()));
    }

    #[test]
    fn without_counting_here_a_full_queue_waits_for_room() {
        let (mut out, queued) = queue(1, false, &GO);
        let worker = std::thread::spawn(slow_worker(queued));
        for n in 1..=4 {
            out.hand_on(batch_of(&vec!["a b"; n]));
        }
        assert_eq!(out.finish().unwrap().len(), 0, "nothing counted here");
        assert_eq!(worker.join().unwrap(), [1, 2, 3, 4], "every batch went to the worker, in order");
    }

    #[test]
    fn after_wait_for_room_a_full_queue_waits() {
        let (mut out, queued) = queue(1, true, &GO);
        out.hand_on(batch_of(&["a b"])); // queued
        out.hand_on(batch_of(&["c d"])); // no room: counted here
        out.wait_for_room();
        let worker = std::thread::spawn(slow_worker(queued));
        out.hand_on(batch_of(&["e f"; 3])); // waits for the worker
        assert_eq!(out.finish().unwrap().len(), 2, "only the second batch's spans were counted here");
        assert_eq!(worker.join().unwrap(), [1, 3]);
    }

    #[test]
    fn what_was_counted_here_is_handed_over_once_counting_here_is_over() {
        let (mut out, queued) = queue(1, true, &GO);
        out.hand_on(batch_of(&["a b"])); // queued
        out.hand_on(batch_of(&["c d"])); // no room: counted here
        assert!(out.hand_over_here().is_none(), "counting here may go on: nothing to hand over yet");
        out.wait_for_room();
        let here = out.hand_over_here().expect("the second batch was counted here");
        assert_eq!((here.len(), here.get(b"c"), here.get(b" d"), here.get(b"a")), (2, 1, 1, 0));
        assert!(out.hand_over_here().is_none(), "handed over once");
        let worker = std::thread::spawn(slow_worker(queued));
        out.hand_on(batch_of(&["e f"])); // waits for the worker
        assert_eq!(out.finish().unwrap().len(), 0, "nothing left here");
        assert_eq!(worker.join().unwrap(), [1, 1]);
    }

    #[test]
    fn a_worker_gone_drops_what_comes() {
        let (mut out, queued) = queue(2, true, &GO);
        drop(queued);
        out.hand_on(batch_of(&["a b"]));
        assert!(out.gone);
        out.hand_on(batch_of(&["c d"]));
        assert_eq!(out.sent, 1, "nothing is handed on once the worker is gone");
        assert_eq!(out.finish().unwrap().len(), 0);
    }

    #[test]
    fn counting_here_stops_when_asked() {
        let (mut out, _queued) = queue(0, true, &STOPPED);
        let big: Vec<String> = (0..200_000).map(|i| format!("w{i} ")).collect();
        out.hand_on(batch_of(&big));
        assert!(out.gone);
        assert!(matches!(out.finish(), Err(Error::Interrupted)));
    }
}
