//! The vocabulary: token bytes by rank, and tiktoken's invariants on a list of ranks.

use ahash::AHashMap;
use hashbrown::HashTable;

use crate::Error;

/// Token bytes indexed by token id (= tiktoken rank). Ids 0..=255 are the single bytes. The
/// tokens are stored end to end in one buffer, so adding one allocates nothing most of the
/// time.
#[derive(Debug, Clone)]
pub struct Vocab {
    bytes: Vec<u8>,
    /// Where each token ends in `bytes`.
    ends: Vec<usize>,
}

impl Default for Vocab {
    fn default() -> Self {
        Self::bytes()
    }
}

impl Vocab {
    /// The 256 single-byte tokens.
    pub fn bytes() -> Self {
        Self { bytes: (0..=255u8).collect(), ends: (1..=256).collect() }
    }

    /// The tokens `tokens`, token `k` the `k`-th (a base to extend: see `merge/extend.rs`).
    pub fn from_tokens<'a>(tokens: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut vocab = Self { bytes: Vec::new(), ends: Vec::new() };
        for token in tokens {
            vocab.bytes.extend_from_slice(token);
            vocab.ends.push(vocab.bytes.len());
        }
        vocab
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn range(&self, id: u32) -> std::ops::Range<usize> {
        crate::item_range(&self.ends, id as usize)
    }

    /// The bytes of token `id`. Panics if `id` is not a token: ids come from this vocabulary.
    pub fn token(&self, id: u32) -> &[u8] {
        &self.bytes[self.range(id)]
    }

    /// Adds `bytes(left) + bytes(right)` as the next token; returns its id. Whether those bytes
    /// were a token already is for [`Vocab::first_repeat`] to tell.
    pub fn push_merge(&mut self, left: u32, right: u32) -> u32 {
        let id = self.len() as u32;
        self.bytes.extend_from_within(self.range(left));
        self.bytes.extend_from_within(self.range(right));
        self.ends.push(self.bytes.len());
        id
    }

    /// [`Vocab::push_merge`], or [`Error::OutOfMemory`] if the tokens' bytes cannot grow (a
    /// vocabulary of very long tokens, such as runs of one character, holds gigabytes).
    pub fn try_push_merge(&mut self, left: u32, right: u32) -> Result<u32, Error> {
        let added = self.range(left).len() + self.range(right).len();
        crate::memory::try_reserve(&mut self.bytes, added, "adding a token to the vocabulary (the bytes of every token)")?;
        crate::memory::try_reserve(&mut self.ends, 1, "adding a token to the vocabulary")?;
        Ok(self.push_merge(left, right))
    }

    /// The first token whose bytes an earlier token has, as `(earlier, later)`, if any.
    pub fn first_repeat(&self) -> Option<(u32, u32)> {
        let mut seen: AHashMap<&[u8], u32> = AHashMap::with_capacity(self.len());
        self.tokens().enumerate().find_map(|(id, t)| seen.insert(t, id as u32).map(|earlier| (earlier, id as u32)))
    }

    /// All tokens in rank order.
    pub fn tokens(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        (0..self.len() as u32).map(|id| self.token(id))
    }
}

/// Ranks are below this: tiktoken's ranks are `u32`, with `u32::MAX` meaning "no rank", and the
/// Python package keeps every token id (ranks and special ids) below 2^31.
pub const MAX_RANK: u64 = 1 << 31;

