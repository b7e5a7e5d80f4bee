//! Continued BPE: extending a tokenizer's ranks with new tokens, not one existing id changed.
//!
//! The new corpus's spans start as the base's encoding of them (each distinct span encoded as
//! tiktoken would, [`Encoder::encode_span`]), and the merge loop goes on from there by the same
//! rule (highest count, the smallest pair among equals), each new token numbered after the
//! base's largest id (its special tokens included).
//!
//! The loop works on dense ids: the base's tokens are numbered 0..n in the order of their ids
//! (ids may have gaps and the single bytes may be anywhere), the new tokens n, n+1, ... Both
//! numberings order every pair alike (the map is increasing), so the tie rule, which compares
//! pairs by ids, picks the same pair under either; [`TokenIds`] maps dense ids back.
//!
//! Policy on bases: a base is extended only if each of its tokens is what merging pairs makes of
//! its bytes alone (tiktoken's merge rule without its first step, a span that is a token is that
//! token). Every base that BPE training made passes, whatever its corpus or tie rule. A base
//! that fails (a hand-made token such as `abcd` with `ab`, `cd` and `bc`, where merging gives
//! `a, bc, d`) is refused, naming the token: with it, a new token could put bytes that form an
//! old token next to each other (`abc` from `a, bc`, then `abc, d`), which tiktoken would then
//! merge into the old token ahead of every new rank, so that encoding would disagree with
//! training, and a text that needs no new token could encode otherwise than before. With a base
//! that passes, neither can happen (see docs/extend.md for why), nor can a new merge give bytes
//! that already are a token; the loop still checks the latter at the end, as training does.

use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;

use rayon::prelude::*;

use super::start::token_pair_index;
use super::span_table::{SpanTable, TokenId};
use super::{check_stop, check_total, run, AlphabetRule, Learned, LearnOptions, Loop, Merge};
use crate::count::Spans;
use crate::encode::Encoder;
use crate::error::stop_due;
use crate::{Error, Vocab};

/// Token ids of an extended vocabulary from the merge loop's dense ids: the base's ids in
/// order, then the new tokens from `first_new` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenIds {
    base: Vec<u32>,
    first_new: u32,
}

impl TokenIds {
    /// The id of the loop's token `dense`.
    pub fn get(&self, dense: u32) -> u32 {
        match self.base.get(dense as usize) {
            Some(&id) => id,
            None => self.first_new + (dense - self.base.len() as u32),
        }
    }

    /// `merge` with its tokens' ids.
    pub fn merge(&self, merge: &Merge) -> Merge {
        Merge { pair: (self.get(merge.pair.0), self.get(merge.pair.1)), token: self.get(merge.token), count: merge.count }
    }
}

/// A tokenizer's ranks, checked and ready to extend.
#[derive(Debug, Clone)]
pub struct ExtendBase {
    /// The base's tokens by dense id.
    vocab: Vocab,
    /// The base's ranks by dense id.
    encoder: Encoder,
    ids: TokenIds,
}

impl ExtendBase {
    /// The base of `ranks` (token bytes and id, in any order; ids may have gaps), whose new
    /// tokens are numbered from `first_new` on, which must be above every id of the base (its
    /// special tokens included). Refuses ranks tiktoken cannot encode with (a missing single
    /// byte, an empty token, repeated bytes or ids) and, by the policy in the module's comment,
    /// a token that merging its bytes does not make.
    pub fn new(mut ranks: Vec<(Vec<u8>, u32)>, first_new: u32) -> Result<Self, Error> {
        ranks.sort_unstable_by_key(|&(_, id)| id);
        if let Some((_, id)) = ranks.iter().find(|(bytes, _)| bytes.is_empty()) {
            return Err(Error::InvalidRanks(format!("token {id} is empty")));
        }
        if let Some(&(_, last)) = ranks.last().filter(|&&(_, last)| last >= first_new) {
            return Err(Error::InvalidOption(format!("new tokens must be numbered above the base's ids, up to {last}, not from {first_new}")));
        }
        let encoder = Encoder::new(ranks.iter().enumerate().map(|(dense, (bytes, _))| (bytes.clone(), dense as u32)))?;
        let vocab = Vocab::from_tokens(ranks.iter().map(|(bytes, _)| &bytes[..]));
        let ids = TokenIds { base: ranks.iter().map(|&(_, id)| id).collect(), first_new };
        let base = Self { vocab, encoder, ids };
        base.check_reachable()?;
        Ok(base)
    }

