//! Reading Arrow string arrays through the Arrow C Data Interface
//! (<https://arrow.apache.org/docs/format/CDataInterface.html>), without the arrow crates: the
//! two C structs, checks that turn a malformed array into an error rather than undefined
//! behaviour, and the copy of the strings into a [`TextSink`] (a batch, or a feeder that fills
//! batches).
//!
//! Supported types: `utf8` (format `u`, i32 offsets), `large_utf8` (`U`, i64 offsets),
//! `utf8_view` (`vu`) and `null` (`n`, no strings). Null entries are skipped: they are not
//! documents. The strings of a `utf8`/`large_utf8` array go into the sink with one copy per
//! run of non-null entries (usually one for the whole array); `utf8_view` strings are copied
//! one by one, as their bytes are not contiguous.
//!
//! Ownership: this module only reads through the structs; it never moves them and never calls
//! their `release` callback. Whoever owns them (for Python, the PyCapsules returned by
//! `__arrow_c_array__`, whose destructors release them) must keep them alive during the call.
//!
//! Why not arrow-rs's importer (`arrow_array::ffi::from_ffi`), or pyo3-arrow, which is built on
//! it: `from_ffi` trusts the structs it is given (its safety contract is an array that agrees
//! with the C Data Interface). It takes a negative length or offset for a huge `usize`, reads the
//! last offset through a pointer it assumes aligned, and asserts on a missing list of buffers or
//! too short a one, so a malformed array from Python would be a panic or undefined behaviour
//! rather than the `ValueError` this module gives. Every check below would still have to run
//! first, on the raw structs (arrow-rs keeps their fields private, and its accessors cast them
//! to `usize`), and the strings would still be copied and checked here, so speed and memory
//! would not change. The library would replace the two struct declarations only, for six more
//! crates to compile (arrow-array, arrow-data, arrow-buffer, arrow-schema, num-complex,
//! bitflags; pyo3-arrow adds arrow-select, arrow-cast, arrow-ord, chrono-tz and numpy's
//! bindings), about half a minute of CPU on a clean build (measured with `cargo build --release
//! --timings` of an empty crate that depends on `arrow-array` with its `ffi` feature; see
//! benches/README.md).

use std::ffi::{c_char, c_void, CStr};
use std::fmt;

use crate::count::{BufferError, TextSink};

/// `struct ArrowSchema` of the C Data Interface.
#[repr(C)]
#[derive(Debug)]
pub struct ArrowSchema {
    pub format: *const c_char,
    pub name: *const c_char,
    pub metadata: *const c_char,
    pub flags: i64,
    pub n_children: i64,
    pub children: *mut *mut ArrowSchema,
    pub dictionary: *mut ArrowSchema,
    pub release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    pub private_data: *mut c_void,
}

/// `struct ArrowArray` of the C Data Interface.
#[repr(C)]
#[derive(Debug)]
pub struct ArrowArray {
    pub length: i64,
    pub null_count: i64,
    pub offset: i64,
    pub n_buffers: i64,
    pub n_children: i64,
    pub buffers: *mut *const c_void,
    pub children: *mut *mut ArrowArray,
    pub dictionary: *mut ArrowArray,
    pub release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    pub private_data: *mut c_void,
}

/// Why an array could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportError {
    /// Not an array of strings (a `TypeError` in Python). The message reads after "is ...".
    Unsupported(String),
    /// An array of strings that breaks the format's rules (a `ValueError` in Python).
    Malformed(String),
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Unsupported(m) | ImportError::Malformed(m) => write!(f, "{m}"),
        }
    }
}

fn malformed<T>(message: impl Into<String>) -> Result<T, ImportError> {
    Err(ImportError::Malformed(format!("a malformed Arrow array: {}", message.into())))
}

/// The layouts this module reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Null,
    /// Offsets of this many bytes (4 or 8), then the bytes.
    Offsets(usize),
    View,
}

