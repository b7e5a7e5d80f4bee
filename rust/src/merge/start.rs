//! The merge loop's start: the pair index of the spans as given, before any merge.
//!
//! Every pair of the spans as given is a pair of two bytes, and is counted in parallel over
//! parts of the spans, each part also counting the spans that hold each pair (once per span,
//! however often it holds it). A large part counts them in a dense 256 x 256 table; a small
//! one (a small training's only part) keeps the counts of the pairs it meets only, found
//! through a table of where each is, which spares it zeroing and reading 65,536 counts (2 MiB,
//! most of a tiny training's time). Either way a part ends with the pairs it holds and where
//! each is in that list, and the pairs of all parts are put together in the index's order
//! without a pass over all 65,536. The index then gets the pairs in its order (see
//! `pairs.rs`), each with a span list of exactly its coded size (see `lists.rs`), and each part
//! writes its spans of each pair straight into the pair's list, after the previous parts'
//! spans, in parallel. A piece's size is known from the counting: its spans' differences within
//! the part, and the first one's from the last span of the pair in the previous parts.
//!
//! Each step is a pass over the spans (about a second for tens of millions of them): the
//! passes look at the stop flag as they go and give up with [`Error::Interrupted`].

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::lists::{delta_len, put_delta, Lists};
use super::pairs::PairIndex;
use super::span_table::{SpanTable, TokenId};
use super::Pair;
use crate::error::stop_due;
use crate::Error;

/// A byte pair's place in the table of all byte pairs: `x << 8 | y` for `(x, y)`.
type BytePair = usize;

#[inline(always)]
fn byte_pair<T: TokenId>(w: &[T]) -> BytePair {
    (w[0].get() as usize) << 8 | w[1].get() as usize
}