    /// The number of the base's ranks.
    pub fn len(&self) -> usize {
        self.vocab.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vocab.is_empty()
    }

    /// The ids of the extended vocabulary (see [`TokenIds`]).
    pub fn ids(&self) -> &TokenIds {
        &self.ids
    }

    /// Refuses the base if merging some token's bytes alone does not make that token (the
    /// policy: see the module's comment).
    fn check_reachable(&self) -> Result<(), Error> {
        let unreachable = (0..self.len() as u32).into_par_iter().find_first(|&dense| {
            let bytes = self.vocab.token(dense);
            let mut parts = Vec::new();
            // A token that cannot be encoded (out of memory) is found again below, which says so.
            bytes.len() > 1 && (self.encoder.encode_by_merges(bytes, &mut parts).is_err() || parts != [dense])
        });
        let Some(dense) = unreachable else { return Ok(()) };
        let mut parts = Vec::new();
        self.encoder.encode_by_merges(self.vocab.token(dense), &mut parts)?;
        let shown: Vec<String> = parts.iter().map(|&p| format!("{} {:?}", self.ids.get(p), String::from_utf8_lossy(self.vocab.token(p)))).collect();
        Err(Error::InvalidRanks(format!(
            "token {} {:?} is not what merging its bytes makes ({}): these ranks were not made by BPE \
             training, and new tokens could make tiktoken merge otherwise than training did, so they \
             cannot be extended",
            self.ids.get(dense),
            String::from_utf8_lossy(self.vocab.token(dense)),
            shown.join(", ")
        )))
    }

    /// Each span of `spans` encoded with the base's ranks (dense ids), as tiktoken would, in
    /// parallel; given up with [`Error::Interrupted`] if `stop` is set.
    fn encode(&self, spans: &Spans, stop: &AtomicBool) -> Result<EncodedSpans, Error> {
        const PART: usize = 1 << 14;
        let parts: Vec<EncodedSpans> = (0..spans.len().div_ceil(PART))
            .into_par_iter()
            .map(|part| {
                let mut encoded = EncodedSpans::default();
                for (k, i) in (part * PART..spans.len().min((part + 1) * PART)).enumerate() {
                    if stop_due(k, stop) {
                        break; // the caller gives up
                    }
                    let (bytes, n) = spans.get(i);
                    self.encoder.encode_span(bytes, &mut encoded.tokens)?;
                    encoded.ends.push(encoded.tokens.len());
                    encoded.counts.push(n);
                }
                Ok(encoded)
            })
            .collect::<Result<_, Error>>()?;
        check_stop(stop)?;
        let mut all = EncodedSpans::default();
        for part in parts {
            let at = all.tokens.len();
            all.tokens.extend_from_slice(&part.tokens);
            all.ends.extend(part.ends.iter().map(|end| at + end));
            all.counts.extend_from_slice(&part.counts);
        }
        Ok(all)
    }
}

/// Spans as tokens, end to end, with their counts.
#[derive(Default)]
struct EncodedSpans {
    tokens: Vec<u32>,
    ends: Vec<usize>,
    counts: Vec<u64>,
}

impl EncodedSpans {
    fn get(&self, i: usize) -> (&[u32], u64) {
        (&self.tokens[crate::item_range(&self.ends, i)], self.counts[i])
    }
}

/// The merge loop (see [`super::learn`]) from `spans` encoded with `base`'s ranks, until the
/// vocabulary holds `options.vocab_size` ranks (the base's and the new ones). Tokens and merges
/// are given by dense ids (see the module's comment); `base.ids()` maps them to the extended
/// vocabulary's ids. Fails as [`super::learn`] does, and on a base that merging pairs cannot
/// encode with (see [`ExtendBase::new`]).
pub fn extend<'a>(
    spans: impl Into<std::borrow::Cow<'a, Spans>>,
    base: &ExtendBase,
    options: &LearnOptions,
    stop: &AtomicBool,
    on_merge: impl FnMut(&Merge, &Vocab) -> ControlFlow<()>,
) -> Result<Learned, Error> {
    let spans = spans.into();
    check_total(&spans)?;
    if options.alphabet != AlphabetRule::Bytes {
        return Err(Error::InvalidOption("an extension keeps its base's tokens and ids: it takes no alphabet of its own".into()));
    }
    if options.vocab_size <= base.len() {
        return Ok(Learned { vocab: base.vocab.clone(), merges: Vec::new(), alphabet: base.vocab.len() }); // no merge to make
    }
    let encoded = base.encode(&spans, stop)?;
    drop(spans); // encoded now: not kept while the pair index is built (if owned)
    if options.vocab_size <= 1 << 16 {
        run(start::<u16>(&encoded, base.len(), stop)?, base.vocab.clone(), options, stop, on_merge)
    } else {
        run(start::<u32>(&encoded, base.len(), stop)?, base.vocab.clone(), options, stop, on_merge)
    }
}