/// A readable name for an Arrow format string, and a hint about what to do with it.
fn unsupported_type(format: &str) -> String {
    let name = match format {
        "b" => "bool",
        "c" => "int8",
        "C" => "uint8",
        "s" => "int16",
        "S" => "uint16",
        "i" => "int32",
        "I" => "uint32",
        "l" => "int64",
        "L" => "uint64",
        "e" => "float16",
        "f" => "float32",
        "g" => "float64",
        "z" => "binary",
        "Z" => "large_binary",
        "vz" => "binary_view",
        "+s" => "struct",
        "+l" => "list",
        "+L" => "large_list",
        "+vl" | "+vL" => "list_view",
        _ if format.starts_with("+w:") => "fixed_size_list",
        _ if format.starts_with("w:") => "fixed_size_binary",
        _ if format.starts_with("d:") => "decimal",
        _ if format.starts_with('t') => "temporal",
        _ => "another",
    };
    let hint = match name {
        "binary" | "large_binary" | "binary_view" | "fixed_size_binary" => {
            "; cast it to a string type first (pyarrow checks that the bytes are UTF-8)"
        }
        "struct" => "; a RecordBatch is a struct array: pass one of its columns, e.g. batch.column('text')",
        _ => "",
    };
    format!("an Arrow array of type {name} (format {format:?}), expected strings (utf8, large_utf8 or utf8_view){hint}")
}

/// `a + b` and `a * b` in usize, or a malformed-array error (sizes that overflow are lies).
fn checked_sum(a: usize, b: usize) -> Result<usize, ImportError> {
    a.checked_add(b).map_or_else(|| malformed("sizes overflow"), Ok)
}

fn checked_size(a: usize, b: usize) -> Result<usize, ImportError> {
    // Slices may not exceed isize::MAX bytes.
    match a.checked_mul(b) {
        Some(n) if n <= isize::MAX as usize => Ok(n),
        _ => malformed("sizes overflow"),
    }
}

fn to_usize(n: i64, what: &str) -> Result<usize, ImportError> {
    usize::try_from(n).map_or_else(|_| malformed(format!("{what} is {n}")), Ok)
}

/// `len` bytes at `ptr`, which must not be null unless `len` is 0.
///
/// # Safety
/// When `len > 0`, `ptr` must point to `len` readable bytes that outlive `'a`.
unsafe fn buffer<'a>(ptr: *const c_void, len: usize, what: &str) -> Result<&'a [u8], ImportError> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return malformed(format!("the {what} buffer is missing (a null pointer)"));
    }
    Ok(std::slice::from_raw_parts(ptr.cast::<u8>(), len))
}

/// The validity bitmap as bytes, or None when every entry is valid.
///
/// # Safety
/// As for [`append_strings`].
unsafe fn validity<'a>(
    array: &'a ArrowArray,
    buffers: &[*const c_void],
    end: usize,
) -> Result<Option<&'a [u8]>, ImportError> {
    if array.null_count == 0 {
        return Ok(None);
    }
    if buffers[0].is_null() {
        if array.null_count > 0 {
            return malformed(format!("null_count is {} but there is no validity bitmap", array.null_count));
        }
        return Ok(None); // null_count -1 (not computed) and no bitmap: no nulls
    }
    Ok(Some(buffer(buffers[0], end.div_ceil(8), "validity")?))
}

fn is_valid(bitmap: Option<&[u8]>, i: usize) -> bool {
    bitmap.map_or(true, |b| b[i / 8] & (1 << (i % 8)) != 0)
}

