//! [`Spans`]: distinct spans and their counts, end to end in one buffer, at about 8 bytes per
//! span besides the span's own bytes.
//!
//! Where each span ends and its count are 64-bit values, but nearly always fit 32 bits: the ends
//! increase and pass 2^32 only past 4 GiB of spans, and counts above 2^32 - 2 are a few spans
//! of the largest corpora. So each is stored as 32 bits, with the rest apart: [`Ends`] records
//! the spans where the high half of the ends steps, [`Counts`] the large counts by span. At ten
//! million distinct spans of ten bytes, that is 17.5 bytes per span instead of 25.5, in
//! counting's join and beside the merge loop's span table while it is built from them. A large
//! count costs 16 bytes more and a binary search to read: counting real text makes a handful
//! (only weighted sums with large weights make many).

use crate::memory::{try_reserve, try_reserve_exact};
use crate::Error;

/// Distinct spans and their counts, stored end to end in one buffer (as
/// [`CountTables::into_spans`](super::CountTables::into_spans) gives them: in no particular order,
/// no empty span, no zero count).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spans {
    bytes: Vec<u8>,
    ends: Ends,
    counts: Counts,
}

/// Where each span ends in the bytes (increasing): the low 32 bits of each end, and the spans
/// from which on the high 32 bits are each value they take past 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Ends {
    low: Vec<u32>,
    /// `(i, high)`: the ends of spans `i..` (up to the next step) have `high` as their high
    /// half; before the first step, 0. Increasing in both.
    steps: Vec<(usize, usize)>,
}

impl Ends {
    pub(crate) fn with_capacity(spans: usize) -> Self {
        Ends { low: Vec::with_capacity(spans), steps: Vec::new() }
    }

    /// Appends an end, at least the last one.
    pub(crate) fn push(&mut self, end: usize) {
        let high = end >> 32;
        if high != self.steps.last().map_or(0, |&(_, high)| high) {
            self.steps.push((self.low.len(), high));
        }
        self.low.push(end as u32);
    }

    fn len(&self) -> usize {
        self.low.len()
    }

    /// End `i`.
    #[inline]
    fn get(&self, i: usize) -> usize {
        let low = self.low[i] as usize;
        if self.steps.is_empty() {
            return low; // below 4 GiB, nearly always
        }
        let k = self.steps.partition_point(|&(at, _)| at <= i);
        let high = if k == 0 { 0 } else { self.steps[k - 1].1 };
        high << 32 | low
    }

    /// Where span `i` lies in the bytes: from the previous span's end (0 for the first) to its
    /// own.
    #[inline]
    fn range(&self, i: usize) -> std::ops::Range<usize> {
        (if i == 0 { 0 } else { self.get(i - 1) })..self.get(i)
    }

    fn try_reserve(&mut self, more: usize, exact: bool, stage: &'static str) -> Result<(), Error> {
        if exact { try_reserve_exact(&mut self.low, more, stage) } else { try_reserve(&mut self.low, more, stage) }
    }
}

/// The spans' counts: the low 32 bits of each, `u32::MAX` for a count of at least that, which
/// is then in `large` by span.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    low: Vec<u32>,
    /// `(i, count)` for each span `i` counted at least `u32::MAX` times, increasing in `i`.
    large: Vec<(usize, u64)>,
}

impl Counts {
    pub(crate) fn with_capacity(spans: usize) -> Self {
        Counts { low: Vec::with_capacity(spans), large: Vec::new() }
    }

    /// Appends a count.
    pub(crate) fn push(&mut self, n: u64) {
        match u32::try_from(n) {
            Ok(n) if n != u32::MAX => self.low.push(n),
            _ => {
                self.large.push((self.low.len(), n));
                self.low.push(u32::MAX);
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.low.len()
    }

    /// Count `i`.
    #[inline]
    fn get(&self, i: usize) -> u64 {
        match self.low[i] {
            u32::MAX => self.large[self.large.partition_point(|&(at, _)| at < i)].1,
            n => u64::from(n),
        }
    }

    fn try_reserve(&mut self, more: usize, exact: bool, stage: &'static str) -> Result<(), Error> {
        if exact { try_reserve_exact(&mut self.low, more, stage) } else { try_reserve(&mut self.low, more, stage) }
    }
}

impl FromIterator<u64> for Counts {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let mut counts = Counts::default();
        iter.into_iter().for_each(|n| counts.push(n));
        counts
    }
}

impl Spans {
    /// Room for `spans` spans of `bytes` bytes in all.
    pub(crate) fn with_capacity(spans: usize, bytes: usize) -> Self {
        Spans { bytes: Vec::with_capacity(bytes), ends: Ends::with_capacity(spans), counts: Counts::with_capacity(spans) }
    }

