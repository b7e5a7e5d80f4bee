//! Opening a text or JSONL input: a file, or standard input (`-`), read as it is or decompressed
//! on the fly (`.gz` with flate2, several members in a row as `gzip -d` reads them; `.zst` with
//! zstd, several frames in a row). A compressed stream cut short is an error, never the
//! documents before the cut taken silently: flate2 fails on a truncated member itself, and
//! [`ZstdFrames`] on a truncated frame (zstd's own reader returns the end of the data there).
//! A regular file truncated, grown or rewritten while it is read is an error too
//! ([`WatchedFile`]): its size and modification time at its end must be those it was opened with.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

/// How an input file is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// `"gzip"`, `"zstd"` (as the Python package names them), or None.
    pub fn parse(name: Option<&str>) -> Result<Self, String> {
        match name {
            None => Ok(Compression::None),
            Some("gzip") => Ok(Compression::Gzip),
            Some("zstd") => Ok(Compression::Zstd),
            Some(other) => Err(format!("unknown compression {other:?} (choose from gzip, zstd, or None)")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Compression::None => "plain",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// Why an input could not be read; the message names the file (and line, where there is one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// A problem with the input itself (or the system's): missing, unreadable, not UTF-8, ...
    Bad(String),
    /// The reader's buffer could not grow (the bindings raise MemoryError).
    OutOfMemory(String),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Bad(message) | InputError::OutOfMemory(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for InputError {}

/// An input opened for reading.
pub struct Input {
    pub path: PathBuf,
    pub read: Box<dyn Read + Send>,
}

/// Opens `path` (`-`: standard input), decompressing it as `compression` says.
pub fn open(path: &Path, compression: Compression) -> Result<Input, InputError> {
    let shown = path.display();
    if path.as_os_str() == "-" {
        return Ok(Input { path: path.to_path_buf(), read: Box::new(io::stdin()) });
    }
    let file = File::open(path).map_err(|e| open_error(path, &e))?;
    let meta = file.metadata().map_err(|e| open_error(path, &e))?;
    if meta.is_dir() {
        return Err(InputError::Bad(format!("{shown}: is a folder")));
    }
    if compression != Compression::None && meta.is_file() && meta.len() == 0 {
        // A compressed file is never empty (a header at least): this one was cut short.
        return Err(InputError::Bad(format!("{shown}: an empty file, not {} data (cut short?)", compression.name())));
    }
    let file = WatchedFile::new(file, &meta);
    let read: Box<dyn Read + Send> = match compression {
        Compression::None => Box::new(file),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 18, file))),
        Compression::Zstd => Box::new(ZstdFrames::new(file).map_err(|e| read_error(path, &e))?),
    };
    Ok(Input { path: path.to_path_buf(), read })
}

/// What a file was when it was opened: its size and modification time. A regular file that
/// no longer has them was changed by someone else while it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileState {
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileState {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        FileState { len: meta.len(), modified: meta.modified().ok() }
    }

    /// An error saying how `file` changed since `self` was taken, if it did (only a regular
    /// file's size and time mean anything).
    pub fn check(&self, file: &File) -> io::Result<()> {
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Ok(());
        }
        let now = FileState::of(&meta);
        if now.len != self.len {
            return Err(changed(format!("{} bytes when it was opened, {} now", self.len, now.len)));
        }
        if now.modified != self.modified {
            return Err(changed("its modification time changed".to_string()));
        }
        Ok(())
    }
}

fn changed(how: String) -> io::Error {
    io::Error::other(format!("the file changed while it was read: {how}"))
}

/// A file read to its end, checked there against what it was when opened ([`FileState`]): a
/// file cut short, grown, or rewritten in place while it is read is an error at its end,
/// instead of the documents read so far taken as the whole file.
pub struct WatchedFile {
    file: File,
    opened: FileState,
    read: u64,
}

impl WatchedFile {
    pub fn new(file: File, meta: &std::fs::Metadata) -> Self {
        WatchedFile { file, opened: FileState::of(meta), read: 0 }
    }
}

