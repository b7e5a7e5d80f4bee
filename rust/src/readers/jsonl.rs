//! The texts of a JSONL file: a field of each line's object, line by line, with the Python
//! package's rules (`read_jsonl`): blank lines skipped (a UTF-8 byte-order mark may open the
//! file), a null or empty text skipped, and anything else that is not an object with a string
//! in that field a bad line, an error naming the file and line or (skipping bad lines) skipped
//! and counted.
//!
//! What is a valid line, and the text it holds, is what Python's `json` says. serde_json parses
//! each line first; where it takes the line as an object with a string or null in the field,
//! Python's `json` takes it too, with the same text (the same grammar, the same escapes; the
//! last of duplicate keys wins in both). serde_json refuses some lines Python's `json` takes:
//! `NaN`, `Infinity` and `-Infinity`, numbers beyond a double, a `\ud800` escape without its
//! pair (Python gives a str that is not valid Unicode, which the Python package makes a bad
//! line when it is the text), nesting deeper than 128. Such lines, and every bad line (whose
//! message says what Python's `json` says), go to a `judge` the caller gives, which the Python
//! bindings answer with Python's `json`: rare lines, so the fast path is serde_json's.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;
use std::path::PathBuf;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};

use super::bad_lines::BadLines;
use super::open::{describe, out_of_memory, read_more, Input, InputError};

const CHUNK_BYTES: usize = 1 << 20;
const BOM: &[u8] = b"\xef\xbb\xbf";

/// What a line holds, as the judge says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// A text (skipped if empty).
    Text(String),
    /// Nothing to take (a null text).
    Skip,
    /// A bad line: what is wrong with it.
    Bad(String),
}

/// The texts of a JSONL input.
pub struct JsonlTexts {
    path: PathBuf,
    input: Box<dyn Read + Send>,
    field: String,
    skip_bad: bool,
    buf: Vec<u8>,
    pos: usize,
    /// No `\n` in `buf[pos..searched]`.
    searched: usize,
    eof: bool,
    /// Lines handed on (blank ones too).
    pub lines: u64,
    pub bad: BadLines,
}

impl JsonlTexts {
    pub fn new(input: Input, field: &str, skip_bad: bool) -> Self {
        JsonlTexts {
            path: input.path,
            input: input.read,
            field: field.to_string(),
            skip_bad,
            buf: Vec::new(),
            pos: 0,
            searched: 0,
            eof: false,
            lines: 0,
            bad: BadLines::default(),
        }
    }

    /// Reads a range of a file (`readers::range`): `lines_before` lines come before the input,
    /// so line numbers stay those of the whole file (and a byte-order mark is only looked for
    /// on the file's first line).
    pub fn in_range(mut self, lines_before: u64) -> Self {
        self.lines = lines_before;
        self
    }

    /// The field read.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The file read.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn fill(&mut self) -> Result<(), InputError> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.searched -= self.pos;
            self.pos = 0;
        }
        match read_more(&mut self.input, &mut self.buf, CHUNK_BYTES) {
            Ok(n) => self.eof = n == 0,
            Err(e) => {
                if let Some(e) = out_of_memory(&self.path, &e) {
                    return Err(e);
                }
                let after = if self.lines > 0 { format!(" after line {}", self.lines) } else { String::new() };
                return Err(InputError::Bad(format!("{}: cannot read{after} ({})", self.path.display(), describe(&e))));
            }
        }
        Ok(())
    }

    /// The next line (with its `\n`, if it has one), as a range of `buf`.
    fn next_line(&mut self) -> Result<Option<(usize, usize)>, InputError> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.searched..]) {
                let end = self.searched + i + 1;
                self.searched = end;
                return Ok(Some((self.pos, end)));
            }
            self.searched = self.buf.len();
            if self.eof {
                let end = self.buf.len();
                return Ok((self.pos < end).then_some((self.pos, end)));
            }
            self.fill()?;
        }
    }

    /// Gives back the buffer and closes the input: nothing more is read (see
    /// [`TextDocuments::close`](super::text::TextDocuments::close)).
    pub fn close(&mut self) {
        (self.buf, self.pos, self.searched, self.eof) = (Vec::new(), 0, 0, true);
        self.input = Box::new(std::io::empty());
    }

    /// Calls `take` on each non-empty text in turn until it returns false or the input ends;
    /// returns whether texts may remain. `judge(line, number)` says what the lines serde_json
    /// does not take hold (see the module's comment).
    pub fn read(
        &mut self,
        judge: &mut dyn FnMut(&[u8], u64) -> Result<Judged, InputError>,
        take: &mut dyn FnMut(&str) -> bool,
    ) -> Result<bool, InputError> {
        loop {
            let Some((start, end)) = self.next_line()? else { return Ok(false) };
            self.pos = end;
            self.lines += 1;
            let line = &self.buf[start..end];
            let body = if self.lines == 1 && line.starts_with(BOM) { &line[BOM.len()..] } else { line };
            if body.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')) {
                continue; // blank
            }
            let fast = std::str::from_utf8(body).ok().and_then(|s| text_field(s, &self.field));
            let more = match fast {
                Some(Found::Text(text)) => text.is_empty() || take(&text),
                Some(Found::Null) => true,
                None => match judge(line, self.lines)? {
                    Judged::Text(text) => text.is_empty() || take(&text),
                    Judged::Skip => true,
                    Judged::Bad(problem) => {
                        let message = format!("{}:{}: {problem}", self.path.display(), self.lines);
                        if !self.skip_bad {
                            return Err(InputError::Bad(message + " (skip such lines with --skip-bad-lines, or skip_bad_lines=True in Python)"));
                        }
                        self.bad.add(|| message);
                        true
                    }
                },
            };
            if !more {
                return Ok(true);
            }
        }
    }
}

