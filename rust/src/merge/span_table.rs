//! The distinct spans as one flat array of token ids, and merging a pair inside them.

use rayon::prelude::*;

use super::{too_many_words, Pair};
use crate::memory::{prefetch, try_filled};
use crate::count::Spans;
use crate::Error;

/// What building the span table is, when it runs out of memory.
const SPAN_TABLE: &str = "building the span table (the spans as token ids, for the merge loop)";

/// Merges that touch at least this many spans are applied in parallel blocks on the Rayon pool,
/// if it has more than two threads (with two, the merge loop's other thread takes half).
pub(super) const PARALLEL_SPANS: usize = 8192;
/// Spans per parallel task.
pub(super) const SPANS_PER_TASK: usize = 4096;

/// How many spans ahead of the one being merged to prefetch.
const AHEAD: usize = 8;

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

    /// The first position `i >= from` where `tokens[i] == a` and `tokens[i + 1] == b`.
    fn find_pair(tokens: &[Self], from: usize, a: Self, b: Self) -> Option<usize>;
}

/// [`TokenId::find_pair`] one position at a time.
#[inline(always)]
fn find_pair_scalar<T: TokenId>(tokens: &[T], from: usize, a: T, b: T) -> Option<usize> {
    (from..tokens.len().saturating_sub(1)).find(|&i| tokens[i] == a && tokens[i + 1] == b)
}

/// [`TokenId::find_pair`] `LANES` positions at a time (x86_64's SSE2, which every x86_64 CPU
/// has): spans visited by a merge hold a dozen tokens or more on prose, so scanning them is
/// most of a visit. `a` and `b` are the pair's tokens repeated in every lane; `cmp` compares
/// 16 bytes of tokens with them, giving a lane of ones where equal. Spans too short for one
/// 16-byte load of the tokens after each position are scanned one position at a time.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn find_pair_sse2<T: TokenId, const LANES: usize>(
    tokens: &[T],
    from: usize,
    (a_token, b_token): (T, T),
    a: std::arch::x86_64::__m128i,
    b: std::arch::x86_64::__m128i,
    cmp: impl Fn(std::arch::x86_64::__m128i, std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i,
) -> Option<usize> {
    use std::arch::x86_64::*;
    let n = tokens.len();
    if n < LANES + 1 {
        return find_pair_scalar(tokens, from, a_token, b_token);
    }
    // Positions `i..i + LANES` of the first token, with their second tokens one further: two
    // loads of `LANES` tokens, `tokens[i..i + LANES]` and `tokens[i + 1..i + 1 + LANES]`.
    let bytes_per_lane = 16 / LANES;
    let hits = |i: usize| -> u32 {
        debug_assert!(i + 1 + LANES <= n);
        // SAFETY: both loads read `LANES` tokens (16 bytes) inside `tokens`: the caller keeps
        // `i + 1 + LANES <= n`; unaligned loads need no alignment.
        unsafe {
            let first = _mm_loadu_si128(tokens.as_ptr().add(i).cast());
            let second = _mm_loadu_si128(tokens.as_ptr().add(i + 1).cast());
            _mm_movemask_epi8(_mm_and_si128(cmp(first, a), cmp(second, b))) as u32
        }
    };
    let mut i = from;
    while i + 1 + LANES <= n {
        let m = hits(i);
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize / bytes_per_lane);
        }
        i += LANES;
    }
    if i + 1 < n {
        // The last positions, in one load that ends at the span's end; lanes before `i` were
        // scanned already.
        let last = n - 1 - LANES;
        let m = hits(last) >> ((i - last) * bytes_per_lane);
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize / bytes_per_lane);
        }
    }
    None
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

    #[inline(always)]
    fn find_pair(tokens: &[Self], from: usize, a: Self, b: Self) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: SSE2 is part of x86_64.
            let (va, vb) = unsafe { (_mm_set1_epi16(a as i16), _mm_set1_epi16(b as i16)) };
            // SAFETY: as above.
            find_pair_sse2::<u16, 8>(tokens, from, (a, b), va, vb, |x, y| unsafe { _mm_cmpeq_epi16(x, y) })
        }
        #[cfg(not(target_arch = "x86_64"))]
        find_pair_scalar(tokens, from, a, b)
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

    #[inline(always)]
    fn find_pair(tokens: &[Self], from: usize, a: Self, b: Self) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: SSE2 is part of x86_64.
            let (va, vb) = unsafe { (_mm_set1_epi32(a as i32), _mm_set1_epi32(b as i32)) };
            // SAFETY: as above.
            find_pair_sse2::<u32, 4>(tokens, from, (a, b), va, vb, |x, y| unsafe { _mm_cmpeq_epi32(x, y) })
        }
        #[cfg(not(target_arch = "x86_64"))]
        find_pair_scalar(tokens, from, a, b)
    }
}

