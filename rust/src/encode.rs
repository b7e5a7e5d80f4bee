//! Encoding: the tokens a text becomes under a set of mergeable ranks, exactly as tiktoken's
//! `encode_ordinary` makes them. Measuring compression (the command line's report,
//! `bpeforge eval`) counts tokens with it rather than with tiktoken, so that it never hands
//! tiktoken a text its regex engine gives up on, and so that its time grows with the text: a
//! span of n bytes costs O(n log n) here, where tiktoken's merge loop is quadratic in n.
//!
//! tiktoken's rule, for each span the pattern matches (text between matches is dropped): a span
//! that is a token is that token; otherwise the span starts as its single bytes, and the adjacent
//! pair of parts whose concatenation has the lowest rank is merged, the leftmost of equal ranks
//! first, until no adjacent pair's concatenation is a token.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::AtomicBool;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{stop_due, Error};
use crate::memory::{try_reserve, try_reserve_exact};
use crate::Splitter;

/// What [`Error::OutOfMemory`] says encoding was doing.
const STAGE: &str = "encoding a long span (its parts as they merge)";

/// The `len` items of `items` in a new vector reserved fallibly (see [`crate::memory::try_reserve`]).
fn try_collect<T>(len: usize, items: impl Iterator<Item = T>) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    try_reserve_exact(&mut v, len, STAGE)?;
    v.extend(items);
    Ok(v)
}

/// Spans at least this long are merged with a heap; shorter ones by tiktoken's own loop (a scan
/// over the parts per merge), which is faster on the short spans that make up most text.
const HEAP_FROM: usize = 64;

/// Mergeable ranks, ready to encode with.
#[derive(Debug, Clone)]
pub struct Encoder {
    ranks: FxHashMap<Box<[u8]>, u32>,
}

/// How many tokens some texts become, and how many of their bytes those tokens cover (the
/// bytes the pattern matched).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCount {
    pub tokens: u64,
    pub bytes: u64,
}

impl std::ops::Add for TokenCount {
    type Output = TokenCount;
    fn add(self, other: TokenCount) -> TokenCount {
        TokenCount { tokens: self.tokens + other.tokens, bytes: self.bytes + other.bytes }
    }
}

