//! Counting: how often each distinct span occurs in the corpus.

use ahash::AHashMap;
use rayon::prelude::*;

use crate::{Error, Splitter};

/// The distinct spans of a corpus (as UTF-8 bytes) and how often each occurred.
///
/// Counts are sums, so the result does not depend on how texts were batched or on how many
/// threads counted them.
#[derive(Default, Debug, Clone)]
pub struct SpanCounts {
    counts: AHashMap<Box<[u8]>, u64>,
}

impl SpanCounts {
    pub fn new() -> Self {
        Self::default()
    }

    /// Splits every text of a batch and adds its spans, in parallel on the current Rayon pool.
    ///
    /// Each thread counts borrowed slices of the batch, so a span is copied only the first time
    /// the corpus shows it.
    pub fn add_texts<T: AsRef<str> + Sync>(&mut self, texts: &[T], splitter: &Splitter) -> Result<(), Error> {
        let batch: AHashMap<&[u8], u64> = texts
            .par_iter()
            .try_fold(AHashMap::new, |mut counts, text| {
                splitter.for_each_span(text.as_ref(), |span| *counts.entry(span.as_bytes()).or_insert(0) += 1)?;
                Ok::<_, Error>(counts)
            })
            .try_reduce(AHashMap::new, |a, b| Ok(merge_maps(a, b)))?;
        for (span, n) in batch {
            self.add(span, n);
        }
        Ok(())
    }

    /// Adds `n` occurrences of `span`. Counts saturate at `u64::MAX` rather than wrap.
    pub fn add(&mut self, span: &[u8], n: u64) {
        if span.is_empty() || n == 0 {
            return;
        }
        match self.counts.get_mut(span) {
            Some(c) => *c = c.saturating_add(n),
            None => {
                self.counts.insert(span.into(), n);
            }
        }
    }

    /// Number of distinct spans.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The count of one span (0 if never seen).
    pub fn get(&self, span: &[u8]) -> u64 {
        self.counts.get(span).copied().unwrap_or(0)
    }

    /// The spans and their counts, sorted by span bytes so that everything downstream is
    /// independent of hash order.
    pub fn into_sorted(self) -> Vec<(Box<[u8]>, u64)> {
        let mut spans: Vec<_> = self.counts.into_iter().collect();
        spans.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
        spans
    }
}

fn merge_maps<'t>(a: AHashMap<&'t [u8], u64>, b: AHashMap<&'t [u8], u64>) -> AHashMap<&'t [u8], u64> {
    let (mut big, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    for (span, n) in small {
        *big.entry(span).or_insert(0) += n;
    }
    big
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::presets;

    #[test]
    fn counts_do_not_depend_on_batching() {
        let texts = ["hello world", "hello there", "world hello world", ""];
        let splitter = Splitter::new(presets::GPT4).unwrap();
        let mut all = SpanCounts::new();
        all.add_texts(&texts, &splitter).unwrap();
        let mut one_by_one = SpanCounts::new();
        for t in texts {
            one_by_one.add_texts(&[t], &splitter).unwrap();
        }
        assert_eq!(all.clone().into_sorted(), one_by_one.into_sorted());
        assert_eq!(all.get(b" world"), 2);
        assert_eq!(all.get(b"hello"), 2);
        assert_eq!(all.get(b" hello"), 1);
        assert_eq!(all.len(), 5);
    }
}
