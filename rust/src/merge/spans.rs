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
    /// Width in bits.
    const BITS: u32;
    /// The largest id, as a mask of `BITS` ones.
    const MAX: u32;
    /// `id`, which the caller knows to fit (the loop picks `u16` only for vocabularies of at
    /// most 2^16 tokens; a larger id is a bug, caught in debug builds).
    fn new(id: u32) -> Self;
    fn get(self) -> u32;
}

impl TokenId for u16 {
    const BITS: u32 = 16;
    const MAX: u32 = u16::MAX as u32;
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
    const BITS: u32 = 32;
    const MAX: u32 = u32::MAX;
    #[inline(always)]
    fn new(id: u32) -> Self {
        id
    }

    #[inline(always)]
    fn get(self) -> u32 {
        self
    }
}

/// Span ids are word offsets in [`SpanTable`] divided by this: every span starts at a multiple
/// of `1 << ID_SHIFT` words, so 32-bit ids reach 2^34 words.
const ID_SHIFT: u32 = 2;

/// Header words of a span: its current length (32 bits) then its count (64 bits), split into
/// token-sized words, lowest first.
fn header_words<T: TokenId>() -> usize {
    96 / T::BITS as usize
}

/// The spans with at least one pair, each with its count, one after the other in one array of
/// token-sized words: span `id` starts at word `id << ID_SHIFT` with its header (length and
/// count), then its tokens, then padding to the next span. A span's id is where it lives, so
/// visiting it touches one place in memory. Merges only shorten spans, in place, so the tokens
/// of spans that are merged together lie close together in memory.
pub(super) struct SpanTable<T> {
    words: Vec<T>,
    /// The id of every `SPANS_PER_TASK`-th span, where parallel merges cut the table.
    blocks: Vec<u32>,
}

impl<T: TokenId> SpanTable<T> {
    /// Spans shorter than two bytes hold no pair and are left out. Fails if the table would
    /// pass the ids' reach (more than 2^34 words, see [`ID_SHIFT`]).
    pub(super) fn new(spans: &Spans) -> Result<Self, usize> {
        let kept = || spans.iter().filter(|(bytes, n)| bytes.len() >= 2 && *n > 0);
        let h = header_words::<T>();
        let total: usize = kept().map(|(b, _)| padded(h + b.len())).sum();
        if total >> ID_SHIFT >= u32::MAX as usize {
            return Err(total);
        }
        let mut table = SpanTable { words: Vec::with_capacity(total), blocks: Vec::new() };
        for (i, (bytes, n)) in kept().enumerate() {
            let id = (table.words.len() >> ID_SHIFT) as u32;
            if i % SPANS_PER_TASK == 0 {
                table.blocks.push(id);
            }
            push_bits(&mut table.words, bytes.len() as u64, 32);
            push_bits(&mut table.words, n, 64);
            table.words.extend(bytes.iter().map(|&b| T::new(u32::from(b))));
            table.words.resize(padded(table.words.len()), T::new(0));
        }
        Ok(table)
    }

