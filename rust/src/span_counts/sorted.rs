//! Span counts in canonical form: the distinct spans sorted by their bytes, each once, each with
//! a count above zero, and the totals.
//!
//! *Why sorted:* two sorted lists add up in one linear pass (a merge, as in merge sort) with no
//! hash table, so adding the counts of many shards costs little memory and time, the result is
//! the same whatever the order or grouping of the parts (addition of integers is associative
//! and commutative, and the sorted form is unique), and equal counts are equal byte for byte,
//! which makes files and checksums comparable. The merge loop does not depend on the order of
//! the spans, so it trains on them as they are.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

use rayon::prelude::*;

use crate::count::Spans;

/// Distinct spans sorted by their bytes, with counts above zero (see the module's comment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SortedSpans {
    spans: Spans,
    /// The sum of the counts: span occurrences.
    total: u128,
    /// The sum of count × length: bytes of the spans' occurrences.
    total_bytes: u128,
}

/// Adding two counts of one span would pass `u64::MAX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow {
    pub span: Vec<u8>,
    pub counts: (u64, u64),
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the count of the span {} would pass 2^64-1 ({} + {}); counts are exact 64-bit integers",
            show_span(&self.span),
            self.counts.0,
            self.counts.1
        )
    }
}

impl std::error::Error for Overflow {}

/// A weighted sum of span counts would pass `u64::MAX`: a count times its part's weight, or
/// the sum of weighted counts of one span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WeightedOverflow {
    Product { part: usize, span: Vec<u8>, count: u64, weight: u64 },
    Sum(Overflow),
}

impl fmt::Display for WeightedOverflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WeightedOverflow::Product { span, count, weight, .. } => write!(
                f,
                "the count of the span {} ({count}) times the weight {weight} would pass 2^64-1; counts are exact \
                 64-bit integers: use smaller weights",
                show_span(span)
            ),
            WeightedOverflow::Sum(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for WeightedOverflow {}

/// A span for a message: as text when it is UTF-8 (quoted, escaped), else its bytes, cut
/// after 40 characters.
pub fn show_span(span: &[u8]) -> String {
    let shown = match std::str::from_utf8(span) {
        Ok(text) => format!("{:?}", text.chars().take(40).collect::<String>()),
        Err(_) => format!("b{:?}", String::from_utf8_lossy(&span[..span.len().min(40)])),
    };
    if span.len() > 40 { format!("{shown}... ({} bytes)", span.len()) } else { shown }
}

/// Why spans given as sorted are not in canonical form, at which of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotCanonical {
    pub row: usize,
    pub why: &'static str,
}

impl SortedSpans {
    /// Distinct spans in any order (as counting gives them), sorted by their bytes in parallel
    /// on the current Rayon pool. Zero counts and empty spans are left out.
    pub fn from_distinct(spans: Spans) -> Self {
        if spans.len() <= u32::MAX as usize {
            Self::gathered(&spans, &order_by_bytes::<u32>(&spans, false))
        } else {
            Self::gathered(&spans, &order_by_bytes::<usize>(&spans, false))
        }
    }

    /// Spans in any order, repeats included (as a mapping or a foreign file gives them): sorted,
    /// the counts of a repeated span added (an [`Overflow`] if they pass `u64::MAX`), zero
    /// counts and empty spans left out.
    pub fn from_unsorted(spans: Spans) -> Result<Self, Overflow> {
        if spans.len() <= u32::MAX as usize {
            Self::summed(&spans, &order_by_bytes::<u32>(&spans, true))
        } else {
            Self::summed(&spans, &order_by_bytes::<usize>(&spans, true))
        }
    }

    /// The spans of `spans` in the order `order`, the counts of equal neighbours added.
    fn summed<I: SpanIndex>(spans: &Spans, order: &[I]) -> Result<Self, Overflow> {
        let mut summed = Spans::with_capacity(spans.len(), spans.bytes().len());
        let mut k = 0;
        while k < order.len() {
            let (span, mut n) = spans.get(order[k].at());
            k += 1;
            while k < order.len() && spans.get(order[k].at()).0 == span {
                let m = spans.get(order[k].at()).1;
                n = n.checked_add(m).ok_or_else(|| Overflow { span: span.to_vec(), counts: (n, m) })?;
                k += 1;
            }
            if n > 0 && !span.is_empty() {
                summed.push(span, n);
            }
        }
        Ok(Self::with_totals(summed))
    }

