//! bpeforge: an exact, deterministic byte-level BPE trainer.
//!
//! The pipeline, one module per stage:
//! 1. [`pretokenize`] splits each text into spans with a regex pattern;
//! 2. [`count`] counts each distinct span: a [`Counter`] takes texts and counts them in batches
//!    on a worker thread and a Rayon pool while they come, and gives the [`CountTables`], joined
//!    into [`count::Spans`] (or kept as a value, sorted: [`span_counts`], Python's `SpanCounts`,
//!    added up, packed and saved);
//! 3. [`merge`] runs the merge loop over the distinct spans and their counts ([`learn`]);
//! 4. [`vocab`] holds the learned tokens (ranks) and checks tiktoken's invariants.
//!
//! Training from Rust: push texts into a [`Counter`], [`Counter::finish`] it, turn the counts
//! into spans ([`CountTables::into_spans`]) and [`learn`] from them:
//!
//! ```
//! use std::ops::ControlFlow;
//! use std::sync::{atomic::AtomicBool, Arc};
//! use bpeforge::{learn, pretokenize::presets, Counter, LearnOptions, NoLock, Splitter};
//!
//! let splitter = Splitter::new(presets::GPT4)?;
//! let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(2).build()?);
//! let stop = Arc::new(AtomicBool::new(false));
//! let mut counter = Counter::new(&splitter, Arc::clone(&pool), 8192, Arc::clone(&stop), &NoLock)?;
//! for text in ["the cat sat on the mat", "the cat ate"] {
//!     counter.push(text);
//! }
//! let counted = counter.finish()?;
//! let options = LearnOptions { vocab_size: 256 + 3, min_frequency: 1, max_token_length: None, ..Default::default() };
//! let learned = pool.install(|| {
//!     let spans = counted.counts.into_spans(&stop)?;
//!     learn(spans, &options, &stop, |_merge, _vocab| ControlFlow::Continue(()))
//! })?;
//! assert_eq!(learned.vocab.len(), 256 + 3);
//! assert_eq!(learned.vocab.tokens().nth(256), Some(&b"at"[..])); // 5 times: the commonest pair
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The Python bindings live alone in `python.rs` (and `python/`): they
//! convert types, release the GIL and pull texts from Python iterators into the counter;
//! nothing else knows about Python.
//! [`readers`] read texts from Arrow string arrays, Parquet, text and JSONL files, before the
//! stages ([`parquet_errors`]: what reading a Parquet file, texts or span counts, fails with);
//! [`memory`] returns freed memory to the system between stages; [`encode`] encodes text with
//! learned ranks as tiktoken does, for measuring compression.

pub mod count;
pub mod encode;
pub mod error;
pub mod memory;
pub mod merge;
pub mod parquet_errors;
pub mod pretokenize;
pub mod readers;
pub mod span_counts;
pub mod vocab;

#[cfg(feature = "python")]
mod python;

/// The extension module's allocator: large blocks mapped and unmapped directly (see [`memory`]).
#[cfg(feature = "python")]
#[global_allocator]
static ALLOCATOR: memory::Allocator = memory::Allocator;

/// Where item `i` lies in a buffer of items stored end to end, given where each item ends
/// (`ends`, increasing): from the previous item's end (0 for the first) to its own.
fn item_range(ends: &[usize], i: usize) -> std::ops::Range<usize> {
    (if i == 0 { 0 } else { ends[i - 1] })..ends[i]
}

/// The tests' random numbers, so that they need no extra crate: `next(m)` is a number below `m` from
/// a 64-bit linear congruential generator started at `seed` (the same draws every run).
#[cfg(test)]
fn test_random(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut state = seed;
    move |m| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % m
    }
}

pub use count::{CallerLock, CountTables, Counted, Counter, NoLock};
pub use error::Error;
pub use merge::{learn, LearnOptions, Merge, Pair};
pub use pretokenize::Splitter;
pub use vocab::Vocab;
