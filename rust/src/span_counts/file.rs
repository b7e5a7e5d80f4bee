//! Span counts files: Parquet with a `span` column (binary) and a `count` column (uint64),
//! sorted by span, each span once, with the split pattern, the counting options, the format
//! version, the totals and a CRC-32 of the counts in the file's key-value metadata (see
//! docs/span-counts.md).
//!
//! Written with the parquet crate's own writer (no Arrow): spans with DELTA_BYTE_ARRAY, which
//! stores each span as the length of the prefix it shares with the span before and the rest
//! (sorted spans share long prefixes), counts with DELTA_BINARY_PACKED, then zstd. Written to a
//! temporary file beside the target and renamed into place, so a reader sees the whole file or
//! none. Reading checks everything and names the row of a problem.
//!
//! Counts made elsewhere (Spark, SQL) are read from any Parquet file with a binary or string
//! column of spans and an integer column of counts, in any order, repeats added up
//! ([`read_foreign`]).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, Encoding, LogicalType, Type as PhysicalType, ZstdLevel};
use parquet::column::reader::get_typed_column_reader;
use parquet::data_type::{ByteArray, ByteArrayType, DataType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;

use super::sorted::SortedSpans;
use crate::count::{Counts, Spans};
use crate::parquet_errors::{catch_reader_panics, Failure, ReadError};

/// The format version this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Keys of the file's key-value metadata.
const KEY_FORMAT: &str = "bpeforge.span_counts.format";
const KEY_PATTERN: &str = "bpeforge.span_counts.pattern";
const KEY_OPTIONS: &str = "bpeforge.span_counts.options";
const KEY_SPANS: &str = "bpeforge.span_counts.spans";
const KEY_TOTAL: &str = "bpeforge.span_counts.total";
const KEY_TOTAL_BYTES: &str = "bpeforge.span_counts.total_bytes";
const KEY_CHECKSUM: &str = "bpeforge.span_counts.crc32";

/// Rows per row group (and per call to the column writers).
const ROWS_PER_GROUP: usize = 1 << 20;
const ROWS_PER_WRITE: usize = 1 << 16;

/// What a span counts file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountsFile {
    pub pattern: String,
    pub options: String,
    pub spans: SortedSpans,
}

fn format_error(e: impl std::fmt::Display) -> ReadError {
    ReadError::Format(e.to_string())
}

