//! Every pair the loop knows, with its count and the spans that may hold it, in blocks by the
//! pair's later token.
//!
//! Two tokens p and q can only come to stand next to each other when the later of the two is
//! made: a token is made only by its own merge, and a merge changes spans only where it
//! replaces an occurrence. So every pair whose later token is t is born at t's merge (pairs
//! of two bytes: at the start), and from then on its count and its spans only shrink. The index
//! keeps the pairs that way: token t's pairs are one block, written when t is made and never
//! moved, `(x, t)` for `x <= t` then `(t, y)` for `y < t`, each part sorted. Finding a pair is
//! a binary search in one block, and a merge writes its new pairs one after the other, where a
//! hash table would scatter them over memory (each a cache miss: most of a merge's time).
//!
//! A pair that no longer occurs keeps its place with count 0; its spans are left in the arena
//! of lists until the next compaction drops them.

use rustc_hash::FxHashMap;

use super::lists::{ListAt, Lists, EMPTY};
use crate::memory::{prefetch, try_reserve};
use crate::Error;
use super::{key, Pair, PairKey};

/// Where a pair lives in the index; it never moves.
pub(super) type PairSlot = usize;

/// What [`PairIndex`] holds for a count of this or more, which it keeps apart.
const BIG_COUNT: u32 = u32::MAX;

/// A token's pairs: `left` pairs `(x, t)` from `start`, then `right` pairs `(t, y)`.
#[derive(Debug, Clone, Copy)]
struct Block {
    start: usize,
    left: u32,
    right: u32,
}

/// The pairs' fields are kept apart, each by slot, so that the two hot visits touch little
/// memory: finding a pair reads only the other tokens of its block part (4 bytes each, a
/// binary search touching a few cache lines), and a merge's updates then touch only counts.
#[derive(Default)]
pub(super) struct PairIndex {
    /// By token.
    blocks: Vec<Block>,
    // By slot:
    /// The pair's other token: `x` of `(x, t)`, `y` of `(t, y)`.
    others: Vec<u32>,
    /// The pair's count, or [`BIG_COUNT`] for a count of that or more, which is in `big`: late
    /// in a run most of the index is pairs born with a few occurrences, and 32 bits instead of
    /// 64 are a fifth of what each takes.
    counts: Vec<u32>,
    /// The counts of [`BIG_COUNT`] or more, by slot.
    big: FxHashMap<PairSlot, i64>,
    /// Meaningful while the count is positive; the list is dropped when it reaches 0.
    spans: Vec<ListAt>,
    lists: Lists,
}

impl PairIndex {
    /// Every pair by slot, with its count and its spans, block after block: the index as a
    /// value to compare.
    #[cfg(test)]
    pub(super) fn pairs_for_tests(&self) -> Vec<(Pair, i64, Vec<u32>)> {
        let mut pairs = Vec::new();
        for (t, block) in (0u32..).zip(&self.blocks) {
            for k in 0..block.left + block.right {
                let slot = block.start + k as usize;
                let other = self.others[slot];
                let mut spans = Vec::new();
                self.spans_of(slot, &mut spans);
                pairs.push((if k < block.left { (other, t) } else { (t, other) }, self.count(slot), spans));
            }
        }
        pairs
    }

    /// Makes room for `pairs` more pairs with `bytes` bytes of span lists in all (see
    /// [`Lists::room`]).
    pub(super) fn reserve(&mut self, pairs: usize, bytes: usize) -> Result<(), Error> {
        const STAGE: &str = "building the pair index (where each pair of tokens occurs)";
        try_reserve(&mut self.others, pairs, STAGE)?;
        try_reserve(&mut self.counts, pairs, STAGE)?;
        try_reserve(&mut self.spans, pairs, STAGE)?;
        self.lists.reserve(bytes, STAGE)
    }