/// Span ids are word offsets in [`SpanTable`] divided by `1 << shift`, every span starting at a
/// multiple of that many words: 2 words (4 bytes of 16-bit tokens) while the table has fewer
/// than 2^33 words, else 4, so that 32-bit ids reach 2^34 words. The padding to 4 words costs
/// two bytes per span on average, a tenth of a span table of short words.
const ID_SHIFTS: [u32; 2] = [1, 2];

/// A span's header is 32 bits, split into token-sized words, lowest first: its current length
/// in the low [`LEN_BITS`] bits and its count in the others. A span of [`LONG`] tokens or more
/// holds [`LONG`] there, its length being in the 32 bits after the header (and staying there
/// as merges shorten it); a count of [`BIG_COUNT`] or more is kept in the table's list of big
/// counts, the header holding [`BIG_COUNT`]. Both are rare (a pre-token of hundreds of bytes, a
/// span seen sixteen million times), and a header of 64 bits would take four more bytes per
/// span: a seventh of a span table of short words.
fn header_words<T: TokenId>() -> usize {
    32 / T::BITS as usize
}

/// The bits of a header holding the span's length.
const LEN_BITS: u32 = 8;

/// The length a header holds for a span of this many tokens or more, whose length follows it.
const LONG: u64 = (1 << LEN_BITS) - 1;

/// The count a header holds for a count of this or more, which is in the list of big counts.
const BIG_COUNT: u64 = (1 << (32 - LEN_BITS)) - 1;

/// The words before the tokens of a span of `len` tokens: its header, and its length after it
/// if it is long.
fn prefix_words<T: TokenId>(len: usize) -> usize {
    header_words::<T>() * if len as u64 >= LONG { 2 } else { 1 }
}

/// Writes the header (and, if it is long, the length) of a span of `len` tokens counted `n` at
/// the start of `span`; returns whether `n` goes in the list of big counts.
fn write_header<T: TokenId>(span: &mut [T], len: usize, n: u64) -> bool {
    let long = len as u64 >= LONG;
    write_bits(span, if long { LONG } else { len as u64 } | n.min(BIG_COUNT) << LEN_BITS, 32);
    if long {
        write_bits(&mut span[header_words::<T>()..], len as u64, 32);
    }
    n >= BIG_COUNT
}

/// The current length of the span whose header starts `span`, and where its tokens start.
#[inline(always)]
fn span_extent<T: TokenId>(span: &[T]) -> (usize, usize) {
    let h = header_words::<T>();
    let len = read_bits(span, 32) & LONG;
    if len < LONG {
        (len as usize, h)
    } else {
        (read_bits(&span[h..], 32) as usize, 2 * h)
    }
}

/// Sets the length of the span whose header starts `span` to `len` (no more than it was).
#[inline(always)]
fn set_span_len<T: TokenId>(span: &mut [T], len: usize) {
    let header = read_bits(span, 32);
    if header & LONG < LONG {
        write_bits(span, header & !LONG | len as u64, 32);
    } else {
        write_bits(&mut span[header_words::<T>()..], len as u64, 32);
    }
}

/// The count of span `id`, whose header starts `span`, given the table's big counts (see
/// [`header_words`]).
#[inline(always)]
fn span_count<T: TokenId>(span: &[T], id: u32, big: &[(u32, u64)]) -> i64 {
    let n = read_bits(span, 32) >> LEN_BITS;
    if n < BIG_COUNT {
        return n as i64;
    }
    // panic-free: a header holds BIG_COUNT only for a span in the list of big counts.
    let at = big.binary_search_by_key(&id, |&(big_id, _)| big_id).expect("a big count is listed");
    big[at].1 as i64
}

/// The spans with at least one pair, each with its count, one after the other in one array of
/// token-sized words: span `id` starts at word `id << shift` with its header (length and
/// count), then its tokens, then padding to the next span. A span's id is where it lives, so
/// visiting it touches one place in memory. Merges only shorten spans, in place, so the tokens
/// of spans that are merged together lie close together in memory.
pub(super) struct SpanTable<T> {
    words: Vec<T>,
    /// The counts of [`BIG_COUNT`] or more, by increasing span id.
    big: Vec<(u32, u64)>,
    /// The id of every `SPANS_PER_TASK`-th span, where parallel merges cut the table.
    blocks: Vec<u32>,
    /// Bit `id` is set for every span's id: where the spans start, which their current lengths
    /// no longer tell once merges have shortened them (one bit per id: per `1 << shift`
    /// words of the table).
    starts: Vec<u64>,
    /// Span `id` starts at word `id << shift` (see [`ID_SHIFTS`]).
    shift: u32,
}