    /// Spans said to be in canonical form (read from a file), checked: strictly increasing,
    /// no empty span, no zero count.
    pub fn from_sorted(spans: Spans) -> Result<Self, NotCanonical> {
        for i in 0..spans.len() {
            let (span, n) = spans.get(i);
            if span.is_empty() {
                return Err(NotCanonical { row: i, why: "an empty span" });
            }
            if n == 0 {
                return Err(NotCanonical { row: i, why: "a count of 0" });
            }
            if i > 0 {
                match spans.get(i - 1).0.cmp(span) {
                    Ordering::Less => {}
                    Ordering::Equal => return Err(NotCanonical { row: i, why: "a span repeated from the row before" }),
                    Ordering::Greater => return Err(NotCanonical { row: i, why: "a span out of order (spans are sorted by bytes)" }),
                }
            }
        }
        Ok(Self::with_totals(spans))
    }

    /// The spans of `spans` in the order `order`, skipping zero counts and empty spans.
    fn gathered<I: SpanIndex>(spans: &Spans, order: &[I]) -> Self {
        let mut sorted = Spans::with_capacity(spans.len(), spans.bytes().len());
        for &i in order {
            let (span, n) = spans.get(i.at());
            if n > 0 && !span.is_empty() {
                sorted.push(span, n);
            }
        }
        Self::with_totals(sorted)
    }

    fn with_totals(spans: Spans) -> Self {
        let (mut total, mut total_bytes) = (0u128, 0u128);
        for (span, n) in spans.iter() {
            total += u128::from(n);
            total_bytes += u128::from(n) * span.len() as u128;
        }
        SortedSpans { spans, total, total_bytes }
    }

    /// The spans and their counts, sorted by bytes: what the merge loop trains on.
    pub fn spans(&self) -> &Spans {
        &self.spans
    }

    /// The spans and their counts, given up (for a merge loop that frees them once it holds
    /// them).
    pub fn into_spans(self) -> Spans {
        self.spans
    }

    /// Number of distinct spans.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The sum of the counts (span occurrences).
    pub fn total(&self) -> u128 {
        self.total
    }

    /// The sum of count × length over the spans (bytes of text the spans cover).
    pub fn total_bytes(&self) -> u128 {
        self.total_bytes
    }

    /// Bytes of the spans end to end (each distinct span once).
    pub fn distinct_bytes(&self) -> usize {
        self.spans.bytes().len()
    }

    /// Span `i` (in sorted order) and its count.
    pub fn get(&self, i: usize) -> (&[u8], u64) {
        self.spans.get(i)
    }

