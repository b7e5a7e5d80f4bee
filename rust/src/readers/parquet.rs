//! Reads one string column of a Parquet file, a few rows at a time ([`ParquetTexts`]), and hands
//! its documents on one at a time ([`ParquetDocuments`]), for the bindings' Parquet reader.
//!
//! The pages are read and decoded by the parquet crate's own typed column reader
//! ([`ColumnReaderImpl`] over [`ByteArrayType`], one per row group), without Arrow: only the
//! page being read is decoded, and the row group's dictionary, and a batch's values are slices of
//! them, so memory stays near the size of one page, one dictionary and one batch whatever the
//! size of the file. (pyarrow's reader decodes a row group's whole column chunk at once. The
//! crate's Arrow reader, `parquet::arrow`, would bring in the Arrow crates, and counts its
//! batches in rows, where a batch here also ends at a size in bytes.) A writer that falls back
//! from the dictionary to plain pages mid-chunk, as pyarrow does for long documents, leaves the
//! dictionary unused for the rest of the chunk; the column reader keeps it to the chunk's end
//! all the same, which paired runs of `benches/compare.py --corpus kernel-code.parquet
//! --vocab-size 65536 --only bpeforge` against a reader that dropped it there found no higher
//! peak memory, and no difference in time beyond the noise of the runs.
//!
//! Damaged files: the crate returns errors for most damage, and panics on some damaged pages;
//! such panics are caught ([`crate::parquet_errors::catch_reader_panics`]) and become a
//! [`ReadError`] naming the file.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{ConvertedType, LogicalType, Type as PhysicalType};
use parquet::column::reader::ColumnReaderImpl;
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::errors::ParquetError;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::schema::types::ColumnDescPtr;

use crate::parquet_errors::{catch_reader_panics, Failure, ReadError};
use crate::readers::open::FileState;

/// A failure of the Parquet reader: the system's, when a read of the file failed (an I/O
/// error with the system's error code), else the file's contents, which `what` describes (a
/// decompressor's error on a damaged page comes as an I/O error too, of its own making, and a
/// page cut short as one of missing data).
fn to_read_error(e: ParquetError, what: impl FnOnce(ParquetError) -> String) -> ReadError {
    let e = match e {
        ParquetError::External(inner) => match inner.downcast::<std::io::Error>() {
            Ok(io) if io.raw_os_error().is_some() => return ReadError::Io(*io),
            Ok(io) => ParquetError::External(io),
            Err(inner) => ParquetError::External(inner),
        },
        e => e,
    };
    ReadError::Format(what(e))
}

/// [`to_read_error`] past opening the file.
fn cannot_read(e: ParquetError) -> ReadError {
    to_read_error(e, |e| format!("cannot read it ({e})"))
}

/// The most rows [`ParquetTexts::next_batch`] reads at a time, between two looks at the size of
/// its batch (fewer when the rows read so far are long: see [`ParquetTexts::rows_to_read`]).
const MAX_ROWS_PER_READ: usize = 32;

/// The strings of one top-level column of a Parquet file, in file order, null rows skipped.
pub struct ParquetTexts {
    file: SerializedFileReader<File>,
    /// The column's index among the file's leaf columns, and its description.
    leaf: usize,
    descr: ColumnDescPtr,
    /// The column's definition level of a non-null value (0 if it cannot hold nulls).
    max_def: i16,
    /// The next row group to open.
    next_group: usize,
    /// The column reader of the open row group, if any.
    reader: Option<ColumnReaderImpl<ByteArrayType>>,
    /// The last batch's values (slices of their page or of the dictionary), and the definition
    /// level of each of its rows (when the column can hold nulls).
    values: Vec<ByteArray>,
    defs: Vec<i16>,
    /// Rows read so far, null ones included.
    rows: u64,
    /// The row the last batch started at.
    batch_start: u64,
    /// Bytes of the strings read so far.
    bytes: u64,
    /// The file as it was opened, checked at its end: one changed while it is read is an error.
    handle: File,
    opened: FileState,
}