impl<T: TokenId> SpanTable<T> {
    /// The table, and the ids of its spans in order (which is increasing). Spans shorter than
    /// two bytes hold no pair and are left out. Fails if the table would pass the ids' reach
    /// (more than 2^34 words, see [`ID_SHIFTS`]).
    ///
    /// Built in two passes over groups of consecutive spans, in parallel: the words and the
    /// spans each group keeps, then each group writes its spans and their ids into its own
    /// stretch of the table and of the ids. Nothing per span is held besides the table and
    /// the ids (a list of where each span goes would take more memory than the ids).
    pub(super) fn new(spans: &Spans) -> Result<(Self, Vec<u32>), Error> {
        let kept = |(bytes, n): (&[u8], u64)| bytes.len() >= 2 && n > 0;
        let per_group = spans.len().div_ceil(rayon::current_num_threads().max(1)).max(1 << 12);
        let groups: Vec<std::ops::Range<usize>> = (0..spans.len()).step_by(per_group).map(|at| at..spans.len().min(at + per_group)).collect();
        // Per group: (words with each of ID_SHIFTS, spans kept).
        let sizes: Vec<([usize; 2], usize)> = groups
            .par_iter()
            .map(|group| {
                group.clone().map(|i| spans.get(i)).filter(|&s| kept(s)).fold(([0, 0], 0), |(words, n), (bytes, _)| {
                    (add_padded(words, prefix_words::<T>(bytes.len()) + bytes.len()), n + 1)
                })
            })
            .collect();
        let totals = sizes.iter().fold([0, 0], |[a, b], &([x, y], _)| [a + x, b + y]);
        let which = pick_shift(totals).map_err(too_many_words)?;
        let (shift, total) = (ID_SHIFTS[which], totals[which]);
        let count = sizes.iter().map(|&(_, kept)| kept).sum();
        let sizes: Vec<(usize, usize)> = sizes.iter().map(|&(words, kept)| (words[which], kept)).collect();
        let mut words = try_filled(total, T::new(0), SPAN_TABLE)?;
        let mut ids = try_filled(count, 0u32, SPAN_TABLE)?;
        let mut stretches = Vec::with_capacity(groups.len());
        let (mut rest_words, mut rest_ids, mut first) = (&mut words[..], &mut ids[..], 0);
        for (group, &(group_words, group_spans)) in groups.iter().zip(&sizes) {
            let (w, later_words) = std::mem::take(&mut rest_words).split_at_mut(group_words);
            let (i, later_ids) = std::mem::take(&mut rest_ids).split_at_mut(group_spans);
            stretches.push((group.clone(), first, w, i));
            (rest_words, rest_ids, first) = (later_words, later_ids, first + group_words);
        }
        let big: Vec<Vec<(u32, u64)>> = stretches
            .into_par_iter()
            .map(|(group, first, words, ids)| {
                let (mut at, mut next_id, mut big) = (0, ids.iter_mut(), Vec::new());
                for (bytes, n) in group.map(|i| spans.get(i)).filter(|&s| kept(s)) {
                    let span = &mut words[at..];
                    let id = ((first + at) >> shift) as u32;
                    if write_header(span, bytes.len(), n) {
                        big.push((id, n));
                    }
                    let p = prefix_words::<T>(bytes.len());
                    for (w, &b) in span[p..p + bytes.len()].iter_mut().zip(bytes) {
                        *w = T::new(u32::from(b));
                    }
                    if let Some(slot) = next_id.next() {
                        *slot = id;
                    }
                    at += padded(p + bytes.len(), shift);
                }
                big
            })
            .collect();
        let blocks = ids.iter().step_by(SPANS_PER_TASK).copied().collect();
        let starts = span_starts(&ids, words.len(), shift)?;
        Ok((SpanTable { words, big: big.concat(), blocks, starts, shift }, ids))
    }