/// Gives up with [`Error::Interrupted`] if `stop` is set.
pub(super) fn check_stop(stop: &AtomicBool) -> Result<(), Error> {
    if stop.load(Ordering::Relaxed) {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

/// The pair index of the spans `ids` of `spans`, which hold bytes only.
pub(super) fn byte_pair_index<T: TokenId>(spans: &SpanTable<T>, ids: &[u32], stop: &AtomicBool) -> Result<PairIndex, Error> {
    let per_part = ids.len().div_ceil(rayon::current_num_threads().max(1)).max(1 << 14);
    byte_pair_index_in(spans, ids, per_part, DENSE_FROM, stop)
}

/// [`byte_pair_index`] over parts of `per_part` spans, those of `dense_from` spans or more
/// counted densely.
fn byte_pair_index_in<T: TokenId>(spans: &SpanTable<T>, ids: &[u32], per_part: usize, dense_from: usize, stop: &AtomicBool) -> Result<PairIndex, Error> {
    let parts: Vec<&[u32]> = ids.chunks(per_part).collect();
    let counted = count_byte_pairs(spans, &parts, dense_from, stop);
    check_stop(stop)?;
    let (mut pairs, lists, pieces) = index_byte_pairs(&counted)?;
    fill_span_lists(spans, &parts, &counted, &lists, &pieces, &mut pairs, stop);
    check_stop(stop)?;
    Ok(pairs)
}

/// A byte pair as one part of the spans counts it: the pair, its count, the spans holding it,
/// the first and the last of them seen, and the bytes the ids after the first take in its list
/// (one place in memory per pair).
#[derive(Clone, Copy)]
struct ByteCount {
    count: i64,
    pair: u32,
    spans: u32,
    first_span: u32,
    last_span: u32,
    coded: u64,
}

/// The byte pairs one part of the spans holds, counted.
struct PartCounts {
    /// For each byte pair (at its [`BytePair`]), 1 + its place in `pairs`, or 0 if the part
    /// does not hold it.
    slot_of: Vec<u32>,
    /// The pairs the part holds (in the order it met them, or by pair if counted densely).
    pairs: Vec<ByteCount>,
}

impl PartCounts {
    /// Where the pair `at` is in `pairs`, if the part holds it.
    #[inline(always)]
    fn slot(&self, at: BytePair) -> Option<usize> {
        (self.slot_of[at] as usize).checked_sub(1)
    }
}

/// A part of this many spans or more counts its byte pairs in a table of all 65,536 of them
/// (2 MiB, zeroed then read whole: a fixed cost that its pairs outweigh); a smaller one keeps
/// the counts of the pairs it meets only, one more lookup per pair.
const DENSE_FROM: usize = 1 << 14;

/// Each part's byte pairs (given up early, incomplete, if `stop` is set).
fn count_byte_pairs<T: TokenId>(spans: &SpanTable<T>, parts: &[&[u32]], dense_from: usize, stop: &AtomicBool) -> Vec<PartCounts> {
    parts
        .par_iter()
        .map(|part| if part.len() < dense_from { count_sparse(spans, part, stop) } else { count_dense(spans, part, stop) })
        .collect()
}

/// Adds an occurrence of a byte pair, `n` times, in the span `id` to its count `d`.
#[inline(always)]
fn add(d: &mut ByteCount, id: u32, n: i64) {
    d.count += n;
    if d.last_span != id {
        if d.spans == 0 {
            d.first_span = id;
        } else {
            d.coded += delta_len(d.last_span, id) as u64;
        }
        (d.spans, d.last_span) = (d.spans + 1, id);
    }
}

/// A byte pair not counted yet.
fn uncounted(at: BytePair) -> ByteCount {
    ByteCount { count: 0, pair: at as u32, spans: 0, first_span: 0, last_span: u32::MAX, coded: 0 }
}

/// A part's byte pairs, counted where `slot_of` finds them.
fn count_sparse<T: TokenId>(spans: &SpanTable<T>, part: &[u32], stop: &AtomicBool) -> PartCounts {
    let (mut slot_of, mut pairs) = (vec![0u32; 1 << 16], Vec::new());
    for (k, &id) in part.iter().enumerate() {
        if stop_due(k, stop) {
            break; // the caller drops the result
        }
        let n = spans.count(id);
        for w in spans.tokens(id).windows(2) {
            let at = byte_pair(w);
            let slot = match slot_of[at] {
                0 => {
                    pairs.push(uncounted(at));
                    slot_of[at] = pairs.len() as u32;
                    pairs.len() - 1
                }
                s => s as usize - 1,
            };
            add(&mut pairs[slot], id, n);
        }
    }
    PartCounts { slot_of, pairs }
}

/// A part's byte pairs, counted in a table of all of them, then those it holds taken out.
fn count_dense<T: TokenId>(spans: &SpanTable<T>, part: &[u32], stop: &AtomicBool) -> PartCounts {
    let mut dense: Vec<ByteCount> = (0..1 << 16).map(uncounted).collect();
    for (k, &id) in part.iter().enumerate() {
        if stop_due(k, stop) {
            break; // the caller drops the result
        }
        let n = spans.count(id);
        for w in spans.tokens(id).windows(2) {
            add(&mut dense[byte_pair(w)], id, n);
        }
    }
    let mut slot_of = vec![0u32; 1 << 16];
    let pairs: Vec<ByteCount> = dense.into_iter().filter(|d| d.spans > 0).collect();
    for (slot, d) in pairs.iter().enumerate() {
        slot_of[d.pair as usize] = slot as u32 + 1;
    }
    PartCounts { slot_of, pairs }
}

/// Where a part writes its spans of a byte pair: its piece of the pair's list (the place after
/// the previous parts' pieces), and the last span of the pair in the previous parts (0 if none),
/// which the first span of the piece is coded after.
struct Piece<'a> {
    bytes: &'a mut [u8],
    after: u32,
}

/// A part's piece of a byte pair's list, before it is cut: the part, the pair's place in the
/// part's pairs ([`PartCounts::pairs`]), the piece's size in bytes, and the span its first
/// span is coded after (see [`Piece`]).
struct PieceSize {
    part: usize,
    slot: usize,
    size: usize,
    after: u32,
}

/// A byte pair's list as [`index_byte_pairs`] makes room for it: where its coded spans start in
/// [`PairIndex::span_bytes`], and where its pieces (one per part that holds the pair, in part
/// order) end in the list of all pieces.
struct ByteList {
    ids_at: usize,
    pieces_end: usize,
}

/// The place of the byte pair `at` in the index's order (see `pairs.rs`): by later byte `t`,
/// `(x, t)` for `x <= t` by `x`, then `(t, y)` for `y < t` by `y`.
fn place(at: BytePair) -> u32 {
    let (x, y) = ((at >> 8) as u32, (at & 0xff) as u32);
    if x <= y {
        y << 9 | x
    } else {
        x << 9 | 1 << 8 | y
    }
}

/// The pair index of the byte pairs counted, token by token (see `pairs.rs`), each with a list
/// of zeros of exactly its coded size. Also the pairs' lists in the index's order, and their
/// pieces, list after list.
fn index_byte_pairs(counted: &[PartCounts]) -> Result<(PairIndex, Vec<ByteList>, Vec<PieceSize>), Error> {
    // The pairs any part holds, in the index's order: (place in the index, pair).
    let mut found: Vec<(u32, BytePair)> = counted.iter().flat_map(|c| c.pairs.iter().map(|d| (place(d.pair as usize), d.pair as usize))).collect();
    found.sort_unstable();
    found.dedup();
    // Each pair's count, coded size and where its pieces end, and the pieces.
    let mut sizes: Vec<(i64, usize, usize)> = Vec::with_capacity(found.len());
    let mut pieces: Vec<PieceSize> = Vec::with_capacity(found.len() * counted.len());
    for &(_, at) in &found {
        let (mut count, mut coded, mut after) = (0, 0, 0);
        for (part, c) in counted.iter().enumerate() {
            let Some(slot) = c.slot(at) else { continue };
            let d = &c.pairs[slot];
            let size = (delta_len(after, d.first_span) as u64 + d.coded) as usize;
            pieces.push(PieceSize { part, slot, size, after });
            (count, coded, after) = (count + d.count, coded + size, d.last_span);
        }
        sizes.push((count, coded, pieces.len()));
    }
    let mut pairs = PairIndex::default();
    pairs.reserve(found.len(), sizes.iter().map(|&(_, coded, _)| Lists::room(coded)).sum())?;
    let mut lists = Vec::with_capacity(found.len());
    let mut opened = 0;
    for (&(place, at), &(count, coded, pieces_end)) in found.iter().zip(&sizes) {
        while opened <= place >> 9 {
            pairs.open_block(opened);
            opened += 1;
        }
        let slot = pairs.push_zeros(((at >> 8) as u32, (at & 0xff) as u32), count, coded);
        lists.push(ByteList { ids_at: pairs.spans_at(slot), pieces_end });
    }
    for t in opened..256 {
        pairs.open_block(t);
    }
    Ok((pairs, lists, pieces))
}

/// Writes the lists of the byte pairs (`lists` and their `pieces`, as [`index_byte_pairs`]
/// gives them), each part of the spans its own piece of each list, in parallel: the lists are
/// cut into one piece per part holding the pair, in part order, and each part gets its pieces,
/// by the pair's place in its pairs. Given up early, incomplete, if `stop` is set.
fn fill_span_lists<T: TokenId>(
    spans: &SpanTable<T>,
    parts: &[&[u32]],
    counted: &[PartCounts],
    lists: &[ByteList],
    pieces: &[PieceSize],
    pairs: &mut PairIndex,
    stop: &AtomicBool,
) {
    let mut cut: Vec<Vec<Piece>> = counted.iter().map(|c| c.pairs.iter().map(|_| Piece { bytes: &mut [], after: 0 }).collect()).collect();
    let (mut rest, mut at_byte, mut pieces_at) = (pairs.span_bytes(), 0, 0);
    for list in lists {
        rest = &mut std::mem::take(&mut rest)[list.ids_at - at_byte..];
        at_byte = list.ids_at;
        for piece in &pieces[pieces_at..list.pieces_end] {
            let (bytes, later) = std::mem::take(&mut rest).split_at_mut(piece.size);
            cut[piece.part][piece.slot] = Piece { bytes, after: piece.after };
            (rest, at_byte) = (later, at_byte + piece.size);
        }
        pieces_at = list.pieces_end;
    }
    parts.par_iter().zip(counted).zip(cut).for_each(|((part, counts), mut pieces)| {
        // (bytes written, last span written), the last `u32::MAX` before the first.
        let mut filled = vec![(0usize, u32::MAX); pieces.len()];
        for (k, &id) in part.iter().enumerate() {
            if stop_due(k, stop) {
                break; // the caller drops the index
            }
            for w in spans.tokens(id).windows(2) {
                // The part counted every pair of its spans.
                let k = counts.slot_of[byte_pair(w)] as usize - 1;
                let (done, last) = &mut filled[k];
                if *last != id {
                    let piece = &mut pieces[k];
                    let previous = if *last == u32::MAX { piece.after } else { *last };
                    *done += put_delta(&mut piece.bytes[*done..], previous, id);
                    *last = id;
                }
            }
        }
        debug_assert!(stop.load(std::sync::atomic::Ordering::Relaxed) || pieces.iter().zip(&filled).all(|(p, f)| p.bytes.len() == f.0), "each piece is filled exactly");
    });
}
/// A pair as the index is built: its count, its spans, the last span seen, and the bytes of
/// its list of spans (coded, see `lists.rs`), then where the list's next span goes in
/// [`PairIndex::span_bytes`].
#[derive(Clone, Copy)]
struct PairCount {
    count: i64,
    spans: u32,
    last_span: u32,
    coded: usize,
}

/// The pair index of the spans `ids` of `spans`, which hold any of `tokens` tokens (the general
/// case of the dense table of byte pairs above): every pair is born at the start, in the block
/// of its later token (see `pairs.rs`), and every token has a block. For a base's encoding of
/// the spans (`extend.rs`), and for the loop's own spans when it takes back every pair it left
/// out (see `Loop::keep_every_pair`).
pub(super) fn token_pair_index<T: TokenId>(spans: &SpanTable<T>, ids: &[u32], tokens: u32, stop: &AtomicBool) -> Result<PairIndex, Error> {
    let mut counted: FxHashMap<Pair, PairCount> = FxHashMap::default();
    for (k, &id) in ids.iter().enumerate() {
        if stop_due(k, stop) {
            return Err(Error::Interrupted);
        }
        let n = spans.count(id);
        for w in spans.tokens(id).windows(2) {
            let c = counted.entry((w[0].get(), w[1].get())).or_insert(PairCount { count: 0, spans: 0, last_span: u32::MAX, coded: 0 });
            c.count += n;
            if c.last_span != id {
                let previous = if c.spans == 0 { 0 } else { c.last_span };
                c.coded += delta_len(previous, id);
                (c.spans, c.last_span) = (c.spans + 1, id);
            }
        }
    }
    // The index's order: by later token `t`, (x, t) for x <= t by x, then (t, y) for y < t by y.
    let mut found: Vec<Pair> = counted.keys().copied().collect();
    found.sort_unstable_by_key(|&(x, y)| if x <= y { (y, 0, x) } else { (x, 1, y) });
    let mut pairs = PairIndex::default();
    pairs.reserve(found.len(), counted.values().map(|c| Lists::room(c.coded)).sum::<usize>())?;
    let mut opened = 0;
    for &pair in &found {
        while opened <= pair.0.max(pair.1) {
            pairs.open_block(opened);
            opened += 1;
        }
        // panic-free: `found` holds the keys of `counted`.
        let c = counted.get_mut(&pair).expect("a counted pair");
        let slot = pairs.push_zeros(pair, c.count, c.coded);
        (c.coded, c.spans, c.last_span) = (pairs.spans_at(slot), 0, u32::MAX);
    }
    for t in opened..tokens {
        pairs.open_block(t);
    }
    check_stop(stop)?;
    // Each pair's spans, in span order (the merge relies on increasing lists).
    let bytes = pairs.span_bytes();
    for &id in ids {
        for w in spans.tokens(id).windows(2) {
            // panic-free: the first pass counted every pair of these spans.
            let c = counted.get_mut(&(w[0].get(), w[1].get())).expect("a counted pair");
            if c.last_span != id {
                let previous = if c.spans == 0 { 0 } else { c.last_span };
                c.coded += put_delta(&mut bytes[c.coded..], previous, id);
                (c.spans, c.last_span) = (c.spans + 1, id);
            }
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index of `spans` as a comparable value: its pairs by slot (pair, count, coded spans).
    fn index_of(spans: &crate::count::Spans, per_part: usize, dense_from: usize) -> Vec<(Pair, i64, Vec<u32>)> {
        let (table, ids) = SpanTable::<u16>::new(spans).unwrap();
        let index = byte_pair_index_in(&table, &ids, per_part, dense_from, &AtomicBool::new(false)).unwrap();
        index.pairs_for_tests()
    }

    #[test]
    fn sparse_and_dense_counting_build_the_same_index_over_any_parts() {
        // Spans over a few bytes (many repeats of each pair) and over all 256 (pairs met once),
        // counts up to 2^40.
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 33
        };
        let mut spans = crate::count::Spans::default();
        for i in 0..3000u64 {
            let len = 1 + next() % 12;
            let alphabet = if i % 3 == 0 { 256 } else { 5 };
            let span: Vec<u8> = (0..len).map(|_| (next() % alphabet) as u8).collect();
            spans.push(&span, if i % 97 == 0 { 1 << 40 } else { 1 + next() % 4 });
        }
        let whole_dense = index_of(&spans, usize::MAX, 0);
        assert!(whole_dense.len() > 300, "a test of many pairs");
        // One sparse part, many small ones, dense ones, and dense parts with a sparse last one.
        for (per_part, dense_from) in [(usize::MAX, usize::MAX), (3, usize::MAX), (700, 0), (700, 300)] {
            assert!(index_of(&spans, per_part, dense_from) == whole_dense, "parts of {per_part}, dense from {dense_from}");
        }
    }
}
