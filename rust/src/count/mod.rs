//! Counting: how often each distinct span occurs in the corpus.
//!
//! - [`Counter`] (`counter.rs`) counts a stream of texts, cut into batches (`batch.rs`) and
//!   handed to a worker through a queue (`queue.rs`), while the caller feeds it;
//! - [`CountTables`] (here) holds the counts, one table per thread (`table.rs`, `long.rs`),
//!   joined at the end (`table/join.rs`) into [`Spans`] (`distinct_spans.rs`) for the merge loop.

use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, PoisonError};

use rayon::prelude::*;

#[cfg(test)]
use crate::error::STOP_EVERY;
use crate::{Error, Splitter};

mod batch;
mod counter;
mod distinct_spans;
mod long;
mod queue;
mod table;

pub use batch::{Batch, BufferError, TextSink};
pub use counter::{CallerLock, Counted, Counter, NoLock, Progress};
pub(crate) use distinct_spans::{Counts, Ends};
pub use distinct_spans::Spans;
use table::Table;
#[cfg(test)]
use table::SHORT;

/// The distinct spans of a corpus (as UTF-8 bytes) and how often each occurred, as counting
/// holds them: in tables, one per thread, not joined yet (the span counts Python sees are
/// these joined and sorted, `SortedSpans`).
///
/// While counting, each thread of the pool adds the spans it splits to a table of its own, kept
/// from batch to batch: a span already in the table costs one lookup of its borrowed bytes, and
/// only the first occurrence of a span on a thread copies it. The tables are joined once, by
/// [`CountTables::into_spans`]. Counts are sums, so the result does not depend on how texts were
/// batched, on how many threads counted them, or on which thread counted what.
#[derive(Debug, Clone, Default)]
pub struct CountTables {
    tables: Vec<Table>,
}


/// A batch is split over the pool in tasks of consecutive texts of about this many bytes (or
/// one text, if longer).
const TASK_BYTES: usize = 64 << 10;

impl CountTables {
    pub fn new() -> Self {
        Self::default()
    }

    /// Splits every text of a batch and adds its spans, in parallel on the current Rayon pool:
    /// each pool thread adds what it splits to its own table.
    ///
    /// Setting `stop` makes it give up soon (between two texts) with [`Error::Interrupted`]; the
    /// table then holds part of the batch, so a caller that stops should drop it.
    pub fn add_batch(&mut self, batch: &Batch, splitter: &Splitter, stop: &AtomicBool) -> Result<(), Error> {
        self.add_batch_on_threads(batch, splitter, stop, usize::MAX)
    }

    /// [`CountTables::add_batch`] on at most `threads` threads of the pool at once: the batch is
    /// cut into that many tasks or fewer (so that a core is left to whoever feeds the batches).
    fn add_batch_on_threads(&mut self, batch: &Batch, splitter: &Splitter, stop: &AtomicBool, threads: usize) -> Result<(), Error> {
        let task_bytes = TASK_BYTES.max(batch.bytes().div_ceil(threads.max(1)));
        let pool_threads = rayon::current_num_threads().max(1);
        if self.tables.len() < pool_threads {
            self.tables.resize_with(pool_threads, Table::default);
        }
        let tables: Vec<Mutex<Table>> = std::mem::take(&mut self.tables).into_iter().map(Mutex::new).collect();
        let mut tasks = vec![0];
        let mut start = 0;
        for (i, &end) in batch.ends.iter().enumerate() {
            if end - start >= task_bytes {
                tasks.push(i + 1);
                start = end;
            }
        }
        if tasks.last() != Some(&batch.len()) {
            tasks.push(batch.len());
        }
        let counted = tasks.par_windows(2).try_for_each(|task| {
            // Each thread takes its own table, so the lock is never contended (the modulo and the
            // lock only guard against a thread index past the pool size).
            let thread = rayon::current_thread_index().unwrap_or(0) % tables.len();
            tables[thread].lock().unwrap_or_else(PoisonError::into_inner).count(batch, task[0]..task[1], splitter, stop)
        });
        self.tables = tables.into_iter().map(|t| t.into_inner().unwrap_or_else(PoisonError::into_inner)).collect();
        self.tables.iter_mut().for_each(Table::settle);
        counted
    }

    /// Splits every text of a batch and adds its spans on the calling thread alone, leaving the
    /// pool's threads (and cores) to others: for when whoever feeds the batches is slower than
    /// counting them. The same counts as [`CountTables::add_batch`].
    fn add_batch_on_this_thread(&mut self, batch: &Batch, splitter: &Splitter, stop: &AtomicBool) -> Result<(), Error> {
        self.count_on_this_thread(batch.text().as_bytes(), (0..batch.len()).map(|i| batch.get(i)), splitter, stop)
    }