    /// [`SpanTable::new`] for spans already made of tokens: span `i < len` is `span(i)`, its
    /// tokens and count (a base's encoding of the spans, see `extend.rs`).
    pub(super) fn from_tokens<'a>(len: usize, span: impl Fn(usize) -> (&'a [u32], u64)) -> Result<(Self, Vec<u32>), Error> {
        // The length of span `i` if it is kept (two tokens or more, counted).
        let kept = |i: usize| {
            let (tokens, n) = span(i);
            (tokens.len() >= 2 && n > 0).then_some(tokens.len())
        };
        let totals = (0..len).filter_map(kept).fold([0, 0], |words, n| add_padded(words, prefix_words::<T>(n) + n));
        let shift = ID_SHIFTS[pick_shift(totals).map_err(too_many_words)?];
        let mut starts: Vec<(usize, usize)> = Vec::new();
        let mut total = 0;
        for i in 0..len {
            if let Some(n) = kept(i) {
                starts.push((i, total));
                total += padded(prefix_words::<T>(n) + n, shift);
            }
        }
        let mut words = try_filled(total, T::new(0), SPAN_TABLE)?;
        let mut big = Vec::new();
        for &(i, at) in &starts {
            let (tokens, n) = span(i);
            if write_header(&mut words[at..], tokens.len(), n) {
                big.push(((at >> shift) as u32, n));
            }
            let p = at + prefix_words::<T>(tokens.len());
            for (w, &t) in words[p..p + tokens.len()].iter_mut().zip(tokens) {
                *w = T::new(t);
            }
        }
        let ids: Vec<u32> = starts.iter().map(|&(_, at)| (at >> shift) as u32).collect();
        let blocks = ids.iter().step_by(SPANS_PER_TASK).copied().collect();
        let starts = span_starts(&ids, words.len(), shift)?;
        Ok((SpanTable { words, big, blocks, starts, shift }, ids))
    }

    /// The ids of the spans, in order.
    pub(super) fn ids(&self) -> Vec<u32> {
        let mut ids = Vec::new();
        for (i, &bits) in self.starts.iter().enumerate() {
            let mut rest = bits;
            while rest != 0 {
                ids.push((i * 64) as u32 + rest.trailing_zeros());
                rest &= rest - 1;
            }
        }
        ids
    }

    /// Whether [`SpanTable::merge`] would merge the spans `ids` in parallel blocks.
    pub(super) fn merges_in_parallel(&self, ids: &[u32]) -> bool {
        ids.len() >= PARALLEL_SPANS && rayon::current_num_threads() > 2
    }

    /// The table cut before span `id`: the spans before it, and the spans from it on, each
    /// to be merged on its own.
    pub(super) fn split_at(&mut self, id: u32) -> (SpanView<'_, T>, SpanView<'_, T>) {
        let (below, above) = self.words.split_at_mut((id as usize) << self.shift);
        let (big, shift) = (&self.big[..], self.shift);
        (SpanView { words: below, first: 0, big, shift }, SpanView { words: above, first: id, big, shift })
    }

    /// Asks for the headers of the spans `ids`.
    pub(super) fn prefetch(&self, ids: &[u32]) {
        for &id in ids {
            prefetch(self.words.as_ptr().wrapping_add((id as usize) << self.shift));
        }
    }

    pub(super) fn tokens(&self, id: u32) -> &[T] {
        let span = &self.words[(id as usize) << self.shift..];
        let (len, start) = span_extent(span);
        &span[start..start + len]
    }

    pub(super) fn count(&self, id: u32) -> i64 {
        span_count(&self.words[(id as usize) << self.shift..], id, &self.big)
    }

    /// Merges `pair` into `token` in the spans `ids` (increasing, no repeats), recording the
    /// neighbours of the replaced occurrences in `neighbours`. Many spans, on a pool of more than
    /// two threads, are merged in parallel, in blocks of consecutive spans whose events are
    /// joined in block order, so the result is the same (with two, the loop shares merges with
    /// its other thread through [`SpanTable::split_at`] instead).
    pub(super) fn merge(&mut self, ids: &[u32], pair: Pair, token: u32, neighbours: &mut Neighbours) {
        if !self.merges_in_parallel(ids) {
            merge_block(&mut self.words, 0, self.shift, &self.big, ids, pair, token, neighbours);
            return;
        }
        let mut blocks = Vec::with_capacity(self.blocks.len());
        let (mut rest, big, shift) = (&mut self.words[..], &self.big[..], self.shift);
        for (i, &first) in self.blocks.iter().enumerate() {
            let end = self.blocks.get(i + 1).map_or(u32::MAX, |&next| next);
            let cut = self.blocks.get(i + 1).map_or(rest.len(), |&next| ((next - first) as usize) << self.shift);
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
                let mut block_neighbours = Neighbours::default();
                merge_block(block, first, shift, big, &ids[start..stop], pair, token, &mut block_neighbours);
                Some(block_neighbours)
            })
            .collect::<Vec<_>>();
        // In block order, each event copied once.
        for block in joined {
            neighbours.absorb_from(block);
        }
    }
}

/// A stretch of the span table: the spans from `first` on, as far as `words` reaches.
pub(super) struct SpanView<'a, T> {
    words: &'a mut [T],
    first: u32,
    /// The table's big counts.
    big: &'a [(u32, u64)],
    /// The table's [`SpanTable::shift`].
    shift: u32,
}

impl<T: TokenId> SpanView<'_, T> {
    /// [`SpanTable::merge`] for spans `ids` of this stretch (increasing, no repeats), on this
    /// thread.
    pub(super) fn merge(&mut self, ids: &[u32], pair: Pair, token: u32, neighbours: &mut Neighbours) {
        merge_block(self.words, self.first, self.shift, self.big, ids, pair, token, neighbours);
    }
}