/// Writes `spans` with their `pattern` and `options` to `path`, atomically: to a temporary file
/// in the same folder (the folder created if needed, as `bpeforge count -o` and `Tokenizer.save`
/// do), created exclusively under an unpredictable name (`.NAME.XXXXXXXX.tmp`,
/// `O_CREAT|O_EXCL|O_NOFOLLOW`: a symlink planted there is never followed), flushed to disk,
/// renamed over `path` (a symlink at `path` is replaced, not followed), and the folder flushed.
/// A cut-off save leaves the temporary file, which loading a folder of counts skips (its name
/// starts with a dot).
pub fn save(path: &Path, pattern: &str, options: &str, spans: &SortedSpans) -> std::io::Result<()> {
    let name = path.file_name().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    let (file, temp) = create_temporary(parent, &name.to_string_lossy())?;
    kill_point();
    let written = write(file, pattern, options, spans).and_then(|()| {
        kill_point();
        std::fs::rename(&temp, path)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
        return written;
    }
    // The rename itself, flushed (some file systems refuse fsync on a folder: nothing more to do).
    if let Ok(folder) = File::open(parent) {
        let _ = folder.sync_all();
    }
    Ok(())
}

/// A new file `.NAME.XXXXXXXX.tmp` in `folder` (eight random characters of `[a-z0-9]`, as
/// Python's `mkstemp` makes them), created exclusively and never through a symlink; retried
/// under another name if one is taken.
fn create_temporary(folder: &Path, name: &str) -> std::io::Result<(File, std::path::PathBuf)> {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let short: String = name.chars().take(100).collect();
    loop {
        // RandomState is seeded from the system's random source, per process and per call.
        let mut bits = std::collections::hash_map::RandomState::new().build_hasher().finish();
        let random: String = (0..8)
            .map(|_| {
                let c = ALPHABET[(bits % ALPHABET.len() as u64) as usize] as char;
                bits /= ALPHABET.len() as u64;
                c
            })
            .collect();
        let temp = folder.join(format!(".{short}.{random}.tmp"));
        kill_point();
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true); // O_CREAT|O_EXCL: fails on anything there, a symlink too
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        }
        match options.open(&temp) {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Testing hook, as bpeforge._files' in Python: with `BPEFORGE_KILL_AT_STEP=N` set, the N-th
/// filesystem step of a save (temporary file created, written, renamed) kills the process
/// (SIGKILL), so that tests can cut a save off at every step in turn.
fn kill_point() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static STEPS: AtomicUsize = AtomicUsize::new(0);
    if let Some(at) = std::env::var_os("BPEFORGE_KILL_AT_STEP").and_then(|v| v.to_str().and_then(|v| v.parse::<usize>().ok())) {
        if STEPS.fetch_add(1, Ordering::SeqCst) + 1 == at {
            #[cfg(target_os = "linux")]
            // SAFETY: kill(2) with this process's own id and a valid signal number.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            #[cfg(not(target_os = "linux"))]
            std::process::abort();
        }
    }
}

fn write(file: File, pattern: &str, options: &str, spans: &SortedSpans) -> std::io::Result<()> {
    let to_io = |e: parquet::errors::ParquetError| std::io::Error::other(e.to_string());
    let schema = Arc::new(
        parse_message_type("message span_counts { required binary span; required int64 count (INTEGER(64,false)); }").map_err(to_io)?,
    );
    let metadata = vec![
        KeyValue::new(KEY_FORMAT.into(), FORMAT_VERSION.to_string()),
        KeyValue::new(KEY_PATTERN.into(), pattern.to_string()),
        KeyValue::new(KEY_OPTIONS.into(), options.to_string()),
        KeyValue::new(KEY_SPANS.into(), spans.len().to_string()),
        KeyValue::new(KEY_TOTAL.into(), spans.total().to_string()),
        KeyValue::new(KEY_TOTAL_BYTES.into(), spans.total_bytes().to_string()),
        KeyValue::new(KEY_CHECKSUM.into(), format!("{:08x}", checksum(pattern, options, spans))),
    ];
    let properties = WriterProperties::builder()
        .set_created_by(format!("bpeforge {}", env!("CARGO_PKG_VERSION")))
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).map_err(to_io)?))
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::None)
        .set_column_encoding(ColumnPath::from("span"), Encoding::DELTA_BYTE_ARRAY)
        .set_column_encoding(ColumnPath::from("count"), Encoding::DELTA_BINARY_PACKED)
        .set_max_row_group_size(ROWS_PER_GROUP)
        .set_key_value_metadata(Some(metadata))
        .build();
    let mut writer = SerializedFileWriter::new(file, schema, Arc::new(properties)).map_err(to_io)?;
    // The spans are slices of one shared buffer (no allocation per span).
    let all = bytes::Bytes::copy_from_slice(spans.spans().bytes());
    for group in (0..spans.len()).step_by(ROWS_PER_GROUP) {
        let group_end = (group + ROWS_PER_GROUP).min(spans.len());
        let mut row_group = writer.next_row_group().map_err(to_io)?;
        let mut column = row_group.next_column().map_err(to_io)?.ok_or_else(|| std::io::Error::other("no span column"))?;
        for start in (group..group_end).step_by(ROWS_PER_WRITE) {
            let end = (start + ROWS_PER_WRITE).min(group_end);
            let values: Vec<ByteArray> =
                (start..end).map(|i| ByteArray::from(all.slice(spans.spans().range(i)))).collect();
            column.typed::<ByteArrayType>().write_batch(&values, None, None).map_err(to_io)?;
        }
        column.close().map_err(to_io)?;
        let mut column = row_group.next_column().map_err(to_io)?.ok_or_else(|| std::io::Error::other("no count column"))?;
        for start in (group..group_end).step_by(ROWS_PER_WRITE) {
            let end = (start + ROWS_PER_WRITE).min(group_end);
            // Parquet's unsigned 64-bit integers are stored in int64, bit for bit.
            let values: Vec<i64> = (start..end).map(|i| spans.spans().count(i) as i64).collect();
            column.typed::<Int64Type>().write_batch(&values, None, None).map_err(to_io)?;
        }
        column.close().map_err(to_io)?;
        row_group.close().map_err(to_io)?;
    }
    let file = writer.into_inner().map_err(to_io)?;
    file.sync_all()
}

