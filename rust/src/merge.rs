//! The merge loop: learn merges from distinct spans and their counts.
//!
//! The rule (the specification the tests hold): repeatedly take the adjacent pair with the
//! highest count, where a pair's count is the sum over spans of span count × adjacent positions
//! holding the pair; among equal counts the smallest pair (by ids) wins. Replace it left to right,
//! non-overlapping, in every span. The merged token is `bytes(a) + bytes(b)`: a new rank, or,
//! in the rare case these bytes already are a token, that token (so no two ranks share bytes).
//!
//! Counts are kept incrementally: a merge only changes the pairs around the occurrences it
//! replaces. A max-heap holds candidate pairs with the count they had when pushed; counts of a
//! pair only change through a merge, which re-pushes every pair it adds to, so a popped entry
//! whose count is stale is re-pushed with its current count (lazy refresh) and the first entry
//! popped with its current count is the true best pair.

use std::cmp::Ordering;
use std::ops::ControlFlow;

use ahash::AHashMap;
use dary_heap::OctonaryHeap;

use crate::{Error, Vocab};

/// Two adjacent token ids.
pub type Pair = (u32, u32);

/// What to learn.
#[derive(Debug, Clone)]
pub struct LearnOptions {
    /// Stop when the vocabulary has this many tokens (256 bytes + learned tokens).
    pub vocab_size: usize,
    /// Stop when the best pair occurs fewer times than this.
    pub min_frequency: u64,
}

/// One step of the merge loop: `pair` was replaced by `token`; it occurred `count` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merge {
    pub pair: Pair,
    pub token: u32,
    pub count: u64,
}

/// The result of the merge loop.
#[derive(Debug, Clone)]
pub struct Learned {
    pub vocab: Vocab,
    pub merges: Vec<Merge>,
}

