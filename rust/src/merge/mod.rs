//! The merge loop: learn merges from distinct spans and their counts.
//!
//! The rule (the specification the tests hold): repeatedly take the adjacent pair with the
//! highest count, where a pair's count is the sum over spans of span count × adjacent positions
//! holding the pair; among equal counts the smallest pair (by ids) wins. Replace it left to right,
//! non-overlapping, in every span. The merged token is `bytes(a) + bytes(b)` as a new rank. (These
//! bytes cannot already be a token under this rule, see the README; should they ever be, the
//! loop ends with [`Error::Internal`] rather than give two ranks the same bytes.)
//!
//! Counts are kept incrementally: a merge only changes the pairs around the occurrences it
//! replaces. A pair is born with all its occurrences at the merge that makes its later token
//! (see `pairs.rs`), and its count only falls after that. A max-heap holds candidate pairs with
//! the count they had when pushed, so a popped entry whose count is stale is re-pushed with its
//! current count (lazy refresh) and the first entry popped with its current count is the true
//! best pair.
//!
//! Only pairs counted at least a floor are kept in the heap (most pairs that late merges make
//! occur a few times and are never chosen); when the heap holds nothing at or above the floor,
//! the floor is lowered and the pairs between the new and the old floor are pushed.

use std::cmp::Ordering;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use dary_heap::OctonaryHeap;
use rayon::prelude::*;

use crate::count::Spans;
use crate::error::stop_due;
use crate::{Error, Vocab};

mod helper;
mod lists;
mod pairs;
mod spans;

pub use spans::{merge_in_span, Neighbour, TokenId};
use helper::Helper;
use pairs::{PairIndex, Slot};
use spans::{Neighbours, SpanTable};

/// Two adjacent token ids.
pub type Pair = (u32, u32);

/// A pair packed into one integer; its order is the lexicographic order of the pair.
type PairKey = u64;

fn key(pair: Pair) -> PairKey {
    (u64::from(pair.0) << 32) | u64::from(pair.1)
}

fn unkey(key: PairKey) -> Pair {
    ((key >> 32) as u32, key as u32)
}

/// What to learn.
#[derive(Debug, Clone)]
pub struct LearnOptions {
    /// Stop when the vocabulary has this many tokens (256 bytes + learned tokens).
    pub vocab_size: usize,
    /// Stop when the best pair occurs fewer times than this.
    pub min_frequency: u64,
}

/// One step of the merge loop: `pair` was replaced by `token`; it occurred `count` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merge {
    pub pair: Pair,
    pub token: u32,
    pub count: u64,
}

/// The result of the merge loop.
#[derive(Debug, Clone)]
pub struct Learned {
    pub vocab: Vocab,
    pub merges: Vec<Merge>,
}