    /// Splits one text and adds its spans on the calling thread alone, as
    /// [`CountTables::add_batch_on_this_thread`] does for a batch: for a text too long to copy
    /// into a batch of its own for nothing.
    fn add_text_on_this_thread(&mut self, text: &str, splitter: &Splitter, stop: &AtomicBool) -> Result<(), Error> {
        self.count_on_this_thread(text.as_bytes(), std::iter::once(text), splitter, stop)
    }

    /// Counts `texts`, which all lie in `all`, into the first table.
    fn count_on_this_thread<'a>(&mut self, all: &[u8], texts: impl Iterator<Item = &'a str>, splitter: &Splitter, stop: &AtomicBool) -> Result<(), Error> {
        let table = self.first_table();
        let counted = table.count_in(all, texts, splitter, stop);
        table.settle();
        counted
    }

    /// Adds the counts of `other` (its tables are joined with these by [`CountTables::into_spans`]).
    pub fn absorb(&mut self, other: CountTables) {
        self.tables.extend(other.tables.into_iter().filter(|t| t.len() > 0));
    }

    /// [`CountTables::absorb`] with `other`'s tables put first, where the pool's first threads
    /// count from then on (thread `i` counts into table `i`): for tables that hold most spans
    /// already, which a batch then adds to rather than a table a thread starts anew (the join
    /// would look up each of its spans in the others).
    fn absorb_first(&mut self, other: CountTables) {
        let before = self.tables.len();
        self.absorb(other);
        let added = self.tables.len() - before;
        self.tables.rotate_right(added);
    }

    /// The first thread's table (made if there is none yet), which counts outside the pool use.
    fn first_table(&mut self) -> &mut Table {
        if self.tables.is_empty() {
            self.tables.push(Table::default());
        }
        &mut self.tables[0]
    }

    /// Splits and counts a few texts (see [`CountTables::add_batch`]); for tests and small inputs.
    pub fn add_texts<T: AsRef<str>>(&mut self, texts: &[T], splitter: &Splitter) -> Result<(), Error> {
        let mut batch = Batch::new();
        for t in texts {
            batch.push(t.as_ref());
        }
        self.add_batch(&batch, splitter, &AtomicBool::new(false))
    }

    /// Adds `n` occurrences of `span`. Counts saturate at `u64::MAX` rather than wrap.
    pub fn add(&mut self, span: &[u8], n: u64) {
        if !span.is_empty() && n > 0 {
            self.first_table().add(span, n);
        }
    }

    /// Number of distinct spans. It looks every span up in the other threads' tables; while
    /// counting, [`CountTables::len_at_least`] is the cheap estimate.
    pub fn len(&self) -> usize {
        let mut len = 0;
        for (i, table) in self.tables.iter().enumerate() {
            let _ = table.for_each_first(&self.tables[..i], (0, 1), |_, _, _| {
                len += 1;
                ControlFlow::Continue(())
            });
        }
        len
    }

    /// A lower bound of [`CountTables::len`] that costs nothing: the size of the largest table.
    pub fn len_at_least(&self) -> usize {
        self.tables.iter().map(Table::len).max().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.tables.iter().all(|t| t.len() == 0)
    }

    /// The count of one span (0 if never seen).
    pub fn get(&self, span: &[u8]) -> u64 {
        self.tables.iter().fold(0, |sum, t| sum.saturating_add(t.get(span)))
    }

    /// The spans and their counts, in no particular order (it may change from run to run with
    /// the hash seed): for the merge loop, whose results do not depend on the order of the
    /// spans. The threads' tables are joined one after the other, each in parts of its slots in
    /// parallel on the current pool (or in one part, when one table holds nearly all the
    /// spans), and each gives its memory back as it is read (see `table/join.rs`): a span is
    /// written by the first table that holds it, with the later tables' counts added.
    ///
    /// Setting `stop` makes it give up soon with [`Error::Interrupted`]: joining millions of
    /// spans takes seconds.
    pub fn into_spans(self, stop: &AtomicBool) -> Result<Spans, Error> {
        let mut tables = self.tables;
        tables.iter_mut().for_each(Table::settle);
        // A table that could not grow took no more spans: its counts are not the texts'.
        tables.iter().try_for_each(Table::check_memory)?;
        // Most of a join's cost is looking spans up in the later tables, a cache miss each in a
        // large table: that is worth sharing out. When one table holds nearly all the spans (as
        // after a thread counted alone while its caller fed it), there is little to look up, and
        // parts would only add the copy that puts them together: one part then.
        let largest = tables.iter().map(Table::len).max().unwrap_or(0);
        let others = tables.iter().map(Table::len).sum::<usize>() - largest;
        let parts = if others < largest / 8 { 1 } else { rayon::current_num_threads().max(1) };
        table::join(tables, parts, stop).and_then(Spans::concat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::presets;

    /// The spans and their counts, sorted by bytes.
    fn sorted(spans: Spans) -> Vec<(Vec<u8>, u64)> {
        let mut listed: Vec<(Vec<u8>, u64)> = spans.iter().map(|(b, n)| (b.to_vec(), n)).collect();
        listed.sort();
        listed
    }

    #[test]
    fn counts_do_not_depend_on_batching() {
        let texts = ["hello world", "hello there", "world hello world", ""];
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let mut all = CountTables::new();
        all.add_texts(&texts, &splitter).unwrap();
        let mut one_by_one = CountTables::new();
        for t in texts {
            one_by_one.add_texts(&[t], &splitter).unwrap();
        }
        assert_eq!(sorted(all.clone().into_spans(&AtomicBool::new(false)).unwrap()), sorted(one_by_one.into_spans(&AtomicBool::new(false)).unwrap()));
        let listed = sorted(all.clone().into_spans(&AtomicBool::new(false)).unwrap());
        let want: Vec<(Vec<u8>, u64)> =
            [(&b" hello"[..], 1), (b" there", 1), (b" world", 2), (b"hello", 2), (b"world", 1)].iter().map(|(b, n)| (b.to_vec(), *n)).collect();
        assert_eq!(listed, want);
        assert_eq!(all.get(b" world"), 2);
        assert_eq!(all.get(b"hello"), 2);
        assert_eq!(all.get(b" hello"), 1);
        assert_eq!(all.len(), 5);
    }

    #[test]
    fn tables_absorbed_first_are_where_the_first_threads_count_next() {
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let go = AtomicBool::new(false);
        let (mut mine, mut theirs) = (CountTables::new(), CountTables::new());
        mine.add_text_on_this_thread("mine", &splitter, &go).unwrap();
        theirs.add_text_on_this_thread("theirs", &splitter, &go).unwrap();
        mine.absorb_first(CountTables::default()); // no table: nothing comes first
        assert_eq!(mine.tables.len(), 1);
        mine.absorb_first(theirs);
        assert_eq!(mine.tables.len(), 2);
        // Counting outside the pool (the first thread's table) adds to theirs now.
        mine.add_text_on_this_thread("theirs mine", &splitter, &go).unwrap();
        assert_eq!((mine.tables[0].get(b"theirs"), mine.tables[0].get(b" mine"), mine.tables[0].get(b"mine")), (2, 1, 0));
        assert_eq!((mine.tables[1].get(b"mine"), mine.tables[1].get(b"theirs")), (1, 0));
        let want: Vec<(Vec<u8>, u64)> = [(&b" mine"[..], 1), (b"mine", 1), (b"theirs", 2)].iter().map(|(b, n)| (b.to_vec(), *n)).collect();
        assert_eq!(sorted(mine.into_spans(&go).unwrap()), want);
    }

    #[test]
    fn a_text_counted_where_it_is_counts_as_in_a_batch() {
        // Texts of every length up to 40 bytes (so short spans reach the text's last 16 bytes,
        // where the key is read the other way), with one-byte, short and long spans.
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let go = AtomicBool::new(false);
        let mut next = crate::test_random(11);
        for _ in 0..300 {
            let text: String = (0..next(12)).map(|_| ["a", " bcd", " 7", "\n\n", " averyveryverylongword", "é!", " x"][next(7) as usize]).collect();
            let (mut in_place, mut batched) = (CountTables::new(), CountTables::new());
            in_place.add(b" x", 2); // (counted before: the text's spans add to them)
            batched.add(b" x", 2);
            in_place.add_text_on_this_thread(&text, &splitter, &go).unwrap();
            batched.add_texts(&[&text], &splitter).unwrap();
            assert_eq!(sorted(in_place.into_spans(&go).unwrap()), sorted(batched.into_spans(&go).unwrap()), "{text:?}");
        }
    }

    #[test]
    fn a_batch_counted_on_fewer_threads_counts_the_same_on_at_most_that_many() {
        // 600 KB of texts on a pool of 4: on at most 1, 2 or 3 of its threads at once (as many
        // tables used), the same counts as on all of them.
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let mut next = crate::test_random(3);
        let mut batch = Batch::new();
        while batch.bytes() < 600 << 10 {
            let text: String = (0..1 + next(40)).map(|_| ["a", " bc", " d", "\n", " 17", "é"][next(6) as usize]).collect();
            batch.push(&text);
        }
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        let stop = AtomicBool::new(false);
        let mut all = CountTables::new();
        pool.install(|| all.add_batch(&batch, &splitter, &stop)).unwrap();
        let want = sorted(all.into_spans(&stop).unwrap());
        for threads in 1..4 {
            let mut some = CountTables::new();
            pool.install(|| some.add_batch_on_threads(&batch, &splitter, &stop, threads)).unwrap();
            let used = some.tables.iter().filter(|t| t.len() > 0).count();
            assert!(used <= threads, "{used} tables used, at most {threads} threads asked for");
            assert_eq!(sorted(some.into_spans(&stop).unwrap()), want, "on {threads} threads");
        }
    }

    #[test]
    fn counts_equal_a_plain_count_of_the_spans() {
        // Spans of one byte, of up to 15 bytes and longer, many of them distinct (so the short
        // table grows several times), counted through the batch path against a BTreeMap.
        let texts: Vec<String> = (0..4000)
            .map(|i| format!("w{} x, {}!! averyveryverylongidentifier{} é{} \n\n", i % 300, i * 7919 % 100_003, i % 50, i))
            .collect();
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let mut want = std::collections::BTreeMap::<Vec<u8>, u64>::new();
        for t in &texts {
            for span in splitter.spans(t).unwrap() {
                *want.entry(span.as_bytes().to_vec()).or_default() += 1;
            }
        }
        assert!(want.keys().any(|k| k.len() == 1) && want.keys().any(|k| k.len() > SHORT));
        let mut counts = CountTables::new();
        counts.add_texts(&texts, &splitter).unwrap();
        assert_eq!(counts.len(), want.len());
        for (span, &n) in want.iter().step_by(97) {
            assert_eq!(counts.get(span), n, "{span:?}");
        }
        assert_eq!(sorted(counts.into_spans(&AtomicBool::new(false)).unwrap()), want.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn joined_tables_sum_counts() {
        // Spans of 1..=20 bytes over a tiny alphabet with zero and 0xff bytes, so that short and
        // long spans share prefixes and spans differ only by trailing zeros ("a" vs "a\0"). In
        // every third round the first table holds nearly all the spans (joined in one part),
        // in the others the tables are alike (joined in a part per thread); on 1 and 3 threads.
        let mut next = crate::test_random(3);
        for round in 0..60 {
            let mut reference = std::collections::BTreeMap::<Vec<u8>, u64>::new();
            let tables: Vec<Table> = (0..1 + round % 4)
                .map(|k| {
                    let mut table = Table::default();
                    let spans = match (round % 3, k) {
                        (0, 0) => 3000,
                        (0, _) => next(30),
                        _ => next(300),
                    };
                    for _ in 0..spans {
                        let len = 1 + next(20) as usize;
                        let span: Vec<u8> = (0..len).map(|_| [0u8, b'a', 0xff][next(3) as usize]).collect();
                        let n = 1 + next(1000);
                        table.add(&span, n);
                        *reference.entry(span).or_default() += n;
                    }
                    table
                })
                .collect();
            let expected: Vec<(Vec<u8>, u64)> = reference.into_iter().collect();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1 + 2 * (round % 2)).build().unwrap();
            assert_eq!(sorted(pool.install(|| CountTables { tables }.into_spans(&AtomicBool::new(false)).unwrap())), expected, "round {round}");
        }
    }

    #[test]
    fn joining_gives_up_when_stopped() {
        // More spans than one stretch between two looks at the flag, in two tables.
        let spans = 3 * STOP_EVERY;
        let mut counts = CountTables::new();
        counts.tables.resize_with(2, Table::default);
        for i in 0..spans {
            counts.tables[i % 2].add(format!("span{i}").as_bytes(), 1);
        }
        assert_eq!(counts.clone().into_spans(&AtomicBool::new(true)).err(), Some(Error::Interrupted));
        assert_eq!(counts.into_spans(&AtomicBool::new(false)).unwrap().len(), spans);
    }

    #[test]
    fn counts_do_not_depend_on_threads() {
        let texts: Vec<String> = (0..3000).map(|i| format!("word{} and a long identifier_number_{} {}", i % 37, i % 101, i)).collect();
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let count_on = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut counts = CountTables::new();
            pool.install(|| {
                for (k, chunk) in texts.chunks(700).enumerate() {
                    if k % 3 == 1 {
                        let mut batch = Batch::new();
                        chunk.iter().for_each(|t| batch.push(t));
                        counts.add_batch_on_this_thread(&batch, &splitter, &AtomicBool::new(false)).unwrap();
                    } else {
                        counts.add_texts(chunk, &splitter).unwrap();
                    }
                }
            });
            assert!(counts.len_at_least() <= counts.len());
            (counts.len(), counts.get(b" and"), sorted(pool.install(|| counts.into_spans(&AtomicBool::new(false)).unwrap())))
        };
        let one = count_on(1);
        assert_eq!(one.0, one.2.len());
        assert_eq!(one.1, 3000);
        for threads in [2, 3, 8] {
            assert_eq!(count_on(threads), one, "{threads} threads");
        }
    }
}