#[derive(Debug, PartialEq, Eq)]
struct Candidate {
    count: u64,
    pair: Pair,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        // Highest count first; among equal counts the smallest pair is the greatest.
        self.count.cmp(&other.count).then_with(|| other.pair.cmp(&self.pair))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Runs the merge loop. `on_merge` is called after every merge with the merge and the
/// vocabulary so far; returning `ControlFlow::Break` stops the loop early (the result then holds
/// the merges made so far).
///
/// Fails only if the counts are so large that a pair count could pass 2^63.
pub fn learn(
    spans: Vec<(Box<[u8]>, u64)>,
    options: &LearnOptions,
    mut on_merge: impl FnMut(&Merge, &Vocab) -> ControlFlow<()>,
) -> Result<Learned, Error> {
    check_total(&spans)?;
    let mut vocab = Vocab::bytes();
    let mut merges = Vec::new();
    let (mut words, counts): (Vec<Vec<u32>>, Vec<u64>) =
        spans.into_iter().map(|(bytes, n)| (bytes.iter().map(|&b| b as u32).collect(), n)).unzip();
    drop_unused(&mut words, &counts);

    let mut pair_counts: AHashMap<Pair, i64> = AHashMap::new();
    let mut pair_spans: AHashMap<Pair, Vec<u32>> = AHashMap::new();
    for (id, word) in words.iter().enumerate() {
        for w in word.windows(2) {
            let pair = (w[0], w[1]);
            *pair_counts.entry(pair).or_insert(0) += counts[id] as i64;
            note_span(&mut pair_spans, pair, id as u32);
        }
    }
    let mut heap: OctonaryHeap<Candidate> =
        pair_counts.iter().map(|(&pair, &count)| Candidate { count: count as u64, pair }).collect::<Vec<_>>().into();

    while vocab.len() < options.vocab_size {
        let Some(top) = heap.pop() else { break };
        let current = pair_counts.get(&top.pair).copied().unwrap_or(0);
        if current <= 0 {
            pair_counts.remove(&top.pair);
            pair_spans.remove(&top.pair);
            continue;
        }
        if current as u64 != top.count {
            heap.push(Candidate { count: current as u64, pair: top.pair });
            continue;
        }
        if top.count < options.min_frequency {
            break;
        }

        let (token, _) = vocab.merge(top.pair.0, top.pair.1);
        let merge = Merge { pair: top.pair, token, count: top.count };
        merges.push(merge);

        let mut span_ids = pair_spans.remove(&top.pair).unwrap_or_default();
        span_ids.sort_unstable();
        span_ids.dedup();
        let mut grown: Vec<Pair> = Vec::new();
        for &id in &span_ids {
            let n = counts[id as usize] as i64;
            merge_in_span(&mut words[id as usize], top.pair, token, |pair, delta| {
                *pair_counts.entry(pair).or_insert(0) += i64::from(delta) * n;
                if delta > 0 {
                    note_span(&mut pair_spans, pair, id);
                    grown.push(pair);
                }
            });
        }
        pair_counts.remove(&top.pair);
        grown.sort_unstable();
        grown.dedup();
        for pair in grown {
            let count = pair_counts.get(&pair).copied().unwrap_or(0);
            if count > 0 {
                heap.push(Candidate { count: count as u64, pair });
            }
        }

        if on_merge(&merge, &vocab).is_break() {
            break;
        }
    }
    Ok(Learned { vocab, merges })
}

/// Pair counts are signed 64-bit (updates are ±span count); refuse inputs that could overflow.
fn check_total(spans: &[(Box<[u8]>, u64)]) -> Result<(), Error> {
    let mut total: u128 = 0;
    for (bytes, n) in spans {
        total += u128::from(*n) * bytes.len().saturating_sub(1) as u128;
    }
    if total > i64::MAX as u128 {
        return Err(Error::InvalidOption(format!(
            "the span counts sum to {total} adjacent pairs, more than the 2^63-1 a pair count can hold"
        )));
    }
    Ok(())
}

/// Spans with fewer than two bytes never hold a pair; free them up front.
fn drop_unused(words: &mut [Vec<u32>], counts: &[u64]) {
    for (word, &n) in words.iter_mut().zip(counts) {
        if word.len() < 2 || n == 0 {
            *word = Vec::new();
        }
    }
}

/// Records that span `id` may hold `pair`. Spans are visited in increasing id within a merge,
/// so a repeat is always the last entry.
fn note_span(pair_spans: &mut AHashMap<Pair, Vec<u32>>, pair: Pair, id: u32) {
    let ids = pair_spans.entry(pair).or_default();
    if ids.last() != Some(&id) {
        ids.push(id);
    }
}

/// Replaces each non-overlapping occurrence of `pair`, left to right, by `token`, and reports
/// every adjacent pair that disappears (-1) or appears (+1), once per change.
pub fn merge_in_span(tokens: &mut Vec<u32>, pair: Pair, token: u32, mut delta: impl FnMut(Pair, i32)) {
    let (a, b) = pair;
    let n = tokens.len();
    let (mut read, mut write) = (0, 0);
    while read < n {
        if read + 1 < n && tokens[read] == a && tokens[read + 1] == b {
            // `write - 1` is already the merged output; `read + 2` is still the input.
            if write > 0 {
                let left = tokens[write - 1];
                delta((left, a), -1);
                delta((left, token), 1);
            }
            delta((a, b), -1);
            if read + 2 < n {
                let right = tokens[read + 2];
                delta((b, right), -1);
                delta((token, right), 1);
            }
            tokens[write] = token;
            read += 2;
        } else {
            tokens[write] = tokens[read];
            read += 1;
        }
        write += 1;
    }
    tokens.truncate(write);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The specification, run naively: recount every pair before every merge.
    fn naive(spans: &[(Vec<u8>, u64)], vocab_size: usize) -> Vec<Merge> {
        let mut vocab = Vocab::bytes();
        let mut words: Vec<(Vec<u32>, u64)> =
            spans.iter().map(|(b, n)| (b.iter().map(|&x| x as u32).collect(), *n)).collect();
        let mut merges = Vec::new();
        while vocab.len() < vocab_size {
            let mut counts: BTreeMap<Pair, u64> = BTreeMap::new();
            for (w, n) in &words {
                for p in w.windows(2) {
                    *counts.entry((p[0], p[1])).or_default() += n;
                }
            }
            // max count, then smallest pair: BTreeMap iterates pairs ascending, keep the first max.
            let Some((&pair, &count)) = counts.iter().rev().max_by_key(|(_, &c)| c) else { break };
            let (token, _) = vocab.merge(pair.0, pair.1);
            for (w, _) in &mut words {
                merge_in_span(w, pair, token, |_, _| {});
            }
            merges.push(Merge { pair, token, count });
        }
        merges
    }

    fn pair_counts(words: &[Vec<u32>]) -> BTreeMap<Pair, i64> {
        let mut c = BTreeMap::new();
        for w in words {
            for p in w.windows(2) {
                *c.entry((p[0], p[1])).or_default() += 1;
            }
        }
        c
    }

    fn learn_all(spans: &[(Vec<u8>, u64)], vocab_size: usize) -> Vec<Merge> {
        let spans = spans.iter().map(|(b, n)| (b.clone().into_boxed_slice(), *n)).collect();
        let options = LearnOptions { vocab_size, min_frequency: 1 };
        learn(spans, &options, |_, _| ControlFlow::Continue(())).unwrap().merges
    }

    /// A small deterministic generator, so the test needs no extra crate.
    fn corpus(seed: u64) -> Vec<(Vec<u8>, u64)> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut next = move |m: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        let alphabet = b"aab ";
        (0..1 + next(30))
            .map(|_| {
                let len = 1 + next(12) as usize;
                let span = (0..len).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect();
                (span, 1 + next(5))
            })
            .collect()
    }