#[derive(Debug, PartialEq, Eq)]
struct Candidate {
    count: u64,
    pair: PairKey,
    /// Where the pair lives in the index (given by the pair, so it takes no part in the order).
    slot: Slot,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        // Highest count first; among equal counts the smallest pair is the greatest.
        self.count.cmp(&other.count).then_with(|| other.pair.cmp(&self.pair))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Merges of at least this many spans are shared with the helper thread.
const HELP_SPANS: usize = 256;

/// How much the heap's floor drops when the heap runs out of pairs above it. Halving keeps the
/// heap small (each drop pushes only the pairs between the old and the new floor), which pays
/// for the extra scans of the pairs: 2 learns 15-18% faster than 8 on the kernel corpora, and
/// 3 or 4 no faster than 2.
const FLOOR_STEP: u64 = 2;

/// What the tally knows of one neighbour token during a merge.
#[derive(Default, Clone, Copy)]
struct Sum {
    count: i64,
    /// Events seen for the neighbour, then where its next span goes in `Tally::spans`.
    at: usize,
    /// The last span written for it (`u32::MAX` for none yet).
    last: u32,
}

/// Per-token scratch space that sums a merge's events by neighbour without hashing each one.
/// The events are sorted by neighbour as a counting sort does: counted first, then each
/// neighbour's spans written to their own stretch of one buffer.
#[derive(Default)]
struct Tally {
    sums: Vec<Sum>,
    /// The neighbours summed, sorted.
    touched: Vec<u32>,
    /// Where each neighbour's stretch of `spans` starts, in the order of `touched`.
    starts: Vec<usize>,
    /// Each neighbour's spans, one stretch after the other in the order of `touched`.
    spans: Vec<u32>,
}

impl Tally {
    /// Sums `events`, `(neighbour, span, n)` in span order (the slices one after the other):
    /// for each neighbour, the sum of `n` and the spans (each once).
    fn sum(&mut self, events: [&[(u32, u32, i64)]; 2]) {
        let Tally { sums, touched, starts, spans } = self;
        for &(neighbour, _, n) in events.iter().copied().flatten() {
            let i = neighbour as usize;
            if i >= sums.len() {
                sums.resize(i + 1, Sum::default());
            }
            let sum = &mut sums[i];
            if sum.at == 0 {
                touched.push(neighbour);
            }
            sum.count += n;
            sum.at += 1;
        }
        touched.sort_unstable();
        let mut at = 0;
        starts.clear();
        for &x in touched.iter() {
            let sum = &mut sums[x as usize];
            starts.push(at);
            (sum.at, at) = (at, at + sum.at);
            sum.last = u32::MAX;
        }
        spans.clear();
        spans.resize(at, 0);
        for &(neighbour, id, _) in events.iter().copied().flatten() {
            let sum = &mut sums[neighbour as usize];
            if sum.last != id {
                spans[sum.at] = id;
                (sum.at, sum.last) = (sum.at + 1, id);
            }
        }
    }

    /// The neighbours summed, in increasing order.
    fn neighbours(&self) -> &[u32] {
        &self.touched
    }

