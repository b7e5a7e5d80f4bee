//! The distinct spans as one flat array of token ids, and merging a pair inside them.

use rayon::prelude::*;

use super::Pair;
use crate::count::Spans;

/// Merges that touch at least this many spans are applied in parallel.
pub(super) const PARALLEL_SPANS: usize = 8192;
/// Spans per parallel task.
pub(super) const SPANS_PER_TASK: usize = 4096;

/// How many spans ahead of the one being merged to prefetch.
const AHEAD: usize = 8;

/// A hint to load the cache line holding `p`; it never faults, whatever `p` is.
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is only a hint: it does not access memory architecturally, so any
    // address is fine.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// How the span table stores token ids: `u16` when the vocabulary fits (half the memory, and
/// half the cache misses, of `u32`), `u32` otherwise.
pub trait TokenId: Copy + Eq + Send + Sync + 'static {
    /// `id`, which the caller knows to fit (the loop picks `u16` only for vocabularies of at
    /// most 2^16 tokens; a larger id is a bug, caught in debug builds).
    fn new(id: u32) -> Self;
    fn get(self) -> u32;
}

impl TokenId for u16 {
    #[inline(always)]
    fn new(id: u32) -> Self {
        debug_assert!(id <= u32::from(u16::MAX), "token id {id} does not fit 16 bits");
        id as u16
    }

    #[inline(always)]
    fn get(self) -> u32 {
        u32::from(self)
    }
}

impl TokenId for u32 {
    #[inline(always)]
    fn new(id: u32) -> Self {
        id
    }

    #[inline(always)]
    fn get(self) -> u32 {
        self
    }
}

/// Where a span lives in the flat token array, its current length, and its count: one struct,
/// so visiting a span touches one place in memory.
#[derive(Clone, Copy)]
struct SpanMeta {
    start: usize,
    count: i64,
    len: u32,
}

/// The spans with at least one pair, each with its count. Span `i` lives in
/// `tokens[start..start + len]`; merges only shorten spans, in place, so the tokens of spans
/// that are merged together lie close together in memory.
pub(super) struct SpanTable<T> {
    tokens: Vec<T>,
    meta: Vec<SpanMeta>,
}

impl<T: TokenId> SpanTable<T> {
    /// Spans shorter than two bytes hold no pair and are left out.
    pub(super) fn new(spans: &Spans) -> Self {
        let kept = || spans.iter().filter(|(bytes, n)| bytes.len() >= 2 && *n > 0);
        let total = kept().map(|(b, _)| b.len()).sum();
        let mut table = SpanTable { tokens: Vec::with_capacity(total), meta: Vec::with_capacity(kept().count()) };
        for (bytes, n) in kept() {
            table.meta.push(SpanMeta { start: table.tokens.len(), count: n as i64, len: bytes.len() as u32 });
            table.tokens.extend(bytes.iter().map(|&b| T::new(u32::from(b))));
        }
        table
    }

    pub(super) fn len(&self) -> usize {
        self.meta.len()
    }

    pub(super) fn tokens(&self, id: u32) -> &[T] {
        let m = self.meta[id as usize];
        &self.tokens[m.start..m.start + m.len as usize]
    }

    pub(super) fn count(&self, id: u32) -> i64 {
        self.meta[id as usize].count
    }

    /// Merges `pair` into `token` in the spans `ids` (increasing, no repeats), recording the
    /// neighbours of the replaced occurrences in `found`. Many spans are merged in parallel, in
    /// blocks of consecutive spans whose events are joined in block order, so the result is the
    /// same.
    pub(super) fn merge(&mut self, ids: &[u32], pair: Pair, token: u32, found: &mut Neighbours) {
        if ids.len() < PARALLEL_SPANS {
            merge_block(&mut self.tokens, &mut self.meta, (0, 0), ids, pair, token, found);
            return;
        }
        let mut blocks = Vec::with_capacity(self.len() / SPANS_PER_TASK + 1);
        let (mut tokens, mut meta) = (&mut self.tokens[..], &mut self.meta[..]);
        let (mut first, mut offset) = (0, 0);
        while !meta.is_empty() {
            let n = SPANS_PER_TASK.min(meta.len());
            let (block_meta, rest_meta) = meta.split_at_mut(n);
            let end = rest_meta.first().map_or(offset + tokens.len(), |m| m.start);
            let (block_tokens, rest_tokens) = tokens.split_at_mut(end - offset);
            blocks.push((first, offset, block_tokens, block_meta));
            (tokens, meta, first, offset) = (rest_tokens, rest_meta, first + n, end);
        }
        let joined = blocks
            .into_par_iter()
            .filter_map(|(first, offset, block_tokens, block_meta)| {
                let start = ids.partition_point(|&id| (id as usize) < first);
                let end = ids.partition_point(|&id| (id as usize) < first + block_meta.len());
                if start == end {
                    return None;
                }
                let mut found = Neighbours::default();
                merge_block(block_tokens, block_meta, (first, offset), &ids[start..end], pair, token, &mut found);
                Some(found)
            })
            .collect::<Vec<_>>();
        // In block order, each event copied once.
        for block in joined {
            found.absorb_from(block);
        }
    }
}