/// The CRC-32 a file records: of the pattern and the options (each its length, 64-bit
/// little-endian, then its bytes), then of the spans and counts.
fn checksum(pattern: &str, options: &str, spans: &SortedSpans) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for text in [pattern, options] {
        hasher.update(&(text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    spans.update_checksum(&mut hasher);
    hasher.finalize()
}

/// The reader's failure as a [`ReadError`] (a bug becomes a message that says so).
fn caught<T>(read: impl FnOnce() -> Result<T, ReadError>) -> Result<T, ReadError> {
    catch_reader_panics(read).map_err(|failure| match failure {
        Failure::Read(e) => e,
        Failure::Bug(what) => ReadError::Format(format!("internal error (a bpeforge bug: please report it): {what}")),
    })
}

fn open(path: &Path) -> Result<SerializedFileReader<File>, ReadError> {
    let handle = File::open(path).map_err(ReadError::Io)?;
    if handle.metadata().map_err(ReadError::Io)?.is_dir() {
        return Err(ReadError::Io(std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a folder")));
    }
    SerializedFileReader::new(handle).map_err(|e| ReadError::Format(format!("not a readable Parquet file ({e})")))
}

/// Reads a span counts file written by [`save`], checking its metadata, its schema, the
/// order of its spans, its totals and its checksum.
pub fn load(path: &Path) -> Result<CountsFile, ReadError> {
    caught(|| {
        let file = open(path)?;
        let metadata: Vec<(String, Option<String>)> = file
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .map(|kv| kv.iter().map(|kv| (kv.key.clone(), kv.value.clone())).collect())
            .unwrap_or_default();
        let get = |key: &str| metadata.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.clone());
        let Some(version) = get(KEY_FORMAT) else {
            return Err(ReadError::Format(
                "not a bpeforge span counts file (no bpeforge.span_counts metadata); for counts made elsewhere, \
                 use SpanCounts.from_parquet(path, span=..., count=..., pattern=...)"
                    .into(),
            ));
        };
        if version != FORMAT_VERSION.to_string() {
            return Err(ReadError::Format(format!("span counts of format version {version}, this bpeforge reads version {FORMAT_VERSION}")));
        }
        let need = |key: &str| get(key).ok_or_else(|| ReadError::Format(format!("the metadata has no {key}")));
        let (pattern, options) = (need(KEY_PATTERN)?, need(KEY_OPTIONS)?);
        let number = |key: &str| need(key).and_then(|v| v.parse::<u128>().map_err(|_| ReadError::Format(format!("the metadata's {key} is not a number: {v:?}"))));
        let (distinct, total, total_bytes) = (number(KEY_SPANS)?, number(KEY_TOTAL)?, number(KEY_TOTAL_BYTES)?);
        let recorded = need(KEY_CHECKSUM)?;
        let (span_leaf, span_def) = find_leaf(&file, "span", &[PhysicalType::BYTE_ARRAY])?;
        let (count_leaf, count_def) = find_leaf(&file, "count", &[PhysicalType::INT64])?;
        let spans = read_spans(&file, span_leaf, span_def)?;
        let counts = read_counts(&file, count_leaf, count_def, true)?;
        if spans.len() != counts.len() {
            return Err(ReadError::Format(format!("{} spans but {} counts", spans.len(), counts.len())));
        }
        let spans = spans.with_counts(counts);
        let sorted = SortedSpans::from_sorted(spans).map_err(|e| ReadError::Format(format!("row {}: {}", e.row, e.why)))?;
        if sorted.len() as u128 != distinct {
            return Err(ReadError::Format(format!("{} rows, the metadata says {distinct}", sorted.len())));
        }
        if sorted.total() != total || sorted.total_bytes() != total_bytes {
            return Err(ReadError::Format(format!(
                "the counts sum to {} occurrences of {} bytes, the metadata says {total} and {total_bytes}",
                sorted.total(),
                sorted.total_bytes()
            )));
        }
        let actual = format!("{:08x}", checksum(&pattern, &options, &sorted));
        if actual != recorded {
            return Err(ReadError::Format(format!("checksum mismatch (the file says {recorded}, the counts give {actual}): the file is damaged")));
        }
        Ok(CountsFile { pattern, options, spans: sorted })
    })
}

/// Reads counts made elsewhere: the column `span` (binary or string) and the column `count`
/// (integers, signed or not; a negative count is an error) of any Parquet file, in any order,
/// repeats added up (an error if a sum passes 2^64-1), zero counts left out. A null in either
/// column is an error naming its row.
pub fn read_foreign(path: &Path, span: &str, count: &str) -> Result<SortedSpans, ReadError> {
    caught(|| {
        let file = open(path)?;
        let (span_leaf, span_def) = find_leaf(&file, span, &[PhysicalType::BYTE_ARRAY])?;
        let (count_leaf, count_def) = find_leaf(&file, count, &[PhysicalType::INT64, PhysicalType::INT32])?;
        let spans = read_spans(&file, span_leaf, span_def)?;
        let counts = read_counts(&file, count_leaf, count_def, false)?;
        if spans.len() != counts.len() {
            return Err(ReadError::Format(format!("{} spans but {} counts", spans.len(), counts.len())));
        }
        let spans = spans.with_counts(counts);
        if let Some(row) = (0..spans.len()).find(|&i| spans.get(i).0.is_empty()) {
            return Err(ReadError::Format(format!("row {row}: an empty span")));
        }
        SortedSpans::from_unsorted(spans).map_err(format_error)
    })
}

/// The leaf index and maximum definition level of the top-level, non-repeated column `name`,
/// checked to be of one of the physical types `types`.
fn find_leaf(file: &SerializedFileReader<File>, name: &str, types: &[PhysicalType]) -> Result<(usize, i16), ReadError> {
    let schema = file.metadata().file_metadata().schema_descr();
    let fields = schema.root_schema().get_fields();
    let Some(field) = (0..fields.len()).find(|&i| fields[i].name() == name) else {
        let names: Vec<&str> = fields.iter().take(20).map(|f| f.name()).collect();
        return Err(ReadError::Format(format!("no column '{name}' (columns: {})", names.join(", "))));
    };
    let ty = &fields[field];
    let leaf = (0..schema.num_columns()).find(|&i| schema.get_column_root_idx(i) == field);
    let Some(leaf) = leaf.filter(|&leaf| ty.is_primitive() && schema.column(leaf).max_rep_level() == 0) else {
        return Err(ReadError::Format(format!("column '{name}' is nested or repeated")));
    };
    if !types.contains(&ty.get_physical_type()) {
        let wanted: Vec<String> = types.iter().map(|t| t.to_string().to_lowercase()).collect();
        return Err(ReadError::Format(format!("column '{name}' holds {}, expected {}", ty.get_physical_type().to_string().to_lowercase(), wanted.join(" or "))));
    }
    Ok((leaf, schema.column(leaf).max_def_level()))
}

/// Reads every value of one column, row group by row group, calling `each(row, value)` (a null
/// is an error naming its row).
fn read_column<T: DataType>(
    file: &SerializedFileReader<File>,
    leaf: usize,
    max_def: i16,
    name: &str,
    mut each: impl FnMut(usize, &T::T) -> Result<(), ReadError>,
) -> Result<(), ReadError> {
    let mut row = 0;
    let (mut values, mut defs) = (Vec::new(), Vec::new());
    for group in 0..file.num_row_groups() {
        let reader = file.get_row_group(group).and_then(|g| g.get_column_reader(leaf)).map_err(|e| ReadError::Format(format!("cannot read it ({e})")))?;
        let mut reader = get_typed_column_reader::<T>(reader);
        loop {
            values.clear();
            defs.clear();
            let (records, _, _) = reader
                .read_records(ROWS_PER_WRITE, (max_def > 0).then_some(&mut defs), None, &mut values)
                .map_err(|e| ReadError::Format(format!("cannot read column '{name}' near row {row} ({e})")))?;
            if records == 0 {
                break;
            }
            if max_def > 0 {
                if let Some(null) = defs.iter().position(|&d| d < max_def) {
                    return Err(ReadError::Format(format!("row {}: the {name} is null", row + null)));
                }
            }
            for value in &values {
                each(row, value)?;
                row += 1;
            }
        }
    }
    Ok(())
}

/// The spans of a column of byte arrays, in file order (counts left empty).
fn read_spans(file: &SerializedFileReader<File>, leaf: usize, max_def: i16) -> Result<Spans, ReadError> {
    let rows = file.metadata().file_metadata().num_rows().max(0) as usize;
    let mut spans = Spans::with_capacity(rows.min(1 << 24), 0);
    read_column::<ByteArrayType>(file, leaf, max_def, "span", |_, value| {
        spans.push_bytes(value.data());
        Ok(())
    })?;
    Ok(spans)
}

/// The counts of an integer column, in file order. Unsigned 64-bit integers are stored in
/// int64 bit for bit; other integers must not be negative.
fn read_counts(file: &SerializedFileReader<File>, leaf: usize, max_def: i16, own: bool) -> Result<Counts, ReadError> {
    let descr = file.metadata().file_metadata().schema_descr().column(leaf);
    let unsigned = matches!(descr.logical_type_ref(), Some(LogicalType::Integer { is_signed: false, .. }))
        || matches!(descr.converted_type(), parquet::basic::ConvertedType::UINT_64 | parquet::basic::ConvertedType::UINT_32);
    if own && !unsigned {
        return Err(ReadError::Format("the count column is not uint64".into()));
    }
    let mut counts = Counts::default();
    let negative = |row: usize, n: i64| ReadError::Format(format!("row {row}: a negative count ({n})"));
    match descr.physical_type() {
        PhysicalType::INT32 => read_column::<Int32Type>(file, leaf, max_def, "count", |row, &n| {
            counts.push(if unsigned { u64::from(n as u32) } else { u64::try_from(n).map_err(|_| negative(row, n.into()))? });
            Ok(())
        })?,
        _ => read_column::<Int64Type>(file, leaf, max_def, "count", |row, &n| {
            counts.push(if unsigned { n as u64 } else { u64::try_from(n).map_err(|_| negative(row, n))? });
            Ok(())
        })?,
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> SortedSpans {
        let spans: Spans = (0..3000u64).map(|i| (format!("span {i} {}", "x".repeat((i % 40) as usize)).into_bytes(), 1 + i * i)).chain([(b"\xff\x00".to_vec(), u64::MAX)]).collect();
        SortedSpans::from_unsorted(spans).unwrap()
    }

    #[test]
    fn saved_counts_load_equal_and_read_as_foreign_counts() {
        let dir = std::env::temp_dir().join(format!("bpeforge-counts-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("part.parquet");
        let spans = example();
        save(&path, "a pattern", "{}", &spans).unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(loaded, CountsFile { pattern: "a pattern".into(), options: "{}".into(), spans: spans.clone() });
        assert_eq!(read_foreign(&path, "span", "count").unwrap(), spans);
        assert!(std::fs::read_dir(&dir).unwrap().count() == 1, "no temporary file left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