    /// Calls `f(neighbour, sum, spans)` once per neighbour summed, in increasing order, then
    /// empties the tally.
    fn drain(&mut self, mut f: impl FnMut(u32, i64, &[u32])) {
        let Tally { sums, touched, starts, spans } = self;
        for (x, &start) in touched.drain(..).zip(starts.iter()) {
            // The stretch may be longer than the spans written in it (two events of a span
            // with the same neighbour give it one place): `at` is where they end.
            let sum = std::mem::take(&mut sums[x as usize]);
            f(x, sum.count, &spans[start..sum.at]);
        }
    }
}

/// Finds the pairs that lose occurrences next to the neighbours of `tally` (`gone(x)` for
/// neighbour `x`, if any), one slot per neighbour in `slots`, and asks for their counts: the
/// lookups and the counts they lead to then wait for memory together, not one after the other.
fn find_gone(pairs: &PairIndex, tally: &Tally, gone: impl Fn(u32) -> Option<Pair>, slots: &mut Vec<Option<Slot>>) {
    for &x in tally.neighbours() {
        if let Some(pair) = gone(x) {
            pairs.prefetch_find(pair);
        }
    }
    slots.clear();
    slots.extend(tally.neighbours().iter().map(|&x| {
        let slot = gone(x).and_then(|pair| pairs.find(pair));
        if let Some(slot) = slot {
            pairs.prefetch_count(slot);
        }
        slot
    }));
}

/// A byte pair as the loop's start counts it in one part of the spans: its count, the spans
/// holding it, and the last of them seen (one place in memory per pair seen).
#[derive(Clone, Copy)]
struct ByteCount {
    count: i64,
    holders: u32,
    last: u32,
}

/// The merge loop's state: the spans, and what is known of every pair.
struct Loop<T> {
    spans: SpanTable<T>,
    pairs: PairIndex,
    heap: OctonaryHeap<Candidate>,
    /// Every pair counted at least this has an entry in the heap with at least its count.
    floor: u64,
    /// The left and the right neighbours' tallies, and the slots of the pairs they take
    /// occurrences from.
    sides: [(Tally, Vec<Option<Slot>>); 2],
    /// Applies a merge's larger parts on a second thread, if there is one.
    helper: Option<Helper>,
    // Scratch space reused by every merge.
    ids: Vec<u32>,
    /// The neighbours found in the spans merged here and by the helper.
    found: [Neighbours; 2],
    /// The pairs a merge made that go in the heap.
    born: Vec<Candidate>,
}

impl<T: TokenId> Loop<T> {
    /// The loop's state before the first merge. Setting `stop` makes it give up soon with
    /// [`Error::Interrupted`]: it is checked between the steps below, each a pass over the
    /// spans (about a second for tens of millions of them), and in the longest two.
    fn new(spans: Spans, stop: &AtomicBool) -> Result<Self, Error> {
        let stopped = || if stop.load(AtomicOrdering::Relaxed) { Err(Error::Interrupted) } else { Ok(()) };
        let (table, ids) = SpanTable::<T>::new(&spans).map_err(|words| {
            Error::InvalidOption(format!("the distinct spans need {words} words of token ids, more than the 2^34 supported"))
        })?;
        drop(spans); // the table holds them now: not kept while the pair index is built
        let spans = table;
        stopped()?;
        // Every pair of the spans as given is a pair of bytes: count them in a dense 256 x 256
        // table rather than a hash map, in parallel over parts of the spans, each part also
        // counting the spans that hold each pair (once per span, however often it holds it).
        let byte_pair = |w: &[T]| (w[0].get() as usize) << 8 | w[1].get() as usize;
        let per_part = ids.len().div_ceil(rayon::current_num_threads().max(1)).max(1 << 14);
        let parts: Vec<&[u32]> = ids.chunks(per_part).collect();
        let counted: Vec<Vec<ByteCount>> = parts
            .par_iter()
            .map(|part| {
                let mut dense = vec![ByteCount { count: 0, holders: 0, last: u32::MAX }; 1 << 16];
                for (k, &id) in part.iter().enumerate() {
                    if stop_due(k, stop) {
                        break; // the result is dropped below
                    }
                    let n = spans.count(id);
                    for w in spans.tokens(id).windows(2) {
                        let d = &mut dense[byte_pair(w)];
                        d.count += n;
                        if d.last != id {
                            (d.holders, d.last) = (d.holders + 1, id);
                        }
                    }
                }
                dense
            })
            .collect();
        stopped()?;
        // The pairs of two bytes, token by token (see `pairs.rs`): (x, t) for x <= t, then
        // (t, y) for y < t, each with a list of exactly its length. The dense tables are read
        // in their order once, and the pairs found put in the index's order.
        let mut born: Vec<(u32, usize, i64, usize)> = Vec::new(); // (place in the index, pair, count, spans)
        for at in 0..1 << 16 {
            let (count, holders) = counted.iter().fold((0, 0), |(c, h), d| (c + d[at].count, h + d[at].holders as usize));
            if count > 0 {
                let (x, y) = ((at >> 8) as u32, (at & 0xff) as u32);
                let place = if x <= y { y << 9 | x } else { x << 9 | 1 << 8 | y };
                born.push((place, at, count, holders));
            }
        }
        born.sort_unstable_by_key(|b| b.0);
        let mut pairs = PairIndex::default();
        pairs.reserve(born.len(), born.len() + born.iter().map(|b| b.3).sum::<usize>());
        let mut order = Vec::with_capacity(born.len());
        let mut opened = 0;
        for &(place, at, count, holders) in &born {
            while opened <= place >> 9 {
                pairs.open_block(opened);
                opened += 1;
            }
            let slot = pairs.push_zeros(((at >> 8) as u32, (at & 0xff) as u32), count, holders);
            order.push((at, pairs.spans_at(slot)));
        }
        for t in opened..256 {
            pairs.open_block(t);
        }
        // Each part writes its spans of each pair straight into the pair's list, after the
        // previous parts' spans, in parallel: the lists are cut into one piece per part and
        // pair, and each part gets its pieces.
        let mut k_of = vec![0u32; 1 << 16];
        for (k, &(at, _)) in order.iter().enumerate() {
            k_of[at] = k as u32;
        }
        let mut pieces: Vec<Vec<&mut [u32]>> = (0..parts.len()).map(|_| Vec::with_capacity(order.len())).collect();
        let (mut rest, mut at_word) = (pairs.span_words(), 0);
        for &(at, ids_at) in &order {
            rest = &mut std::mem::take(&mut rest)[ids_at - at_word..];
            at_word = ids_at;
            for (part_pieces, dense) in pieces.iter_mut().zip(&counted) {
                let len = dense[at].holders as usize;
                let (piece, later) = std::mem::take(&mut rest).split_at_mut(len);
                part_pieces.push(piece);
                (rest, at_word) = (later, at_word + len);
            }
        }
        parts.par_iter().zip(pieces).for_each(|(part, mut pieces)| {
            let mut filled = vec![(0usize, u32::MAX); pieces.len()]; // (spans written, last span)
            for (k, &id) in part.iter().enumerate() {
                if stop_due(k, stop) {
                    break; // the index is dropped below
                }
                for w in spans.tokens(id).windows(2) {
                    let k = k_of[byte_pair(w)] as usize;
                    let (done, last) = &mut filled[k];
                    if *last != id {
                        pieces[k][*done] = id;
                        (*done, *last) = (*done + 1, id);
                    }
                }
            }
        });
        stopped()?;
        // The heap starts with the pairs counted at least half the most counted one (the floor
        // then lets the others in when needed).
        let floor = pairs.counted_between(0, u64::MAX).map(|(count, _, _)| count).max().unwrap_or(0) / 2;
        let heap = pairs
            .counted_between(floor, u64::MAX)
            .map(|(count, pair, slot)| Candidate { count, pair, slot })
            .collect::<Vec<_>>()
            .into();
        Ok(Self {
            spans,
            pairs,
            heap,
            floor,
            sides: Default::default(),
            // No merge can touch HELP_SPANS spans with fewer than that.
            helper: if rayon::current_num_threads() > 1 && ids.len() >= HELP_SPANS { Helper::start() } else { None },
            ids: Vec::new(),
            found: Default::default(),
            born: Vec::new(),
        })
    }

