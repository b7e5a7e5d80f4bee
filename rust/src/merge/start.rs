//! The merge loop's start: the pair index of the spans as given, before any merge.
//!
//! Every pair of the spans as given is a pair of two bytes, so they are counted in a dense
//! 256 x 256 table rather than a hash map, in parallel over parts of the spans, each part also
//! counting the spans that hold each pair (once per span, however often it holds it). The
//! index then gets the pairs in its order (see `pairs.rs`), each with a span list of exactly
//! its coded size (see `lists.rs`), and each part writes its spans of each pair straight into
//! the pair's list, after the previous parts' spans, in parallel. A piece's size is known from
//! the counting: its spans' differences within the part, and the first one's from the last span
//! of the pair in the previous parts.
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

/// A byte pair as one part of the spans counts it: its count, the spans holding it, the first
/// and the last of them seen, and the bytes the ids after the first take in its list (one place
/// in memory per pair).
#[derive(Clone, Copy)]
struct ByteCount {
    count: i64,
    spans: u32,
    first_span: u32,
    last_span: u32,
    coded: u64,
}

/// A byte pair's place in the dense tables: `x << 8 | y` for `(x, y)`.
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
    let parts: Vec<&[u32]> = ids.chunks(per_part).collect();
    let counted = count_byte_pairs(spans, &parts, stop);
    check_stop(stop)?;
    let (mut pairs, lists) = index_byte_pairs(&counted)?;
    drop(counted);
    fill_span_lists(spans, &parts, &lists, &mut pairs, stop);
    check_stop(stop)?;
    Ok(pairs)
}

/// Each part's dense table of byte pairs (given up early, incomplete, if `stop` is set).
fn count_byte_pairs<T: TokenId>(spans: &SpanTable<T>, parts: &[&[u32]], stop: &AtomicBool) -> Vec<Vec<ByteCount>> {
    parts
        .par_iter()
        .map(|part| {
            let mut dense = vec![ByteCount { count: 0, spans: 0, first_span: 0, last_span: u32::MAX, coded: 0 }; 1 << 16];
            for (k, &id) in part.iter().enumerate() {
                if stop_due(k, stop) {
                    break; // the caller drops the result
                }
                let n = spans.count(id);
                for w in spans.tokens(id).windows(2) {
                    let d = &mut dense[byte_pair(w)];
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
            }
            dense
        })
        .collect()
}

/// Where a part writes its spans of a byte pair: its piece of the pair's list (the place after
/// the previous parts' pieces), and the last span of the pair in the previous parts (0 if none),
/// which the first span of the piece is coded after.
struct Piece<'a> {
    bytes: &'a mut [u8],
    after: u32,
}

/// A part's piece of a byte pair's list, before it is cut: its size in bytes, and the span its
/// first span is coded after (see [`Piece`]).
type PieceSize = (usize, u32);

/// A byte pair's list as [`index_byte_pairs`] makes room for it: where its coded spans start in
/// [`PairIndex::span_bytes`], and its pieces by part.
struct ByteList {
    pair: BytePair,
    ids_at: usize,
    pieces: Vec<PieceSize>,
}

/// The pair index of the byte pairs counted, token by token (see `pairs.rs`): `(x, t)` for
/// `x <= t`, then `(t, y)` for `y < t`, each with a list of zeros of exactly its coded size.
/// Also the pairs' lists in the index's order.
fn index_byte_pairs(counted: &[Vec<ByteCount>]) -> Result<(PairIndex, Vec<ByteList>), Error> {
    // The dense tables are read in their order once, and the pairs found put in the index's
    // order: (place in the index, pair, count, pieces).
    let mut found: Vec<(u32, BytePair, i64, Vec<PieceSize>)> = Vec::new();
    for at in 0..1 << 16 {
        let count = counted.iter().map(|d| d[at].count).sum::<i64>();
        if count > 0 {
            let mut after = 0;
            let pieces = counted
                .iter()
                .map(|d| {
                    let d = &d[at];
                    if d.spans == 0 {
                        return (0, after);
                    }
                    let piece = (delta_len(after, d.first_span) as u64 + d.coded) as usize;
                    (piece, std::mem::replace(&mut after, d.last_span))
                })
                .collect();
            let (x, y) = ((at >> 8) as u32, (at & 0xff) as u32);
            let place = if x <= y { y << 9 | x } else { x << 9 | 1 << 8 | y };
            found.push((place, at, count, pieces));
        }
    }
    found.sort_unstable_by_key(|f| f.0);
    let coded = |pieces: &[PieceSize]| pieces.iter().map(|p| p.0).sum::<usize>();
    let mut pairs = PairIndex::default();
    pairs.reserve(found.len(), found.iter().map(|f| Lists::room(coded(&f.3))).sum())?;
    let mut lists = Vec::with_capacity(found.len());
    let mut opened = 0;
    for (place, at, count, pieces) in found {
        while opened <= place >> 9 {
            pairs.open_block(opened);
            opened += 1;
        }
        let slot = pairs.push_zeros(((at >> 8) as u32, (at & 0xff) as u32), count, coded(&pieces));
        lists.push(ByteList { pair: at, ids_at: pairs.spans_at(slot), pieces });
    }
    for t in opened..256 {
        pairs.open_block(t);
    }
    Ok((pairs, lists))
}

/// Writes the lists of the byte pairs (`lists`, as [`index_byte_pairs`] gives them), each part
/// of the spans its own piece of each list, in parallel: the lists are cut into one piece per
/// part and pair, in part order, and each part gets its pieces. Given up early, incomplete, if
/// `stop` is set.
fn fill_span_lists<T: TokenId>(
    spans: &SpanTable<T>,
    parts: &[&[u32]],
    lists: &[ByteList],
    pairs: &mut PairIndex,
    stop: &AtomicBool,
) {
    let mut list_of = vec![0u32; 1 << 16];
    for (k, list) in lists.iter().enumerate() {
        list_of[list.pair] = k as u32;
    }
    let mut pieces: Vec<Vec<Piece>> = (0..parts.len()).map(|_| Vec::with_capacity(lists.len())).collect();
    let (mut rest, mut at_byte) = (pairs.span_bytes(), 0);
    for list in lists {
        rest = &mut std::mem::take(&mut rest)[list.ids_at - at_byte..];
        at_byte = list.ids_at;
        for (part_pieces, &(size, after)) in pieces.iter_mut().zip(&list.pieces) {
            let (bytes, later) = std::mem::take(&mut rest).split_at_mut(size);
            part_pieces.push(Piece { bytes, after });
            (rest, at_byte) = (later, at_byte + size);
        }
    }
    parts.par_iter().zip(pieces).for_each(|(part, mut pieces)| {
        // (bytes written, last span written), the last `u32::MAX` before the first.
        let mut filled = vec![(0usize, u32::MAX); pieces.len()];
        for (k, &id) in part.iter().enumerate() {
            if stop_due(k, stop) {
                break; // the caller drops the index
            }
            for w in spans.tokens(id).windows(2) {
                let k = list_of[byte_pair(w)] as usize;
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
