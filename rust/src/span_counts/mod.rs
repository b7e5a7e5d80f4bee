//! Span counts as a value, between counting and the merge loop (Python's `SpanCounts`): the
//! distinct spans sorted by their bytes with their counts ([`SortedSpans`], `sorted.rs`), added
//! up and weighted exactly, packed into one byte string to move between processes
//! (`packed.rs`), and saved as and read from Parquet files (`file.rs`).

pub mod file;
pub mod packed;
pub mod sorted;

pub use sorted::{Overflow, SortedSpans, WeightedOverflow};
