//! The vocabulary: token bytes by rank, and tiktoken's invariants on a list of ranks.

use ahash::AHashMap;

use crate::Error;

/// Token bytes indexed by token id (= tiktoken rank). Ids 0..=255 are the single bytes.
/// No two tokens have the same bytes.
#[derive(Debug, Clone)]
pub struct Vocab {
    tokens: Vec<Box<[u8]>>,
    ids: AHashMap<Box<[u8]>, u32>,
}

impl Default for Vocab {
    fn default() -> Self {
        Self::bytes()
    }
}

impl Vocab {
    /// The 256 single-byte tokens.
    pub fn bytes() -> Self {
        let tokens: Vec<Box<[u8]>> = (0..=255u8).map(|b| Box::from([b])).collect();
        let ids = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        Self { tokens, ids }
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The bytes of token `id`. Panics if `id` is not a token: ids come from this vocabulary.
    pub fn token(&self, id: u32) -> &[u8] {
        &self.tokens[id as usize]
    }

    /// The id of the token with these bytes, if any.
    pub fn id(&self, bytes: &[u8]) -> Option<u32> {
        self.ids.get(bytes).copied()
    }

    /// The id of `bytes(left) + bytes(right)`, adding it as the next rank if it is new.
    /// Returns the id and whether it was added.
    pub fn merge(&mut self, left: u32, right: u32) -> (u32, bool) {
        let mut bytes = Vec::with_capacity(self.token(left).len() + self.token(right).len());
        bytes.extend_from_slice(self.token(left));
        bytes.extend_from_slice(self.token(right));
        if let Some(id) = self.id(&bytes) {
            return (id, false);
        }
        let id = self.tokens.len() as u32;
        let bytes: Box<[u8]> = bytes.into();
        self.ids.insert(bytes.clone(), id);
        self.tokens.push(bytes);
        (id, true)
    }

    /// All tokens in rank order.
    pub fn tokens(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.tokens.iter().map(|t| &**t)
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
            .ok_or_else(|| Error::InvalidRanks(format!("rank {rank} is out of range: {} ranks must be 0..{}", ranks.len(), ranks.len())))?;
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
    fn merge_reuses_existing_bytes() {
        let mut v = Vocab::bytes();
        let (ab, new) = v.merge(b'a' as u32, b'b' as u32);
        assert!(new);
        let (abc, _) = v.merge(ab, b'c' as u32);
        let (bc, _) = v.merge(b'b' as u32, b'c' as u32);
        assert_eq!(v.merge(b'a' as u32, bc), (abc, false));
        assert_eq!(v.len(), 259);
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
