//! Sources: where texts come from before they are split and counted.
//!
//! [`arrow`] reads Arrow string arrays through the Arrow C Data Interface; [`parquet`] reads a
//! column of strings of a Parquet file, a few rows at a time.

pub mod arrow;
pub mod parquet;