/// Checks what tiktoken assumes of mergeable ranks but does not check itself (its model of
/// ids): the ranks are distinct and below [`MAX_RANK`], gaps allowed; no token is empty and no
/// two tokens share bytes; each of the 256 single bytes is a token, at any rank; every longer
/// token is the concatenation of two tokens of lower rank (the rank is the merge priority).
/// The trainer's canonical layout (bytes 0..=255, merges from 256 on) is one such layout.
///
/// `ranks` are (token bytes, rank) pairs in any order.
pub fn check_ranks<T: AsRef<[u8]>>(ranks: &[(T, u64)]) -> Result<(), Error> {
    let mut tokens: Vec<(u64, &[u8])> = Vec::with_capacity(ranks.len());
    for (bytes, rank) in ranks {
        let bytes = bytes.as_ref();
        if *rank >= MAX_RANK {
            return Err(Error::InvalidRanks(format!("rank {rank} of {} is out of range: ranks must be below {MAX_RANK}", shown(bytes))));
        }
        if bytes.is_empty() {
            return Err(Error::InvalidRanks(format!("the empty token has rank {rank} (every token is at least one byte)")));
        }
        tokens.push((*rank, bytes));
    }
    tokens.sort_unstable();
    if let Some(w) = tokens.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(Error::InvalidRanks(format!("rank {} is given twice ({} and {})", w[0].0, shown(w[0].1), shown(w[1].1))));
    }
    // One table of token numbers (places in `tokens`), hashed by each token's polynomial hash
    // (see `PieceHashes`), which finds a token from its bytes and a split's two parts from their
    // hashes alike: 5 bytes a slot and 8 a token for the hashes, where two maps (bytes -> rank,
    // (hash, length) -> rank) took about 100 bytes a token (a 2M-token tokenizer.json import).
    let hashes = PieceHashes::new();
    let token_hash: Vec<u64> = tokens.iter().map(|&(_, token)| hashes.of(token)).collect();
    // The polynomial hashes lie below 2^61: mixed, so that the table's top bits spread too.
    let mix = |hash: u64| hash.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut table: HashTable<u32> = HashTable::with_capacity(tokens.len());
    // The number of the token with `hash` and bytes `part`, if there is one.
    let find = |table: &HashTable<u32>, hash: u64, part: &[u8]| {
        table.find(mix(hash), |&j| token_hash[j as usize] == hash && tokens[j as usize].1 == part).map(|&j| j as usize)
    };
    for (i, &(rank, token)) in tokens.iter().enumerate() {
        if let Some(j) = find(&table, token_hash[i], token) {
            return Err(Error::InvalidRanks(format!("ranks {} and {rank} have the same bytes {}", tokens[j].0, shown(token))));
        }
        table.insert_unique(mix(token_hash[i]), i as u32, |&j| mix(token_hash[j as usize]));
    }
    if let Some(byte) = (0..=255u8).find(|b| find(&table, hashes.of(&[*b]), &[*b]).is_none()) {
        return Err(Error::InvalidRanks(format!(
            "the single byte {byte:#04x} is not a token (all 256 single bytes must be, at any ranks)"
        )));
    }
    // Each token is tried at every split point, each try O(1) with the hashes of the two parts
    // (see `PieceHashes`): a part's bytes are compared only once its hash, length and a lower
    // rank match. So the check is linear in the bytes of the ranks, however the tokens overlap
    // (hashing each part whole at each split point was cubic for a chain a, ab, abc...).
    for &(rank, token) in tokens.iter().filter(|(_, t)| t.len() > 1) {
        let lower = |hash: u64, part: &[u8]| {
            let candidate = |&j: &u32| {
                let (r, t) = tokens[j as usize];
                token_hash[j as usize] == hash && t.len() == part.len() && r < rank && t == part
            };
            table.find(mix(hash), candidate).is_some()
        };
        let splits = hashes.splits(token).any(|(k, head, tail)| lower(head, &token[..k]) && lower(tail, &token[k..]));
        if !splits {
            return Err(Error::InvalidRanks(format!(
                "rank {rank} ({}) is not the concatenation of two tokens of lower rank",
                shown(token)
            )));
        }
    }
    Ok(())
}

/// `bytes` in the form of a Python bytes literal (`b'a\xff'`), for messages that Python users
/// read; past 60 bytes, cut and followed by the length.
pub fn shown(bytes: &[u8]) -> String {
    let mut s = String::from("b'");
    for &b in bytes.iter().take(60) {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'\'' => s.push_str("\\'"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s.push('\'');
    if bytes.len() > 60 {
        s.push_str(&format!("... ({} bytes)", bytes.len()));
    }
    s
}

/// Polynomial hashes of byte strings modulo the prime 2^61 - 1, with a base drawn at random
/// for each check, so that no input can aim at collisions.
struct PieceHashes {
    base: u64,
    /// The inverse of `base` modulo the prime, to take a byte off the end of a hash.
    inverse: u64,
}

const PRIME: u64 = (1 << 61) - 1;

fn mul_mod(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    let r = (p as u64 & PRIME) + (p >> 61) as u64;
    if r >= PRIME {
        r - PRIME
    } else {
        r
    }
}

/// `a + b` modulo the prime, for `a, b` below it.
fn add_mod(a: u64, b: u64) -> u64 {
    let r = a + b;
    if r >= PRIME {
        r - PRIME
    } else {
        r
    }
}

fn pow_mod(mut a: u64, mut e: u64) -> u64 {
    let mut r = 1;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod(r, a);
        }
        a = mul_mod(a, a);
        e >>= 1;
    }
    r
}

