//! A training's alphabet: which single bytes are tokens, and the ids they take in the merge loop.
//!
//! bpeforge's own rule (tiktoken's layout) has all 256 bytes, byte `b` at id `b`. HuggingFace's
//! `BpeTrainer` on byte-level text has only the bytes its words hold (and those its
//! `initial_alphabet` adds), at most `limit_alphabet` of them (the most frequent), numbered in
//! the order of the characters that GPT-2's byte-level alphabet spells them with (not byte
//! order: the printable bytes come first); a byte outside the alphabet is removed from the words
//! before pairs are counted, so the bytes on either side of it become adjacent.
//!
//! The merge loop learns on ids alone, the smallest pair by ids winning among equal counts: so
//! to break ties as HuggingFace does, the spans are written in the alphabet's ids before the
//! loop (bytes outside it dropped), and the loop's vocabulary spells id `k` as the byte it
//! stands for. Merged tokens are numbered from 256 on either way; both numberings order every
//! pair alike (single bytes below merged tokens, merged tokens by when they were made).

use rayon::prelude::*;

use crate::count::Spans;
use crate::Vocab;

/// Which bytes are single-byte tokens, and in which order they are numbered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AlphabetRule {
    /// All 256 bytes, byte `b` at id `b`.
    #[default]
    Bytes,
    /// HuggingFace's `BpeTrainer` on byte-level text (see the module's comment): the bytes the
    /// spans hold and those of `initial`; if more than `limit`, the `limit` most frequent (by
    /// occurrences in the spans, counts weighted; `initial`'s ahead of all), the rarest dropped
    /// and, among equal counts, the later in the byte-level order (HuggingFace's choice there
    /// depends on its hash order). Numbered in the byte-level order.
    ByteLevel { initial: Vec<u8>, limit: Option<usize> },
    /// An alphabet found already (by the rule above, on the same spans).
    Given(Alphabet),
}

/// The bytes in the order of the characters GPT-2's byte-level alphabet spells them with: the
/// printable bytes (`!`..=`~`, `¡`..=`¬`, `®`..=`ÿ`) as themselves, then the others, which it
/// spells from U+0100 on in byte order.
pub fn byte_level_order() -> [u8; 256] {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut order = [0u8; 256];
    let bytes = (0..=255u8).filter(|&b| printable(b)).chain((0..=255u8).filter(|&b| !printable(b)));
    for (slot, b) in order.iter_mut().zip(bytes) {
        *slot = b;
    }
    order
}

/// How many times each byte occurs in `spans`, counts weighted (saturating at `u64::MAX`).
fn byte_counts(spans: &Spans) -> [u64; 256] {
    (0..spans.len())
        .into_par_iter()
        .fold(
            || [0u64; 256],
            |mut counts, i| {
                let (bytes, n) = spans.get(i);
                for &b in bytes {
                    counts[b as usize] = counts[b as usize].saturating_add(n);
                }
                counts
            },
        )
        .reduce(|| [0u64; 256], |mut a, b| {
            for (x, y) in a.iter_mut().zip(b) {
                *x = x.saturating_add(y);
            }
            a
        })
}

/// The alphabet of one training: its bytes in the order of their ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alphabet {
    bytes: Vec<u8>,
}

impl Alphabet {
    /// The alphabet `rule` gives for `spans`.
    pub fn of(rule: &AlphabetRule, spans: &Spans) -> Self {
        Self::of_all(rule, &[spans])
    }

    /// The alphabet `rule` gives for all of `spans` together (the bytes' counts summed), as
    /// parity-aware training finds it over every language's training and dev spans.
    pub fn of_all(rule: &AlphabetRule, spans: &[&Spans]) -> Self {
        let (initial, limit) = match rule {
            AlphabetRule::Bytes => return Alphabet { bytes: (0..=255).collect() },
            AlphabetRule::Given(alphabet) => return alphabet.clone(),
            AlphabetRule::ByteLevel { initial, limit } => (initial, limit),
        };
        let mut counts = [0u64; 256];
        for part in spans {
            for (total, n) in counts.iter_mut().zip(byte_counts(part)) {
                *total = total.saturating_add(n);
            }
        }
        for &b in initial {
            counts[b as usize] = u64::MAX;
        }
        let order = byte_level_order();
        let mut bytes: Vec<u8> = order.iter().copied().filter(|&b| counts[b as usize] > 0).collect();
        if let Some(limit) = limit.filter(|&limit| limit < bytes.len()) {
            // Most frequent first, the earlier in the byte-level order among equals (a stable sort).
            let mut by_count = bytes.clone();
            by_count.sort_by_key(|&b| std::cmp::Reverse(counts[b as usize]));
            let kept: std::collections::HashSet<u8> = by_count[..limit].iter().copied().collect();
            bytes.retain(|b| kept.contains(b));
        }
        Alphabet { bytes }
    }