/// The page buffers kept for the next pages (see [`ParquetTexts::next_batch`]) go back to the
/// system with the reader, at its end, on an error, or when it is dropped before its end.
impl Drop for ParquetTexts {
    fn drop(&mut self) {
        crate::memory::drop_spares();
    }
}

impl ParquetTexts {
    /// Opens `path` and finds the top-level column `column`, which must hold strings (Parquet's
    /// BYTE_ARRAY annotated as UTF-8 strings). Reads only the file's footer.
    pub fn open(path: &Path, column: &str) -> Result<Self, ReadError> {
        let handle = File::open(path).map_err(ReadError::Io)?;
        let meta = handle.metadata().map_err(ReadError::Io)?;
        if meta.is_dir() {
            return Err(ReadError::Io(std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a folder")));
        }
        let opened = FileState::of(&meta);
        let file = SerializedFileReader::new(handle.try_clone().map_err(ReadError::Io)?).map_err(|e| to_read_error(e, |e| format!("not a readable Parquet file ({e})")))?;
        let (leaf, max_def) = find_column(&file, column)?;
        let descr = file.metadata().file_metadata().schema_descr().column(leaf);
        Ok(ParquetTexts { file, leaf, descr, max_def, next_group: 0, reader: None, values: Vec::new(), defs: Vec::new(), rows: 0, batch_start: 0, bytes: 0, handle, opened })
    }

    /// The number of rows the file's footer declares, null ones included.
    pub fn num_rows(&self) -> u64 {
        self.file.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// Rows read so far, null ones included.
    pub fn rows_read(&self) -> u64 {
        self.rows
    }

    /// The strings of the next rows, null ones skipped, as raw bytes (not checked to be UTF-8):
    /// `max_rows` rows (≥ 1), or fewer once their strings reach `max_bytes`, or up to the end
    /// of the file. The rows are read a few at a time, as many as the average row so far says
    /// fit in the bytes left (at least one, at most [`MAX_ROWS_PER_READ`]), so a batch ends soon after its
    /// limit (past it by one row when the rows are alike). Empty only at the end of the file.
    /// [`Self::row_of`] says which row each came from.
    ///
    /// The buffers of the pages read are reused from page to page (see
    /// [`memory::keeping_spares`](crate::memory::keeping_spares)), and given back when the
    /// reader is dropped.
    pub fn next_batch(&mut self, max_rows: usize, max_bytes: usize) -> Result<&[ByteArray], ReadError> {
        crate::memory::keeping_spares(|| {
            // Rows that are all null make no batch: read on.
            while !self.fill_batch(max_rows.max(1), max_bytes.max(1))? && self.values.is_empty() {}
            Ok(())
        })?;
        Ok(&self.values)
    }

    /// Fills the batch (see [`Self::next_batch`]); says whether the file has ended.
    fn fill_batch(&mut self, max_rows: usize, max_bytes: usize) -> Result<bool, ReadError> {
        self.values.clear();
        self.defs.clear();
        self.batch_start = self.rows;
        let (mut rows, mut bytes) = (0, 0);
        while rows < max_rows && bytes < max_bytes {
            let want = self.rows_to_read(max_bytes - bytes).min(max_rows - rows);
            let Some(reader) = self.reader.as_mut() else {
                if !self.next_row_group()? {
                    return Ok(true);
                }
                continue;
            };
            let (from, levels_from) = (self.values.len(), self.defs.len());
            let defs = (self.max_def > 0).then_some(&mut self.defs);
            let read = reader.read_records(want, defs, None, &mut self.values);
            let (records, values, _) = read.map_err(|e| self.failed(e))?;
            if records == 0 {
                self.reader = None; // this row group is done
                continue;
            }
            let non_null = match self.max_def {
                0 => records,
                max_def => self.defs[levels_from..].iter().filter(|&&d| d == max_def).count(),
            };
            if non_null != values || from + values != self.values.len() {
                return Err(ReadError::Format(format!(
                    "cannot read it (the column's levels say {non_null} values, its pages hold {values})"
                )));
            }
            rows += records;
            self.rows += records as u64;
            let added = self.values[from..].iter().map(ByteArray::len).sum::<usize>();
            bytes += added;
            self.bytes += added as u64;
        }
        Ok(false)
    }

    /// How many rows to read next, with `room` bytes left in the batch: as many as rows of the
    /// average size so far fit in it, at least one and at most [`MAX_ROWS_PER_READ`] (one before any row).
    fn rows_to_read(&self, room: usize) -> usize {
        if self.rows == 0 {
            return 1;
        }
        let average = (self.bytes / self.rows) as usize;
        (room / average.max(1)).clamp(1, MAX_ROWS_PER_READ)
    }

    /// Starts the column reader of the next row group; false at the end of the file.
    fn next_row_group(&mut self) -> Result<bool, ReadError> {
        if self.next_group >= self.file.num_row_groups() {
            self.check_unchanged()?;
            return Ok(false);
        }
        let group = self.file.get_row_group(self.next_group).map_err(|e| self.failed(e))?;
        let pages = group.get_column_page_reader(self.leaf).map_err(|e| self.failed(e))?;
        self.next_group += 1;
        self.reader = Some(ColumnReaderImpl::new(Arc::clone(&self.descr), pages));
        Ok(true)
    }

    /// An error if the file is no longer as it was opened (cut short, grown or rewritten).
    fn check_unchanged(&self) -> Result<(), ReadError> {
        self.opened.check(&self.handle).map_err(|e| match e.raw_os_error() {
            Some(_) => ReadError::Io(e),
            None => ReadError::Format(format!("cannot read it ({e})")),
        })
    }

    /// The error for a failed read: the file's change, when it changed since it was opened
    /// (a page then reads as damaged), else the reader's.
    fn failed(&self, e: ParquetError) -> ReadError {
        match self.check_unchanged() {
            Err(changed) => changed,
            Ok(()) => cannot_read(e),
        }
    }

    /// Bytes of the strings read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// The values [`Self::next_batch`] gave last.
    pub fn last_batch(&self) -> &[ByteArray] {
        &self.values
    }

    /// The row, counted from the file's first, of value `i` of the last batch.
    pub fn row_of(&self, i: usize) -> u64 {
        if self.max_def == 0 {
            return self.batch_start + i as u64;
        }
        let nth = self.defs.iter().enumerate().filter(|(_, &d)| d == self.max_def).nth(i);
        self.batch_start + nth.map_or(0, |(r, _)| r as u64)
    }
}

/// The documents of a Parquet file's column, handed on one at a time (for the bindings'
/// readers, which select among them): its strings in file order, null rows and empty strings
/// skipped, each checked to be UTF-8 (one that is not is an error naming its row). The rows are
/// read in batches of at most `batch_rows` rows that end once they reach `batch_bytes` bytes
/// ([`ParquetTexts::next_batch`]), and [`ParquetDocuments::read`] returns at the end of each.
pub struct ParquetDocuments {
    /// `None` once the file is read to its end, or a read failed (the file is closed).
    texts: Option<ParquetTexts>,
    column: String,
    batch_rows: usize,
    batch_bytes: usize,
    /// The next value of the last batch to hand on, and the batch's length.
    next: usize,
    len: usize,
    /// Rows (null ones included) and bytes of the strings read so far.
    rows: u64,
    bytes: u64,
}

impl ParquetDocuments {
    pub fn new(texts: ParquetTexts, column: &str, batch_rows: usize, batch_bytes: usize) -> Self {
        let column = column.to_string();
        ParquetDocuments { texts: Some(texts), column, batch_rows, batch_bytes, next: 0, len: 0, rows: 0, bytes: 0 }
    }

    /// Hands the documents on to `take` until it returns false, or the batch of rows being read
    /// ends; returns whether documents may remain. A read that fails closes the file.
    pub fn read(&mut self, take: &mut dyn FnMut(&str) -> bool) -> Result<bool, Failure> {
        let Some(texts) = self.texts.as_mut() else { return Ok(false) };
        if self.next == self.len {
            let (rows, bytes) = (self.batch_rows, self.batch_bytes);
            let read = catch_reader_panics(|| texts.next_batch(rows, bytes).map(<[ByteArray]>::len));
            (self.rows, self.bytes) = (texts.rows_read(), texts.bytes_read());
            match read {
                Ok(0) | Err(_) => {
                    self.texts = None;
                    return read.map(|_| false);
                }
                Ok(len) => (self.next, self.len) = (0, len),
            }
        }
        while self.next < self.len {
            let i = self.next;
            self.next += 1;
            let value = texts.last_batch()[i].data();
            if value.is_empty() {
                continue;
            }
            let doc = match std::str::from_utf8(value) {
                Ok(doc) => doc,
                Err(e) => {
                    let message = format!("row {} of column '{}' is not UTF-8 ({e})", texts.row_of(i), self.column);
                    self.texts = None;
                    return Err(Failure::Read(ReadError::Format(message)));
                }
            };
            if !take(doc) {
                return Ok(true);
            }
        }
        Ok(true)
    }

    /// Rows read so far, null ones included (those of a batch count once it is read).
    pub fn rows_read(&self) -> u64 {
        self.rows
    }

    /// Bytes of the strings read so far (those of a batch count once it is read).
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// Closes the file, once nothing more is read.
    pub fn close(&mut self) {
        self.texts = None;
    }
}

/// The leaf index and maximum definition level of the top-level column `name`, checked to be a
/// column of strings.
fn find_column(file: &SerializedFileReader<File>, name: &str) -> Result<(usize, i16), ReadError> {
    let schema = file.metadata().file_metadata().schema_descr();
    let fields = schema.root_schema().get_fields();
    let matching: Vec<usize> = (0..fields.len()).filter(|&i| fields[i].name() == name).collect();
    let field = match matching.as_slice() {
        [i] => *i,
        [] => {
            let names: Vec<&str> = fields.iter().take(20).map(|f| f.name()).collect();
            let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
            return Err(ReadError::Format(format!("no column '{name}' (columns: {names})")));
        }
        many => {
            return Err(ReadError::Format(format!(
                "{} columns are named '{name}'; the file cannot say which to read",
                many.len()
            )))
        }
    };
    let ty = &fields[field];
    if !ty.is_primitive() {
        return Err(ReadError::Format(format!("column '{name}' is nested (a group of columns), not strings")));
    }
    let leaf = (0..schema.num_columns())
        .find(|&i| schema.get_column_root_idx(i) == field)
        .ok_or_else(|| ReadError::Format(format!("column '{name}' has no data")))?;
    let descr = schema.column(leaf);
    if descr.max_rep_level() > 0 {
        return Err(ReadError::Format(format!("column '{name}' is repeated (a list), not strings")));
    }
    let info = ty.get_basic_info();
    let logical = info.logical_type_ref();
    let is_string = matches!(logical, Some(LogicalType::String))
        || (logical.is_none() && info.converted_type() == ConvertedType::UTF8);
    if ty.get_physical_type() != PhysicalType::BYTE_ARRAY || !is_string {
        // In pyarrow's words where there is one: int64, binary, timestamp, ...
        let what = match (logical, ty.get_physical_type()) {
            (Some(LogicalType::Integer { bit_width, is_signed }), _) => {
                format!("{}int{bit_width}", if *is_signed { "" } else { "u" })
            }
            (Some(logical), _) => {
                let name = format!("{logical:?}");
                name.split([' ', '{', '(']).next().unwrap_or_default().to_lowercase()
            }
            (None, PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY) => "binary".to_string(),
            (None, PhysicalType::BOOLEAN) => "bool".to_string(),
            (None, physical) => physical.to_string().to_lowercase(),
        };
        return Err(ReadError::Format(format!("column '{name}' holds {what}, not strings")));
    }
    Ok((leaf, descr.max_def_level()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Parquet file of one optional string column `text` holding `rows` (None: null) in row
    /// groups of `group` rows, written by the parquet crate's own writer.
    fn write_file(name: &str, rows: &[Option<&[u8]>], group: usize) -> std::path::PathBuf {
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        let path = std::env::temp_dir().join(format!("bpeforge-{}-{name}.parquet", std::process::id()));
        let schema = Arc::new(parquet::schema::parser::parse_message_type("message m { optional binary text (UTF8); }").unwrap());
        let mut writer = SerializedFileWriter::new(File::create(&path).unwrap(), schema, Arc::new(WriterProperties::builder().build())).unwrap();
        for part in rows.chunks(group) {
            let values: Vec<ByteArray> = part.iter().flatten().map(|v| ByteArray::from(v.to_vec())).collect();
            let levels: Vec<i16> = part.iter().map(|v| i16::from(v.is_some())).collect();
            let mut rg = writer.next_row_group().unwrap();
            while let Some(mut column) = rg.next_column().unwrap() {
                column.typed::<ByteArrayType>().write_batch(&values, Some(&levels), None).unwrap();
                column.close().unwrap();
            }
            rg.close().unwrap();
        }
        writer.close().unwrap();
        path
    }

    fn documents(path: &Path, batch_rows: usize) -> ParquetDocuments {
        ParquetDocuments::new(ParquetTexts::open(path, "text").unwrap(), "text", batch_rows, 1 << 20)
    }

    #[test]
    fn documents_skip_nulls_and_empty_strings_and_resume_where_they_stopped() {
        let rows: Vec<Option<&[u8]>> = vec![Some(b"a"), None, Some(b""), Some(b"bc"), Some(b"d"), None, Some(b"ef"), Some(b"g")];
        let path = write_file("resume", &rows, 3);
        for batch_rows in [1, 2, 3, 100] {
            let mut docs = documents(&path, batch_rows);
            let mut out = Vec::new();
            // Stop after every document: reading goes on from the next one.
            while docs.read(&mut |d| {
                out.push(d.to_string());
                false
            })
            .unwrap()
            {}
            assert_eq!(out, ["a", "bc", "d", "ef", "g"], "batch_rows {batch_rows}");
            assert_eq!(docs.rows_read(), rows.len() as u64, "batch_rows {batch_rows}");
            assert!(!docs.read(&mut |_| true).unwrap(), "read to its end");
        }
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_string_that_is_not_utf8_names_its_row_and_ends_the_reading() {
        let rows: Vec<Option<&[u8]>> = vec![Some(b"ok"), None, Some(b"fine"), Some(b"bad \xff"), Some(b"never")];
        let path = write_file("utf8", &rows, 2);
        let mut docs = documents(&path, 2);
        let mut out = Vec::new();
        let e = loop {
            match docs.read(&mut |d| {
                out.push(d.to_string());
                true
            }) {
                Ok(true) => continue,
                Ok(false) => panic!("read to the end past a bad string"),
                Err(e) => break e,
            }
        };
        assert_eq!(out, ["ok", "fine"]);
        assert!(matches!(&e, Failure::Read(ReadError::Format(m)) if m.starts_with("row 3 of column 'text' is not UTF-8")), "{e:?}");
        assert!(!docs.read(&mut |_| true).unwrap(), "the file is closed after the error");
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn failed_reads_are_told_from_damaged_files() {
        use std::io::{Error, ErrorKind};
        // A read the system failed (EIO = 5, EACCES = 13 on Linux and macOS).
        for code in [5, 13] {
            let e = ParquetError::External(Box::new(Error::from_raw_os_error(code)));
            assert!(matches!(cannot_read(e), ReadError::Io(e) if e.raw_os_error() == Some(code)), "{code}");
        }
        // A decompressor's or a short page's error.
        for kind in [ErrorKind::InvalidData, ErrorKind::UnexpectedEof, ErrorKind::Other] {
            let e = ParquetError::External(Box::new(Error::new(kind, "bad block")));
            assert!(matches!(cannot_read(e), ReadError::Format(m) if m == "cannot read it (External: bad block)"), "{kind:?}");
        }
        assert!(matches!(cannot_read(ParquetError::General("bad page".into())), ReadError::Format(m) if m.contains("bad page")));
        let other = ParquetError::External(Box::new(std::fmt::Error));
        assert!(matches!(cannot_read(other), ReadError::Format(_)));
    }
}