    /// The pair with the highest current count (smallest pair among equals), as its heap
    /// entry, which holds that count.
    fn best(&mut self) -> Option<Candidate> {
        loop {
            if self.heap.peek().map_or(true, |top| top.count < self.floor) {
                if self.floor == 0 {
                    return None;
                }
                self.lower_floor();
                continue;
            }
            let top = self.heap.pop()?;
            let current = self.pairs.count(top.slot);
            if current <= 0 {
                continue; // gone
            }
            // Counts only fall after a pair is born, so an entry's count is at least current.
            debug_assert!(current as u64 <= top.count);
            if current as u64 != top.count {
                if current as u64 >= self.floor {
                    self.heap.push(Candidate { count: current as u64, ..top });
                }
            } else {
                return Some(top);
            }
        }
    }

    /// Raises the floor after a merge of a pair counted `count`: pairs counted less than half
    /// of it are unlikely to be chosen soon.
    fn raise_floor(&mut self, count: u64) {
        self.floor = self.floor.max(count / 2);
    }

    /// Lowers the floor, pushing the pairs it now covers.
    fn lower_floor(&mut self) {
        let old = self.floor;
        self.floor = old / FLOOR_STEP;
        let pushed = self.pairs.counted_between(self.floor, old);
        self.heap.extend(pushed.map(|(count, pair, slot)| Candidate { count, pair, slot }));
    }