    /// Spans from their parts: `ends` (increasing, the last one `bytes.len()`) cut `bytes` into
    /// spans, `counts` gives each its count (one each). For readers that build the parts apart.
    pub(crate) fn from_parts(bytes: Vec<u8>, ends: Ends, counts: Counts) -> Self {
        debug_assert_eq!(ends.len(), counts.len());
        debug_assert_eq!(if ends.len() == 0 { 0 } else { ends.get(ends.len() - 1) }, bytes.len());
        Spans { bytes, ends, counts }
    }

    /// These spans with `counts` instead of their counts (one per span).
    pub(crate) fn with_counts(self, counts: Counts) -> Self {
        debug_assert_eq!(counts.len(), self.len());
        Spans { counts, ..self }
    }

    /// [`Spans::push`], or [`Error::OutOfMemory`] naming `stage` if the spans cannot grow.
    pub fn try_push(&mut self, span: &[u8], count: u64, stage: &'static str) -> Result<(), Error> {
        self.try_reserve(1, span.len(), false, stage)?;
        self.push(span, count);
        Ok(())
    }

    /// Makes room for `spans` more spans of `bytes` more bytes in all (doubling, unless `exact`).
    pub(crate) fn try_reserve(&mut self, spans: usize, bytes: usize, exact: bool, stage: &'static str) -> Result<(), Error> {
        match exact {
            true => try_reserve_exact(&mut self.bytes, bytes, stage)?,
            false => try_reserve(&mut self.bytes, bytes, stage)?,
        }
        self.ends.try_reserve(spans, exact, stage)?;
        self.counts.try_reserve(spans, exact, stage)
    }

    /// Appends a span.
    pub fn push(&mut self, span: &[u8], count: u64) {
        self.bytes.extend_from_slice(span);
        self.ends.push(self.bytes.len());
        self.counts.push(count);
    }

    /// Appends a span with no count yet (for a reader that reads the counts apart, see
    /// [`Spans::with_counts`]).
    pub(crate) fn push_bytes(&mut self, span: &[u8]) {
        self.bytes.extend_from_slice(span);
        self.ends.push(self.bytes.len());
    }

    /// Appends the span a short key packs (see `table.rs`): its 16 bytes in one store, then cut
    /// to its length.
    pub(crate) fn push_short(&mut self, key: u128, count: u64, stage: &'static str) -> Result<(), Error> {
        self.try_reserve(1, 16, false, stage)?;
        let end = self.bytes.len() + super::table::short_len(key);
        self.bytes.extend_from_slice(&key.to_le_bytes());
        self.bytes.truncate(end);
        self.ends.push(end);
        self.counts.push(count);
        Ok(())
    }

    /// The spans of `parts`, one part after the other: the first part grown in place (a large
    /// buffer is remapped, not copied) and each later one appended, then freed, so that the
    /// spans are held once plus the part being appended, not twice.
    pub(crate) fn concat(parts: Vec<Spans>) -> Result<Spans, Error> {
        let (spans, bytes) = parts.iter().fold((0, 0), |(n, b), part| (n + part.len(), b + part.bytes.len()));
        let mut parts = parts.into_iter();
        let mut all = parts.next().unwrap_or_default();
        all.try_reserve(spans - all.len(), bytes - all.bytes.len(), true, super::table::COUNTING)?;
        for part in parts {
            let base = all.bytes.len();
            all.bytes.extend_from_slice(&part.bytes);
            for i in 0..part.len() {
                all.ends.push(base + part.ends.get(i));
                all.counts.push(part.counts.get(i));
            }
        }
        Ok(all)
    }