    /// The ids of the spans, in order (which is increasing).
    pub(super) fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            (at < self.words.len()).then(|| {
                let id = (at >> ID_SHIFT) as u32;
                at = padded(at + header_words::<T>() + self.span_len(at));
                id
            })
        })
    }

    fn span_len(&self, at: usize) -> usize {
        read_bits(&self.words[at..], 32) as usize
    }

    pub(super) fn tokens(&self, id: u32) -> &[T] {
        let at = (id as usize) << ID_SHIFT;
        let start = at + header_words::<T>();
        &self.words[start..start + self.span_len(at)]
    }

    pub(super) fn count(&self, id: u32) -> i64 {
        let at = (id as usize) << ID_SHIFT;
        read_bits(&self.words[at + 32 / T::BITS as usize..], 64) as i64
    }

    /// Merges `pair` into `token` in the spans `ids` (increasing, no repeats), recording the
    /// neighbours of the replaced occurrences in `found`. Many spans are merged in parallel, in
    /// blocks of consecutive spans whose events are joined in block order, so the result is the
    /// same.
    pub(super) fn merge(&mut self, ids: &[u32], pair: Pair, token: u32, found: &mut Neighbours) {
        if ids.len() < PARALLEL_SPANS {
            merge_block(&mut self.words, 0, ids, pair, token, found);
            return;
        }
        let mut blocks = Vec::with_capacity(self.blocks.len());
        let mut rest = &mut self.words[..];
        for (i, &first) in self.blocks.iter().enumerate() {
            let end = self.blocks.get(i + 1).map_or(u32::MAX, |&next| next);
            let cut = self.blocks.get(i + 1).map_or(rest.len(), |&next| ((next - first) as usize) << ID_SHIFT);
            let (block, later) = rest.split_at_mut(cut);
            blocks.push((first, end, block));
            rest = later;
        }
        let joined = blocks
            .into_par_iter()
            .filter_map(|(first, end, block)| {
                let start = ids.partition_point(|&id| id < first);
                let stop = ids.partition_point(|&id| id < end);
                if start == stop {
                    return None;
                }
                let mut found = Neighbours::default();
                merge_block(block, first, &ids[start..stop], pair, token, &mut found);
                Some(found)
            })
            .collect::<Vec<_>>();
        // In block order, each event copied once.
        for block in joined {
            found.absorb_from(block);
        }
    }
}

/// `n` rounded up to a multiple of `1 << ID_SHIFT`.
fn padded(n: usize) -> usize {
    n.next_multiple_of(1 << ID_SHIFT)
}

/// Appends the low `bits` bits of `value` as token-sized words, lowest first.
fn push_bits<T: TokenId>(words: &mut Vec<T>, value: u64, bits: u32) {
    for i in (0..bits).step_by(T::BITS as usize) {
        words.push(T::new((value >> i) as u32 & T::MAX));
    }
}

/// Reads `bits` bits written by [`push_bits`] (or [`write_bits`]) at the start of `words`.
#[inline(always)]
fn read_bits<T: TokenId>(words: &[T], bits: u32) -> u64 {
    let mut value = 0;
    for (i, w) in words[..(bits / T::BITS) as usize].iter().enumerate() {
        value |= u64::from(w.get()) << (i as u32 * T::BITS);
    }
    value
}

/// Overwrites the `bits` bits at the start of `words` with `value`.
#[inline(always)]
fn write_bits<T: TokenId>(words: &mut [T], value: u64, bits: u32) {
    for (i, w) in words[..(bits / T::BITS) as usize].iter_mut().enumerate() {
        *w = T::new((value >> (i as u32 * T::BITS)) as u32 & T::MAX);
    }
}

/// Merges `pair` into `token` in the spans `ids` of one block of the table, `words`, which
/// starts with span `first` (`0` for the whole table). It prefetches the span `ids[i + AHEAD]`
/// (its header and first tokens) while merging span `ids[i]`, so that the visits, which are
/// scattered over the table, do not wait on memory one after the other.
fn merge_block<T: TokenId>(words: &mut [T], first: u32, ids: &[u32], pair: Pair, token: u32, found: &mut Neighbours) {
    let h = header_words::<T>();
    let at = |id: u32| ((id - first) as usize) << ID_SHIFT;
    for (i, &id) in ids.iter().enumerate() {
        if let Some(&next) = ids.get(i + AHEAD) {
            prefetch(words.as_ptr().wrapping_add(at(next)));
        }
        let span = &mut words[at(id)..];
        let len = read_bits(span, 32) as usize;
        let n = read_bits(&span[32 / T::BITS as usize..], 64) as i64;
        let merged = found.merge_span(&mut span[h..h + len], n, id, pair, token);
        if merged != len {
            write_bits(span, merged as u64, 32);
        }
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
    /// Merges the pair in one span, of count `n`; returns its new length.
    fn merge_span<T: TokenId>(&mut self, tokens: &mut [T], n: i64, id: u32, pair: Pair, token: u32) -> usize {
        merge_in_span(tokens, pair, token, |side| match side {
            Neighbour::Left(x) => self.left.push((x, id, n)),
            Neighbour::Right(y) => self.right.push((y, id, n)),
        })
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
