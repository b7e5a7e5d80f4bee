//! Counting: how often each distinct span occurs in the corpus.

use ahash::AHashMap;
use std::sync::atomic::{AtomicBool, Ordering};

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
}

/// The span table is split in this many shards by a hash of the span, so that the spans of a
/// batch can be added to it on all threads at once.
const SHARDS: usize = 16;

/// The distinct spans of a corpus (as UTF-8 bytes) and how often each occurred.
///
/// Counts are sums, so the result does not depend on how texts were batched or on how many
/// threads counted them.
#[derive(Debug, Clone)]
pub struct SpanCounts {
    shards: Vec<AHashMap<Box<[u8]>, u64>>,
}

impl Default for SpanCounts {
    fn default() -> Self {
        Self { shards: (0..SHARDS).map(|_| AHashMap::new()).collect() }
    }
}

/// Which shard holds `span`: a fixed hash (it only spreads work, so it needs no seed).
fn shard_of(span: &[u8]) -> usize {
    let mut h = span.len() as u64;
    for chunk in span.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    (h >> 60) as usize % SHARDS
}

impl SpanCounts {
    pub fn new() -> Self {
        Self::default()
    }

    /// Splits every text of a batch and adds its spans, in parallel on the current Rayon pool.
    ///
    /// Each thread counts borrowed slices of the batch, so a span is copied only the first time
    /// the corpus shows it; then the shards of the table take in their share of every thread's
    /// counts, each shard on its own thread.
    ///
    /// Setting `stop` makes it give up soon (between two texts) with [`Error::Interrupted`],
    /// leaving the table as it was.
    pub fn add_batch(&mut self, batch: &Batch, splitter: &Splitter, stop: &AtomicBool) -> Result<(), Error> {
        let counted: Vec<AHashMap<SpanKey<'_>, u64>> = (0..batch.len())
            .into_par_iter()
            .with_min_len(64)
            .try_fold(
                || AHashMap::with_capacity(1 << 12),
                |mut counts, i| {
                    if stop.load(Ordering::Relaxed) {
                        return Err(Error::Interrupted);
                    }
                    splitter.for_each_span(batch.get(i), |span| *counts.entry(SpanKey(span.as_bytes())).or_insert(0) += 1)?;
                    Ok::<_, Error>(counts)
                },
            )
            .collect::<Result<_, Error>>()?;
        let by_shard: Vec<Vec<Vec<(&[u8], u64)>>> = counted
            .into_par_iter()
            .map(|counts| {
                let mut parts = vec![Vec::new(); SHARDS];
                for (span, n) in counts {
                    parts[shard_of(span.0)].push((span.0, n));
                }
                parts
            })
            .collect();
        self.shards.par_iter_mut().enumerate().for_each(|(s, shard)| {
            for parts in &by_shard {
                for &(span, n) in &parts[s] {
                    add_to(shard, span, n);
                }
            }
        });
        Ok(())
    }

    /// Splits and counts a few texts (see [`SpanCounts::add_batch`]); for tests and small inputs.
    pub fn add_texts<T: AsRef<str>>(&mut self, texts: &[T], splitter: &Splitter) -> Result<(), Error> {
        let mut batch = Batch::new();
        for t in texts {
            batch.push(t.as_ref());
        }
        self.add_batch(&batch, splitter, &AtomicBool::new(false))
    }

    /// Adds `n` occurrences of `span`. Counts saturate at `u64::MAX` rather than wrap.
    pub fn add(&mut self, span: &[u8], n: u64) {
        add_to(&mut self.shards[shard_of(span)], span, n);
    }

    /// Number of distinct spans.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The count of one span (0 if never seen).
    pub fn get(&self, span: &[u8]) -> u64 {
        self.shards[shard_of(span)].get(span).copied().unwrap_or(0)
    }

    /// The spans and their counts, sorted by span bytes so that everything downstream is
    /// independent of hash order.
    pub fn into_sorted(self) -> Vec<(Box<[u8]>, u64)> {
        let mut spans: Vec<_> = self.shards.into_iter().flatten().collect();
        spans.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
        spans
    }
}

fn add_to(shard: &mut AHashMap<Box<[u8]>, u64>, span: &[u8], n: u64) {
    if span.is_empty() || n == 0 {
        return;
    }
    match shard.get_mut(span) {
        Some(c) => *c = c.saturating_add(n),
        None => {
            shard.insert(span.into(), n);
        }
    }
}

/// A borrowed span as a hash key. Spans are mostly a few bytes long, where comparing them as
/// two machine words beats a call to `memcmp`.
#[derive(Clone, Copy, Hash)]
struct SpanKey<'t>(&'t [u8]);

impl PartialEq for SpanKey<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.0, other.0);
        if a.len() != b.len() {
            return false;
        }
        if a.len() <= 16 {
            let (mut x, mut y) = ([0u8; 16], [0u8; 16]);
            x[..a.len()].copy_from_slice(a);
            y[..b.len()].copy_from_slice(b);
            return u128::from_ne_bytes(x) == u128::from_ne_bytes(y);
        }
        a == b
    }
}

impl Eq for SpanKey<'_> {}

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
