//! A byte range of an uncompressed file, cut at document boundaries, so that several readers
//! share one large file and together read each of its documents once.
//!
//! The documents of a file start at its first byte and right after each separator. The range
//! `start..end` holds the documents that start in it: it begins after the first separator that
//! ends at or past `start` (at 0 for `start` 0), and goes on to the end of the first separator
//! that ends at or past `end` (the last document it holds finished whole), or to the end of the
//! file. Ranges that tile a file (`0..a`, `a..b`, ..., `z..len`) so hold every document once.
//!
//! This needs the separators found from any offset to be those a reader from the start finds:
//! true when no two occurrences of the separator can overlap, that is when no proper prefix of
//! it is also a suffix ([`splittable`]: `\n`, `<|endoftext|>`; not `\n\n`, in which a reader
//! from the start and one from the middle of a run of `\n` would pair them differently).
//! Documents keep the line numbers of the whole file: the `\n` before the range are counted.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::open::{read_error, Input, InputError};

const CHUNK_BYTES: usize = 1 << 20;

/// Whether a file split on `separator` can be cut into ranges (see the module's comment): a
/// separator that is not empty and none of whose proper prefixes is also a suffix.
pub fn splittable(separator: &[u8]) -> bool {
    !separator.is_empty() && (1..separator.len()).all(|n| separator[..n] != separator[separator.len() - n..])
}

/// The documents of `path` split on `separator` that start in `start..end`: the input from the
/// first of them to the end of the last, and the `\n` in the file before it (for line
/// numbers). `separator` must be [`splittable`]; the file is read as it is (no decompression).
pub fn open_range(path: &Path, separator: &[u8], start: u64, end: u64) -> Result<(Input, u64), InputError> {
    if !splittable(separator) {
        return Err(InputError::Bad(format!("{}: a separator of {separator:?} cannot cut a file into ranges", path.display())));
    }
    let mut file = File::open(path).map_err(|e| read_error(path, &e))?;
    let len = file.metadata().map_err(|e| read_error(path, &e))?.len();
    let end = end.min(len);
    let first = if start == 0 { 0 } else { boundary_at(&mut file, separator, start, 0).map_err(|e| read_error(path, &e))? };
    let last = if first >= end { first } else { boundary_at(&mut file, separator, end, first).map_err(|e| read_error(path, &e))? };
    let lines = newlines_before(&mut file, first).map_err(|e| read_error(path, &e))?;
    file.seek(SeekFrom::Start(first)).map_err(|e| read_error(path, &e))?;
    Ok((Input { path: path.to_path_buf(), read: Box::new(file.take(last - first)) }, lines))
}

/// Where the first document starting at or past `at` starts: the end of the first separator
/// that ends at or past `at`, looked for from `from` on (or the end of the file).
fn boundary_at(file: &mut File, separator: &[u8], at: u64, from: u64) -> io::Result<u64> {
    let mut offset = at.saturating_sub(separator.len() as u64).max(from);
    file.seek(SeekFrom::Start(offset))?;
    let finder = memchr::memmem::Finder::new(separator);
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK_BYTES + separator.len());
    loop {
        // `buf` starts at `offset`; a separator cut by the end of a chunk is found in the next.
        let n = (&mut *file).take(CHUNK_BYTES as u64).read_to_end(&mut buf)?;
        let mut searched = 0;
        while let Some(i) = finder.find(&buf[searched..]) {
            let after = offset + (searched + i + separator.len()) as u64;
            if after >= at {
                return Ok(after);
            }
            searched += i + separator.len();
        }
        if n == 0 {
            return Ok(offset + buf.len() as u64);
        }
        let keep = buf.len().saturating_sub(separator.len() - 1).max(searched);
        buf.drain(..keep);
        offset += keep as u64;
    }
}

/// The `\n` in the first `n` bytes of `file`.
fn newlines_before(file: &mut File, n: u64) -> io::Result<u64> {
    file.seek(SeekFrom::Start(0))?;
    let mut reader = (&mut *file).take(n);
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut lines = 0u64;
    loop {
        let got = reader.read(&mut buf)?;
        if got == 0 {
            return Ok(lines);
        }
        lines += memchr::memchr_iter(b'\n', &buf[..got]).count() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn ranges(data: &[u8], separator: &[u8], cuts: &[u64]) -> Vec<(Vec<u8>, u64)> {
        let mut f = tempfile_in_target();
        f.1.write_all(data).unwrap();
        let mut out = Vec::new();
        let mut bounds = vec![0u64];
        bounds.extend_from_slice(cuts);
        bounds.push(data.len() as u64);
        for w in bounds.windows(2) {
            let (mut input, lines) = open_range(&f.0, separator, w[0], w[1]).unwrap();
            let mut bytes = Vec::new();
            input.read.read_to_end(&mut bytes).unwrap();
            out.push((bytes, lines));
        }
        std::fs::remove_file(&f.0).unwrap();
        out
    }

    fn tempfile_in_target() -> (std::path::PathBuf, File) {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!("bpeforge-range-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        let file = File::create(&path).unwrap();
        (path, file)
    }

    #[test]
    fn ranges_tile_the_file_at_document_starts() {
        let data = b"one\ntwo\nthree\n\nfour";
        // Every way of cutting it in two or three gives back the file, cut only after a separator.
        for a in 0..=data.len() as u64 {
            for b in a..=data.len() as u64 {
                let parts = ranges(data, b"\n", &[a, b]);
                let joined: Vec<u8> = parts.iter().flat_map(|(p, _)| p.clone()).collect();
                assert_eq!(joined, data, "cut at {a}, {b}");
                let mut at = 0;
                for (bytes, lines) in &parts {
                    assert!(at == 0 || data[at - 1] == b'\n' || bytes.is_empty(), "a range starts inside a document");
                    assert_eq!(*lines, data[..at].iter().filter(|&&c| c == b'\n').count() as u64);
                    at += bytes.len();
                }
            }
        }
    }

    #[test]
    fn a_document_belongs_to_the_range_it_starts_in() {
        // "two" starts at 4: a cut at 4 gives it to the second range, a cut at 5 to the third.
        assert_eq!(ranges(b"one\ntwo\nx", b"\n", &[4, 6]).iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(), [b"one\n".to_vec(), b"two\n".to_vec(), b"x".to_vec()]);
        assert_eq!(ranges(b"one\ntwo\nx", b"\n", &[5, 6]).iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(), [b"one\ntwo\n".to_vec(), Vec::new(), b"x".to_vec()]);
        // A separator of several bytes cut by the offset, and by the chunks read.
        let sep = b"<|endoftext|>";
        let data = [b"a".as_slice(), sep, b"bb", sep, b"c"].concat();
        for cut in 0..=data.len() as u64 {
            let joined: Vec<u8> = ranges(&data, sep, &[cut]).into_iter().flat_map(|(p, _)| p).collect();
            assert_eq!(joined, data);
        }
    }

    #[test]
    fn separators_that_overlap_themselves_cannot_cut() {
        assert!(splittable(b"\n") && splittable(b"<|endoftext|>") && splittable(b"\r\n"));
        assert!(!splittable(b"\n\n") && !splittable(b"abca") && !splittable(b""));
    }
}
