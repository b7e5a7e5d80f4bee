//! The merge loop's start: the pair index of the spans as given, before any merge.
//!
//! Every pair of the spans as given is a pair of two bytes, so they are counted in a dense
//! 256 x 256 table rather than a hash map, in parallel over parts of the spans, each part also
//! counting the spans that hold each pair (once per span, however often it holds it). The
//! index then gets the pairs in its order (see `pairs.rs`), each with a span list of exactly
//! its length, and each part writes its spans of each pair straight into the pair's list, after
//! the previous parts' spans, in parallel.
//!
//! Each step is a pass over the spans (about a second for tens of millions of them): the
//! passes look at the stop flag as they go and give up with [`Error::Interrupted`].

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::pairs::PairIndex;
use super::spans::{SpanTable, TokenId};
use crate::error::stop_due;
use crate::Error;

/// A byte pair as one part of the spans counts it: its count, the spans holding it, and the
/// last of them seen (one place in memory per pair).
#[derive(Clone, Copy)]
struct ByteCount {
    count: i64,
    spans: u32,
    last_span: u32,
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
    let (mut pairs, lists) = index_byte_pairs(&counted);
    fill_span_lists(spans, &parts, &counted, &lists, &mut pairs, stop);
    check_stop(stop)?;
    Ok(pairs)
}

/// Each part's dense table of byte pairs (given up early, incomplete, if `stop` is set).
fn count_byte_pairs<T: TokenId>(spans: &SpanTable<T>, parts: &[&[u32]], stop: &AtomicBool) -> Vec<Vec<ByteCount>> {
    parts
        .par_iter()
        .map(|part| {
            let mut dense = vec![ByteCount { count: 0, spans: 0, last_span: u32::MAX }; 1 << 16];
            for (k, &id) in part.iter().enumerate() {
                if stop_due(k, stop) {
                    break; // the caller drops the result
                }
                let n = spans.count(id);
                for w in spans.tokens(id).windows(2) {
                    let d = &mut dense[byte_pair(w)];
                    d.count += n;
                    if d.last_span != id {
                        (d.spans, d.last_span) = (d.spans + 1, id);
                    }
                }
            }
            dense
        })
        .collect()
}

/// The pair index of the byte pairs counted, token by token (see `pairs.rs`): `(x, t)` for
/// `x <= t`, then `(t, y)` for `y < t`, each with a list of zeros of exactly its length. Also
/// the pairs in the index's order, each with where its list's ids start in
/// [`PairIndex::span_words`].
fn index_byte_pairs(counted: &[Vec<ByteCount>]) -> (PairIndex, Vec<(BytePair, usize)>) {
    // The dense tables are read in their order once, and the pairs found put in the index's
    // order: (place in the index, pair, count, spans).
    let mut found: Vec<(u32, BytePair, i64, usize)> = Vec::new();
    for at in 0..1 << 16 {
        let (count, spans) = counted.iter().fold((0, 0), |(c, s), d| (c + d[at].count, s + d[at].spans as usize));
        if count > 0 {
            let (x, y) = ((at >> 8) as u32, (at & 0xff) as u32);
            let place = if x <= y { y << 9 | x } else { x << 9 | 1 << 8 | y };
            found.push((place, at, count, spans));
        }
    }
    found.sort_unstable_by_key(|f| f.0);
    let mut pairs = PairIndex::default();
    pairs.reserve(found.len(), found.len() + found.iter().map(|f| f.3).sum::<usize>());
    let mut lists = Vec::with_capacity(found.len());
    let mut opened = 0;
    for &(place, at, count, spans) in &found {
        while opened <= place >> 9 {
            pairs.open_block(opened);
            opened += 1;
        }
        let slot = pairs.push_zeros(((at >> 8) as u32, (at & 0xff) as u32), count, spans);
        lists.push((at, pairs.spans_at(slot)));
    }
    for t in opened..256 {
        pairs.open_block(t);
    }
    (pairs, lists)
}

/// Fills the lists of the byte pairs (`lists`, as [`index_byte_pairs`] gives them), each part
/// of the spans its own piece of each list, in parallel: the lists are cut into one piece per
/// part and pair, in part order, and each part gets its pieces. Given up early, incomplete, if
/// `stop` is set.
fn fill_span_lists<T: TokenId>(
    spans: &SpanTable<T>,
    parts: &[&[u32]],
    counted: &[Vec<ByteCount>],
    lists: &[(BytePair, usize)],
    pairs: &mut PairIndex,
    stop: &AtomicBool,
) {
    let mut list_of = vec![0u32; 1 << 16];
    for (k, &(at, _)) in lists.iter().enumerate() {
        list_of[at] = k as u32;
    }
    let mut pieces: Vec<Vec<&mut [u32]>> = (0..parts.len()).map(|_| Vec::with_capacity(lists.len())).collect();
    let (mut rest, mut at_word) = (pairs.span_words(), 0);
    for &(at, ids_at) in lists {
        rest = &mut std::mem::take(&mut rest)[ids_at - at_word..];
        at_word = ids_at;
        for (part_pieces, dense) in pieces.iter_mut().zip(counted) {
            let len = dense[at].spans as usize;
            let (piece, later) = std::mem::take(&mut rest).split_at_mut(len);
            part_pieces.push(piece);
            (rest, at_word) = (later, at_word + len);
        }
    }
    parts.par_iter().zip(pieces).for_each(|(part, mut pieces)| {
        let mut filled = vec![(0usize, u32::MAX); pieces.len()]; // (spans written, last span)
        for (k, &id) in part.iter().enumerate() {
            if stop_due(k, stop) {
                break; // the caller drops the index
            }
            for w in spans.tokens(id).windows(2) {
                let k = list_of[byte_pair(w)] as usize;
                let (done, last) = &mut filled[k];
                if *last != id {
                    pieces[k][*done] = id;
                    (*done, *last) = (*done + 1, id);
                }
            }
        }
    });
}
