//! A merge's neighbours summed by token: for each token found next to a replaced occurrence
//! on one side, the occurrences it had there (weighted by span count) and the spans it had
//! them in. These are the counts and the span lists of the new pairs, and what the old pairs
//! lose.

use super::pairs::{PairIndex, PairSlot};
use super::Pair;

/// What the sums know of one neighbour token during a merge.
#[derive(Default, Clone, Copy)]
struct NeighbourSum {
    count: i64,
    /// Events seen for the neighbour, then where its next span goes in `NeighbourSums::spans`.
    at: usize,
    /// The last span written for it (`u32::MAX` for none yet).
    last: u32,
}

/// Per-token scratch space that sums a merge's events by neighbour without hashing each one.
/// The events are sorted by neighbour as a counting sort does: counted first, then each
/// neighbour's spans written to their own range of one buffer.
#[derive(Default)]
pub(super) struct NeighbourSums {
    /// By token.
    sums: Vec<NeighbourSum>,
    /// The neighbours summed, sorted.
    neighbours: Vec<u32>,
    /// Where each neighbour's range of `spans` starts, in the order of `neighbours`.
    starts: Vec<usize>,
    /// Each neighbour's spans, one range after the other in the order of `neighbours`.
    spans: Vec<u32>,
}

impl NeighbourSums {
    /// Sums `events`, `(neighbour, span, n)` in span order (the slices one after the other):
    /// for each neighbour, the sum of `n` and the spans (each once).
    pub(super) fn sum(&mut self, events: [&[(u32, u32, i64)]; 2]) {
        let NeighbourSums { sums, neighbours, starts, spans } = self;
        for &(neighbour, _, n) in events.iter().copied().flatten() {
            let i = neighbour as usize;
            if i >= sums.len() {
                sums.resize(i + 1, NeighbourSum::default());
            }
            let sum = &mut sums[i];
            if sum.at == 0 {
                neighbours.push(neighbour);
            }
            sum.count += n;
            sum.at += 1;
        }
        neighbours.sort_unstable();
        let mut at = 0;
        starts.clear();
        for &x in neighbours.iter() {
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
    pub(super) fn neighbours(&self) -> &[u32] {
        &self.neighbours
    }

    /// Calls `f(neighbour, sum, spans)` once per neighbour summed, in increasing order, then
    /// empties the sums.
    pub(super) fn drain(&mut self, mut f: impl FnMut(u32, i64, &[u32])) {
        let NeighbourSums { sums, neighbours, starts, spans } = self;
        for (x, &start) in neighbours.drain(..).zip(starts.iter()) {
            // The range may be longer than the spans written in it (two events of a span
            // with the same neighbour give it one place): `at` is where they end.
            let sum = std::mem::take(&mut sums[x as usize]);
            f(x, sum.count, &spans[start..sum.at]);
        }
    }
}

/// One side (left or right) of a merge's neighbours: their sums, and the slots of the old
/// pairs they take occurrences from (the left neighbour `x` takes them from `(x, a)`, the
/// right neighbour `y` from `(b, y)`), one per neighbour in the order of the sums.
#[derive(Default)]
pub(super) struct Side {
    pub(super) sums: NeighbourSums,
    pub(super) old_pairs: Vec<Option<PairSlot>>,
}

impl Side {
    /// Sums `events` (see [`NeighbourSums::sum`]) and finds the old pair of each neighbour `x`,
    /// `old_pair(x)` (`None` for a neighbour that takes nothing from a pair of the index).
    pub(super) fn sum(&mut self, events: [&[(u32, u32, i64)]; 2], pairs: &PairIndex, old_pair: impl Fn(u32) -> Option<Pair>) {
        self.sums.sum(events);
        self.find_old_pairs(pairs, old_pair);
    }

    /// Finds the old pairs of the neighbours summed and asks for their counts. The lookups are
    /// all started before any is made, so that they and the counts they lead to wait for memory
    /// together, not one after the other.
    fn find_old_pairs(&mut self, pairs: &PairIndex, old_pair: impl Fn(u32) -> Option<Pair>) {
        for &x in self.sums.neighbours() {
            if let Some(pair) = old_pair(x) {
                pairs.prefetch_find(pair);
            }
        }
        self.old_pairs.clear();
        self.old_pairs.extend(self.sums.neighbours().iter().map(|&x| {
            let slot = old_pair(x).and_then(|pair| pairs.find(pair));
            if let Some(slot) = slot {
                pairs.prefetch_count(slot);
            }
            slot
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn sums_events_by_neighbour() {
        let mut sums = NeighbourSums::default();
        let mut next = crate::test_random(9);
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
            sums.sum([first, second]);
            assert!(sums.neighbours().iter().copied().eq(want.keys().copied()));
            let mut got = BTreeMap::new();
            sums.drain(|x, n, spans| {
                got.insert(x, (n, spans.to_vec()));
            });
            assert_eq!(got, want, "round {round}");
        }
    }
}