impl Read for WatchedFile {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(out)?;
        self.read += n as u64;
        // (A pseudo-file of /proc says 0 bytes whatever it holds.)
        if n == 0 && !out.is_empty() {
            self.opened.check(&self.file)?;
            if self.opened.len != 0 && self.file.metadata()?.is_file() && self.read != self.opened.len {
                return Err(changed(format!("{} bytes when it was opened, {} read", self.opened.len, self.read)));
            }
        }
        Ok(n)
    }
}

/// The message for a file that cannot be opened, as the Python package words it.
fn open_error(path: &Path, e: &io::Error) -> InputError {
    let shown = path.display();
    InputError::Bad(match e.kind() {
        io::ErrorKind::NotFound => format!("{shown}: no such file"),
        io::ErrorKind::PermissionDenied => format!("{shown}: permission denied"),
        io::ErrorKind::IsADirectory => format!("{shown}: is a folder"),
        _ => format!("{shown}: cannot read it ({})", os_message(e)),
    })
}

/// The system's message for `e` without Rust's " (os error N)".
fn os_message(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The error for a read that failed (bad compressed data, an I/O error, a buffer that could not
/// grow: see [`read_more`]).
pub fn read_error(path: &Path, e: &io::Error) -> InputError {
    out_of_memory(path, e).unwrap_or_else(|| InputError::Bad(format!("{}: cannot read ({})", path.display(), describe(e))))
}

/// [`InputError::OutOfMemory`] if `e` says memory ran out (see [`read_more`]).
pub fn out_of_memory(path: &Path, e: &io::Error) -> Option<InputError> {
    if e.kind() != io::ErrorKind::OutOfMemory {
        return None;
    }
    let stage = format!("reading {}", path.display());
    Some(InputError::OutOfMemory(match e.get_ref().and_then(|inner| inner.downcast_ref::<Asked>()) {
        Some(asked) => crate::memory::out_of_memory_message(stage, asked.0),
        None => format!("out of memory while {stage}"), // (a decompressor's own allocation)
    }))
}

/// The size of the block a reader's buffer asked for, carried by the error of [`read_more`].
#[derive(Debug)]
struct Asked(usize);

impl std::fmt::Display for Asked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a block of {} bytes could not be allocated", self.0)
    }
}

impl std::error::Error for Asked {}

/// Reads up to `chunk` more bytes of `input` onto the end of `buf`; returns how many (0: the
/// input's end). Rust aborts the process on an allocation that fails, and `read_to_end` grows
/// its buffer that way, so `buf` grows here by a fallible reservation first (doubling, as a
/// `Vec` does) and `read_to_end` reads only into that room: a buffer that cannot grow (one long
/// document under a memory limit) is an [`io::ErrorKind::OutOfMemory`] error, which
/// [`read_error`] turns into [`InputError::OutOfMemory`].
pub fn read_more(input: &mut dyn Read, buf: &mut Vec<u8>, chunk: usize) -> io::Result<usize> {
    if let Err(e) = crate::memory::try_reserve(buf, chunk, "reading") {
        let bytes = match e {
            crate::Error::OutOfMemory { bytes, .. } => bytes,
            _ => 0,
        };
        return Err(io::Error::new(io::ErrorKind::OutOfMemory, Asked(bytes)));
    }
    let len = buf.len();
    // `chunk` bytes fit in the room reserved: read_to_end fills it without growing `buf`.
    input.take(chunk as u64).read_to_end(buf).inspect_err(|_| buf.truncate(len))
}

/// `e`'s message on one line, at most 200 characters.
pub fn describe(e: &io::Error) -> String {
    let mut msg: String = os_message(e).split_whitespace().collect::<Vec<_>>().join(" ");
    if msg.is_empty() {
        msg = format!("{:?}", e.kind());
    }
    msg.truncate(msg.char_indices().nth(200).map_or(msg.len(), |(i, _)| i));
    msg
}

/// Decompresses a `.zst` file frame after frame, failing on a frame cut short.
struct ZstdFrames {
    file: BufReader<WatchedFile>,
    decoder: zstd::stream::raw::Decoder<'static>,
    /// Inside a frame (its end not reached yet).
    in_frame: bool,
}

impl ZstdFrames {
    fn new(file: WatchedFile) -> io::Result<Self> {
        Ok(ZstdFrames { file: BufReader::with_capacity(1 << 18, file), decoder: zstd::stream::raw::Decoder::new()?, in_frame: false })
    }
}