/// The loop's state before the first new merge, over spans of the base's `tokens` tokens.
fn start<T: TokenId>(encoded: &EncodedSpans, tokens: usize, stop: &AtomicBool) -> Result<Loop<T>, Error> {
    let (table, ids) = SpanTable::<T>::from_tokens(encoded.counts.len(), |i| encoded.get(i))?;
    check_stop(stop)?;
    let pairs = token_pair_index(&table, &ids, tokens as u32, stop)?;
    Ok(Loop::start(table, pairs, ids.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::learn;
    use crate::merge::tests::naive_from;

    fn spans_of(corpus: &[(Vec<u8>, u64)]) -> Spans {
        corpus.iter().map(|(b, n)| (b.clone(), *n)).collect()
    }

    fn no_stop() -> AtomicBool {
        AtomicBool::new(false)
    }

    fn extend_all(corpus: &[(Vec<u8>, u64)], base: &ExtendBase, vocab_size: usize) -> Learned {
        let options = LearnOptions { vocab_size, min_frequency: 1, max_token_length: None, ..Default::default() };
        extend(spans_of(corpus), base, &options, &no_stop(), |_, _| ControlFlow::Continue(())).unwrap()
    }

    /// Continued BPE run naively: each span encoded with `ranks` (dense, as tiktoken would),
    /// then every pair recounted before every merge.
    fn naive_extend(corpus: &[(Vec<u8>, u64)], ranks: &[Vec<u8>], vocab_size: usize) -> Vec<Merge> {
        naive_extend_limited(corpus, ranks, vocab_size, usize::MAX)
    }

    /// [`naive_extend`], choosing only among pairs whose token has at most `max_length` bytes.
    fn naive_extend_limited(corpus: &[(Vec<u8>, u64)], ranks: &[Vec<u8>], vocab_size: usize, max_length: usize) -> Vec<Merge> {
        let encoder = Encoder::new(ranks.iter().enumerate().map(|(i, t)| (t.clone(), i as u32))).unwrap();
        let words = corpus
            .iter()
            .map(|(b, n)| {
                let mut w = Vec::new();
                encoder.encode_span(b, &mut w).unwrap();
                (w, *n)
            })
            .collect();
        naive_from(words, Vocab::from_tokens(ranks.iter().map(|t| &t[..])), vocab_size, max_length)
    }

    fn corpus(seed: u64, alphabet: &[u8]) -> Vec<(Vec<u8>, u64)> {
        let mut next = crate::test_random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(7));
        (0..1 + next(40))
            .map(|_| {
                let len = 1 + next(14) as usize;
                ((0..len).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect(), 1 + next(5))
            })
            .collect()
    }

    fn trained(corpus: &[(Vec<u8>, u64)], vocab_size: usize) -> Vec<Vec<u8>> {
        let options = LearnOptions { vocab_size, min_frequency: 1, max_token_length: None, ..Default::default() };
        let learned = learn(spans_of(corpus), &options, &no_stop(), |_, _| ControlFlow::Continue(())).unwrap();
        learned.vocab.tokens().map(<[u8]>::to_vec).collect()
    }

    fn base_of(ranks: &[Vec<u8>], first_new: u32) -> ExtendBase {
        ExtendBase::new(ranks.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect(), first_new).unwrap()
    }

    #[test]
    fn extending_with_the_same_corpus_is_training_longer() {
        for seed in 0..200 {
            let a = corpus(seed, b"aab c");
            let long = trained(&a, 300);
            for (short, first_new) in [(256, 256), (260, 260), (265, 270)] {
                let base = trained(&a, short);
                let learned = extend_all(&a, &base_of(&base, first_new), 300);
                let tokens: Vec<Vec<u8>> = learned.vocab.tokens().map(<[u8]>::to_vec).collect();
                assert_eq!(tokens, long, "seed {seed}, extended from {short} ranks");
            }
        }
    }

    #[test]
    fn extending_equals_the_naive_continued_loop() {
        for seed in 0..200 {
            let base = trained(&corpus(seed, b"abc d"), 262);
            let b = corpus(seed + 1000, b"bcd e");
            for vocab_size in [262, 263, 280, 70_000] {
                let learned = extend_all(&b, &base_of(&base, 262), vocab_size);
                assert_eq!(learned.merges, naive_extend(&b, &base, vocab_size), "seed {seed}, {vocab_size}");
            }
        }
    }

    #[test]
    fn extending_with_a_longest_token_equals_the_naive_continued_loop() {
        // The base's tokens may be longer than the limit: pairs with them are never merged.
        let mut limited = 0;
        for seed in 0..200 {
            let base = trained(&corpus(seed, b"abc d"), 270);
            let b = corpus(seed + 1000, b"bcd e");
            for max_length in [2, 3, 5] {
                let options = LearnOptions { vocab_size: 300, min_frequency: 1, max_token_length: Some(max_length), ..Default::default() };
                let learned = extend(spans_of(&b), &base_of(&base, 270), &options, &no_stop(), |_, _| ControlFlow::Continue(())).unwrap();
                let want = naive_extend_limited(&b, &base, 300, max_length);
                assert_eq!(learned.merges, want, "seed {seed}, at most {max_length} bytes");
                limited += usize::from(want != naive_extend(&b, &base, 300));
            }
        }
        assert!(limited > 200, "the limit must change the merges of many extensions ({limited})");
    }

    #[test]
    fn extending_keeps_counts_past_32_bits_exact() {
        // Spans counted around the span header's 24 bits (see span_table.rs) and past 32 bits,
        // encoded by a base.
        let around = [(1 << 24) - 2, (1 << 24) - 1, 1 << 24, u64::from(u32::MAX), 1 << 32, 1 << 40, 1, 2];
        for seed in 0..50 {
            let base = trained(&corpus(seed, b"abc d"), 262);
            let b: Vec<(Vec<u8>, u64)> = corpus(seed + 1000, b"bcd e").into_iter().enumerate().map(|(i, (span, _))| (span, around[i % around.len()])).collect();
            let learned = extend_all(&b, &base_of(&base, 262), 280);
            assert_eq!(learned.merges, naive_extend(&b, &base, 280), "seed {seed}");
        }
    }

    #[test]
    fn ids_keep_gaps_and_new_ids_follow_the_largest() {
        // Single bytes anywhere and ids with gaps: dense ids follow the ids' order.
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], 1000 - u32::from(b))).collect();
        ranks.push((b"ab".to_vec(), 5));
        let base = ExtendBase::new(ranks, 2000).unwrap();
        let learned = extend_all(&[(b"abab".to_vec(), 3), (b"abc".to_vec(), 1)], &base, 258);
        let ids = base.ids();
        assert_eq!(ids.get(0), 5); // "ab", the smallest id
        let merges: Vec<Merge> = learned.merges.iter().map(|m| ids.merge(m)).collect();
        assert_eq!(merges, [Merge { pair: (5, 5), token: 2000, count: 3 }]);
        assert!(ExtendBase::new(vec![(b"a".to_vec(), 3)], 10).is_err(), "single bytes are missing");
        let bytes: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
        assert!(ExtendBase::new(bytes, 255).is_err(), "new ids must be above the base's");
    }

    #[test]
    fn a_base_merging_cannot_reach_is_refused() {
        // "abcd" from "ab" + "cd", with "bc" ranked first: merging "abcd" gives a, bc, d.
        let mut ranks: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
        for (i, t) in [&b"bc"[..], b"ab", b"cd", b"abcd"].iter().enumerate() {
            ranks.push((t.to_vec(), 256 + i as u32));
        }
        let e = ExtendBase::new(ranks, 260).unwrap_err().to_string();
        assert!(e.contains("token 259 \"abcd\"") && e.contains("256 \"bc\""), "{e}");
    }
}