    /// Number of spans.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Span `i` and its count.
    #[inline]
    pub fn get(&self, i: usize) -> (&[u8], u64) {
        (self.span(i), self.counts.get(i))
    }

    /// Span `i`.
    #[inline]
    pub fn span(&self, i: usize) -> &[u8] {
        &self.bytes[self.ends.range(i)]
    }

    /// The count of span `i`.
    #[inline]
    pub fn count(&self, i: usize) -> u64 {
        self.counts.get(i)
    }

    /// The spans' bytes, end to end.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Where span `i` lies in [`Spans::bytes`].
    pub fn range(&self, i: usize) -> std::ops::Range<usize> {
        self.ends.range(i)
    }

    /// The spans and their counts, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], u64)> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// These spans with every count mapped by `f`.
    pub(crate) fn map_counts(&self, f: impl Fn(u64) -> u64) -> Spans {
        Spans { bytes: self.bytes.clone(), ends: self.ends.clone(), counts: (0..self.len()).map(|i| f(self.count(i))).collect() }
    }
}

impl<B: AsRef<[u8]>> FromIterator<(B, u64)> for Spans {
    fn from_iter<I: IntoIterator<Item = (B, u64)>>(iter: I) -> Self {
        let mut spans = Spans::default();
        for (span, n) in iter {
            spans.push(span.as_ref(), n);
        }
        spans
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ends past 2^32, 2^33 and 2^40, with a span of more than 4 GiB (the high half steps by
    /// more than one) and empty spans, against the plain ends; no bytes are needed to test them.
    #[test]
    fn ends_past_32_bits_are_exact() {
        let mut next = crate::test_random(5);
        let mut plain = Vec::new();
        let mut end = 0usize;
        for k in 0..20_000 {
            end += match k {
                5000 => (1 << 32) - end % (1 << 32), // exactly at 2^32
                9000 => 3 << 32,                     // a span of 12 GiB
                15000 => 1 << 40,
                _ if k % 7 == 0 => 0, // an empty span
                _ => next(1 << 20) as usize,
            };
            plain.push(end);
        }
        let mut ends = Ends::default();
        plain.iter().for_each(|&e| ends.push(e));
        assert!(ends.steps.len() >= 3 && ends.steps.len() < 10, "{:?}", ends.steps);
        assert_eq!(ends.len(), plain.len());
        for i in 0..plain.len() {
            assert_eq!(ends.get(i), plain[i], "end {i}");
            assert_eq!(ends.range(i), crate::item_range(&plain, i));
        }
    }

    /// Counts at and around 2^32 - 1 and up to `u64::MAX` read back exactly, through pushes,
    /// `concat` and `map_counts`.
    #[test]
    fn counts_past_32_bits_are_exact() {
        let mut next = crate::test_random(9);
        let edge = [u64::from(u32::MAX) - 1, u64::from(u32::MAX), u64::from(u32::MAX) + 1, u64::MAX, 1 << 40];
        let plain: Vec<(Vec<u8>, u64)> =
            (0..3000u64).map(|i| (format!("s{i}").into_bytes(), if i % 37 == 0 { edge[(i / 37) as usize % 5] } else { 1 + next(1 << 31) })).collect();
        let parts: Vec<Spans> = plain.chunks(700).map(|c| c.iter().map(|(b, n)| (b, *n)).collect()).collect();
        let all = Spans::concat(parts).unwrap();
        assert_eq!(all.iter().map(|(b, n)| (b.to_vec(), n)).collect::<Vec<_>>(), plain);
        assert_eq!(all, plain.iter().map(|(b, n)| (b, *n)).collect::<Spans>());
        let halved = all.map_counts(|n| n / 2);
        assert!((0..plain.len()).all(|i| halved.get(i) == (&plain[i].0[..], plain[i].1 / 2)));
        assert_eq!(all.counts.large.len(), plain.iter().filter(|(_, n)| *n >= u64::from(u32::MAX)).count(), "only counts of 2^32 - 1 and more apart");
    }
}
