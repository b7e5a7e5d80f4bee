//! Spans of more than [`super::table::SHORT`] bytes and their counts, in one buffer: a long span is
//! copied once, at its first occurrence, to the end of the table's bytes, and found again
//! through an open-addressing index of (hash, place, count). Joining tables and laying them out
//! flat then reads two arrays, instead of visiting and freeing one heap block per span.

use std::sync::OnceLock;

use super::table::{over_full, probe, regrow, slice_part, COUNTING};
use crate::Error;

/// One span of the index: where its bytes are in `LongTable::bytes`, its full hash (compared
/// before the bytes, and reused when the index grows or tables are joined), and its count.
/// `len == 0` marks an empty slot (a long span is never empty).
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    hash: u64,
    start: usize,
    len: usize,
    count: u64,
}

#[derive(Debug, Clone, Default)]
pub(super) struct LongTable {
    /// The spans' bytes, end to end, in the order they were first seen.
    bytes: Vec<u8>,
    /// Empty until the first span; then a power of two, at most three quarters full.
    slots: Vec<Slot>,
    len: usize,
    /// Set when the bytes or the slots could not grow: no span is added from then on, and
    /// counting gives up with this error.
    out_of_memory: Option<Error>,
}

/// The hasher of every long table: one per process, drawn at random (spans are the user's
/// data, so no input may be chosen to make them collide); tables sharing it can be joined
/// without hashing again. It changes only the tables' inner order, never a result.
fn hasher() -> &'static ahash::RandomState {
    static HASHER: OnceLock<ahash::RandomState> = OnceLock::new();
    HASHER.get_or_init(ahash::RandomState::new)
}

impl LongTable {
    /// Adds `n` occurrences of `span` (saturating).
    pub(super) fn add(&mut self, span: &[u8], n: u64) {
        self.add_hashed(span, hasher().hash_one(span), n);
    }

    fn add_hashed(&mut self, span: &[u8], hash: u64, n: u64) {
        debug_assert!(!span.is_empty());
        if self.slots.is_empty() {
            self.slots = vec![Slot::default(); 64];
        }
        match self.find(span, hash) {
            Ok(i) => self.slots[i].count = self.slots[i].count.saturating_add(n),
            Err(_) if self.out_of_memory.is_some() => {}
            Err(i) => {
                if let Err(e) = crate::memory::try_reserve(&mut self.bytes, span.len(), COUNTING) {
                    self.out_of_memory = Some(e);
                    return;
                }
                self.slots[i] = Slot { hash, start: self.bytes.len(), len: span.len(), count: n };
                self.bytes.extend_from_slice(span);
                self.len += 1;
                if over_full(self.len, self.slots.len()) {
                    self.grow();
                }
            }
        }
    }

    /// [`probe`] for `span`, of hash `hash` (the slots must not be empty).
    fn find(&self, span: &[u8], hash: u64) -> Result<usize, usize> {
        let (slots, bytes) = (&self.slots, &self.bytes);
        probe(slots, hash, |s| s.hash == hash && s.len == span.len() && bytes[s.start..s.start + s.len] == *span, |s| s.len == 0)
    }

    #[cold]
    fn grow(&mut self) {
        if let Err(e) = regrow(&mut self.slots, |s| s.hash, |s| s.len == 0) {
            self.out_of_memory = Some(e);
        }
    }

    /// The error of a table that could not grow, if it could not.
    pub(super) fn out_of_memory(&self) -> Option<&Error> {
        self.out_of_memory.as_ref()
    }

    /// The count of `span` (`None` if it was never added).
    pub(super) fn get(&self, span: &[u8]) -> Option<u64> {
        self.get_hashed(span, hasher().hash_one(span))
    }

    /// [`LongTable::get`] for a span whose hash is `hash` (as [`LongTable::iter_part`] gives
    /// it: every long table hashes alike).
    pub(super) fn get_hashed(&self, span: &[u8], hash: u64) -> Option<u64> {
        if self.slots.is_empty() {
            return None;
        }
        self.find(span, hash).ok().map(|i| self.slots[i].count)
    }

    /// Number of distinct spans.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The spans held in part `part` of `parts` (`part < parts`) of the slots, each with its
    /// hash and its count.
    pub(super) fn iter_part(&self, part: usize, parts: usize) -> impl Iterator<Item = (&[u8], u64, u64)> + '_ {
        let slots = &self.slots[slice_part(self.slots.len(), part, parts)];
        slots.iter().filter(|s| s.len != 0).map(|s| (&self.bytes[s.start..s.start + s.len], s.hash, s.count))
    }

    /// Number of slots (held or free): the positions [`LongTable::iter_part_at`] and
    /// [`LongTable::find_hashed`] give are below it.
    pub(super) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// [`LongTable::iter_part`] with where each span sits in the slots.
    pub(super) fn iter_part_at(&self, part: usize, parts: usize) -> impl Iterator<Item = (usize, &[u8], u64, u64)> + '_ {
        let range = slice_part(self.slots.len(), part, parts);
        let first = range.start;
        self.slots[range].iter().enumerate().filter(|(_, s)| s.len != 0).map(move |(i, s)| (first + i, &self.bytes[s.start..s.start + s.len], s.hash, s.count))
    }

    /// Where `span` (of hash `hash`) sits in the slots, and its count, if this table holds it.
    pub(super) fn find_hashed(&self, span: &[u8], hash: u64) -> Option<(usize, u64)> {
        if self.slots.is_empty() {
            return None;
        }
        self.find(span, hash).ok().map(|i| (i, self.slots[i].count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The table against a map, through growth, repeats and saturation.
    #[test]
    fn long_table_matches_a_map() {
        let mut table = LongTable::default();
        let mut model: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut state = 7u64;
        for _ in 0..100_000u64 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Spans of 16..48 bytes over few values, so many repeat; some share a prefix.
            let len = 16 + (state >> 59) as usize;
            let span: Vec<u8> = (0..len).map(|i| (state >> (8 * (i % 4) + 20)) as u8 % 3).collect();
            let n = if state % 997 == 0 { u64::MAX } else { 1 + (state >> 40) % 4 };
            table.add(&span, n);
            let c = model.entry(span).or_insert(0);
            *c = c.saturating_add(n);
        }
        assert!(table.slots.len() > 1 << 10, "the table must have grown");
        assert_eq!(table.len(), model.len());
        let listed: HashMap<Vec<u8>, u64> = table.iter_part(0, 1).map(|(s, _, n)| (s.to_vec(), n)).collect();
        assert_eq!(listed.len(), table.len(), "each span listed once");
        assert_eq!(listed, model);
        for (span, &n) in &model {
            assert_eq!(table.get(span), Some(n));
        }
        assert_eq!(table.get(&[9u8; 20]), None);
        assert_eq!(LongTable::default().get(&[1u8; 16]), None);
    }
}
