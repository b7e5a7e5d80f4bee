//! Joining the threads' tables into one list of distinct spans, giving each table's memory back
//! as it is read.
//!
//! The tables are joined one after the other. Every span of the first table is written out
//! with the counts the later tables hold for it added, and is marked in those later tables as
//! joined (a bit per slot beside each table: the tables themselves are only read, so lookups in
//! them from other threads keep working). A later table then writes out only its spans not
//! marked, and looks nothing up in the earlier tables, which are gone by then.
//!
//! Each table is joined in parts of its slots, in parallel on the current pool. A part gives
//! back the pages of the short slots behind it as it goes ([`crate::memory::discard`]: no
//! span is looked up in a table while it is joined, and none after), and the whole table is
//! freed once its parts are done. So the joined spans grow as the tables shrink, and the join
//! holds no more than the tables did at the end of counting (a short slot is 24 bytes, 32 to 64
//! per span in a table 3/8 to 3/4 full; a joined span is its bytes, its end and its count).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rayon::prelude::*;

use super::{hash_short, probe, slice_part, ShortTable, Slot, Table, COUNTING};
use crate::count::Spans;
use crate::error::stop_due;
use crate::Error;

/// The slots of a table that hold a span an earlier table held (and wrote out): a bit per slot
/// of its short and of its long table, set from any thread.
struct Joined {
    short: Vec<AtomicU64>,
    long: Vec<AtomicU64>,
}

fn bits(len: usize) -> Vec<AtomicU64> {
    (0..len.div_ceil(64)).map(|_| AtomicU64::new(0)).collect()
}

fn mark(bits: &[AtomicU64], i: usize) {
    bits[i / 64].fetch_or(1 << (i % 64), Ordering::Relaxed);
}

fn marked(bits: &[AtomicU64], i: usize) -> bool {
    bits[i / 64].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
}

impl Joined {
    fn new(table: &Table) -> Self {
        Joined { short: bits(table.short.slots.len()), long: bits(table.long.slot_count()) }
    }
}

/// Where `key` (whose hash is `hash`) sits in `table`, if it holds it.
#[inline]
fn short_slot(table: &ShortTable, key: u128, hash: u64) -> Option<usize> {
    probe(&table.slots, hash, |s| s.key() == key, Slot::is_free).ok()
}

/// The distinct spans of `tables` and their summed counts (saturating), in parts of at most
/// `parts` per table (see the module doc). Setting `stop` makes it give up soon (within
/// [`DISCARD_EVERY`] bytes of short slots, or [`STOP_EVERY`](crate::error::STOP_EVERY) long
/// slots, of each part) with [`Error::Interrupted`].
pub(in crate::count) fn join(mut tables: Vec<Table>, parts: usize, stop: &AtomicBool) -> Result<Vec<Spans>, Error> {
    let mut joined: Vec<Joined> = tables.iter().map(Joined::new).collect();
    let mut out = Vec::with_capacity(tables.len() * parts);
    while !tables.is_empty() {
        let mut table = tables.remove(0);
        let mine = joined.remove(0);
        let (later, later_joined) = (&tables[..], &joined[..]);
        let largest_part = table.len() / parts + 1;
        let Table { short, long, .. } = &mut table;
        let seeds = short.seeds;
        let long = &*long;
        let mut pieces = Vec::with_capacity(parts);
        let large = &short.large; // counts of 2^32 and more, beside the slots
        let mut rest = &mut short.slots[..];
        let slots = rest.len();
        for part in 0..parts {
            let range = slice_part(slots, part, parts);
            let (piece, after) = std::mem::take(&mut rest).split_at_mut(range.len());
            pieces.push((part, range.start, piece));
            rest = after;
        }
        let parts_out: Result<Vec<Spans>, Error> = pieces
            .into_par_iter()
            .map(|(part, first, short_slots)| {
                let mut spans = Spans::default();
                spans.try_reserve(largest_part, 8 * largest_part, true, COUNTING)?;
                let mut joiner = Joiner { mine: &mine, later, later_joined, out: &mut spans, stop };
                joiner.short(short_slots, first, seeds, large)?;
                joiner.long(long, (part, parts))?;
                Ok(spans)
            })
            .collect();
        out.extend(parts_out?);
        // `table` is freed here, before the next one is joined.
    }
    Ok(out)
}

/// One part of one table being joined.
struct Joiner<'a> {
    /// The table's own marks: spans an earlier table wrote out.
    mine: &'a Joined,
    later: &'a [Table],
    later_joined: &'a [Joined],
    out: &'a mut Spans,
    stop: &'a AtomicBool,
}

