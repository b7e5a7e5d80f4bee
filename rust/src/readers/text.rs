//! The documents of a text file: one per line (`\n` or `\r\n`), or split on a separator, or the
//! whole file; checked as UTF-8, a document that is not either an error naming the file and line
//! or (skipping bad lines) skipped and counted. A UTF-8 byte-order mark opening the file is
//! dropped; empty documents are skipped. The same documents as the Python package's
//! `read_text`, found on the bytes: a separator is UTF-8, so it matches the same places in the
//! bytes as in the text decoded with Python's "surrogateescape" handler.

use std::io::Read;
use std::path::PathBuf;

use super::bad_lines::BadLines;
use super::open::{read_error, read_more, Input, InputError};

/// Bytes read at a time.
const CHUNK_BYTES: usize = 1 << 20;
const BOM: &[u8] = b"\xef\xbb\xbf";

pub struct TextDocuments {
    path: PathBuf,
    input: Box<dyn Read + Send>,
    /// Empty: the whole file is one document.
    separator: Vec<u8>,
    skip_bad: bool,
    /// Bytes read and not yet handed on; `buf[pos..]` is the unfinished document.
    buf: Vec<u8>,
    pos: usize,
    /// No separator starts in `buf[pos..searched]`.
    searched: usize,
    eof: bool,
    /// The byte-order mark was looked for.
    started: bool,
    /// `\n` in the stream before `buf[pos]` (for the line of an error).
    lines: u64,
    /// Non-empty documents found, good and bad.
    pub documents: u64,
    pub bad: BadLines,
}

impl TextDocuments {
    /// The documents of `input`, split on `separator` (`"\n"`: lines, ending in `\n` or
    /// `\r\n`; `""`: the whole input).
    pub fn new(input: Input, separator: &str, skip_bad: bool) -> Self {
        TextDocuments {
            path: input.path,
            input: input.read,
            separator: separator.as_bytes().to_vec(),
            skip_bad,
            buf: Vec::new(),
            pos: 0,
            searched: 0,
            eof: false,
            started: false,
            lines: 0,
            documents: 0,
            bad: BadLines::default(),
        }
    }

    /// Reads a range of a file (`readers::range`): `lines_before` `\n` come before the input
    /// (line numbers stay those of the whole file), and `inside` says it starts past the
    /// file's first byte (where no byte-order mark is looked for).
    pub fn in_range(mut self, lines_before: u64, inside: bool) -> Self {
        self.lines = lines_before;
        self.started = inside;
        self
    }

    /// Gives back the buffer and closes the input: nothing more is read. A reader may outlive
    /// its reading (training holds the reader while it merges), and its buffer of a megabyte
    /// or two would weigh on the peak of a small run.
    pub fn close(&mut self) {
        (self.buf, self.pos, self.searched, self.eof) = (Vec::new(), 0, 0, true);
        self.input = Box::new(std::io::empty());
    }