    /// The count of `span` (0 if absent), by binary search.
    pub fn count_of(&self, span: &[u8]) -> u64 {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.get(mid).0.cmp(span) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return self.get(mid).1,
            }
        }
        0
    }

    /// The sum of `parts`: one linear merge of sorted lists per pair of parts, in a tree of
    /// pairs merged in parallel. Exact: an [`Overflow`] if a span's count would pass
    /// `u64::MAX`. The result does not depend on the order or grouping of the parts.
    pub fn merge(parts: &[&SortedSpans]) -> Result<Self, Overflow> {
        match parts {
            [] => return Ok(Self::default()),
            [one] => return Ok((*one).clone()),
            _ => {}
        }
        let mut round: Vec<Spans> =
            parts.par_chunks(2).map(|pair| if pair.len() == 2 { merge_two(&pair[0].spans, 1, &pair[1].spans, 1) } else { Ok(pair[0].spans.clone()) }).collect::<Result<_, _>>()?;
        while round.len() > 1 {
            round = round.par_chunks(2).map(|pair| if pair.len() == 2 { merge_two(&pair[0], 1, &pair[1], 1) } else { Ok(pair[0].clone()) }).collect::<Result<_, _>>()?;
        }
        Ok(Self::with_totals(round.pop().unwrap_or_default()))
    }

    /// The sum of `parts`, the counts of each multiplied by its weight (at least 1): exact, a
    /// [`WeightedOverflow`] naming the part if a count times its weight, or a sum of them, would
    /// pass `u64::MAX`. The parts are weighted in the first round of the tree of merges, so no
    /// weighted copy of a whole part is made besides that of a part left alone in that round.
    /// Like [`merge`](Self::merge), the result does not depend on the order of the parts.
    pub fn weighted_sum(parts: &[(&SortedSpans, u64)]) -> Result<Self, WeightedOverflow> {
        for (k, (part, weight)) in parts.iter().enumerate() {
            if let Some(i) = part.weight_overflows(*weight) {
                let (span, count) = part.get(i);
                return Err(WeightedOverflow::Product { part: k, span: span.to_vec(), count, weight: *weight });
            }
        }
        let mut round: Vec<Spans> = parts
            .par_chunks(2)
            .map(|pair| match pair {
                [(a, wa), (b, wb)] => merge_two(&a.spans, *wa, &b.spans, *wb),
                _ => Ok(scaled(&pair[0].0.spans, pair[0].1)),
            })
            .collect::<Result<_, _>>()
            .map_err(WeightedOverflow::Sum)?;
        while round.len() > 1 {
            round = round
                .par_chunks(2)
                .map(|pair| if pair.len() == 2 { merge_two(&pair[0], 1, &pair[1], 1) } else { Ok(pair[0].clone()) })
                .collect::<Result<_, _>>()
                .map_err(WeightedOverflow::Sum)?;
        }
        Ok(Self::with_totals(round.pop().unwrap_or_default()))
    }

    /// The index of the most counted span if its count times `weight` would pass `u64::MAX`.
    fn weight_overflows(&self, weight: u64) -> Option<usize> {
        let most = (0..self.len()).max_by_key(|&i| self.get(i).1)?;
        self.get(most).1.checked_mul(weight).is_none().then_some(most)
    }

    /// The spans counted at least `min_count` times, and the occurrences of those left out.
    pub fn prune(&self, min_count: u64) -> (Self, u128) {
        let mut kept = Spans::default();
        let mut dropped = 0u128;
        for (span, n) in self.spans.iter() {
            if n >= min_count {
                kept.push(span, n);
            } else {
                dropped += u128::from(n);
            }
        }
        (Self::with_totals(kept), dropped)
    }

    /// The indices of the `n` most counted spans, most counted first (among equal counts, the
    /// smaller span first).
    pub fn most_common(&self, n: usize) -> Vec<usize> {
        let order = |a: &usize, b: &usize| {
            let ((x, m), (y, k)) = (self.get(*a), self.get(*b));
            k.cmp(&m).then_with(|| x.cmp(y))
        };
        let mut all: Vec<usize> = (0..self.len()).collect();
        if n < all.len() {
            if n == 0 {
                return Vec::new();
            }
            all.select_nth_unstable_by(n - 1, order);
            all.truncate(n);
        }
        all.sort_unstable_by(order);
        all
    }

    /// Feeds the spans and counts in order to a CRC-32 (each as its length and count, 64-bit
    /// little-endian, and its bytes): what a file records, to tell damage.
    pub fn update_checksum(&self, hasher: &mut crc32fast::Hasher) {
        for (span, n) in self.spans.iter() {
            hasher.update(&(span.len() as u64).to_le_bytes());
            hasher.update(&n.to_le_bytes());
            hasher.update(span);
        }
    }
}

/// The index of a span in [`Spans`]: 32-bit when there are few enough spans (half the memory
/// of a sort's order), else 64-bit.
trait SpanIndex: Copy + Send + Sync {
    fn of(i: usize) -> Self;
    fn at(self) -> usize;
}

impl SpanIndex for u32 {
    fn of(i: usize) -> Self {
        i as u32 // callers use u32 only for fewer than 2^32 spans
    }
    fn at(self) -> usize {
        self as usize
    }
}

impl SpanIndex for usize {
    fn of(i: usize) -> Self {
        i
    }
    fn at(self) -> usize {
        self
    }
}

/// The indices of `spans` in the order of their bytes, in parallel on the current Rayon pool;
/// `stable` keeps equal spans in their order (unneeded for distinct spans).
///
/// Each index is sorted with its span's first 8 bytes as a big-endian integer beside it, so that
/// most comparisons read no span at all: comparing the spans themselves, a cache miss each in a
/// large buffer, made sorting 10 million distinct spans take several times as long as counting
/// them. Equal prefixes (a span shorter than 8 bytes is padded with zeros, which can tie it with
/// a longer one) are settled by the whole bytes. The prefix costs 8 bytes per span while sorting.
fn order_by_bytes<I: SpanIndex>(spans: &Spans, stable: bool) -> Vec<I> {
    let prefix = |i: usize| {
        let bytes = spans.get(i).0;
        let mut first = [0u8; 8];
        let n = bytes.len().min(8);
        first[..n].copy_from_slice(&bytes[..n]);
        u64::from_be_bytes(first)
    };
    let mut keyed: Vec<(u64, I)> = (0..spans.len()).into_par_iter().map(|i| (prefix(i), I::of(i))).collect();
    let by_bytes = |a: &(u64, I), b: &(u64, I)| a.0.cmp(&b.0).then_with(|| spans.get(a.1.at()).0.cmp(spans.get(b.1.at()).0));
    if stable {
        keyed.par_sort_by(by_bytes);
    } else {
        keyed.par_sort_unstable_by(by_bytes);
    }
    keyed.into_par_iter().map(|(_, i)| i).collect()
}

