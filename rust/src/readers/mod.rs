//! Readers: where texts come from before they are split and counted, read from each format.
//!
//! [`arrow`] reads Arrow string arrays through the Arrow C Data Interface; [`parquet`] reads a
//! column of strings of a Parquet file, a few rows at a time.
//! [`text`] and [`jsonl`] read the documents of text and JSONL files ([`open`]ed as they are or
//! decompressed), [`selection`] applies the command line's document options to the documents of
//! every format (crop, stop, hold out), and [`bad_lines`] counts those skipped; [`range`] cuts a large file into
//! byte ranges at document boundaries, for several readers to share.

pub mod arrow;
pub mod parquet;

pub mod bad_lines;
pub mod jsonl;
pub mod open;
pub mod range;
pub mod selection;
pub mod text;