    /// Starts token `t`'s block, where [`PairIndex::push`] adds its pairs. Blocks are made in
    /// token order: `t` is the number of blocks so far.
    pub(super) fn open_block(&mut self, t: u32) {
        debug_assert_eq!(t as usize, self.blocks.len(), "blocks are made in token order");
        self.blocks.push(Block { start: self.others.len(), left: 0, right: 0 });
    }

    /// Adds `pair`, counted `count`, with the spans `spans`, to the last block opened, of token
    /// `t`: first the pairs `(x, t)` by increasing `x`, then the pairs `(t, y)` by increasing
    /// `y`. Its span list is written after every list pushed so far (compaction relies on it).
    pub(super) fn push(&mut self, pair: Pair, count: i64, spans: &[u32]) -> PairSlot {
        let list = self.lists.push(spans);
        self.push_with_list(pair, count, list)
    }

    /// [`PairIndex::push`] with a list given by [`PairIndex::push_zeros`] just before.
    fn push_with_list(&mut self, pair: Pair, count: i64, list: ListAt) -> PairSlot {
        let slot = self.others.len();
        let t = self.blocks.len() as u32 - 1;
        // panic-free: the loop opens a token's block before it pushes the token's pairs.
        let block = self.blocks.last_mut().expect("a block is open");
        let (part, other) = if pair.1 == t {
            debug_assert!(block.right == 0, "(x, t) pairs come before (t, y) pairs");
            block.left += 1;
            (block.left, pair.0)
        } else {
            debug_assert!(pair.0 == t && pair.1 < t, "{pair:?} is not a pair of token {t}'s block");
            block.right += 1;
            (block.right, pair.1)
        };
        debug_assert!(part < 2 || self.others.last() < Some(&other), "each part of a block is sorted");
        self.others.push(other);
        self.counts.push(0);
        self.set_count(slot, count);
        self.spans.push(list);
        slot
    }

    /// [`PairIndex::push`] for a pair whose spans, coded, take `coded` bytes (see
    /// `lists.rs`), written afterwards, in place (see [`PairIndex::spans_at`]).
    pub(super) fn push_zeros(&mut self, pair: Pair, count: i64, coded: usize) -> PairSlot {
        let list = self.lists.push_zeros(coded);
        self.push_with_list(pair, count, list)
    }

    /// Where the coded spans of a pair added by [`PairIndex::push_zeros`] (with spans) go in
    /// [`PairIndex::span_bytes`].
    pub(super) fn spans_at(&self, slot: PairSlot) -> usize {
        self.lists.ids_at(self.spans[slot])
    }

    /// The bytes holding the pairs' span lists, to write those added by
    /// [`PairIndex::push_zeros`] (see [`PairIndex::spans_at`]).
    pub(super) fn span_bytes(&mut self) -> &mut [u8] {
        self.lists.bytes_mut()
    }

    /// The part of a block where `pair` would be, and the token to look for there.
    #[inline(always)]
    fn part(&self, (p, q): Pair) -> Option<(usize, usize, u32)> {
        let t = p.max(q);
        let block = self.blocks.get(t as usize)?;
        Some(if q == t {
            (block.start, block.left as usize, p)
        } else {
            (block.start + block.left as usize, block.right as usize, q)
        })
    }

    /// Where `pair` lives, if it was ever born.
    #[inline]
    pub(super) fn find(&self, pair: Pair) -> Option<PairSlot> {
        let (from, len, other) = self.part(pair)?;
        self.others[from..from + len].binary_search(&other).ok().map(|i| from + i)
    }

    /// Asks the memory system for the first places [`PairIndex::find`] will look at for
    /// `pair`, so that several lookups wait for memory at the same time.
    #[inline]
    pub(super) fn prefetch_find(&self, pair: Pair) {
        if let Some((from, len, _)) = self.part(pair) {
            let others = self.others.as_ptr().wrapping_add(from);
            for at in [len / 2, len / 4, len * 3 / 4] {
                prefetch(others.wrapping_add(at));
            }
        }
    }