/// The sum of two sorted lists of distinct spans, in one pass, the counts of `a` multiplied by
/// `wa` and those of `b` by `wb` (1 and 1 for a plain sum). The products were checked to fit
/// (see [`SortedSpans::weighted_sum`]), so only the sums can overflow.
fn merge_two(a: &Spans, wa: u64, b: &Spans, wb: u64) -> Result<Spans, Overflow> {
    // Checked by the caller: no count times its weight passes u64::MAX, so the products are exact.
    let (scale_a, scale_b) = (|n: u64| n.saturating_mul(wa), |m: u64| m.saturating_mul(wb));
    let mut out = Spans::with_capacity(a.len() + b.len(), a.bytes().len() + b.bytes().len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let ((x, n), (y, m)) = (a.get(i), b.get(j));
        match x.cmp(y) {
            Ordering::Less => {
                out.push(x, scale_a(n));
                i += 1;
            }
            Ordering::Greater => {
                out.push(y, scale_b(m));
                j += 1;
            }
            Ordering::Equal => {
                let (n, m) = (scale_a(n), scale_b(m));
                out.push(x, n.checked_add(m).ok_or_else(|| Overflow { span: x.to_vec(), counts: (n, m) })?);
                i += 1;
                j += 1;
            }
        }
    }
    (i..a.len()).for_each(|i| {
        let (x, n) = a.get(i);
        out.push(x, scale_a(n))
    });
    (j..b.len()).for_each(|j| {
        let (y, m) = b.get(j);
        out.push(y, scale_b(m))
    });
    Ok(out)
}

/// `spans` with every count multiplied by `weight` (checked to fit by the caller).
fn scaled(spans: &Spans, weight: u64) -> Spans {
    if weight == 1 {
        return spans.clone();
    }
    spans.map_counts(|n| n.saturating_mul(weight))
}

/// Spans the merge loop owns (and frees once it holds them)...
impl From<Spans> for Cow<'_, Spans> {
    fn from(spans: Spans) -> Self {
        Cow::Owned(spans)
    }
}