    /// The alphabet's bytes in the order of their ids.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Whether byte `b` has id `b` for every byte (bpeforge's own layout).
    pub fn is_identity(&self) -> bool {
        self.bytes.len() == 256 && self.bytes.iter().enumerate().all(|(i, &b)| i == b as usize)
    }

    /// The merge loop's first 256 tokens: id `k` spells the alphabet's `k`-th byte, and the ids
    /// after the alphabet's the bytes outside it (which no span holds once relabelled), so that
    /// merged tokens are numbered from 256 on, as always.
    pub fn vocab(&self) -> Vocab {
        let mut inside = [false; 256];
        for &b in &self.bytes {
            inside[b as usize] = true;
        }
        let outside = (0..=255u8).filter(|&b| !inside[b as usize]);
        let all: Vec<[u8; 1]> = self.bytes.iter().copied().chain(outside).map(|b| [b]).collect();
        Vocab::from_tokens(all.iter().map(|b| &b[..]))
    }

    /// The id of each byte in the alphabet, `None` for a byte outside it.
    pub fn ids(&self) -> [Option<u8>; 256] {
        let mut id: [Option<u8>; 256] = [None; 256];
        for (k, &b) in self.bytes.iter().enumerate() {
            id[b as usize] = Some(k as u8);
        }
        id
    }

    /// `spans` written in the alphabet's ids (bytes outside it dropped), one byte per id.
    pub fn relabel(&self, spans: &Spans) -> Spans {
        let id = self.ids();
        let mut relabelled = Spans::default();
        let mut span = Vec::new();
        for (bytes, n) in spans.iter() {
            span.clear();
            span.extend(bytes.iter().filter_map(|&b| id[b as usize]));
            relabelled.push(&span, n);
        }
        relabelled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_level_order_is_the_order_of_gpt2s_characters() {
        // GPT-2's bytes_to_unicode: printable bytes as themselves, the rest from U+0100 on.
        let mut chars: Vec<(u32, u8)> = Vec::new();
        let mut extra = 0;
        for b in 0..=255u8 {
            let printable = (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b);
            chars.push((if printable { u32::from(b) } else { 256 + extra }, b));
            extra += u32::from(!printable);
        }
        chars.sort();
        let want: Vec<u8> = chars.iter().map(|&(_, b)| b).collect();
        assert_eq!(byte_level_order().to_vec(), want);
    }

    #[test]
    fn the_byte_level_alphabet_holds_the_bytes_seen_and_those_given_limited_to_the_most_frequent() {
        let spans: Spans = [(&b"aab"[..], 3), (b" c", 1), (b"d", 5)].into_iter().collect();
        let all = Alphabet::of(&AlphabetRule::ByteLevel { initial: vec![], limit: None }, &spans);
        assert_eq!(all.bytes(), b"abcd "); // the space is spelled U+0120, after the printable bytes
        let given = Alphabet::of(&AlphabetRule::ByteLevel { initial: vec![b'z'], limit: None }, &spans);
        assert_eq!(given.bytes(), b"abcdz ");
        // a: 6, d: 5, b: 3, then c and the space once each: the later in the order is dropped.
        let limited = Alphabet::of(&AlphabetRule::ByteLevel { initial: vec![], limit: Some(4) }, &spans);
        assert_eq!(limited.bytes(), b"abcd");
        let relabelled = limited.relabel(&spans);
        assert_eq!(relabelled.get(1), (&[2u8][..], 1)); // " c" without its space: c is id 2
        assert_eq!(Alphabet::of(&AlphabetRule::Bytes, &spans).is_identity(), true);
        let vocab = limited.vocab();
        assert_eq!((vocab.len(), vocab.token(0), vocab.token(3), vocab.token(4)), (256, &b"a"[..], &b"d"[..], &[0u8][..]));
    }
}