/// The bitmap of span starts of [`SpanTable::starts`]: bit `id` set for each of `ids`, in a
/// table of `words` words whose ids are offsets divided by `1 << shift`.
fn span_starts(ids: &[u32], words: usize, shift: u32) -> Result<Vec<u64>, Error> {
    let mut starts = try_filled((words >> shift).div_ceil(64), 0u64, SPAN_TABLE)?;
    for &id in ids {
        starts[id as usize / 64] |= 1 << (id % 64);
    }
    Ok(starts)
}

/// `n` rounded up to a multiple of `1 << shift`.
fn padded(n: usize, shift: u32) -> usize {
    n.next_multiple_of(1 << shift)
}

/// `words`, a table's size with each of [`ID_SHIFTS`], with a span of `n` words (header and
/// tokens) added.
fn add_padded([a, b]: [usize; 2], n: usize) -> [usize; 2] {
    [a + padded(n, ID_SHIFTS[0]), b + padded(n, ID_SHIFTS[1])]
}

/// Which of [`ID_SHIFTS`] a table of `words[k]` words with each of them takes: the first whose
/// ids fit 32 bits, else the error of the largest table.
fn pick_shift(words: [usize; 2]) -> Result<usize, usize> {
    (0..ID_SHIFTS.len()).find(|&k| words[k] >> ID_SHIFTS[k] < u32::MAX as usize).ok_or(words[ID_SHIFTS.len() - 1])
}

/// Reads `bits` bits written by [`write_bits`] at the start of `words`.
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
/// starts with span `first` (`0` for the whole table), `big` being the table's big counts. It prefetches the span `ids[i + AHEAD]`
/// (its header and first tokens) while merging span `ids[i]`, so that the visits, which are
/// scattered over the table, do not wait on memory one after the other.
#[allow(clippy::too_many_arguments)]
fn merge_block<T: TokenId>(words: &mut [T], first: u32, shift: u32, big: &[(u32, u64)], ids: &[u32], pair: Pair, token: u32, neighbours: &mut Neighbours) {
    let at = |id: u32| ((id - first) as usize) << shift;
    for (i, &id) in ids.iter().enumerate() {
        if let Some(&next) = ids.get(i + AHEAD) {
            prefetch(words.as_ptr().wrapping_add(at(next)));
            prefetch(words.as_ptr().wrapping_add(at(next) + 64 / std::mem::size_of::<T>()));
        }
        let span = &mut words[at(id)..];
        let (len, start) = span_extent(span);
        let n = span_count(span, id, big);
        let merged = neighbours.merge_span(&mut span[start..start + len], n, id, pair, token);
        if merged != len {
            set_span_len(span, merged);
        }
    }
}

/// Adds the event `(x, id, n)` to `events`, or `n` to the last event if that is of the same
/// neighbour and span: a run such as `aaaa...` in a span gives one alike event per occurrence
/// (16 bytes each, hundreds of megabytes for long runs), and the neighbour sums only add them
/// up by neighbour and list each span once, so a sum kept in one event is the same to them.
#[inline(always)]
fn add_event(events: &mut Vec<(u32, u32, i64)>, x: u32, id: u32, n: i64) {
    match events.last_mut() {
        Some(last) if last.0 == x && last.1 == id => last.2 += n,
        _ => events.push((x, id, n)),
    }
}

/// A span's events on one side beyond this many are summed by neighbour when the span is done.
const COMBINE_EVENTS: usize = 32;

/// Sums the events of one span by neighbour when they are many: a long span that holds the pair
/// next to the same few tokens again and again, not in a row (`🙂😀🙂…` merged by its lead
/// bytes), would give one 16-byte event per occurrence, as much memory as the span table. The
/// neighbour sums add events up by neighbour and list each span once, so a span's events
/// summed by neighbour (in any order) are the same to them.
#[derive(Default)]
struct Combiner {
    /// Per neighbour token: the stamp of the last span that saw it, and where in that span's
    /// events its sum is.
    seen: Vec<(u32, u32)>,
    stamp: u32,
}

impl Combiner {
    /// Sums `events[start..]`, one span's, by neighbour, each sum where its neighbour first
    /// came, if there are more than [`COMBINE_EVENTS`]. One pass, no sort.
    ///
    /// This runs for every span merged, and nearly always has nothing to do: the check is
    /// inlined and the work is not, so that the common case costs no call.
    #[inline(always)]
    fn combine(&mut self, events: &mut Vec<(u32, u32, i64)>, start: usize) {
        if events.len() - start > COMBINE_EVENTS {
            self.combine_many(events, start);
        }
    }