impl Read for ZstdFrames {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        use std::io::BufRead;
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            let input = self.file.fill_buf()?;
            if input.is_empty() {
                if self.in_frame {
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file ends in the middle of a zstd frame (truncated?)"));
                }
                return Ok(0);
            }
            let mut src = InBuffer::around(input);
            let mut dst = OutBuffer::around(&mut *out);
            self.in_frame = true;
            let hint = self.decoder.run(&mut src, &mut dst)?;
            let (used, written) = (src.pos(), dst.pos());
            self.file.consume(used);
            if hint == 0 {
                // A frame ended: the next one (if any) starts afresh.
                self.in_frame = false;
                self.decoder.reinit()?;
            }
            if written > 0 {
                return Ok(written);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_all(path: &Path, compression: Compression) -> Result<Vec<u8>, InputError> {
        let mut input = open(path, compression)?;
        let mut out = Vec::new();
        input.read.read_to_end(&mut out).map_err(|e| read_error(path, &e))?;
        Ok(out)
    }

    #[test]
    fn compressed_files_read_whole_and_cut_short_fail() {
        let dir = std::env::temp_dir().join(format!("bpeforge-open-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body: Vec<u8> = (0..20000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&body[..1000]).unwrap();
        let mut gz_data = gz.finish().unwrap();
        let mut gz2 = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz2.write_all(&body[1000..]).unwrap();
        gz_data.extend(gz2.finish().unwrap()); // two members
        let mut zst_data = zstd::encode_all(&body[..1000], 3).unwrap();
        zst_data.extend(zstd::encode_all(&body[1000..], 3).unwrap()); // two frames
        for (name, data, c) in [("a.gz", gz_data, Compression::Gzip), ("a.zst", zst_data, Compression::Zstd)] {
            let path = dir.join(name);
            std::fs::write(&path, &data).unwrap();
            assert_eq!(read_all(&path, c).unwrap(), body);
            std::fs::write(&path, &data[..data.len() - 7]).unwrap();
            let e = read_all(&path, c).unwrap_err();
            assert!(e.to_string().starts_with(&format!("{}: cannot read (", path.display())), "{e}");
            std::fs::write(&path, b"").unwrap();
            assert!(read_all(&path, c).unwrap_err().to_string().ends_with("data (cut short?)"));
        }
        let e = read_all(&dir.join("missing.txt"), Compression::None).unwrap_err();
        assert_eq!(e.to_string(), format!("{}: no such file", dir.join("missing.txt").display()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Reads `path` in two halves, calling `between` after the first; the error at the end, if any.
    fn read_changed(path: &Path, compression: Compression, between: impl FnOnce()) -> Result<(), InputError> {
        let mut input = open(path, compression)?;
        let mut half = vec![0u8; 1000];
        input.read.read_exact(&mut half).map_err(|e| read_error(path, &e))?;
        between();
        input.read.read_to_end(&mut Vec::new()).map_err(|e| read_error(path, &e))?;
        Ok(())
    }

    #[test]
    fn a_file_changed_while_it_is_read_is_an_error_at_its_end() {
        let dir = std::env::temp_dir().join(format!("bpeforge-changed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body: Vec<u8> = (0..200_000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let zst = zstd::encode_all(&body[..], 3).unwrap();
        for (name, data, c) in [("a.txt", body.clone(), Compression::None), ("a.zst", zst, Compression::Zstd)] {
            let path = dir.join(name);
            let n = data.len();
            std::fs::write(&path, &data).unwrap();
            read_changed(&path, c, || ()).unwrap();
            let cut = || std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(n as u64 / 2).unwrap();
            let e = read_changed(&path, c, cut).unwrap_err().to_string();
            let prefix = format!("{}: cannot read (", path.display());
            assert!(e.starts_with(&prefix) && e.contains("the file changed while it was read"), "{e}");
            std::fs::write(&path, &data).unwrap();
            let touch = || {
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1)).unwrap();
            };
            let e = read_changed(&path, c, touch).unwrap_err().to_string();
            assert!(e.contains("the file changed while it was read: its modification time changed"), "{e}");
        }
        let e = read_all(&dir.join("missing.txt"), Compression::None).unwrap_err();
        assert_eq!(e.to_string(), format!("{}: no such file", dir.join("missing.txt").display()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