    /// Asks for the count of the pair at `slot` and where its span list is: what a merge of it
    /// reads first.
    #[inline]
    pub(super) fn prefetch_slot(&self, slot: PairSlot) {
        self.prefetch_count(slot);
        prefetch(self.spans.as_ptr().wrapping_add(slot));
    }

    /// Asks for the start of the span list of the pair at `slot` (best after
    /// [`PairIndex::prefetch_slot`] had time to bring where it is).
    #[inline]
    pub(super) fn prefetch_spans(&self, slot: PairSlot) {
        self.lists.prefetch(self.spans[slot]);
    }

    /// Asks for the count of the pair at `slot`, about to be updated.
    #[inline]
    pub(super) fn prefetch_count(&self, slot: PairSlot) {
        prefetch(self.counts.as_ptr().wrapping_add(slot));
    }

    pub(super) fn count(&self, slot: PairSlot) -> i64 {
        self.count_of(slot, self.counts[slot])
    }

    /// The count of the pair at `slot`, whose entry in `counts` is `small`.
    #[inline(always)]
    fn count_of(&self, slot: PairSlot, small: u32) -> i64 {
        if small == BIG_COUNT {
            // panic-free: a count is BIG_COUNT only for a slot in `big`.
            self.big[&slot]
        } else {
            i64::from(small)
        }
    }

    /// Sets the count of the pair at `slot` to `count`, in `counts` or in `big`.
    fn set_count(&mut self, slot: PairSlot, count: i64) {
        if self.counts[slot] == BIG_COUNT {
            self.big.remove(&slot);
        }
        self.counts[slot] = if count >= i64::from(BIG_COUNT) {
            self.big.insert(slot, count);
            BIG_COUNT
        } else {
            count as u32
        };
    }

    /// Takes `n` occurrences away from the pair at `slot`. Once it has none left, its spans are
    /// dropped (by the next compaction): it can never occur again.
    #[inline]
    pub(super) fn sub(&mut self, slot: PairSlot, n: i64) {
        let small = self.counts[slot];
        if small == BIG_COUNT {
            self.set_count(slot, self.count_of(slot, small) - n);
        } else {
            // A count below BIG_COUNT loses at most itself.
            debug_assert!(n >= 0 && n <= i64::from(small), "pair counts are exact, so never negative");
            self.counts[slot] = small - n as u32;
        }
    }

    /// Puts the spans that may hold the pair at `slot` in `out` (emptied first).
    pub(super) fn spans_of(&self, slot: PairSlot, out: &mut Vec<u32>) {
        self.lists.decode(self.spans[slot], out);
    }