    #[test]
    fn deltas_match_a_recount() {
        for seed in 0..500 {
            for (span, _) in corpus(seed) {
                let mut word: Vec<u32> = span.iter().map(|&b| b as u32).collect();
                let before = pair_counts(&[word.clone()]);
                let mut expected = before.clone();
                let pair = (b'a' as u32, b'a' as u32);
                merge_in_span(&mut word, pair, 999, |p, d| *expected.entry(p).or_default() += i64::from(d));
                expected.retain(|_, c| *c != 0);
                assert_eq!(expected, pair_counts(&[word]), "{span:?}");
            }
        }
    }

    #[test]
    fn merges_equal_the_naive_loop() {
        for seed in 0..300 {
            let spans = corpus(seed);
            for vocab_size in [256, 260, 300] {
                assert_eq!(learn_all(&spans, vocab_size), naive(&spans, vocab_size), "seed {seed}");
            }
        }
    }

    #[test]
    fn overlapping_runs_merge_left_to_right() {
        let merges = learn_all(&[(b"aaaaa".to_vec(), 1)], 258);
        assert_eq!(merges[0], Merge { pair: (97, 97), token: 256, count: 4 });
        // "aaaaa" -> [aa, aa, a]: (aa, aa) and (aa, a) once each; the smaller pair wins.
        assert_eq!(merges[1], Merge { pair: (256, 97), token: 257, count: 1 });
    }

    #[test]
    fn counts_beyond_32_bits_are_exact() {
        let big = 3_000_000_000u64;
        let merges = learn_all(&[(b"ab".to_vec(), big), (b"abab".to_vec(), big)], 257);
        assert_eq!(merges[0].count, 3 * big);
    }

    #[test]
    fn min_frequency_stops_early() {
        let spans = vec![(b"ab".to_vec().into_boxed_slice(), 3), (b"cd".to_vec().into_boxed_slice(), 2)];
        let options = LearnOptions { vocab_size: 1000, min_frequency: 3 };
        let learned = learn(spans, &options, |_, _| ControlFlow::Continue(())).unwrap();
        assert_eq!(learned.merges.len(), 1);
    }

    #[test]
    fn overflowing_totals_are_refused() {
        let spans = vec![(b"abc".to_vec().into_boxed_slice(), u64::MAX / 2)];
        let options = LearnOptions { vocab_size: 300, min_frequency: 1 };
        assert!(learn(spans, &options, |_, _| ControlFlow::Continue(())).is_err());
    }
}