/// A part of a table's short slots gives back the pages behind it every this many bytes.
const DISCARD_EVERY: usize = 2 << 20;

impl Joiner<'_> {
    /// Writes out the spans of `slots` (slots `first..` of the table's short slots) not marked,
    /// giving back their pages as it goes. [`Error::Interrupted`] if stopped.
    fn short(&mut self, slots: &mut [Slot], first: usize, seeds: (u64, u64), large: &HashMap<u128, u64>) -> Result<(), Error> {
        let step = (DISCARD_EVERY / std::mem::size_of::<Slot>()).max(1);
        let mut discarded = 0;
        for start in (0..slots.len()).step_by(step) {
            if self.stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            let end = slots.len().min(start + step);
            for (i, slot) in slots[start..end].iter().enumerate() {
                if slot.is_free() || marked(&self.mine.short, first + start + i) {
                    continue;
                }
                let (key, mut n) = (slot.key(), slot.count_in(large));
                let hash = hash_short(key, seeds);
                for (table, joined) in self.later.iter().zip(self.later_joined) {
                    if let Some(at) = short_slot(&table.short, key, hash) {
                        n = n.saturating_add(table.short.count(&table.short.slots[at]));
                        mark(&joined.short, at);
                    }
                }
                self.out.push_short(key, n, COUNTING)?;
            }
            // A part of less than DISCARD_EVERY bytes (a small table's) keeps its pages: giving
            // them back (a system call, and a flush of the other threads' address caches) would
            // cost more than the little it holds, freed with the table right after.
            if slots.len() >= step {
                // SAFETY: zero bytes make a valid (free) slot, and slots `..end` of this part
                // are never read again: no span is looked up in a table while it is joined.
                unsafe { crate::memory::discard(&mut slots[..end], &mut discarded) };
            }
        }
        Ok(())
    }

    /// Writes out the spans of part `part` of `parts` of `long`'s slots not marked.
    /// [`Error::Interrupted`] if stopped.
    fn long(&mut self, long: &super::LongTable, part: (usize, usize)) -> Result<(), Error> {
        for (k, (at, span, hash, mut n)) in long.iter_part_at(part.0, part.1).enumerate() {
            if stop_due(k, self.stop) {
                return Err(Error::Interrupted);
            }
            if marked(&self.mine.long, at) {
                continue;
            }
            for (table, joined) in self.later.iter().zip(self.later_joined) {
                if let Some((at, count)) = table.long.find_hashed(span, hash) {
                    n = n.saturating_add(count);
                    mark(&joined.long, at);
                }
            }
            self.out.try_push(span, n, COUNTING)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Tables large enough that parts give pages back as they go (several megabytes of short
    /// slots), sharing many spans, short and long, with counts up to `u64::MAX` (which saturate),
    /// joined in 1 to 5 parts against a map of the summed counts.
    #[test]
    fn a_join_that_gives_memory_back_sums_every_span_once() {
        let mut next = crate::test_random(17);
        let mut model = BTreeMap::<Vec<u8>, u64>::new();
        let mut tables: Vec<Table> = (0..3).map(|_| Table::default()).collect();
        for k in 0..400_000u64 {
            // One span in three is in a shared pool of 60 000, so most are held by several tables.
            let id = if k % 3 == 0 { next(60_000) } else { 100_000 + k };
            let len = if id % 50 == 0 { 16 + (id % 7) as usize } else { 1 + (id % 15) as usize };
            let span: Vec<u8> = (0..len).map(|i| (id >> (i % 5 * 4)) as u8).collect();
            let n = if k % 10_007 == 0 { u64::MAX } else { 1 + next(9) };
            tables[next(3) as usize].add(&span, n);
            let sum = model.entry(span).or_default();
            *sum = sum.saturating_add(n);
        }
        assert!(tables.iter().all(|t| t.short.slots.len() * std::mem::size_of::<Slot>() > 2 * DISCARD_EVERY));
        let want: Vec<(Vec<u8>, u64)> = model.into_iter().collect();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for parts in [1, 5] {
            let joined = pool.install(|| join(tables.clone(), parts, &AtomicBool::new(false))).unwrap();
            assert_eq!(joined.len(), 3 * parts);
            let mut got: Vec<(Vec<u8>, u64)> = joined.iter().flat_map(|s| s.iter().map(|(b, n)| (b.to_vec(), n))).collect();
            got.sort();
            assert_eq!(got, want, "{parts} parts");
        }
        let stopped = join(tables, 2, &AtomicBool::new(true));
        assert_eq!(stopped.err(), Some(Error::Interrupted));
    }
}