impl Encoder {
    /// An encoder for `ranks` (token bytes and rank). Every single byte must have a rank (any
    /// text could need it), and no two tokens may share their bytes.
    pub fn new(ranks: impl IntoIterator<Item = (Vec<u8>, u32)>) -> Result<Self, Error> {
        let mut map = FxHashMap::default();
        let mut ranks_seen = FxHashSet::default();
        for (bytes, rank) in ranks {
            let bytes = bytes.into_boxed_slice();
            if map.contains_key(&bytes) {
                return Err(Error::InvalidRanks(format!("the bytes {bytes:?} have two ranks")));
            }
            // Parts are merged by their ranks (and u32::MAX marks "no rank"): each must be one token's.
            if rank == u32::MAX || !ranks_seen.insert(rank) {
                return Err(Error::InvalidRanks(format!("rank {rank} is given to two tokens or is out of range")));
            }
            map.insert(bytes, rank);
        }
        if let Some(b) = (0..=255u8).find(|&b| !map.contains_key(&[b][..])) {
            return Err(Error::InvalidRanks(format!("the single byte {b} has no rank")));
        }
        Ok(Self { ranks: map })
    }

    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        self.ranks.get(bytes).copied()
    }

    /// Appends the tokens of one span to `out`. A long span needs memory in proportion to its
    /// bytes (see [`Encoder::encode_by_merges`]): [`Error::OutOfMemory`] if it cannot be had.
    pub fn encode_span(&self, span: &[u8], out: &mut Vec<u32>) -> Result<(), Error> {
        if span.is_empty() {
            return Ok(());
        }
        if let Some(rank) = self.rank(span) {
            try_reserve(out, 1, STAGE)?;
            out.push(rank);
            return Ok(());
        }
        self.encode_by_merges(span, out)
    }

    /// Appends the tokens that merging pairs makes of `span` (not empty), without tiktoken's
    /// first step (a span that is a token is that token). The two agree on every token of
    /// ranks that BPE training made; a token they disagree on cannot be reached by merging
    /// pairs (see `merge/extend.rs`, which refuses to extend such ranks).
    /// The parts of a long span take tens of bytes per byte while they merge, reserved fallibly:
    /// [`Error::OutOfMemory`] if they cannot be had.
    pub fn encode_by_merges(&self, span: &[u8], out: &mut Vec<u32>) -> Result<(), Error> {
        let ends = if span.len() < HEAP_FROM { self.merge_by_scan(span) } else { self.merge_by_heap(span)? };
        try_reserve(out, ends.len(), STAGE)?;
        let mut start = 0;
        for end in ends {
            // panic-free: a part is a single byte (each has a rank) or two parts that had one.
            out.push(self.rank(&span[start..end]).expect("every part of a merged span is a token"));
            start = end;
        }
        Ok(())
    }

    /// The tokens of `text`, split by `splitter`: tiktoken's `encode_ordinary`.
    pub fn encode(&self, text: &str, splitter: &Splitter) -> Result<Vec<u32>, Error> {
        let mut out = Vec::new();
        let mut failed = Ok(());
        splitter.for_each_span(text, |span| {
            if failed.is_ok() {
                failed = self.encode_span(span.as_bytes(), &mut out);
            }
        })?;
        failed.map(|()| out)
    }

    /// How many tokens `text` becomes, and the bytes they cover, without keeping the tokens.
    pub fn count(&self, text: &str, splitter: &Splitter, stop: &AtomicBool) -> Result<TokenCount, Error> {
        let mut count = TokenCount::default();
        let mut tokens = Vec::new();
        let mut seen = 0usize;
        let mut failed = Ok(());
        splitter.for_each_span(text, |span| {
            seen += 1;
            if failed.is_err() {
                return;
            }
            if stop_due(seen, stop) {
                failed = Err(Error::Interrupted);
                return;
            }
            tokens.clear();
            failed = self.encode_span(span.as_bytes(), &mut tokens);
            count.tokens += tokens.len() as u64;
            count.bytes += span.len() as u64;
        })?;
        failed.map(|()| count)
    }

    /// [`Encoder::count`] over many texts, in parallel.
    pub fn count_all<T: AsRef<str> + Sync>(&self, texts: &[T], splitter: &Splitter, stop: &AtomicBool) -> Result<TokenCount, Error> {
        texts
            .par_iter()
            .map(|text| self.count(text.as_ref(), splitter, stop))
            .try_reduce(TokenCount::default, |a, b| Ok(a + b))
    }

    /// Where the parts of `piece` end once merged, by tiktoken's loop: the parts with the rank
    /// of each part joined to its right neighbour, and a scan for the lowest after each merge.
    fn merge_by_scan(&self, piece: &[u8]) -> Vec<usize> {
        const NONE: u32 = u32::MAX;
        let rank_of = |start: usize, end: usize| self.rank(&piece[start..end]).unwrap_or(NONE);
        // (start of the part, rank of it joined with the next part)
        let mut parts: Vec<(usize, u32)> = (0..piece.len() - 1).map(|i| (i, rank_of(i, i + 2))).collect();
        parts.push((piece.len() - 1, NONE));
        parts.push((piece.len(), NONE));
        loop {
            let mut lowest = (NONE, usize::MAX);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < lowest.0 {
                    lowest = (rank, i);
                }
            }
            let (rank, i) = lowest;
            if rank == NONE {
                break;
            }
            // The ranks of the merged part with its neighbours, read before parts[i + 1] goes.
            let joined = |parts: &[(usize, u32)], i: usize| {
                if i + 3 < parts.len() { rank_of(parts[i].0, parts[i + 3].0) } else { NONE }
            };
            if i > 0 {
                parts[i - 1].1 = joined(&parts, i - 1);
            }
            parts[i].1 = joined(&parts, i);
            parts.remove(i + 1);
        }
        parts[1..].iter().map(|&(start, _)| start).collect()
    }

    /// The same merges as [`Encoder::merge_by_scan`], with the candidate pairs in a heap ordered
    /// by (rank, start): a pair is (left part's start, right part's end), still current while
    /// the left part lives and its right neighbour ends there (parts only grow, so a pair with
    /// those two ends is the same pair). What two tokens make is remembered by their ranks, so
    /// a long span of few distinct tokens (a run of spaces) hashes each pair's bytes once.
    fn merge_by_heap(&self, piece: &[u8]) -> Result<Vec<usize>, Error> {
        const NONE: u32 = u32::MAX;
        let n = piece.len();
        let mut next: Vec<usize> = try_collect(n, 1..=n)?;
        let mut prev: Vec<usize> = try_collect(n, (0..n).map(|i| i.wrapping_sub(1)))?;
        // The rank of the part starting at each byte (NONE once the part is merged away).
        let mut part: Vec<u32> = try_collect(n, piece.iter().map(|&b| self.rank(&[b]).unwrap_or(NONE)))?;
        let mut joined: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut pairs = BinaryHeap::new();
        let mut offer = |pairs: &mut BinaryHeap<_>, part: &[u32], start: usize, middle: usize, end: usize| {
            let key = (part[start], part[middle]);
            let rank = *joined.entry(key).or_insert_with(|| self.rank(&piece[start..end]).unwrap_or(NONE));
            if rank != NONE {
                if pairs.len() == pairs.capacity() {
                    let more = pairs.len().max(64);
                    pairs.try_reserve(more).map_err(|_| Error::OutOfMemory { stage: STAGE, bytes: (pairs.len() + more) * std::mem::size_of::<Reverse<(u32, usize, usize)>>() })?;
                }
                pairs.push(Reverse((rank, start, end)));
            }
            Ok::<(), Error>(())
        };
        for i in 0..n - 1 {
            offer(&mut pairs, &part, i, i + 1, i + 2)?;
        }
        while let Some(Reverse((rank, start, end))) = pairs.pop() {
            let middle = next[start];
            if part[start] == NONE || middle >= n || next[middle] != end {
                continue;
            }
            part[middle] = NONE;
            part[start] = rank;
            next[start] = end;
            if end < n {
                prev[end] = start;
                offer(&mut pairs, &part, start, end, next[end])?;
            }
            if start > 0 {
                offer(&mut pairs, &part, prev[start], start, end)?;
            }
        }
        drop(pairs);
        let mut ends = Vec::new();
        let mut at = 0;
        while at < n {
            at = next[at];
            try_reserve(&mut ends, 1, STAGE)?;
            ends.push(at);
        }
        Ok(ends)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::presets;

    /// Byte tokens, then `merges` as pairs of existing token ids, each new token ranked next.
    fn ranks_with(merges: &[(u32, u32)]) -> Vec<(Vec<u8>, u32)> {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for &(a, b) in merges {
            let joined = [tokens[a as usize].clone(), tokens[b as usize].clone()].concat();
            tokens.push(joined);
        }
        tokens.into_iter().enumerate().map(|(i, t)| (t, i as u32)).collect()
    }

    #[test]
    fn single_bytes_and_whole_tokens() {
        let e = Encoder::new(ranks_with(&[(b'a' as u32, b'b' as u32)])).unwrap();
        let s = Splitter::new(presets::GPT4).unwrap();
        assert_eq!(e.encode("ab", &s).unwrap(), vec![256]);
        assert_eq!(e.encode("abc", &s).unwrap(), vec![256, b'c' as u32]);
        assert_eq!(e.encode("", &s).unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn the_lowest_rank_merges_first_and_the_leftmost_of_equals() {
        // "aaa": "aa" (256) merges at the left first, leaving "aa" "a".
        let e = Encoder::new(ranks_with(&[(97, 97)])).unwrap();
        let mut out = Vec::new();
        e.encode_span(b"aaa", &mut out).unwrap();
        assert_eq!(out, vec![256, 97]);
        // "abc" with "bc" ranked below "ab": "a" "bc".
        let e = Encoder::new(ranks_with(&[(98, 99), (97, 98)])).unwrap();
        out.clear();
        e.encode_span(b"abc", &mut out).unwrap();
        assert_eq!(out, vec![97, 256]);
    }

    #[test]
    fn the_heap_merges_as_the_scan_does() {
        let mut next = crate::test_random(5);
        for round in 0..300 {
            let alphabet = 2 + next(4) as u8;
            let mut merges = Vec::new();
            for _ in 0..next(40) {
                let n = 256 + merges.len() as u64;
                let mut pick = || {
                    let id = next(n) as u32;
                    if id < 256 { 97 + id % alphabet as u32 } else { id }
                };
                let pair = (pick(), pick());
                merges.push(pair);
            }
            let ranks = ranks_with(&merges);
            let mut seen = std::collections::HashSet::new();
            let distinct: Vec<_> = ranks.into_iter().filter(|(t, _)| seen.insert(t.clone())).collect();
            let e = Encoder::new(distinct).unwrap();
            let len = 1 + next(200) as usize;
            let piece: Vec<u8> = (0..len).map(|_| 97 + next(alphabet as u64) as u8).collect();
            assert_eq!(e.merge_by_scan(&piece), e.merge_by_heap(&piece).unwrap(), "round {round}: {piece:?}");
        }
    }

    #[test]
    fn a_missing_byte_or_repeated_bytes_are_refused() {
        let mut ranks = ranks_with(&[]);
        ranks.remove(7);
        assert!(matches!(Encoder::new(ranks), Err(Error::InvalidRanks(m)) if m.contains("byte 7")));
        let mut ranks = ranks_with(&[]);
        ranks.push((vec![5], 300));
        assert!(matches!(Encoder::new(ranks), Err(Error::InvalidRanks(m)) if m.contains("two ranks")));
        let mut ranks = ranks_with(&[(97, 98)]);
        ranks[256].1 = 7;
        assert!(matches!(Encoder::new(ranks), Err(Error::InvalidRanks(m)) if m.contains("rank 7 is given to two")));
        let mut ranks = ranks_with(&[]);
        ranks[0].1 = u32::MAX;
        assert!(matches!(Encoder::new(ranks), Err(Error::InvalidRanks(m)) if m.contains("out of range")));
    }

    #[test]
    fn counts_add_up_and_skip_what_the_pattern_drops() {
        let e = Encoder::new(ranks_with(&[(97, 98)])).unwrap();
        let stop = AtomicBool::new(false);
        let s = Splitter::new(r"[a-z]+").unwrap();
        let one = e.count("ab, abc!", &s, &stop).unwrap();
        assert_eq!(one, TokenCount { tokens: 3, bytes: 5 });
        let all = e.count_all(&["ab, abc!", "x"], &s, &stop).unwrap();
        assert_eq!(all, TokenCount { tokens: 4, bytes: 6 });
        // A long run is merged by the heap, in time: a million "a"s under "aa", "aaaa", ...
        let mut merges = vec![(97, 97)];
        for k in 0..15 {
            merges.push((256 + k, 256 + k));
        }
        let e = Encoder::new(ranks_with(&merges)).unwrap();
        let text = "a".repeat(1 << 20);
        let got = e.count(&text, &Splitter::new(presets::GPT4).unwrap(), &stop).unwrap();
        assert_eq!(got, TokenCount { tokens: 16, bytes: 1 << 20 });
    }
}