    /// The first spans that may hold the pair at `slot`, as many as fit in `out`.
    pub(super) fn first_spans<'a>(&self, slot: PairSlot, out: &'a mut [u32]) -> &'a [u32] {
        self.lists.first(self.spans[slot], out)
    }

    /// Removes the pair at `slot` (it was merged): its count becomes 0, and its spans go at
    /// the next compaction.
    pub(super) fn remove(&mut self, slot: PairSlot) {
        self.set_count(slot, 0);
    }

    /// The pairs counted at least `low` (and at least 1) and less than `high`, with their
    /// slots, in slot order.
    ///
    /// The loop calls this each time it lowers its floor, over every pair born so far (late in
    /// a run, hundreds of thousands), of which few match: so the counts are read alone, in one
    /// pass with one comparison each, and only a match looks up its block (the blocks are
    /// walked alongside, as matches come in slot order).
    pub(super) fn counted_between(&self, low: u64, high: u64) -> impl Iterator<Item = (u64, PairKey, PairSlot)> + '_ {
        // Counts are never negative, so `low <= c < high` for `c >= 1` is one unsigned
        // comparison of `c - low`.
        let low = low.max(1);
        let width = high.saturating_sub(low);
        let mut t = 0;
        self.counts
            .iter()
            .enumerate()
            .filter_map(move |(slot, &small)| {
                let c = if small == BIG_COUNT { self.count_of(slot, small) as u64 } else { u64::from(small) };
                (c.wrapping_sub(low) < width).then_some((slot, c))
            })
            .map(move |(slot, c)| {
                // The block holding `slot` is the last to start at or before it (blocks with
                // no pairs start where the next one does).
                while self.blocks.get(t + 1).is_some_and(|next| next.start <= slot) {
                    t += 1;
                }
                let block = &self.blocks[t];
                let other = self.others[slot];
                let pair = if slot < block.start + block.left as usize { (other, t as u32) } else { (t as u32, other) };
                (c, key(pair), slot)
            })
    }

    /// Reclaims the dropped span lists once the arena has grown by an eighth since it last did.
    pub(super) fn compact_if_due(&mut self) {
        if self.lists.wants_compacting() {
            // Lists were pushed in slot order, so the slots give them in order. A pair counted
            // 0 no longer occurs: its list goes.
            for (list, &count) in self.spans.iter_mut().zip(&self.counts) {
                if count == 0 {
                    *list = EMPTY;
                }
            }
            self.lists.compact(self.spans.iter_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn spans_of(index: &PairIndex, slot: PairSlot) -> Vec<u32> {
        let mut spans = vec![7]; // emptied first
        index.spans_of(slot, &mut spans);
        spans
    }

    /// Token `t`'s pairs in the index's order, each of the possible ones kept with chance
    /// 1 in `one_in` (`next(m)` draws below `m`): `(x, t)` for `x <= t`, then `(t, y)` for `y < t`.
    fn random_block(t: u32, one_in: u64, next: &mut impl FnMut(u64) -> u64) -> Vec<Pair> {
        let lefts: Vec<u32> = (0..=t).filter(|_| next(one_in) == 0).collect();
        let rights: Vec<u32> = (0..t).filter(|_| next(one_in) == 0).collect();
        lefts.iter().map(|&x| (x, t)).chain(rights.iter().map(|&y| (t, y))).collect()
    }

    #[test]
    fn finds_every_pair_and_nothing_else() {
        // Blocks for tokens 0..40 with random pairs, against a map.
        let mut index = PairIndex::default();
        let mut model: BTreeMap<Pair, (PairSlot, i64)> = BTreeMap::new();
        let mut next = crate::test_random(3);
        for t in 0..40u32 {
            index.open_block(t);
            for pair in random_block(t, 3, &mut next) {
                let count = 1 + next(100) as i64;
                let spans: Vec<u32> = (0..next(5) as u32).collect();
                let slot = index.push(pair, count, &spans);
                assert_eq!(spans_of(&index, slot), spans);
                model.insert(pair, (slot, count));
            }
        }
        for p in 0..42 {
            for q in 0..42 {
                let want = model.get(&(p, q)).map(|&(slot, _)| slot);
                assert_eq!(index.find((p, q)), want, "{p}, {q}");
                if let Some(slot) = want {
                    let listed: Vec<_> = index.counted_between(0, u64::MAX).filter(|&(_, _, s)| s == slot).collect();
                    assert_eq!(listed, [(model[&(p, q)].1 as u64, key((p, q)), slot)]);
                    assert_eq!(index.count(slot), model[&(p, q)].1);
                }
            }
        }
    }

    #[test]
    fn counted_between_lists_exactly_the_pairs_in_range() {
        // Blocks of random size, many of them empty (their pairs start where the next block's
        // do), with counts from 0 up, some taken down to 0 later: every range lists exactly
        // the pairs of the model counted in it, and not 0.
        let mut index = PairIndex::default();
        let mut model: BTreeMap<PairSlot, (u64, Pair)> = BTreeMap::new();
        let mut next = crate::test_random(5);
        for t in 0..300u32 {
            index.open_block(t);
            if next(3) == 0 {
                continue;
            }
            for pair in random_block(t, 20, &mut next) {
                let count = next(64) as i64;
                let slot = index.push(pair, count, &[]);
                model.insert(slot, (count as u64, pair));
                if count > 0 && next(4) == 0 {
                    index.sub(slot, count);
                    model.insert(slot, (0, pair));
                }
            }
        }
        assert!(model.values().filter(|(c, _)| *c > 0).count() > 500);
        for (low, high) in [(0, u64::MAX), (0, 1), (1, 2), (0, 10), (5, 6), (20, 40), (32, 64), (63, u64::MAX), (64, 100), (30, 20)] {
            let want: Vec<_> = model
                .iter()
                .filter(|(_, &(c, _))| c > 0 && c >= low && c < high)
                .map(|(&slot, &(c, pair))| (c, key(pair), slot))
                .collect();
            assert_eq!(index.counted_between(low, high).collect::<Vec<_>>(), want, "[{low}, {high})");
        }
    }

    #[test]
    fn counts_past_32_bits_are_exact_as_they_fall() {
        // Counts near and past the 32 bits `counts` holds, taken down by random amounts across
        // that line and to 0, against a model: every count, and every range listed.
        let mut index = PairIndex::default();
        let mut model: BTreeMap<PairSlot, (u64, Pair)> = BTreeMap::new();
        let mut next = crate::test_random(9);
        let line = u64::from(BIG_COUNT);
        let starts = [1, 7, line - 2, line - 1, line, line + 1, 1 << 40, 1 << 62];
        for t in 0..200u32 {
            index.open_block(t);
            for pair in random_block(t, 10, &mut next) {
                let count = starts[next(starts.len() as u64) as usize] + next(3);
                let slot = index.push(pair, count as i64, &[]);
                model.insert(slot, (count, pair));
            }
        }
        let wanted = |model: &BTreeMap<PairSlot, (u64, Pair)>, low: u64, high: u64| -> Vec<(u64, PairKey, PairSlot)> {
            model.iter().filter(|(_, &(c, _))| c > 0 && c >= low && c < high).map(|(&slot, &(c, pair))| (c, key(pair), slot)).collect()
        };
        for round in 0..20 {
            for (&slot, (count, _)) in model.iter_mut() {
                let n = match next(4) {
                    0 => 0,
                    1 => next(*count + 1),
                    2 => count.saturating_sub(line - 1 - next(3)),
                    _ => *count,
                };
                if round % 2 == 0 && slot % 3 == 0 {
                    index.sub(slot, n as i64);
                    *count -= n;
                }
                assert_eq!(index.count(slot), *count as i64, "slot {slot}");
            }
            for (low, high) in [(0, u64::MAX), (line - 1, line + 1), (line, u64::MAX), (1, line), (5, 1 << 41)] {
                assert_eq!(index.counted_between(low, high).collect::<Vec<_>>(), wanted(&model, low, high), "[{low}, {high})");
            }
        }
        // Counts that fell below the line left the big ones.
        assert_eq!(index.big.len(), model.values().filter(|(c, _)| *c >= line).count());
        let slot = *model.keys().next().unwrap();
        index.remove(slot);
        assert_eq!(index.count(slot), 0);
    }

    #[test]
    fn spans_survive_compaction_and_dead_pairs_lose_theirs() {
        let mut index = PairIndex::default();
        let mut live: Vec<(PairSlot, Vec<u32>)> = Vec::new();
        for t in 0..3000u32 {
            index.open_block(t);
            // One pair (t, t) per block, with 600 spans 2^21 apart (four bytes each, coded):
            // enough garbage to compact.
            let spans: Vec<u32> = (0..600).map(|k| t + (k << 21)).collect();
            let slot = index.push((t, t), 2, &spans);
            live.push((slot, spans));
            if t % 3 != 0 {
                let (slot, _) = live.remove(live.len() / 2);
                index.sub(slot, 2);
                assert_eq!(index.count(slot), 0);
            }
            index.compact_if_due();
        }
        for (slot, spans) in &live {
            assert_eq!(&spans_of(&index, *slot), spans);
        }
        let (slot, spans) = live.pop().unwrap();
        assert_eq!(index.first_spans(slot, &mut [0; 4]), &spans[..4]);
        index.remove(slot);
        assert_eq!(index.count(slot), 0);
    }
}