/// Appends the non-null strings of `array` to `sink` (nulls are skipped) and returns how many
/// it appended. Everything is checked before the first string is appended, so on an error the
/// sink has taken none of them.
///
/// # Safety
/// `schema` and `array` must be the structs of one array as the C Data Interface describes them,
/// not released, and not freed during the call; their buffers must be as long as the array's
/// length, offset and offsets say. (The interface carries no buffer sizes, so no consumer can
/// check that last point; everything else is checked.) Texts are handed on as they are copied,
/// which may let other Python threads run, and those may write to the buffers (pyarrow shares a
/// `bytearray`'s memory): so the offsets are all read and checked before the first copy, each
/// view is checked as it is read, and the strings' bytes are checked to be UTF-8 only once
/// copied; only the copies are ever read as text. A change made meanwhile can change which
/// texts are counted, never let bytes that are not UTF-8 through.
pub unsafe fn append_strings(
    schema: &ArrowSchema,
    array: &ArrowArray,
    sink: &mut impl TextSink,
) -> Result<usize, ImportError> {
    if schema.release.is_none() || array.release.is_none() {
        return malformed("it was already released");
    }
    if schema.format.is_null() {
        return malformed("its schema has no format string");
    }
    let format = CStr::from_ptr(schema.format).to_string_lossy();
    if !schema.dictionary.is_null() {
        return Err(ImportError::Unsupported(
            "a dictionary-encoded Arrow array; decode it first (e.g. array.dictionary_decode())".into(),
        ));
    }
    let layout = match &*format {
        "n" => Layout::Null,
        "u" => Layout::Offsets(4),
        "U" => Layout::Offsets(8),
        "vu" => Layout::View,
        other => return Err(ImportError::Unsupported(unsupported_type(other))),
    };
    if array.n_children != 0 || schema.n_children != 0 {
        return malformed(format!("a string array with {} children", array.n_children.max(schema.n_children)));
    }
    let length = to_usize(array.length, "its length")?;
    let offset = to_usize(array.offset, "its offset")?;
    if array.null_count < -1 {
        return malformed(format!("null_count is {}", array.null_count));
    }
    let end = checked_sum(offset, length)?;
    let n_buffers = to_usize(array.n_buffers, "n_buffers")?;
    let expected = match layout {
        Layout::Null => n_buffers == 0,
        Layout::Offsets(_) => n_buffers == 3,
        // (The list of buffers must fit in memory: a slice of it is made below.)
        Layout::View => n_buffers >= 3 && checked_size(n_buffers, std::mem::size_of::<*const c_void>()).is_ok(),
    };
    if !expected {
        return malformed(format!("{n_buffers} buffers for type {format:?}"));
    }
    if layout == Layout::Null || length == 0 {
        return Ok(0); // (an empty array may have null buffers: touch none)
    }
    if array.buffers.is_null() {
        return malformed("its buffers are missing (a null pointer)");
    }
    let buffers = std::slice::from_raw_parts(array.buffers.cast_const(), n_buffers);
    let bitmap = validity(array, buffers, end)?;
    match layout {
        Layout::Offsets(width) => append_offset_strings(width, buffers, offset, length, bitmap, sink),
        _ => append_view_strings(buffers, offset, length, bitmap, sink),
    }
}

/// The `utf8` and `large_utf8` layouts: offsets[offset..=offset + length] into one data buffer.
///
/// # Safety
/// As for [`append_strings`].
unsafe fn append_offset_strings(
    width: usize,
    buffers: &[*const c_void],
    offset: usize,
    length: usize,
    bitmap: Option<&[u8]>,
    sink: &mut impl TextSink,
) -> Result<usize, ImportError> {
    let raw = buffer(buffers[1], checked_size(checked_sum(checked_sum(offset, length)?, 1)?, width)?, "offsets")?;
    let raw = &raw[offset * width..];
    // Offsets are read unaligned: the interface recommends alignment but does not promise it.
    let at = |i: usize| -> i64 {
        let b = &raw[i * width..(i + 1) * width];
        if width == 4 {
            i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as i64
        } else {
            i64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        }
    };
    // First pass: the offsets increase from a non-negative start.
    let mut last = at(0);
    if last < 0 {
        return malformed(format!("its first offset is {last}"));
    }
    for i in 1..=length {
        let next = at(i);
        if next < last {
            return malformed(format!("offsets decrease at entry {} ({last} then {next})", i - 1));
        }
        last = next;
    }
    let data = buffer(buffers[2], to_usize(last, "the last offset")?, "data")?;
    // Second pass: runs of non-null entries, each one contiguous range of the data. A null
    // entry of length 0 does not break a run; one with bytes (allowed, if unusual) does.
    let mut runs: Vec<(usize, usize)> = Vec::new(); // (start in data, end index into `ends`)
    let mut ends: Vec<usize> = Vec::with_capacity(length);
    let mut run_start: Option<usize> = None;
    // Each offset is read once more here and checked again, against the one before it and the
    // data's length: the buffer is foreign memory another thread may write to meanwhile.
    let mut previous = at(0);
    for i in 0..length {
        let next = at(i + 1);
        if previous < 0 || next < previous || next > last {
            return malformed(format!("its offsets changed while they were read (at entry {i})"));
        }
        let (start, stop) = (previous as usize, next as usize);
        previous = next;
        if is_valid(bitmap, offset + i) {
            let base = *run_start.get_or_insert(start);
            ends.push(stop - base);
        } else if stop > start {
            if let Some(base) = run_start.take() {
                runs.push((base, ends.len()));
            }
        }
    }
    if let Some(base) = run_start {
        runs.push((base, ends.len()));
    }
    // Third pass: copy each run; the sink checks the copy (UTF-8, offsets on character
    // boundaries), so bytes that change meanwhile can never pass as text.
    let mut first = 0;
    for &(base, stop) in &runs {
        let run_ends = &ends[first..stop];
        let run_len = run_ends.last().copied().unwrap_or(0);
        sink.push_buffer(&data[base..base + run_len], run_ends).or_else(|e| match e {
            BufferError::NotUtf8 { at } => {
                malformed(format!("its strings are not valid UTF-8 (at byte {} of the data buffer)", base + at))
            }
            BufferError::InsideCharacter { end } => malformed(format!("offset {} falls inside a UTF-8 character", base + end)),
            BufferError::OutOfOrder { end } => malformed(format!("offset {} is out of order", base.wrapping_add(end))),
        })?;
        first = stop;
    }
    Ok(ends.len())
}

