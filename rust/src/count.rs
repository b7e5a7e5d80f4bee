//! Counting: how often each distinct span occurs in the corpus.

use ahash::AHashMap;
use rayon::prelude::*;

use crate::{Error, Splitter};

/// A batch of texts stored end to end in one buffer, so that handing over a batch costs one
/// copy of its bytes and no allocation per text.
#[derive(Default, Debug, Clone)]
pub struct Batch {
    text: String,
    ends: Vec<usize>,
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
        self.ends.push(self.text.len());
    }

    /// Appends texts given as one UTF-8 buffer and the end offset of each text in it (as an
    /// Arrow string column stores them). Fails without changing the batch if the offsets do not
    /// fall on character boundaries in increasing order.
    pub fn extend_from_buffer(&mut self, data: &str, ends: impl IntoIterator<Item = usize>) -> Result<(), Error> {
        let base = self.text.len();
        let before = self.ends.len();
        let mut last = 0;
        for end in ends {
            if end < last || !data.is_char_boundary(end) {
                self.ends.truncate(before);
                return Err(Error::InvalidOption(format!("text offsets out of order or not on a character boundary: {end}")));
            }
            self.ends.push(base + end);
            last = end;
        }
        self.text.push_str(&data[..last]);
        Ok(())
    }

    /// Number of texts.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Total bytes of all texts.
    pub fn bytes(&self) -> usize {
        self.text.len()
    }

    /// Text `i`.
    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }
}

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
    pub fn add_batch(&mut self, batch: &Batch, splitter: &Splitter) -> Result<(), Error> {
        let counted: AHashMap<&[u8], u64> = (0..batch.len())
            .into_par_iter()
            .with_min_len(64)
            .try_fold(AHashMap::new, |mut counts, i| {
                splitter.for_each_span(batch.get(i), |span| *counts.entry(span.as_bytes()).or_insert(0) += 1)?;
                Ok::<_, Error>(counts)
            })
            .try_reduce(AHashMap::new, |a, b| Ok(merge_maps(a, b)))?;
        for (span, n) in counted {
            self.add(span, n);
        }
        Ok(())
    }

    /// Splits and counts a few texts (see [`SpanCounts::add_batch`]).
    pub fn add_texts<T: AsRef<str>>(&mut self, texts: &[T], splitter: &Splitter) -> Result<(), Error> {
        let mut batch = Batch::new();
        for t in texts {
            batch.push(t.as_ref());
        }
        self.add_batch(&batch, splitter)
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

    #[test]
    fn batches_from_buffers_hold_the_same_texts() {
        let mut a = Batch::new();
        for t in ["héllo", "", "wörld!"] {
            a.push(t);
        }
        let mut b = Batch::new();
        b.extend_from_buffer("héllowörld!", [6, 6, 13]).unwrap();
        assert_eq!((0..3).map(|i| a.get(i)).collect::<Vec<_>>(), (0..3).map(|i| b.get(i)).collect::<Vec<_>>());
        assert!(b.extend_from_buffer("héllo", [2]).is_err(), "2 is inside 'é'");
        assert!(b.extend_from_buffer("hello", [3, 2]).is_err(), "offsets must increase");
        assert_eq!(b.len(), 3, "a failed extend leaves the batch as it was");
    }
}