    #[inline(never)]
    fn combine_many(&mut self, events: &mut Vec<(u32, u32, i64)>, start: usize) {
        if self.stamp == u32::MAX {
            self.seen.iter_mut().for_each(|s| *s = (0, 0));
            self.stamp = 0;
        }
        self.stamp += 1;
        let stamp = self.stamp;
        let mut write = start;
        for read in start..events.len() {
            let e = events[read];
            let x = e.0 as usize;
            if x >= self.seen.len() {
                self.seen.resize(x + 1, (0, 0));
            }
            let seen = &mut self.seen[x];
            if seen.0 == stamp {
                events[start + seen.1 as usize].2 += e.2;
            } else {
                *seen = (stamp, (write - start) as u32);
                events[write] = e;
                write += 1;
            }
        }
        events.truncate(write);
    }
}

/// A token next to a replaced occurrence of `(a, b)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neighbour {
    /// `x` was on the left: `(x, a)` lost the occurrence and `(x, token)` gained one.
    Left(u32),
    /// `y` was on the right: `(b, y)` lost the occurrence and `(token, y)` gained one.
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
    combiner: Combiner,
}

impl Neighbours {
    /// Merges the pair in one span, of count `n`; returns its new length.
    fn merge_span<T: TokenId>(&mut self, tokens: &mut [T], n: i64, id: u32, pair: Pair, token: u32) -> usize {
        let starts = (self.left.len(), self.right.len());
        let merged = merge_in_span(tokens, pair, token, |side| match side {
            Neighbour::Left(x) => add_event(&mut self.left, x, id, n),
            Neighbour::Right(y) => add_event(&mut self.right, y, id, n),
        });
        self.combiner.combine(&mut self.left, starts.0);
        self.combiner.combine(&mut self.right, starts.1);
        merged
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
    // Up to the first occurrence nothing changes (many spans visited hold the pair once, or no
    // longer hold it at all). From there, `tokens[..write]` is the merged output and
    // `tokens[read..]` still the input, with `write <= read`.
    let Some(mut read) = T::find_pair(tokens, 0, a, b) else {
        return n;
    };
    let mut write = read;
    loop {
        // An occurrence at `read`: its left neighbour is already output, its right one input.
        if write > 0 {
            on_neighbour(Neighbour::Left(tokens[write - 1].get()));
        }
        if read + 2 < n {
            on_neighbour(Neighbour::Right(tokens[read + 2].get()));
        }
        tokens[write] = token_id;
        write += 1;
        read += 2;
        let next = T::find_pair(tokens, read, a, b).unwrap_or(n);
        // The tokens up to the next occurrence (or the end) move down unchanged.
        for i in read..next {
            tokens[write + i - read] = tokens[i];
        }
        write += next - read;
        if next >= n {
            return write;
        }
        read = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator, so the tests need no extra crate.
    fn tokens<T: TokenId>(seed: u64, len: usize, alphabet: u32) -> Vec<T> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // Ids near the top of the type's range too, where signed lanes would compare wrong.
                let x = (state >> 33) as u32 % alphabet;
                T::new(if x % 2 == 0 { x } else { T::MAX - x })
            })
            .collect()
    }

    #[test]
    fn spans_start_every_two_words_while_the_ids_reach_and_every_four_past_it() {
        let reach = |shift: u32| (u32::MAX as usize) << shift; // the first table too large
        assert_eq!(pick_shift([1000, 1200]), Ok(0));
        assert_eq!(pick_shift([reach(1) - 2, reach(2) - 4]), Ok(0));
        assert_eq!(pick_shift([reach(1), reach(2) - 4]), Ok(1));
        assert_eq!(pick_shift([reach(1) + 2, reach(2)]), Err(reach(2)));
        // A table of spans of every length from 2 to 40 bytes: padded to two words, every span
        // at an even word, its tokens and count read back through its id.
        let spans: crate::count::Spans = (2..40usize).map(|len| (vec![b'a' + len as u8; len], len as u64)).collect();
        let (table, ids) = SpanTable::<u16>::new(&spans).unwrap();
        assert_eq!(table.shift, 1);
        assert_eq!(table.ids(), ids);
        assert_eq!(table.words.len(), (2..40usize).map(|len| (header_words::<u16>() + len).next_multiple_of(2)).sum::<usize>());
        for (&id, len) in ids.iter().zip(2..40usize) {
            assert_eq!(table.tokens(id), &vec![u16::from(b'a' + len as u8); len][..]);
            assert_eq!(table.count(id), len as i64);
        }
    }

    /// Headers of every length around [`LONG`] and count around [`BIG_COUNT`], on both id
    /// widths: written, read back, shortened (a long span keeps its length after the header,
    /// whatever it becomes), the count unchanged.
    fn headers_round_trip<T: TokenId>() {
        let big = |id: u32, n: u64| if n >= BIG_COUNT { vec![(id, n)] } else { Vec::new() };
        for len in [2usize, 254, 255, 256, 70_000] {
            for n in [1, BIG_COUNT - 1, BIG_COUNT, BIG_COUNT + 1, u64::from(u32::MAX) + 9] {
                let mut span = vec![T::new(0); 2 * header_words::<T>() + len];
                assert_eq!(write_header(&mut span, len, n), n >= BIG_COUNT, "{len} {n}");
                assert_eq!(prefix_words::<T>(len), header_words::<T>() * if len >= 255 { 2 } else { 1 });
                assert_eq!(span_extent(&span), (len, prefix_words::<T>(len)));
                assert_eq!(span_count(&span, 3, &big(3, n)), n as i64);
                for shorter in [len - 1, 3, 2].into_iter().filter(|&k| k <= len) {
                    set_span_len(&mut span, shorter);
                    assert_eq!(span_extent(&span), (shorter, prefix_words::<T>(len)), "{len} -> {shorter}");
                    assert_eq!(span_count(&span, 3, &big(3, n)), n as i64, "{len} -> {shorter}, counted {n}");
                }
            }
        }
    }

    #[test]
    fn headers_round_trip_u16() {
        headers_round_trip::<u16>();
    }

    #[test]
    fn headers_round_trip_u32() {
        headers_round_trip::<u32>();
    }

    #[test]
    fn a_run_gives_one_event_per_neighbour_and_span() {
        // `a` * 1000 merged by (a, a): 500 occurrences, 499 with a left neighbour (the new
        // token) and 499 with a right one (`a`): one event each, its count the sum.
        let (a, token, n) = (97u32, 300u32, 7i64);
        let mut found = Neighbours::default();
        for id in [4, 9] {
            let mut run = vec![a as u16; 1000];
            assert_eq!(found.merge_span(&mut run, n, id, (a, a), token), 500);
        }
        assert_eq!(found.left, vec![(token, 4, 499 * n), (token, 9, 499 * n)]);
        assert_eq!(found.right, vec![(a, 4, 499 * n), (a, 9, 499 * n)]);
        // Alike events of different spans, or of other neighbours in between, stay apart.
        let mut mixed = Neighbours::default();
        let mut span: Vec<u16> = [1, 2, 3, 1, 2, 5, 1, 2, 3].iter().map(|&t| t as u16).collect();
        assert_eq!(mixed.merge_span(&mut span, 1, 0, (1, 2), token), 6);
        assert_eq!(mixed.left, vec![(3, 0, 1), (5, 0, 1)]);
        assert_eq!(mixed.right, vec![(3, 0, 1), (5, 0, 1), (3, 0, 1)]);
    }

    #[test]
    fn a_spans_many_events_are_summed_by_neighbour() {
        // Random spans over a few tokens, some long. Per (neighbour, span), the events kept
        // sum to one event per occurrence. A span that gave more than COMBINE_EVENTS events
        // (alike ones in a row already one) keeps one per neighbour, in the order they first
        // came; the others keep theirs as they came. Spans stay in order.
        use std::collections::BTreeMap;
        let (token, (a, b)) = (300u32, (0u32, u32::from(u16::MAX) - 1));
        let mut combined = 0;
        for seed in 0..400u64 {
            let mut found = Neighbours::default();
            // Per side: the sums per (neighbour, span), and each span's events in a row as they came.
            let mut sums: [BTreeMap<(u32, u32), i64>; 2] = Default::default();
            let mut came: [Vec<(u32, u32, i64)>; 2] = Default::default();
            for id in 0..1 + (seed % 5) as u32 {
                let len = if (seed + u64::from(id)) % 3 == 0 { 700 } else { (seed as usize * 7 + id as usize) % 60 };
                let input: Vec<u16> = tokens(seed * 31 + u64::from(id), len, 4);
                let n = 1 + i64::from(id) * 3;
                let mut plain = input.clone();
                let plain_len = merge_in_span(&mut plain, (a, b), token, |side| {
                    let (side, x) = match side {
                        Neighbour::Left(x) => (0, x),
                        Neighbour::Right(y) => (1, y),
                    };
                    *sums[side].entry((x, id)).or_default() += n;
                    match came[side].last_mut() {
                        Some(last) if (last.0, last.1) == (x, id) => last.2 += n,
                        _ => came[side].push((x, id, n)),
                    }
                });
                let mut span = input;
                assert_eq!(found.merge_span(&mut span, n, id, (a, b), token), plain_len);
                assert_eq!(span[..plain_len], plain[..plain_len]);
            }
            for (side, events) in [&found.left, &found.right].into_iter().enumerate() {
                assert!(events.windows(2).all(|w| w[0].1 <= w[1].1), "seed {seed}: spans in order");
                let mut got: BTreeMap<(u32, u32), i64> = BTreeMap::new();
                for &(x, id, n) in events.iter() {
                    *got.entry((x, id)).or_default() += n;
                }
                assert_eq!(got, sums[side], "seed {seed} side {side}");
                for id in 0..1 + (seed % 5) as u32 {
                    let kept: Vec<(u32, u32, i64)> = events.iter().copied().filter(|e| e.1 == id).collect();
                    let as_came: Vec<(u32, u32, i64)> = came[side].iter().copied().filter(|e| e.1 == id).collect();
                    if as_came.len() > COMBINE_EVENTS {
                        let mut by_neighbour: Vec<(u32, u32, i64)> = Vec::new();
                        for &(x, id, _) in &as_came {
                            if !by_neighbour.iter().any(|e| e.0 == x) {
                                by_neighbour.push((x, id, sums[side][&(x, id)]));
                            }
                        }
                        assert_eq!(kept, by_neighbour, "seed {seed} side {side} span {id}");
                        combined += 1;
                    } else {
                        assert_eq!(kept, as_came, "seed {seed} side {side} span {id}");
                    }
                }
            }
        }
        assert!(combined > 100, "the draws must reach the combining: {combined}");
    }

    #[test]
    fn combining_goes_on_past_its_last_stamp() {
        // Around the stamp's wrap, each span is still summed alone: no sum of an earlier span
        // is taken for this one's.
        let mut combiner = Combiner { seen: Vec::new(), stamp: u32::MAX - 2 };
        let mut events = Vec::new();
        for id in 0..4u32 {
            let start = events.len();
            events.extend((0..40).map(|k| (k % 2 + id, id, 1i64)));
            combiner.combine(&mut events, start);
            assert_eq!(events[start..], [(id, id, 20), (id + 1, id, 20)], "span {id}");
        }
        assert_eq!(combiner.stamp, 2);
    }

    fn find_pair_agrees_with_a_scan<T: TokenId + std::fmt::Debug>() {
        for seed in 0..3000 {
            let len = (seed % 41) as usize;
            let t: Vec<T> = tokens(seed, len, 3);
            let (a, b) = (T::new(0), T::new(T::MAX - 1));
            for from in 0..len + 2 {
                let want = (from..len.saturating_sub(1)).find(|&i| t[i] == a && t[i + 1] == b);
                assert_eq!(T::find_pair(&t, from, a, b), want, "{t:?} from {from}");
            }
        }
    }

    #[test]
    fn find_pair_agrees_with_a_scan_u16() {
        find_pair_agrees_with_a_scan::<u16>();
    }

    #[test]
    fn find_pair_agrees_with_a_scan_u32() {
        find_pair_agrees_with_a_scan::<u32>();
    }

    /// The merge rule, written plainly: a new vector, left to right.
    fn merged_plainly(t: &[u32], (a, b): Pair, token: u32) -> (Vec<u32>, Vec<Neighbour>) {
        let (mut out, mut seen, mut i) = (Vec::new(), Vec::new(), 0);
        while i < t.len() {
            if i + 1 < t.len() && (t[i], t[i + 1]) == (a, b) {
                if let Some(&x) = out.last() {
                    seen.push(Neighbour::Left(x));
                }
                if let Some(&y) = t.get(i + 2) {
                    seen.push(Neighbour::Right(y));
                }
                out.push(token);
                i += 2;
            } else {
                out.push(t[i]);
                i += 1;
            }
        }
        (out, seen)
    }

    fn merge_in_span_agrees_with_the_plain_rule<T: TokenId>() {
        for seed in 0..5000 {
            let t: Vec<T> = tokens(seed, (seed % 70) as usize, 3);
            let wide: Vec<u32> = t.iter().map(|x| x.get()).collect();
            // Pairs of equal tokens too, where occurrences overlap.
            for pair in [(0, T::MAX - 1), (0, 0), (T::MAX - 1, T::MAX - 1), (T::MAX - 1, 0)] {
                let token = 2;
                let (want, want_seen) = merged_plainly(&wide, pair, token);
                let (mut got, mut seen) = (t.clone(), Vec::new());
                let len = merge_in_span(&mut got, pair, token, |side| seen.push(side));
                let got: Vec<u32> = got[..len].iter().map(|x| x.get()).collect();
                assert_eq!((got, seen), (want, want_seen), "{wide:?} {pair:?}");
            }
        }
    }

    #[test]
    fn merge_in_span_agrees_with_the_plain_rule_u16() {
        merge_in_span_agrees_with_the_plain_rule::<u16>();
    }

    #[test]
    fn merge_in_span_agrees_with_the_plain_rule_u32() {
        merge_in_span_agrees_with_the_plain_rule::<u32>();
    }
}