/// The `utf8_view` layout: 16-byte views (length, then the bytes inline if at most 12, else a
/// prefix, a buffer index and an offset), the variadic data buffers, then their sizes (i64).
///
/// # Safety
/// As for [`append_strings`].
unsafe fn append_view_strings(
    buffers: &[*const c_void],
    offset: usize,
    length: usize,
    bitmap: Option<&[u8]>,
    sink: &mut impl TextSink,
) -> Result<usize, ImportError> {
    let views = buffer(buffers[1], checked_size(checked_sum(offset, length)?, 16)?, "views")?;
    let n_data = buffers.len() - 3;
    let sizes = buffer(buffers[buffers.len() - 1], checked_size(n_data, 8)?, "variadic buffer sizes")?;
    let mut data: Vec<&[u8]> = Vec::with_capacity(n_data);
    for (k, b) in sizes.chunks_exact(8).enumerate() {
        let size = i64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        data.push(buffer(buffers[2 + k], to_usize(size, "a variadic buffer size")?, "variadic data")?);
    }
    let int = |b: &[u8]| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    let mut texts = 0;
    for i in offset..offset + length {
        if !is_valid(bitmap, i) {
            continue;
        }
        let view = &views[i * 16..(i + 1) * 16];
        let len = int(&view[0..4]);
        let raw = match usize::try_from(len) {
            Err(_) => return malformed(format!("view {} has length {len}", i - offset)),
            Ok(n) if n <= 12 => &view[4..4 + n],
            Ok(n) => {
                let (index, start) = (int(&view[8..12]), int(&view[12..16]));
                let buffer = usize::try_from(index).ok().and_then(|k| data.get(k));
                let range = usize::try_from(start).ok().map(|s| (s, s.saturating_add(n)));
                match (buffer, range) {
                    (Some(buffer), Some((s, e))) if e <= buffer.len() => &buffer[s..e],
                    _ => {
                        return malformed(format!(
                            "view {} points outside its data (buffer {index}, offset {start}, length {len})",
                            i - offset
                        ))
                    }
                }
            }
        };
        // Copied, then checked (as for the other layouts).
        sink.push_buffer(raw, &[raw.len()]).or_else(|e| match e {
            BufferError::NotUtf8 { at } => malformed(format!("string {} is not valid UTF-8 (at byte {at})", i - offset)),
            BufferError::InsideCharacter { .. } | BufferError::OutOfOrder { .. } => {
                malformed(format!("string {} is not valid UTF-8 (cut inside a character)", i - offset))
            }
        })?;
        texts += 1;
    }
    Ok(texts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::Batch;
    use std::ptr;

    unsafe extern "C" fn release_schema(_: *mut ArrowSchema) {}
    unsafe extern "C" fn release_array(_: *mut ArrowArray) {}

    fn schema(format: &CStr) -> ArrowSchema {
        ArrowSchema {
            format: format.as_ptr(),
            name: ptr::null(),
            metadata: ptr::null(),
            flags: 2,
            n_children: 0,
            children: ptr::null_mut(),
            dictionary: ptr::null_mut(),
            release: Some(release_schema),
            private_data: ptr::null_mut(),
        }
    }

    fn array(length: i64, offset: i64, null_count: i64, buffers: &mut [*const c_void]) -> ArrowArray {
        ArrowArray {
            length,
            null_count,
            offset,
            n_buffers: buffers.len() as i64,
            n_children: 0,
            buffers: buffers.as_mut_ptr(),
            children: ptr::null_mut(),
            dictionary: ptr::null_mut(),
            release: Some(release_array),
            private_data: ptr::null_mut(),
        }
    }

    fn texts(batch: &Batch) -> Vec<&str> {
        (0..batch.len()).map(|i| batch.get(i)).collect()
    }

    /// A utf8 (i32) or large_utf8 (i64) array of `items` (None = null), read from entry `offset`.
    fn read(
        items: &[Option<&str>],
        large: bool,
        offset: usize,
        null_count: i64,
    ) -> (Result<usize, ImportError>, Batch) {
        let mut data = Vec::new();
        let mut offsets: Vec<u8> = Vec::new();
        let mut bitmap = vec![0u8; items.len().div_ceil(8)];
        let put = |o: usize, offsets: &mut Vec<u8>| {
            if large {
                offsets.extend((o as i64).to_ne_bytes())
            } else {
                offsets.extend((o as i32).to_ne_bytes())
            }
        };
        put(0, &mut offsets);
        for (i, item) in items.iter().enumerate() {
            if let Some(s) = item {
                data.extend_from_slice(s.as_bytes());
                bitmap[i / 8] |= 1 << (i % 8);
            } else if i % 3 == 0 {
                data.extend_from_slice(b"\xffnull bytes"); // a null entry may hold any bytes
            }
            put(data.len(), &mut offsets);
        }
        let mut buffers = [bitmap.as_ptr().cast(), offsets.as_ptr().cast(), data.as_ptr().cast()];
        let s = schema(if large { c"U" } else { c"u" });
        let a = array((items.len() - offset) as i64, offset as i64, null_count, &mut buffers);
        let mut batch = Batch::new();
        batch.push("before");
        let r = unsafe { append_strings(&s, &a, &mut batch) };
        (r, batch)
    }

    #[test]
    fn reads_strings_skipping_nulls_from_any_offset() {
        let items = [Some("héllo"), None, Some(""), None, Some("wörld"), Some("!"), None, None, Some("end")];
        for large in [false, true] {
            for offset in 0..items.len() {
                for null_count in [-1, 4] {
                    let (r, batch) = read(&items, large, offset, null_count);
                    let want: Vec<&str> = items[offset..].iter().flatten().copied().collect();
                    assert_eq!(r, Ok(want.len()));
                    assert_eq!(texts(&batch)[1..], want[..], "large {large}, offset {offset}");
                }
            }
        }
        let (r, batch) = read(&[Some("a"), None], false, 0, 0); // null_count 0: the bitmap is ignored
        assert_eq!((r, texts(&batch)), (Ok(2), vec!["before", "a", ""]));
    }

    #[test]
    fn malformed_arrays_are_errors_and_leave_the_batch_alone() {
        let mut batch = Batch::new();
        let check = |fmt: &CStr, a: &ArrowArray, batch: &mut Batch, want: &str| {
            let r = unsafe { append_strings(&schema(fmt), a, batch) };
            match r {
                Err(ImportError::Malformed(m)) | Err(ImportError::Unsupported(m)) => assert!(m.contains(want), "{m}"),
                Ok(n) => panic!("read {n} strings, expected an error containing {want:?}"),
            }
        };
        let offsets: Vec<u8> = [0i32, 3, 2, 5].iter().flat_map(|o| o.to_ne_bytes()).collect();
        let data = b"abcde";
        let mut buffers = [ptr::null(), offsets.as_ptr().cast(), data.as_ptr().cast()];
        check(c"u", &array(3, 0, 0, &mut buffers), &mut batch, "offsets decrease at entry 1");
        let offsets: Vec<u8> = [-1i32, 3].iter().flat_map(|o| o.to_ne_bytes()).collect();
        let mut buffers = [ptr::null(), offsets.as_ptr().cast(), data.as_ptr().cast()];
        check(c"u", &array(1, 0, 0, &mut buffers), &mut batch, "first offset is -1");
        let offsets: Vec<u8> = [0i32, 1, 3].iter().flat_map(|o| o.to_ne_bytes()).collect();
        let bad = b"a\xff\xfe";
        let mut buffers = [ptr::null(), offsets.as_ptr().cast(), bad.as_ptr().cast()];
        check(c"u", &array(2, 0, 0, &mut buffers), &mut batch, "not valid UTF-8 (at byte 1");
        let split = "aé".as_bytes();
        let offsets: Vec<u8> = [0i32, 2, 3].iter().flat_map(|o| o.to_ne_bytes()).collect();
        let mut buffers = [ptr::null(), offsets.as_ptr().cast(), split.as_ptr().cast()];
        check(c"u", &array(2, 0, 0, &mut buffers), &mut batch, "inside a UTF-8 character");
        check(c"u", &array(2, 0, 1, &mut buffers), &mut batch, "no validity bitmap");
        check(c"u", &array(-1, 0, 0, &mut buffers), &mut batch, "length is -1");
        check(c"u", &array(1, -2, 0, &mut buffers), &mut batch, "offset is -2");
        check(c"u", &array(2, 0, -5, &mut buffers), &mut batch, "null_count is -5");
        check(c"u", &array(1, i64::MAX, 0, &mut buffers), &mut batch, "overflow");
        check(c"u", &array(2, 0, 0, &mut buffers[..2]), &mut batch, "2 buffers");
        let mut views = array(1, 0, 0, &mut buffers);
        views.n_buffers = 1 << 61; // more than memory holds: refused before any slice is made
        check(c"vu", &views, &mut batch, "2305843009213693952 buffers");
        let mut missing = [ptr::null(), ptr::null(), data.as_ptr().cast()];
        check(c"u", &array(1, 0, 0, &mut missing), &mut batch, "offsets buffer is missing");
        check(c"l", &array(1, 0, 0, &mut buffers), &mut batch, "type int64");
        check(c"z", &array(1, 0, 0, &mut buffers), &mut batch, "cast it to a string type");
        check(c"+s", &array(1, 0, 0, &mut buffers), &mut batch, "batch.column('text')");
        let mut released = array(1, 0, 0, &mut buffers);
        released.release = None;
        check(c"u", &released, &mut batch, "already released");
        assert!(batch.is_empty());
    }

    #[test]
    fn empty_and_null_typed_arrays_add_nothing() {
        let mut batch = Batch::new();
        let mut none: [*const c_void; 3] = [ptr::null(); 3];
        assert_eq!(unsafe { append_strings(&schema(c"u"), &array(0, 0, 0, &mut none), &mut batch) }, Ok(0));
        assert_eq!(unsafe { append_strings(&schema(c"n"), &array(5, 0, 5, &mut []), &mut batch) }, Ok(0));
        assert!(batch.is_empty());
    }

    #[test]
    fn reads_string_views() {
        let long = "a string longer than twelve bytes, ünicode";
        let mut data = b"xx".to_vec();
        data.extend_from_slice(long.as_bytes());
        let view = |s: &str, index: i32, offset: i32| -> Vec<u8> {
            let mut v = (s.len() as i32).to_ne_bytes().to_vec();
            if s.len() <= 12 {
                v.extend_from_slice(s.as_bytes());
                v.resize(16, 0);
            } else {
                v.extend_from_slice(&s.as_bytes()[..4]);
                v.extend(index.to_ne_bytes());
                v.extend(offset.to_ne_bytes());
            }
            v
        };
        let views: Vec<u8> = [view("short é", 0, 0), view("", 0, 0), view(long, 0, 2), view("null", 0, 0)].concat();
        let bitmap = [0b0111u8];
        let sizes = (data.len() as i64).to_ne_bytes();
        let mut buffers = [bitmap.as_ptr().cast(), views.as_ptr().cast(), data.as_ptr().cast(), sizes.as_ptr().cast()];
        let mut batch = Batch::new();
        let n = unsafe { append_strings(&schema(c"vu"), &array(4, 0, 1, &mut buffers), &mut batch) };
        assert_eq!((n, texts(&batch)), (Ok(3), vec!["short é", "", long]));
        let n = unsafe { append_strings(&schema(c"vu"), &array(2, 2, -1, &mut buffers), &mut batch) };
        assert_eq!(n, Ok(1));
        // A view pointing past its buffer, or at a buffer that does not exist.
        for bad in [view(long, 0, 3), view(long, 1, 0), view(long, -1, 0), view(long, 0, -1)] {
            let mut buffers = [ptr::null(), bad.as_ptr().cast(), data.as_ptr().cast(), sizes.as_ptr().cast()];
            let r = unsafe { append_strings(&schema(c"vu"), &array(1, 0, 0, &mut buffers), &mut batch) };
            assert!(matches!(r, Err(ImportError::Malformed(ref m)) if m.contains("points outside")), "{r:?}");
        }
        assert_eq!(batch.len(), 4);
    }
}