/// Merges `pair` into `token` in the spans `ids` of one block of the table: `meta` holds spans
/// `first..` and `tokens` the token array from `offset` on, where `(first, offset)` = `at`
/// (`(0, 0)` for the whole table). It prefetches what visiting `ids[i + AHEAD]` (its tokens)
/// and `ids[i + 2 * AHEAD]` (its place in `meta`) will read, so that the visits, which are
/// scattered over the table, do not wait on memory one after the other.
fn merge_block<T: TokenId>(
    tokens: &mut [T],
    meta: &mut [SpanMeta],
    at: (usize, usize),
    ids: &[u32],
    pair: Pair,
    token: u32,
    found: &mut Neighbours,
) {
    let (first, offset) = at;
    for (i, &id) in ids.iter().enumerate() {
        if let Some(&next) = ids.get(i + 2 * AHEAD) {
            prefetch(meta.as_ptr().wrapping_add(next as usize - first));
        }
        if let Some(&next) = ids.get(i + AHEAD) {
            prefetch(tokens.as_ptr().wrapping_add(meta[next as usize - first].start - offset));
        }
        let m = &mut meta[id as usize - first];
        let start = m.start - offset;
        found.merge_span(&mut tokens[start..start + m.len as usize], m, id, pair, token);
    }
}

/// A token next to a replaced occurrence of `(a, b)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neighbour {
    /// `x` was on the left: `(x, a)` is gone and `(x, token)` appeared.
    Left(u32),
    /// `y` was on the right: `(b, y)` is gone and `(token, y)` appeared.
    Right(u32),
}

/// The neighbours of the occurrences one merge replaced, as `(token, span, span count)`
/// events. They describe all of the merge's changes to pair counts besides the merged pair
/// itself (a token made earlier in the same span is a neighbour like any other, which keeps
/// runs such as `abab` exact).
#[derive(Default)]
pub(super) struct Neighbours {
    pub(super) left: Vec<(u32, u32, i64)>,
    pub(super) right: Vec<(u32, u32, i64)>,
}

impl Neighbours {
    fn merge_span<T: TokenId>(&mut self, tokens: &mut [T], meta: &mut SpanMeta, id: u32, pair: Pair, token: u32) {
        let n = meta.count;
        meta.len = merge_in_span(tokens, pair, token, |side| match side {
            Neighbour::Left(x) => self.left.push((x, id, n)),
            Neighbour::Right(y) => self.right.push((y, id, n)),
        }) as u32;
    }

    /// Adds `later`'s events, which come from spans after all of `self`'s.
    fn absorb_from(&mut self, mut later: Neighbours) {
        self.left.append(&mut later.left);
        self.right.append(&mut later.right);
    }

    pub(super) fn clear(&mut self) {
        self.left.clear();
        self.right.clear();
    }
}

/// Replaces each non-overlapping occurrence of `pair` in `tokens`, left to right, by `token`,
/// reporting the neighbours of each replaced occurrence. The merged span is written to the
/// front of `tokens`; returns its length.
///
/// Token ids are `u32` or `u16` ([`TokenId`]); `pair` and `token` must fit the latter.
pub fn merge_in_span<T: TokenId>(tokens: &mut [T], pair: Pair, token: u32, mut on_neighbour: impl FnMut(Neighbour)) -> usize {
    let (a, b, token_id) = (T::new(pair.0), T::new(pair.1), T::new(token));
    let n = tokens.len();
    // Up to the first occurrence nothing changes: find it without writing (many spans visited
    // hold the pair once, or no longer hold it at all).
    let Some(first) = tokens.windows(2).position(|w| w[0] == a && w[1] == b) else {
        return n;
    };
    let (mut read, mut write) = (first, first);
    while read < n {
        if read + 1 < n && tokens[read] == a && tokens[read + 1] == b {
            // `write - 1` is already the merged output; `read + 2` is still the input.
            if write > 0 {
                on_neighbour(Neighbour::Left(tokens[write - 1].get()));
            }
            if read + 2 < n {
                on_neighbour(Neighbour::Right(tokens[read + 2].get()));
            }
            tokens[write] = token_id;
            read += 2;
        } else {
            tokens[write] = tokens[read];
            read += 1;
        }
        write += 1;
    }
    write
}
