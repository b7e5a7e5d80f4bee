//! The vocabulary: token bytes by rank, and tiktoken's invariants on a list of ranks.

use ahash::AHashMap;

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

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn range(&self, id: u32) -> std::ops::Range<usize> {
        crate::stretch(&self.ends, id as usize)
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

/// Checks what tiktoken assumes of mergeable ranks but does not check itself: ranks are
/// 0..n in order, ranks 0..=255 are the single bytes, no two tokens share bytes, and every
/// later token is the concatenation of two tokens of lower rank.
///
/// `ranks` are (token bytes, rank) pairs in any order.
pub fn check_ranks(ranks: &[(Vec<u8>, u64)]) -> Result<(), Error> {
    let mut by_rank: Vec<Option<&[u8]>> = vec![None; ranks.len()];
    for (bytes, rank) in ranks {
        let slot = usize::try_from(*rank)
            .ok()
            .and_then(|r| by_rank.get_mut(r))
            .ok_or_else(|| {
                Error::InvalidRanks(format!("rank {rank} is out of range: {} ranks must be 0 to {}", ranks.len(), ranks.len().saturating_sub(1)))
            })?;
        if slot.is_some() {
            return Err(Error::InvalidRanks(format!("rank {rank} is given twice")));
        }
        *slot = Some(bytes);
    }
    // All slots are filled: n distinct ranks below n.
    let tokens: Vec<&[u8]> = by_rank.into_iter().map(|t| t.unwrap_or_default()).collect();
    if tokens.len() < 256 {
        return Err(Error::InvalidRanks(format!("{} ranks given, the 256 single bytes are required", tokens.len())));
    }
    for (rank, token) in tokens.iter().enumerate().take(256) {
        if *token != [rank as u8] {
            return Err(Error::InvalidRanks(format!("rank {rank} must be the single byte {rank:#04x}, got {token:?}")));
        }
    }
    let mut rank_of: AHashMap<&[u8], usize> = AHashMap::with_capacity(tokens.len());
    for (rank, token) in tokens.iter().enumerate() {
        if let Some(first) = rank_of.insert(token, rank) {
            return Err(Error::InvalidRanks(format!("ranks {first} and {rank} have the same bytes {token:?}")));
        }
    }
    // Only split points at lengths some token has can work: trying just those keeps a long token
    // (a run of one byte merged many times, say) from costing time quadratic in its length.
    let mut lengths: Vec<usize> = tokens.iter().map(|t| t.len()).collect();
    lengths.sort_unstable();
    lengths.dedup();
    for (rank, token) in tokens.iter().enumerate().skip(256) {
        let lower = |part: &[u8]| rank_of.get(part).is_some_and(|&r| r < rank);
        let splits = lengths
            .iter()
            .take_while(|&&k| k < token.len())
            .any(|&k| lengths.binary_search(&(token.len() - k)).is_ok() && lower(&token[..k]) && lower(&token[k..]));
        if !splits {
            return Err(Error::InvalidRanks(format!(
                "rank {rank} ({token:?}) is not the concatenation of two tokens of lower rank"
            )));
        }
    }
    Ok(())
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
        assert!(started.elapsed().as_secs_f64() < 2.0, "{:?}", started.elapsed());
    }

    #[test]
    fn rejects_each_broken_invariant() {
        assert!(check_ranks(&ranks(&[b"abc"])).is_err(), "not a concatenation");
        assert!(check_ranks(&ranks(&[b"ab", b"ab"])).is_err(), "duplicate bytes");
        let mut gap = ranks(&[b"ab"]);
        gap[256].1 = 300;
        assert!(check_ranks(&gap).is_err(), "rank gap");
        let mut swapped = ranks(&[]);
        swapped.swap(0, 1);
        swapped[0].1 = 0;
        swapped[1].1 = 1;
        assert!(check_ranks(&swapped).is_err(), "bytes out of place");
        assert!(check_ranks(&ranks(&[])[..10]).is_err(), "too few");
    }
}