impl PieceHashes {
    fn new() -> Self {
        use std::hash::BuildHasher;
        let seed = std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64);
        let base = 257 + seed % (PRIME - 257);
        PieceHashes { base, inverse: pow_mod(base, PRIME - 2) }
    }

    /// The hash of `bytes`: sum of (byte + 1) * base^(its distance from the end).
    fn of(&self, bytes: &[u8]) -> u64 {
        bytes.iter().fold(0, |h, &b| add_mod(mul_mod(h, self.base), u64::from(b) + 1))
    }

    /// For each split point `k` of `token` (1 to len - 1, from the end), `(k, hash of
    /// token[..k], hash of token[k..])`, each in O(1): the head's hash loses one byte at a time
    /// (times the inverse), and the tail's is the whole hash less the head's shifted.
    fn splits<'a>(&'a self, token: &'a [u8]) -> impl Iterator<Item = (usize, u64, u64)> + 'a {
        let whole = self.of(token);
        let (mut head, mut shift) = (whole, 1u64); // hash of token[..k + 1], base^(len - k - 1)
        (1..token.len()).rev().map(move |k| {
            head = mul_mod(add_mod(head, PRIME - u64::from(token[k]) - 1), self.inverse);
            shift = mul_mod(shift, self.base);
            let tail = add_mod(whole, PRIME - mul_mod(head, shift));
            (k, head, tail)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(extra: &[&[u8]]) -> Vec<(Vec<u8>, u64)> {
        let mut r: Vec<(Vec<u8>, u64)> = (0..=255u8).map(|b| (vec![b], b as u64)).collect();
        for (i, t) in extra.iter().enumerate() {
            r.push((t.to_vec(), 256 + i as u64));
        }
        r
    }

    #[test]
    fn repeated_bytes_are_found() {
        let mut v = Vocab::bytes();
        assert_eq!(v.first_repeat(), None);
        let ab = v.push_merge(b'a' as u32, b'b' as u32);
        let abc = v.push_merge(ab, b'c' as u32);
        let bc = v.push_merge(b'b' as u32, b'c' as u32);
        assert_eq!((v.token(ab), v.token(abc), v.token(bc)), (&b"ab"[..], &b"abc"[..], &b"bc"[..]));
        assert_eq!(v.first_repeat(), None);
        let again = v.push_merge(b'a' as u32, bc);
        assert_eq!(v.first_repeat(), Some((abc, again)));
        assert_eq!(v.len(), 260);
        assert!(v.tokens().take(256).enumerate().all(|(b, t)| t == [b as u8]));
    }

    #[test]
    fn accepts_valid_ranks() {
        assert_eq!(check_ranks(&ranks(&[b"ab", b"abc", b"bc"])), Ok(()));
    }

    #[test]
    fn long_tokens_are_checked_in_linear_time() {
        // a, aa, aaaa, ... up to 2^20 bytes: each is two copies of the one before.
        let mut extra: Vec<Vec<u8>> = vec![b"aa".to_vec()];
        while extra.last().unwrap().len() < 1 << 20 {
            let t = extra.last().unwrap().repeat(2);
            extra.push(t);
        }
        let refs: Vec<&[u8]> = extra.iter().map(|t| t.as_slice()).collect();
        let started = std::time::Instant::now();
        assert_eq!(check_ranks(&ranks(&refs)), Ok(()));
        assert!(started.elapsed().as_secs_f64() < 10.0, "{:?}", started.elapsed());
    }

    #[test]
    fn a_chain_of_prefixes_is_checked_in_linear_time() {
        // a+b, ab+c, abc+d, ...: every prefix of each token is a token, and no suffix is (only
        // the first byte is an `a`), so only the last split works: a check that tries the
        // splits naively takes cubic time on them (hours here), a linear one well under a second
        // in a debug build: the bound leaves room for a loaded machine.
        let alphabet: Vec<u8> = (0..6000).map(|i| if i == 0 { b'a' } else { b'b' + (i % 20) as u8 }).collect();
        let extra: Vec<&[u8]> = (2..=alphabet.len()).map(|n| &alphabet[..n]).collect();
        let started = std::time::Instant::now();
        assert_eq!(check_ranks(&ranks(&extra)), Ok(()));
        assert!(started.elapsed().as_secs_f64() < 10.0, "{:?}", started.elapsed());
    }

    #[test]
    fn agrees_with_trying_every_split_exactly() {
        // Random ranks over a tiny alphabet, valid or not, against the plain definition.
        let plain = |r: &[(Vec<u8>, u64)]| {
            let tokens: Vec<&[u8]> = r.iter().map(|(t, _)| t.as_slice()).collect();
            (256..tokens.len()).all(|rank| {
                let t = tokens[rank];
                (1..t.len()).any(|k| tokens[..rank].contains(&&t[..k]) && tokens[..rank].contains(&&t[k..]))
            })
        };
        let mut draw = crate::test_random(11);
        let (mut valid, mut invalid) = (0, 0);
        for _ in 0..3000 {
            let mut extra: Vec<Vec<u8>> = Vec::new();
            for _ in 0..1 + draw(12) {
                let token: Vec<u8> = if !extra.is_empty() && draw(4) > 0 {
                    // Mostly two earlier pieces (or bytes) joined, sometimes with a byte changed.
                    let mut piece = || if draw(3) == 0 || extra.is_empty() { vec![b'a' + draw(3) as u8] } else { extra[draw(extra.len() as u64) as usize].clone() };
                    let mut t = [piece(), piece()].concat();
                    if draw(5) == 0 {
                        let i = draw(t.len() as u64) as usize;
                        t[i] = b'a' + draw(3) as u8;
                    }
                    t
                } else {
                    (0..2 + draw(3)).map(|_| b'a' + draw(3) as u8).collect()
                };
                if !extra.contains(&token) && token.len() > 1 {
                    extra.push(token);
                }
            }
            let refs: Vec<&[u8]> = extra.iter().map(|t| t.as_slice()).collect();
            let r = ranks(&refs);
            let want = plain(&r);
            assert_eq!(check_ranks(&r).is_ok(), want, "{extra:?}");
            if want { valid += 1 } else { invalid += 1 }
        }
        assert!(valid > 300 && invalid > 300, "{valid} valid, {invalid} invalid");
    }

    #[test]
    fn accepts_tiktoken_layouts() {
        // Gaps between ranks (room for special tokens among them), and the single bytes at any
        // ranks, GPT-2's way: '!' first, a merge before the last byte.
        let mut gaps = ranks(&[b"ab", b"abc"]);
        gaps[256].1 = 300;
        gaps[257].1 = 1000;
        assert_eq!(check_ranks(&gaps), Ok(()));
        let mut shuffled: Vec<(Vec<u8>, u64)> = (0..=255u8).map(|b| (vec![b], 10 + b.wrapping_add(33) as u64 * 2)).collect();
        shuffled.push((b"!!".to_vec(), 143)); // just above the rank of b"!", 142
        assert_eq!(check_ranks(&shuffled), Ok(()));
        let mut mapping_order = ranks(&[b"ab", b"abc"]);
        mapping_order.reverse();
        assert_eq!(check_ranks(&mapping_order), Ok(()));
    }

    #[test]
    fn rejects_each_broken_invariant() {
        let error = |r: &[(Vec<u8>, u64)]| check_ranks(r).unwrap_err().to_string();
        assert!(error(&ranks(&[b"abc"])).contains("not the concatenation"));
        assert!(error(&ranks(&[b"ab", b"ab"])).contains("the same bytes"));
        let mut twice = ranks(&[b"ab"]);
        twice[256].1 = 3;
        assert!(error(&twice).contains("rank 3 is given twice"));
        let mut merge_first = ranks(&[b"ab"]);
        merge_first[256].1 = 0;
        merge_first[0].1 = 300;
        assert!(error(&merge_first).contains("not the concatenation"), "a merge below its parts");
        assert!(error(&ranks(&[])[..10]).contains("single byte 0x0a"), "too few");
        let mut missing = ranks(&[]);
        missing.remove(0x41);
        assert!(error(&missing).contains("single byte 0x41"));
        let mut too_large = ranks(&[b"ab"]);
        too_large[256].1 = MAX_RANK;
        assert!(error(&too_large).contains("out of range"));
        assert!(error(&[ranks(&[]), vec![(Vec::new(), 256)]].concat()).contains("empty token"));
    }
}