/// ... or borrows from span counts the caller keeps.
impl<'a> From<&'a Spans> for Cow<'a, Spans> {
    fn from(spans: &'a Spans) -> Self {
        Cow::Borrowed(spans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(pairs: &[(&str, u64)]) -> SortedSpans {
        SortedSpans::from_unsorted(pairs.iter().map(|(s, n)| (s.as_bytes(), *n)).collect()).unwrap()
    }

    fn listed(s: &SortedSpans) -> Vec<(Vec<u8>, u64)> {
        s.spans().iter().map(|(b, n)| (b.to_vec(), n)).collect()
    }

    #[test]
    fn unsorted_spans_are_sorted_summed_and_cleaned() {
        let s = sorted(&[("b", 2), ("a", 1), ("b", 3), ("", 5), ("c", 0), ("ab", 1)]);
        assert_eq!(listed(&s), vec![(b"a".to_vec(), 1), (b"ab".to_vec(), 1), (b"b".to_vec(), 5)]);
        assert_eq!((s.total(), s.total_bytes()), (7, 8));
        assert_eq!(s.count_of(b"b"), 5);
        assert_eq!(s.count_of(b"zz"), 0);
    }

    #[test]
    fn distinct_spans_sort_as_bytes_do() {
        let spans: Spans = [(&b"\xff"[..], 1u64), (b"a\0", 2), (b"a", 3), (b" a", 4)].into_iter().collect();
        let s = SortedSpans::from_distinct(spans);
        assert_eq!(listed(&s), vec![(b" a".to_vec(), 4), (b"a".to_vec(), 3), (b"a\0".to_vec(), 2), (b"\xff".to_vec(), 1)]);
    }

    #[test]
    fn merging_is_exact_and_does_not_depend_on_grouping() {
        let mut next = crate::test_random(7);
        let parts: Vec<SortedSpans> = (0..5)
            .map(|_| {
                let spans: Spans = (0..200).map(|_| (format!("s{}", next(300)).into_bytes(), 1 + next(1000))).collect();
                SortedSpans::from_unsorted(spans).unwrap()
            })
            .collect();
        let all: Vec<&SortedSpans> = parts.iter().collect();
        let whole = SortedSpans::merge(&all).unwrap();
        let reversed: Vec<&SortedSpans> = parts.iter().rev().collect();
        assert_eq!(SortedSpans::merge(&reversed).unwrap(), whole);
        let left = SortedSpans::merge(&all[..2]).unwrap();
        let right = SortedSpans::merge(&all[2..]).unwrap();
        assert_eq!(SortedSpans::merge(&[&left, &right]).unwrap(), whole);
        let concatenated: Spans = parts.iter().flat_map(|p| listed(p)).collect();
        assert_eq!(SortedSpans::from_unsorted(concatenated).unwrap(), whole);
        assert_eq!(whole.total(), parts.iter().map(SortedSpans::total).sum::<u128>());
    }

    #[test]
    fn overflow_is_refused_naming_the_span() {
        let a = sorted(&[("x", u64::MAX - 1)]);
        let b = sorted(&[("x", 2)]);
        let e = SortedSpans::merge(&[&a, &b]).unwrap_err();
        assert_eq!(e.counts, (u64::MAX - 1, 2));
        assert!(e.to_string().contains("\"x\""), "{e}");
        assert!(SortedSpans::merge(&[&a, &sorted(&[("x", 1)])]).is_ok());
    }

    #[test]
    fn a_weighted_sum_multiplies_exactly_and_ignores_order() {
        let a = sorted(&[("x", 3), ("y", 1)]);
        let b = sorted(&[("x", 2), ("z", 5)]);
        let c = sorted(&[("y", 7)]);
        let sum = SortedSpans::weighted_sum(&[(&a, 4), (&b, 1), (&c, 2)]).unwrap();
        assert_eq!(listed(&sum), vec![(b"x".to_vec(), 14), (b"y".to_vec(), 18), (b"z".to_vec(), 5)]);
        assert_eq!(SortedSpans::weighted_sum(&[(&c, 2), (&a, 4), (&b, 1)]).unwrap(), sum);
        assert_eq!(SortedSpans::weighted_sum(&[(&a, 1), (&b, 1), (&c, 1)]).unwrap(), SortedSpans::merge(&[&a, &b, &c]).unwrap());
        assert_eq!(SortedSpans::weighted_sum(&[(&c, 3)]).unwrap(), sorted(&[("y", 21)]));
        assert_eq!(sum.total_bytes(), 37);
    }

    #[test]
    fn weighted_overflow_is_refused_naming_the_part() {
        let a = sorted(&[("x", 1)]);
        let b = sorted(&[("x", 2), ("y", u64::MAX / 2 + 1)]);
        match SortedSpans::weighted_sum(&[(&a, 1), (&b, 2)]).unwrap_err() {
            WeightedOverflow::Product { part, span, count, weight } => assert_eq!((part, span, count, weight), (1, b"y".to_vec(), u64::MAX / 2 + 1, 2)),
            other => panic!("{other}"),
        }
        let e = SortedSpans::weighted_sum(&[(&sorted(&[("x", u64::MAX / 2)]), 2), (&a, 2)]).unwrap_err();
        assert!(matches!(e, WeightedOverflow::Sum(_)), "{e}");
        assert!(SortedSpans::weighted_sum(&[(&sorted(&[("x", u64::MAX / 2)]), 2), (&a, 1)]).is_ok());
    }

    #[test]
    fn canonical_form_is_checked() {
        let spans = |pairs: &[(&str, u64)]| pairs.iter().map(|(s, n)| (s.as_bytes(), *n)).collect::<Spans>();
        assert!(SortedSpans::from_sorted(spans(&[("a", 1), ("b", 1)])).is_ok());
        assert_eq!(SortedSpans::from_sorted(spans(&[("a", 1), ("a", 1)])).unwrap_err().row, 1);
        assert_eq!(SortedSpans::from_sorted(spans(&[("b", 1), ("a", 1)])).unwrap_err().row, 1);
        assert_eq!(SortedSpans::from_sorted(spans(&[("a", 0)])).unwrap_err().why, "a count of 0");
    }

    #[test]
    fn prune_and_most_common() {
        let s = sorted(&[("a", 5), ("b", 1), ("c", 5), ("d", 2)]);
        let (kept, dropped) = s.prune(2);
        assert_eq!((kept.len(), dropped, kept.total()), (3, 1, 12));
        let top: Vec<&[u8]> = s.most_common(3).into_iter().map(|i| s.get(i).0).collect();
        assert_eq!(top, vec![&b"a"[..], b"c", b"d"]);
        assert_eq!(s.most_common(10).len(), 4);
        assert!(s.most_common(0).is_empty());
    }
}