    /// Replaces the pair of `best` by `token` in every span that holds it and updates the
    /// counts: the pairs next to each replaced occurrence lose it, and `token`'s block gets
    /// the pairs that took their place.
    fn apply(&mut self, best: &Candidate, token: u32) {
        let pair = unkey(best.pair);
        let (a, b) = pair;
        // The pair likely merged next, whose first reads are fetched while this merge goes on.
        let next = self.heap.peek().map(|c| c.slot);
        if let Some(slot) = next {
            self.pairs.prefetch_slot(slot);
        }
        let Loop { spans, pairs, heap, floor, sides, helper, ids, found, born } = self;
        // The spans that may hold the pair. Each list is written once, in span order, so it is
        // increasing; the merge relies on that (a span listed twice would be merged twice), so
        // it is checked.
        let mut list = pairs.spans_of(best.slot);
        if !list.windows(2).all(|w| w[0] < w[1]) {
            ids.clear();
            ids.extend_from_slice(list);
            ids.sort_unstable();
            ids.dedup();
            list = ids;
        }
        // Many spans: the helper merges the later half of them (and tallies the right
        // neighbours below) while this thread does the rest.
        let helper = helper.as_ref().filter(|_| list.len() >= HELP_SPANS && !spans.merges_in_parallel(list));
        let [here, there] = found;
        here.clear();
        there.clear();
        match helper {
            Some(helper) => {
                let (low, high) = list.split_at(list.len() / 2);
                let (mut below, mut above) = spans.split_at(high[0]);
                helper.join(|| below.merge(low, pair, token, here), || above.merge(high, pair, token, there));
            }
            None => spans.merge(list, pair, token, here),
        }
        pairs.remove(best.slot);
        if let Some(slot) = next {
            pairs.prefetch_spans(slot);
        }
        born.clear();
        // Left neighbours x: (x, a) is gone and (x, token) born. x may be `token` itself (a
        // token made earlier in the same span, as in `abab`): then (token, a) is "gone", which
        // was born by a right neighbour of the same merge below; it is taken off there. The
        // merged pair is gone everywhere already; any other is a pair of earlier tokens, so it
        // is in the index with at least these occurrences. Right neighbours y (never `token`:
        // right of an occurrence is still the input): (b, y) is gone and (token, y) born.
        let [(left, left_gone), (right, right_gone)] = sides;
        {
            let pairs: &PairIndex = pairs;
            let (here, there): (&Neighbours, &Neighbours) = (here, there);
            let mut sum_left = || {
                left.sum([&here.left, &there.left]);
                find_gone(pairs, left, |x| (x != token && (x, a) != pair).then_some((x, a)), left_gone);
            };
            let mut sum_right = || {
                right.sum([&here.right, &there.right]);
                find_gone(pairs, right, |y| ((b, y) != pair).then_some((b, y)), right_gone);
            };
            match helper {
                Some(helper) => helper.join(sum_left, sum_right),
                None => {
                    sum_left();
                    sum_right();
                }
            }
        }
        pairs.open_block(token);
        let mut token_then_a = 0;
        let mut gone = left_gone.iter();
        left.drain(|x, n, spans| {
            if x == token {
                token_then_a = n;
            }
            if let Some(&Some(slot)) = gone.next() {
                pairs.sub(slot, n);
            }
            let slot = pairs.push((x, token), n, spans);
            if n as u64 >= *floor {
                born.push(Candidate { count: n as u64, pair: key((x, token)), slot });
            }
        });
        let mut gone = right_gone.iter();
        right.drain(|y, n, spans| {
            if let Some(&Some(slot)) = gone.next() {
                pairs.sub(slot, n);
            }
            let count = if y == a { n - token_then_a } else { n };
            debug_assert!(count >= 0, "a pair's count is never negative");
            if count > 0 {
                let slot = pairs.push((token, y), count, spans);
                if count as u64 >= *floor {
                    born.push(Candidate { count: count as u64, pair: key((token, y)), slot });
                }
            }
        });
        if let Some(slot) = next {
            let list = pairs.spans_of(slot);
            spans.prefetch(&list[..list.len().min(8)]);
        }
        heap.extend(born.drain(..));
        pairs.compact_if_due();
    }
}

/// Runs the merge loop. `on_merge` is called after every merge with the merge and the
/// vocabulary so far; returning `ControlFlow::Break` stops the loop early (the result then holds
/// the merges made so far). Setting `stop` before the first merge makes it give up soon with
/// [`Error::Interrupted`] (getting to the first merge takes seconds for tens of millions of
/// spans); after it, `on_merge` is the way to stop.
///
/// Fails only on inputs past the loop's integer widths: a pair count that could pass 2^63,
/// more than 2^31-1 spans, more than 2^32-1 bytes in a span, or distinct spans that need more
/// than 2^34 words of token ids (with their headers) in the span table.
pub fn learn(
    spans: Spans,
    options: &LearnOptions,
    stop: &AtomicBool,
    on_merge: impl FnMut(&Merge, &Vocab) -> ControlFlow<()>,
) -> Result<Learned, Error> {
    check_total(&spans)?;
    if options.vocab_size <= 256 {
        Ok(Learned { vocab: Vocab::bytes(), merges: Vec::new() }) // no merge to make
    } else if options.vocab_size <= 1 << 16 {
        // Token ids are below vocab_size: 2^16 of them fit in a u16.
        run(Loop::<u16>::new(spans, stop)?, options, on_merge)
    } else {
        run(Loop::<u32>::new(spans, stop)?, options, on_merge)
    }
}

fn run<T: TokenId>(
    mut state: Loop<T>,
    options: &LearnOptions,
    mut on_merge: impl FnMut(&Merge, &Vocab) -> ControlFlow<()>,
) -> Result<Learned, Error> {
    let mut vocab = Vocab::bytes();
    let mut merges = Vec::new();
    while vocab.len() < options.vocab_size {
        let Some(best) = state.best() else { break };
        let (pair, count) = (unkey(best.pair), best.count);
        if count < options.min_frequency {
            break;
        }
        let token = vocab.push_merge(pair.0, pair.1);
        state.apply(&best, token);
        state.raise_floor(count);
        let merge = Merge { pair, token, count };
        merges.push(merge);
        if on_merge(&merge, &vocab).is_break() {
            break;
        }
    }
    if let Some((earlier, later)) = vocab.first_repeat() {
        return Err(Error::Internal(format!("tokens {earlier} and {later} have the same bytes, which the merge rule rules out")));
    }
    Ok(Learned { vocab, merges })
}

/// Pair counts are signed 64-bit (updates are ±span count) and span ids and lengths 32-bit;
/// refuse inputs that could overflow them.
fn check_total(spans: &Spans) -> Result<(), Error> {
    // Span lengths are u32 in the merge loop, and so are the lengths of the pairs' span lists,
    // which hold a span at most twice (a pair's spans are added when the pair starts to
    // exist, at the merge that made its first or its second token).
    if spans.len() > i32::MAX as usize {
        return Err(Error::InvalidOption(format!("{} distinct spans, more than the 2^31-1 supported", spans.len())));
    }
    if let Some((bytes, _)) = spans.iter().find(|(b, _)| b.len() > u32::MAX as usize) {
        return Err(Error::InvalidOption(format!("a span of {} bytes, more than the 2^32-1 supported", bytes.len())));
    }
    let mut total: u128 = 0;
    for (bytes, n) in spans.iter() {
        total += u128::from(n) * bytes.len().saturating_sub(1) as u128;
    }
    if total > i64::MAX as u128 {
        return Err(Error::InvalidOption(format!(
            "the span counts sum to {total} adjacent pairs, more than the 2^63-1 a pair count can hold"
        )));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The specification, run naively: recount every pair before every merge.
    pub(crate) fn naive(spans: &[(Vec<u8>, u64)], vocab_size: usize) -> Vec<Merge> {
        let mut vocab = Vocab::bytes();
        let mut words: Vec<(Vec<u32>, u64)> =
            spans.iter().map(|(b, n)| (b.iter().map(|&x| x as u32).collect(), *n)).collect();
        let mut merges = Vec::new();
        while vocab.len() < vocab_size {
            let mut counts: BTreeMap<Pair, u64> = BTreeMap::new();
            for (w, n) in &words {
                for p in w.windows(2) {
                    *counts.entry((p[0], p[1])).or_default() += n;
                }
            }
            // max count, then smallest pair: BTreeMap iterates pairs ascending, keep the first max.
            let Some((&pair, &count)) = counts.iter().rev().max_by_key(|(_, &c)| c) else { break };
            let token = vocab.push_merge(pair.0, pair.1);
            for (w, _) in &mut words {
                let len = merge_in_span(w, pair, token, |_| {});
                w.truncate(len);
            }
            merges.push(Merge { pair, token, count });
        }
        merges
    }

    fn pair_counts(words: &[Vec<u32>]) -> BTreeMap<Pair, i64> {
        let mut c = BTreeMap::new();
        for w in words {
            for p in w.windows(2) {
                *c.entry((p[0], p[1])).or_default() += 1;
            }
        }
        c
    }

    fn learn_all(spans: &[(Vec<u8>, u64)], vocab_size: usize) -> Vec<Merge> {
        let spans = spans.iter().map(|(b, n)| (b.clone().into_boxed_slice(), *n)).collect();
        let options = LearnOptions { vocab_size, min_frequency: 1 };
        learn(spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap().merges
    }

    /// A random corpus of `seed` (see [`crate::draws`]).
    fn corpus(seed: u64) -> Vec<(Vec<u8>, u64)> {
        let mut next = crate::test_random(seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
        let alphabet = b"aab ";
        (0..1 + next(30))
            .map(|_| {
                let len = 1 + next(12) as usize;
                let span = (0..len).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect();
                (span, 1 + next(5))
            })
            .collect()
    }

    #[test]
    fn tally_sums_events_by_neighbour() {
        let mut tally = Tally::default();
        let mut state = 9u64;
        let mut next = |m: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for round in 0..300 {
            // Events in span order, a span often holding several events of one neighbour.
            let mut events = Vec::new();
            let mut id = 0;
            for _ in 0..next(60) {
                id += next(3) as u32;
                events.push((next(1 + round % 40) as u32, id, 1 + next(9) as i64));
            }
            let mut want: BTreeMap<u32, (i64, Vec<u32>)> = BTreeMap::new();
            for &(x, id, n) in &events {
                let (sum, spans) = want.entry(x).or_default();
                *sum += n;
                if spans.last() != Some(&id) {
                    spans.push(id);
                }
            }
            let (first, second) = events.split_at(events.len() / 3);
            tally.sum([first, second]);
            assert!(tally.neighbours().iter().copied().eq(want.keys().copied()));
            let mut got = BTreeMap::new();
            tally.drain(|x, n, spans| {
                got.insert(x, (n, spans.to_vec()));
            });
            assert_eq!(got, want, "round {round}");
        }
    }

    #[test]
    fn deltas_match_a_recount() {
        for seed in 0..500 {
            for (span, _) in corpus(seed) {
                let mut word: Vec<u32> = span.iter().map(|&b| b as u32).collect();
                let before = pair_counts(&[word.clone()]);
                let mut expected = before.clone();
                let (a, b, c) = (b'a' as u32, b'a' as u32, 999);
                let old_len = word.len();
                let len = merge_in_span(&mut word, (a, b), c, |side| {
                    let (gone, new) = match side {
                        Neighbour::Left(x) => ((x, a), (x, c)),
                        Neighbour::Right(y) => ((b, y), (c, y)),
                    };
                    *expected.entry(gone).or_default() -= 1;
                    *expected.entry(new).or_default() += 1;
                });
                word.truncate(len);
                // Each replaced occurrence shortens the span by one.
                *expected.entry((a, b)).or_default() -= (old_len - len) as i64;
                expected.retain(|_, c| *c != 0);
                assert_eq!(expected, pair_counts(&[word]), "{span:?}");
            }
        }
    }

    #[test]
    fn merges_equal_the_naive_loop() {
        for seed in 0..300 {
            let spans = corpus(seed);
            // Past 2^16 the span table holds u32 token ids instead of u16 (these corpora run out
            // of pairs long before).
            for vocab_size in [256, 260, 300, 70_000] {
                assert_eq!(learn_all(&spans, vocab_size), naive(&spans, vocab_size), "seed {seed}");
            }
        }
    }

    #[test]
    fn parallel_merges_equal_the_naive_loop() {
        // Enough distinct spans that the first merges take the parallel paths: on one thread
        // there is none, on two the helper takes half of each merge of HELP_SPANS spans or
        // more, on four the pool takes merges of PARALLEL_SPANS spans in blocks.
        let spans: Vec<(Vec<u8>, u64)> = (0..3 * spans::PARALLEL_SPANS as u64)
            .map(|i| (format!("ab{}a{}", i % 97, i).into_bytes(), 1 + i % 3))
            .collect();
        assert!(spans.len() > spans::SPANS_PER_TASK, "spans must cover several parallel blocks");
        let want = naive(&spans, 290);
        assert!(want.len() > 20, "the test must make merges of many spans and of few");
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            assert_eq!(pool.install(|| learn_all(&spans, 290)), want, "{threads} threads");
        }
    }

    #[test]
    fn u16_and_u32_token_ids_learn_the_same_up_to_the_last_16_bit_id() {
        // Random spans with room for every merge up to 2^16 tokens, so that the largest 16-bit
        // ids are made, and merged again, in the u16 table.
        let mut state = 11u64;
        let spans: Spans = (0..8000u64)
            .map(|i| {
                let span: Vec<u8> = (0..32)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        b'0' + (state >> 58) as u8
                    })
                    .collect();
                (span, 1 + i % 5)
            })
            .collect();
        let options = LearnOptions { vocab_size: 1 << 16, min_frequency: 1 };
        let small = run(Loop::<u16>::new(spans.clone(), &AtomicBool::new(false)).unwrap(), &options, |_, _| ControlFlow::Continue(())).unwrap();
        let big = run(Loop::<u32>::new(spans, &AtomicBool::new(false)).unwrap(), &options, |_, _| ControlFlow::Continue(())).unwrap();
        assert_eq!(small.merges.len(), (1 << 16) - 256);
        assert!(small.merges.iter().any(|m| m.pair.0 > 65_000 || m.pair.1 > 65_000), "late ids are merged again");
        assert_eq!(small.merges, big.merges);
    }

    #[test]
    fn overlapping_runs_merge_left_to_right() {
        let merges = learn_all(&[(b"aaaaa".to_vec(), 1)], 258);
        assert_eq!(merges[0], Merge { pair: (97, 97), token: 256, count: 4 });
        // "aaaaa" -> [aa, aa, a]: (aa, aa) and (aa, a) once each; the smaller pair wins.
        assert_eq!(merges[1], Merge { pair: (256, 97), token: 257, count: 1 });
    }

    #[test]
    fn spans_longer_than_16_bits_keep_their_length() {
        // A span's length is stored in two 16-bit words of the span table when ids are u16.
        let long: Vec<u8> = b"abcab".iter().cycle().take(70_001).copied().collect();
        let spans = vec![(long, 3), (b"ca".to_vec(), 1 << 40)];
        assert_eq!(learn_all(&spans, 262), naive(&spans, 262));
    }

    #[test]
    fn counts_beyond_32_bits_are_exact() {
        let big = 3_000_000_000u64;
        let merges = learn_all(&[(b"ab".to_vec(), big), (b"abab".to_vec(), big)], 257);
        assert_eq!(merges[0].count, 3 * big);
    }

    #[test]
    fn no_spans_learn_nothing() {
        for spans in [vec![], vec![(b"a".to_vec(), 5)]] {
            assert_eq!(learn_all(&spans, 1000), vec![]);
        }
    }

    #[test]
    fn min_frequency_stops_early() {
        let spans = [(b"ab", 3), (b"cd", 2)].into_iter().collect();
        let options = LearnOptions { vocab_size: 1000, min_frequency: 3 };
        let learned = learn(spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap();
        assert_eq!(learned.merges.len(), 1);
    }

    #[test]
    fn a_stop_set_before_the_first_merge_gives_up() {
        let spans: Spans = [(&b"abab"[..], 3), (b"abc", 2)].into_iter().collect();
        let options = LearnOptions { vocab_size: 300, min_frequency: 1 };
        let mut merges = 0;
        let stopped = learn(spans.clone(), &options, &AtomicBool::new(true), |_, _| {
            merges += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(stopped.err(), Some(Error::Interrupted));
        assert_eq!(merges, 0);
        assert_eq!(learn(spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap().merges.len(), 3);
    }

    #[test]
    fn overflowing_totals_are_refused() {
        let spans = [(b"abc", u64::MAX / 2)].into_iter().collect();
        let options = LearnOptions { vocab_size: 300, min_frequency: 1 };
        assert!(learn(spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).is_err());
    }
}