/// The field's value, where serde_json takes the line as an object holding a string or null
/// there; None otherwise (left to the judge).
enum Found<'a> {
    Text(Cow<'a, str>),
    Null,
}

fn text_field<'a>(line: &'a str, field: &str) -> Option<Found<'a>> {
    let mut de = serde_json::Deserializer::from_str(line);
    let found = ObjectSeed(field).deserialize(&mut de).ok()?;
    de.end().ok()?;
    found
}

struct ObjectSeed<'f>(&'f str);

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = Option<Found<'de>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_> {
    type Value = Option<Found<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key_seed(StrSeed)? {
            if key == self.0 {
                found = Some(map.next_value_seed(TextSeed)?); // the last of duplicate keys wins
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A string, borrowed from the line where it holds no escape.
struct StrSeed;

impl<'de> DeserializeSeed<'de> for StrSeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for StrSeed {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

/// A string or null; anything else fails (left to the judge, whose message names its type).
struct TextSeed;

impl<'de> DeserializeSeed<'de> for TextSeed {
    type Value = Found<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextSeed {
    type Value = Found<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or null")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Found::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Found::Text(Cow::Owned(v.to_owned())))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Found::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn texts(data: &[u8], skip: bool) -> Result<(Vec<String>, Vec<u64>, u64), InputError> {
        let input = Input { path: "t.jsonl".into(), read: Box::new(Cursor::new(data.to_vec())) };
        let mut reader = JsonlTexts::new(input, "text", skip);
        let (mut out, mut judged) = (Vec::new(), Vec::new());
        let mut judge = |_: &[u8], n: u64| {
            judged.push(n);
            Ok(Judged::Bad("judged".into()))
        };
        while reader.read(&mut judge, &mut |t| {
            out.push(t.to_string());
            false
        })? {}
        Ok((out, judged, reader.bad.count))
    }

    #[test]
    fn serde_takes_plain_lines_and_leaves_the_rest_to_the_judge() {
        let data = "\u{feff}{\"text\": \"a\\n\\u00e9\\ud83d\\ude00\", \"n\": [1, {\"x\": 2}]}\n  \n{\"text\": null}\n\
                    {\"text\": \"\"}\n{\"text\": 1}\n{\"id\": 2}\n[1]\n{\"text\": \"x\", \"y\": NaN}\n{\"text\": \"\\ud800\"}\n\
                    {\"text\": \"first\", \"text\": \"last\"}\n{\"text\": \"no newline\"}";
        let (out, judged, bad) = texts(data.as_bytes(), true).unwrap();
        assert_eq!(out, ["a\né😀", "last", "no newline"]);
        assert_eq!(judged, [5, 6, 7, 8, 9]);
        assert_eq!(bad, 5);
        let e = texts(b"{\"text\": \"ok\"}\n{bad\n", false).unwrap_err();
        assert_eq!(e.to_string(), "t.jsonl:2: judged (skip such lines with --skip-bad-lines, or skip_bad_lines=True in Python)");
    }
}