    /// Reads more bytes into `buf` (after dropping those handed on); sets `eof` at the end.
    fn fill(&mut self) -> Result<(), InputError> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.searched -= self.pos;
            self.pos = 0;
        }
        // Straight into the buffer's spare room (no zeroing first), a chunk or what is left.
        let n = read_more(&mut self.input, &mut self.buf, CHUNK_BYTES).map_err(|e| read_error(&self.path, &e))?;
        self.eof = n == 0;
        if !self.started && (self.buf.len() >= BOM.len() || self.eof) {
            self.started = true;
            if self.buf.starts_with(BOM) {
                self.buf.drain(..BOM.len());
            }
        }
        Ok(())
    }

    /// Where the next segment between separators ends (exclusive), and where the one after it
    /// starts; None at the end of the input.
    fn next_segment(&mut self) -> Result<Option<(usize, usize)>, InputError> {
        loop {
            if self.started {
                if !self.separator.is_empty() {
                    if let Some(i) = find(&self.buf[self.searched..], &self.separator) {
                        let end = self.searched + i;
                        let next = end + self.separator.len();
                        self.searched = next;
                        return Ok(Some((end, next)));
                    }
                    self.searched = self.buf.len().saturating_sub(self.separator.len() - 1).max(self.pos);
                }
                if self.eof {
                    let end = self.buf.len();
                    return Ok((self.pos < end).then_some((end, end)));
                }
            }
            self.fill()?;
        }
    }

    /// Calls `take` on each good document in turn until it returns false or the input ends;
    /// returns whether documents may remain.
    pub fn read(&mut self, take: &mut dyn FnMut(&str) -> bool) -> Result<bool, InputError> {
        let lines_mode = self.separator == b"\n";
        loop {
            let Some((mut end, next)) = self.next_segment()? else { return Ok(false) };
            let start = self.pos;
            let at_separator = next > end;
            if lines_mode && at_separator && end > start && self.buf[end - 1] == b'\r' {
                end -= 1; // \r\n ends the line
            }
            let lines_before = self.lines;
            if lines_mode {
                self.lines += at_separator as u64;
            } else {
                self.lines += memchr::memchr_iter(b'\n', &self.buf[start..next]).count() as u64;
            }
            self.pos = next;
            if end == start {
                continue;
            }
            self.documents += 1;
            let more = match std::str::from_utf8(&self.buf[start..end]) {
                Ok(doc) => take(doc),
                Err(e) => {
                    let at = start + e.valid_up_to();
                    let byte = self.buf[at];
                    let line = || match lines_mode {
                        true => lines_before + 1,
                        false => lines_before + memchr::memchr_iter(b'\n', &self.buf[start..at]).count() as u64 + 1,
                    };
                    if !self.skip_bad {
                        return Err(InputError::Bad(format!(
                            "{}:{}: not valid UTF-8 (byte 0x{byte:02x}); convert the file to UTF-8, \
                             or skip the documents that hold such bytes with --skip-bad-lines (skip_bad_lines=True in Python)",
                            self.path.display(),
                            line()
                        )));
                    }
                    let message = || format!("{}:{}: not valid UTF-8 (byte 0x{byte:02x})", self.path.display(), line());
                    self.bad.add(message);
                    true
                }
            };
            if !more {
                return Ok(true);
            }
        }
    }
}

/// Where `needle` (not empty) first occurs in `haystack`: the places of its first byte found
/// with memchr, each checked (separators are short, and those of one byte the common case).
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    memchr::memchr_iter(first, haystack).find(|&i| haystack[i + 1..].starts_with(rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn docs(data: &[u8], separator: &str, skip: bool) -> Result<(Vec<String>, u64), InputError> {
        let input = Input { path: "t.txt".into(), read: Box::new(Cursor::new(data.to_vec())) };
        let mut reader = TextDocuments::new(input, separator, skip);
        let mut out = Vec::new();
        while reader.read(&mut |d| {
            out.push(d.to_string());
            out.len() % 2 == 1 // stop every other document: reading resumes where it stopped
        })? {}
        Ok((out, reader.bad.count))
    }

    #[test]
    fn splits_lines_separators_and_whole_files() {
        let data = b"\xef\xbb\xbfone\r\ntwo\r\r\n\n\r\nthree\rfour\nlast\r";
        assert_eq!(docs(data, "\n", false).unwrap().0, ["one", "two\r", "three\rfour", "last\r"]);
        assert_eq!(docs(b"a--b----c-", "--", false).unwrap().0, ["a", "b", "c-"]);
        assert_eq!(docs(b"\xef\xbb\xbfwhole\nfile\n", "", false).unwrap().0, ["whole\nfile\n"]);
        assert_eq!(docs(b"\xef\xbb\xbf", "", false).unwrap().0, Vec::<String>::new());
        let long = "x".repeat(3 * CHUNK_BYTES + 5);
        assert_eq!(docs(format!("a\n{long}\nb").as_bytes(), "\n", false).unwrap().0, ["a", &long, "b"]);
    }

    #[test]
    fn bytes_that_are_not_utf8_name_the_line_or_are_skipped() {
        let data = b"ok\nfine\r\nbad \xe9 here\nok again\n";
        let e = docs(data, "\n", false).unwrap_err();
        assert!(e.to_string().starts_with("t.txt:3: not valid UTF-8 (byte 0xe9); convert"), "{e}");
        assert_eq!(docs(data, "\n", true).unwrap(), (vec!["ok".into(), "fine".into(), "ok again".into()], 1));
        let e = docs(b"a\nb\n\nc \xff", "\n\n", false).unwrap_err();
        assert!(e.to_string().starts_with("t.txt:4: not valid UTF-8 (byte 0xff)"), "{e}");
    }
}
