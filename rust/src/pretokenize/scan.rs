//! Hand-written scanners that split exactly like the preset patterns, without a regex engine.
//!
//! Each scanner decides the span starting at the current position by trying the pattern's
//! alternatives in order, the way a backtracking engine does, but with every alternative worked
//! out in closed form (see the comments on each scanner). ASCII characters are classified by a
//! byte table, others by a two-stage Unicode table built from regex-syntax ([`super::classes`]),
//! so the classes are those fancy-regex matches with.
//!
//! The scanners agree with `fancy_regex::Regex::find_iter` on every string: the tests below
//! compare them on random strings over every character class the patterns name, on real text,
//! and `fuzz/` does it on arbitrary input.

use super::classes::{is, Class, Set, Tables, CRLF, END, L, LL, LOWER, LU, N, NL, NUM, OTHER, P, S, UPPER, X};
use super::presets;

/// A scanner for one of the preset patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scanner {
    /// rustbpe's spelling of GPT-4's pattern ([`presets::GPT4`], `max_digits: 3`) and
    /// nanochat's variant ([`presets::NANOCHAT`], `max_digits: 2`). `max_digits` is the `k` in
    /// `\p{N}{1,k}`; 0 counts as 1.
    Gpt4 { max_digits: u8 },
    /// tiktoken's spelling of cl100k_base's pattern ([`presets::CL100K`]). It splits like
    /// `Gpt4 { max_digits: 3 }` except at the very end of a text: its `\s++$` comes before
    /// `\s*[\r\n]`, so white space that runs to the end of the text is one span even when it
    /// holds a newline followed by more white space (`"a\n  "` is `["a", "\n  "]`, where GPT4's
    /// spelling gives `["a", "\n", "  "]`).
    Cl100k,
    /// GPT-2's pattern (r50k_base, p50k_base; [`presets::R50K`]).
    R50k,
    /// o200k_base's pattern ([`presets::O200K`]).
    O200k,
    /// The superword stage's pattern ([`presets::SUPERWORD`]).
    Superword,
}

impl Scanner {
    /// The scanner that splits exactly like `pattern`, if `pattern` is one of the preset
    /// strings in [`presets`].
    pub fn for_pattern(pattern: &str) -> Option<Scanner> {
        if pattern == presets::GPT4 {
            Some(Scanner::Gpt4 { max_digits: 3 })
        } else if pattern == presets::NANOCHAT {
            Some(Scanner::Gpt4 { max_digits: 2 })
        } else if pattern == presets::CL100K {
            Some(Scanner::Cl100k)
        } else if pattern == presets::R50K {
            Some(Scanner::R50k)
        } else if pattern == presets::O200K {
            Some(Scanner::O200k)
        } else if pattern == presets::SUPERWORD {
            Some(Scanner::Superword)
        } else {
            None
        }
    }

    /// Calls `on_span` with each non-empty span of `text`, left to right, exactly as
    /// fancy-regex's `find_iter` with the pattern would. The spans cover `text` without gaps.
    pub fn for_each_span<'t>(&self, text: &'t str, mut on_span: impl FnMut(&'t str)) {
        let cur = Cursor {
            t: Tables::get(),
            b: text.as_bytes(),
        };
        let n = text.len();
        let mut i = 0;
        macro_rules! drive {
            ($next:expr) => {
                while i < n {
                    let e: usize = $next;
                    debug_assert!(e > i && e <= n && text.is_char_boundary(e));
                    // SAFETY: every scanner step ends after a whole character, within the text.
                    on_span(unsafe { text.get_unchecked(i..e) });
                    i = e;
                }
            };
        }
        match *self {
            Scanner::Gpt4 { max_digits } => {
                let more_digits = usize::from(max_digits.max(1)) - 1;
                drive!(cur.gpt4(i, more_digits, Trailing::Gpt4))
            }
            Scanner::Cl100k => drive!(cur.gpt4(i, 2, Trailing::Cl100k)),
            Scanner::R50k => drive!(cur.r50k(i)),
            Scanner::O200k => drive!(cur.o200k(i)),
            Scanner::Superword => drive!(cur.superword(i)),
        }
    }

    /// The spans of `text`, for tests and small inputs.
    pub fn spans<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let mut spans = Vec::new();
        self.for_each_span(text, |s| spans.push(s));
        spans
    }
}

/// One bit per byte of `chunk` (16 bytes), set where `byte | fold` is in `first..first + 26`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn letters16(chunk: &[u8], fold: u8, first: u8) -> u32 {
    use std::arch::x86_64::*;
    // panic-free: both callers pass 16 bytes (a `get(i..i + 16)`, the last 16 of a longer text).
    assert!(chunk.len() >= 16);
    // SAFETY: SSE2 is part of x86_64; the load reads the first 16 bytes of `chunk` (unaligned).
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let folded = _mm_sub_epi8(_mm_or_si128(v, _mm_set1_epi8(fold as i8)), _mm_set1_epi8(first as i8));
        let outside = _mm_subs_epu8(folded, _mm_set1_epi8(25));
        _mm_movemask_epi8(_mm_cmpeq_epi8(outside, _mm_setzero_si128())) as u32
    }
}

/// The end of the run of ASCII letters at `i` whose `byte | fold` is in `first..first + 26`
/// (`0x20, b'a'`: either case; `0, b'a'`: lowercase; `0, b'A'`: uppercase), 16 bytes at a time
/// (the last ones in a load that ends at the end of `b`; `b` shorter than 16 bytes is left
/// alone). The general step takes over from there, and at any other character, ASCII or not: a
/// byte of `0x80` or more is never taken for a letter here.
#[inline(always)]
fn ascii_letters_end(b: &[u8], mut i: usize, fold: u8, first: u8) -> usize {
    #[cfg(target_arch = "x86_64")]
    while let Some(chunk) = b.get(i..i + 16) {
        let letters = letters16(chunk, fold, first);
        if letters != 0xFFFF {
            return i + letters.trailing_ones() as usize;
        }
        i += 16;
    }
    // Fewer than 16 bytes left: the last 16 bytes of the text, of which the first `i - last`
    // were looked at already (their lanes are shifted out). Most texts are lines, so this is
    // where most of their last words end.
    #[cfg(target_arch = "x86_64")]
    if i < b.len() && b.len() >= 16 {
        let last = b.len() - 16;
        return i + (letters16(&b[last..], fold, first) >> (i - last)).trailing_ones() as usize;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (b, fold, first);
    i
}

/// How a run of white space is split (the patterns' last alternatives).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trailing {
    /// `\s*[\r\n]|\s+(?!\S)|\s+` (GPT4, nanochat; o200k's `\s*[\r\n]+` ends at the same place).
    Gpt4,
    /// `\s++$|\s*[\r\n]|\s+(?!\S)|\s` (cl100k).
    Cl100k,
    /// `\s++$|\s+(?!\S)|\s` (r50k).
    R50k,
}

/// The text as bytes, with the tables; positions are byte offsets at character boundaries.
struct Cursor<'a> {
    t: &'static Tables,
    b: &'a [u8],
}

impl Cursor<'_> {
    /// The class and byte length of the character at `i`, or `(END, 0)` at the end.
    #[inline(always)]
    fn at(&self, i: usize) -> (Class, usize) {
        match self.b.get(i) {
            None => (END, 0),
            Some(&b) if b < 0x80 => (self.t.ascii[b as usize], 1),
            Some(_) => {
                let (cp, len) = self.decode(i);
                (self.t.class_of(cp), len)
            }
        }
    }

    /// The code point and byte length of the non-ASCII character starting at `i`.
    #[inline(always)]
    fn decode(&self, i: usize) -> (u32, usize) {
        // SAFETY: `b` is valid UTF-8 and `i` is at a character boundary, so the continuation
        // bytes the lead byte announces are there.
        unsafe {
            let b0 = *self.b.get_unchecked(i) as u32;
            let cont = |k: usize| (*self.b.get_unchecked(i + k) as u32) & 0x3F;
            if b0 < 0xE0 {
                (((b0 & 0x1F) << 6) | cont(1), 2)
            } else if b0 < 0xF0 {
                (((b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
            } else {
                (
                    ((b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
                    4,
                )
            }
        }
    }

    /// The character at `i` and its byte length, if there is one.
    #[inline]
    fn char_at(&self, i: usize) -> Option<(char, usize)> {
        match self.b.get(i) {
            None => None,
            Some(&b) if b < 0x80 => Some((b as char, 1)),
            Some(_) => {
                let (cp, len) = self.decode(i);
                // SAFETY: decoded from valid UTF-8.
                Some((unsafe { char::from_u32_unchecked(cp) }, len))
            }
        }
    }

    /// The end of the longest run of characters in `set` starting at `i`.
    #[inline(always)]
    fn run(&self, mut i: usize, set: Set) -> usize {
        // The ASCII part of the runs of letters, 16 bytes at a time.
        if set == L {
            i = ascii_letters_end(self.b, i, 0x20, b'a');
        } else if set == LOWER {
            i = ascii_letters_end(self.b, i, 0, b'a');
        } else if set == UPPER {
            i = ascii_letters_end(self.b, i, 0, b'A');
        }
        loop {
            // ASCII fast path, then the general step.
            while let Some(&b) = self.b.get(i) {
                if b >= 0x80 || !is(set, self.t.ascii[b as usize]) {
                    break;
                }
                i += 1;
            }
            let (c, len) = self.at(i);
            if !is(set, c) {
                return i;
            }
            i += len;
        }
    }

    /// The end of `\p{N}{0,more}` from `i`.
    #[inline]
    fn digits(&self, mut i: usize, more: usize) -> usize {
        for _ in 0..more {
            let (c, len) = self.at(i);
            if c != NUM {
                break;
            }
            i += len;
        }
        i
    }

    /// Whether `c` matches `(?i:letter)` (Unicode simple case folding, as regex-syntax does:
    /// `ſ` matches `s`).
    #[inline]
    fn folds(&self, c: char, letter: u8) -> bool {
        if c.is_ascii() {
            c as u8 | 0x20 == letter
        } else {
            self.t.folds_to(c, letter)
        }
    }

    /// The end of `(?i:[sdmt]|ll|ve|re)` at `i` (the text after an apostrophe), if it matches.
    /// o200k's `(?i:'s|'t|'re|'ve|'m|'ll|'d)` is the same set after its apostrophe.
    #[inline]
    fn contraction_ci(&self, i: usize) -> Option<usize> {
        let (c1, l1) = self.char_at(i)?;
        if self.folds(c1, b's')
            || self.folds(c1, b'd')
            || self.folds(c1, b'm')
            || self.folds(c1, b't')
        {
            return Some(i + l1);
        }
        let (c2, l2) = self.char_at(i + l1)?;
        let pair = |a, b| self.folds(c1, a) && self.folds(c2, b);
        (pair(b'l', b'l') || pair(b'v', b'e') || pair(b'r', b'e')).then_some(i + l1 + l2)
    }

    /// The end of `(?:[sdmt]|ll|ve|re)` at `i` (case-sensitive: r50k), if it matches.
    #[inline]
    fn contraction_cs(&self, i: usize) -> Option<usize> {
        match self.b.get(i..)? {
            [b's' | b'd' | b'm' | b't', ..] => Some(i + 1),
            [b'l', b'l', ..] | [b'v', b'e', ..] | [b'r', b'e', ..] => Some(i + 2),
            _ => None,
        }
    }

    /// The span of white space at `i` (the character at `i` is white space), split by the
    /// patterns' white-space alternatives. With `run` the longest white-space run from `i`:
    /// - `\s*[\r\n]` (and o200k's `\s*[\r\n]+`) backtracks to the run's last `\r`/`\n`;
    /// - `\s++$` takes the whole run if it reaches the end of the text;
    /// - `\s+(?!\S)` takes the whole run at the end of the text, and otherwise (a non-space
    ///   follows) backs off one character, which leaves at least one if the run has two;
    /// - `\s+` / `\s` take what is left: a single white-space character.
    #[inline]
    fn space(&self, i: usize, trailing: Trailing) -> usize {
        let mut j = i;
        let mut last = i; // start of the run's last character
        let mut newline_end = 0; // end of the run's last \r or \n; 0 for none
        loop {
            let (c, len) = self.at(j);
            if !is(S, c) {
                break;
            }
            if c == NL {
                newline_end = j + len;
            }
            last = j;
            j += len;
        }
        debug_assert!(j > i);
        let at_end = j == self.b.len();
        match trailing {
            Trailing::Gpt4 if newline_end != 0 => newline_end,
            Trailing::Cl100k if !at_end && newline_end != 0 => newline_end,
            _ if at_end => j,
            _ if last > i => last,
            _ => j,
        }
    }

    /// One span of GPT-4's pattern (and nanochat's, and cl100k's), from `i < len`:
    ///
    /// ```text
    /// '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|
    /// \s*[\r\n]|\s+(?!\S)|\s+                                     (cl100k: \s++$|...|\s)
    /// ```
    ///
    /// The possessive `?+` takes the character before the letters whenever it is in the class,
    /// which loses nothing: a letter is never in it. The optional space before punctuation is
    /// not possessive, but giving it back cannot help (a space is not punctuation).
    #[inline(always)]
    fn gpt4(&self, i: usize, more_digits: usize, trailing: Trailing) -> usize {
        let b0 = self.b[i];
        if b0 == b'\'' {
            if let Some(e) = self.contraction_ci(i + 1) {
                return e;
            }
        }
        let (c0, l0) = self.at(i);
        if is(L, c0) {
            return self.run(i + l0, L);
        }
        if c0 == NUM {
            return self.digits(i + l0, more_digits);
        }
        if is(X, c0) {
            let (c1, l1) = self.at(i + l0);
            if is(L, c1) {
                return self.run(i + l0 + l1, L);
            }
            if is(P, c0) {
                return self.run(self.run(i + l0, P), CRLF);
            }
            if b0 == b' ' && is(P, c1) {
                return self.run(self.run(i + 1 + l1, P), CRLF);
            }
        }
        self.space(i, trailing)
    }

    /// One span of the superword pattern, from `i < len`:
    ///
    /// ```text
    /// \p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)|[\r\n]+
    /// |[\s\S](?:(?!\p{N}| ?[^\s\p{L}\p{N}]{2}| +(?!\S)|[\r\n])(?:(?<!:) |[^ ]))*
    /// ```
    ///
    /// The alternatives start with different characters (a number, a space or punctuation
    /// followed by punctuation, spaces with no non-space after the last, a newline), so at most
    /// one of the first four matches; the last takes a character, then each next one while none
    /// of the first four would start there and it is not a space after a colon.
    #[inline(always)]
    fn superword(&self, i: usize) -> usize {
        let (c0, l0) = self.at(i);
        if c0 == NUM {
            return self.digits(i + l0, 2);
        }
        if c0 == NL {
            return self.run(i + l0, CRLF);
        }
        if let Some(e) = self.punctuation_run(i).or_else(|| self.spaces_before_space(i)) {
            return e;
        }
        let mut j = i + l0;
        loop {
            let (c, len) = self.at(j);
            if c == END || c == NUM || c == NL {
                return j;
            }
            if self.b[j] == b' ' && self.b[j - 1] == b':' {
                return j;
            }
            if self.punctuation_run(j).is_some() || self.spaces_before_space(j).is_some() {
                return j;
            }
            j += len;
        }
    }

    /// The end of ` ?[^\s\p{L}\p{N}]{2,}[\r\n/]*` at `i`, if it matches.
    #[inline(always)]
    fn punctuation_run(&self, i: usize) -> Option<usize> {
        let start = if self.b[i] == b' ' { i + 1 } else { i };
        let (c1, l1) = self.at(start);
        if !is(P, c1) {
            return None;
        }
        let (c2, l2) = self.at(start + l1);
        if !is(P, c2) {
            return None;
        }
        let mut end = self.run(start + l1 + l2, P);
        while matches!(self.b.get(end), Some(b'\r' | b'\n' | b'/')) {
            end += 1;
        }
        Some(end)
    }

    /// The end of ` +(?!\S)` at `i`, if it matches: the run of spaces if the text ends after it
    /// or white space follows, else all but its last space, if that leaves one.
    #[inline(always)]
    fn spaces_before_space(&self, i: usize) -> Option<usize> {
        let mut j = i;
        while self.b.get(j) == Some(&b' ') {
            j += 1;
        }
        if j == i {
            return None;
        }
        let (c, _) = self.at(j);
        if c == END || is(S, c) {
            Some(j)
        } else {
            (j - i >= 2).then_some(j - 1)
        }
    }

    /// One span of GPT-2's pattern, from `i < len`:
    ///
    /// ```text
    /// '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
    /// ```
    #[inline(always)]
    fn r50k(&self, i: usize) -> usize {
        let b0 = self.b[i];
        if b0 == b'\'' {
            if let Some(e) = self.contraction_cs(i + 1) {
                return e;
            }
        }
        let (c, after) = if b0 == b' ' {
            let (c1, l1) = self.at(i + 1);
            (c1, i + 1 + l1)
        } else {
            let (c0, l0) = self.at(i);
            (c0, i + l0)
        };
        if is(L, c) {
            self.run(after, L)
        } else if c == NUM {
            self.run(after, N)
        } else if is(P, c) {
            self.run(after, P)
        } else {
            self.space(i, Trailing::R50k)
        }
    }

    /// One span of o200k's pattern, from `i < len`:
    ///
    /// ```text
    /// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
    /// |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
    /// |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    /// ```
    ///
    /// Nothing is possessive here, so the first two alternatives backtrack: the optional
    /// prefix is tried with and then without the first character (which matters when that
    /// character is a mark: marks are in the prefix class *and* in both letter classes), and
    /// see [`Cursor::o200k_lower_word`] for `UPPER*LOWER+`.
    #[inline(always)]
    fn o200k(&self, i: usize) -> usize {
        if let Some(e) = self.o200k_ascii(i) {
            return e;
        }
        let b0 = self.b[i];
        let (c0, l0) = self.at(i);
        // [^\r\n\p{L}\p{N}]?  UPPER* LOWER+  contraction?
        if is(X, c0) {
            if let Some(e) = self.o200k_lower_word(i + l0) {
                return self.o200k_contraction(e);
            }
        }
        if is(UPPER | LOWER, c0) {
            if let Some(e) = self.o200k_lower_word(i) {
                return self.o200k_contraction(e);
            }
        }
        // [^\r\n\p{L}\p{N}]?  UPPER+ LOWER*  contraction?
        // (When this is reached, `LOWER*` matches nothing: the first alternative failed on the
        // same `UPPER` run, so nothing after it is in `LOWER`. It is kept to mirror the pattern.)
        if is(X, c0) {
            let (c1, l1) = self.at(i + l0);
            if is(UPPER, c1) {
                let e = self.run(self.run(i + l0 + l1, UPPER), LOWER);
                return self.o200k_contraction(e);
            }
        }
        if is(UPPER, c0) {
            let e = self.run(self.run(i + l0, UPPER), LOWER);
            return self.o200k_contraction(e);
        }
        // \p{N}{1,3}
        if c0 == NUM {
            return self.digits(i + l0, 2);
        }
        //  ?[^\s\p{L}\p{N}]+[\r\n/]*
        let punct = if b0 == b' ' {
            let (c1, l1) = self.at(i + 1);
            is(P, c1).then_some(i + 1 + l1)
        } else {
            is(P, c0).then_some(i + l0)
        };
        if let Some(after) = punct {
            return self.o200k_punct(after);
        }
        // \s*[\r\n]+ ends where GPT-4's \s*[\r\n] does: a longer [\r\n]+ would mean a later
        // \r or \n in the run.
        self.space(i, Trailing::Gpt4)
    }

    /// [`Cursor::o200k`]'s span at `i` when the characters that decide it are ASCII (most of
    /// any text), classified by one table read each and without the general case's retries;
    /// `None` leaves the span to the general case. Runs that go on past ASCII are followed by
    /// [`Cursor::run`] as there.
    /// - A lowercase letter starts `LOWER+` (no prefix: a letter is not in it; no `UPPER*`).
    /// - An uppercase letter starts a word as below.
    /// - Any other character in `[^\r\n\p{L}\p{N}]` followed by a letter is that word's
    ///   prefix. Followed by anything else ASCII, no word matches (an ASCII character of that
    ///   class is not a mark, so not in `UPPER` or `LOWER`): it is punctuation or white space.
    #[inline(always)]
    fn o200k_ascii(&self, i: usize) -> Option<usize> {
        let ascii = &self.t.ascii;
        let b0 = self.b[i];
        if b0 >= 0x80 {
            return None;
        }
        let c0 = ascii[b0 as usize];
        match c0 {
            LL => return Some(self.o200k_contraction(self.run(i + 1, LOWER))),
            LU => return self.o200k_ascii_upper(i),
            NUM => return Some(self.digits(i + 1, 2)),
            NL => return Some(self.space(i, Trailing::Gpt4)),
            _ => {}
        }
        let b1 = *self.b.get(i + 1)?;
        if b1 >= 0x80 {
            return None;
        }
        let c1 = ascii[b1 as usize];
        let punct = match c1 {
            LL => return Some(self.o200k_contraction(self.run(i + 2, LOWER))),
            LU => return self.o200k_ascii_upper(i + 1),
            OTHER if b0 == b' ' => i + 2,
            _ if c0 == OTHER => i + 1,
            _ => return Some(self.space(i, Trailing::Gpt4)),
        };
        Some(self.o200k_punct(punct))
    }

    /// The end of o200k's `[^\s\p{L}\p{N}]+[\r\n/]*` whose first character ends at `after`.
    #[inline(always)]
    fn o200k_punct(&self, after: usize) -> usize {
        let mut e = self.run(after, P);
        while let Some(b'\r' | b'\n' | b'/') = self.b.get(e) {
            e += 1;
        }
        e
    }

    /// The end of the word whose `UPPER` run starts with the ASCII uppercase letter at `p`,
    /// if the characters that decide it are ASCII. With `u` the end of the ASCII uppercase
    /// run: a lowercase letter at `u` makes it `UPPER*LOWER+`; any other ASCII character (or
    /// the end) makes `UPPER*LOWER+` fail, as nothing in the run is in `LOWER`, and
    /// `UPPER+LOWER*` match the run alone.
    #[inline(always)]
    fn o200k_ascii_upper(&self, p: usize) -> Option<usize> {
        let mut u = ascii_letters_end(self.b, p + 1, 0, b'A');
        while let Some(b'A'..=b'Z') = self.b.get(u) {
            u += 1;
        }
        let e = match self.b.get(u) {
            Some(&b) if b >= 0x80 => return None,
            Some(b'a'..=b'z') => self.run(u + 1, LOWER),
            _ => u,
        };
        Some(self.o200k_contraction(e))
    }

    /// The end of `UPPER*LOWER+` at `p`, if it matches. `UPPER*` is greedy and backtracks
    /// until `LOWER+` can match, so with `u` the longest `UPPER` run from `p`:
    /// - if the character after `u` is in `LOWER`, the match is `u` and the `LOWER` run after it;
    /// - otherwise it ends after the last character of `u` that is in `LOWER` too (`Lm`, `Lo`,
    ///   `M`): `LOWER+` matches just that character, as the ones after it in `u` are not in
    ///   `LOWER`;
    /// - and fails if there is none.
    #[inline(always)]
    fn o200k_lower_word(&self, p: usize) -> Option<usize> {
        let mut j = p;
        let mut last_lower_end = None;
        loop {
            let (c, len) = self.at(j);
            if is(UPPER, c) {
                if is(LOWER, c) {
                    last_lower_end = Some(j + len);
                }
                j += len;
            } else if is(LOWER, c) {
                return Some(self.run(j + len, LOWER));
            } else {
                return last_lower_end;
            }
        }
    }

    /// `e` advanced past `(?i:'s|'t|'re|'ve|'m|'ll|'d)` if it matches there.
    #[inline]
    fn o200k_contraction(&self, e: usize) -> usize {
        if self.b.get(e) == Some(&b'\'') {
            if let Some(after) = self.contraction_ci(e + 1) {
                return after;
            }
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fancy_regex::Regex;

    const ALL: [(&str, &str); 6] = [
        ("gpt4", presets::GPT4),
        ("nanochat", presets::NANOCHAT),
        ("cl100k", presets::CL100K),
        ("r50k", presets::R50K),
        ("o200k", presets::O200K),
        ("superword", presets::SUPERWORD),
    ];

    struct Pair {
        name: &'static str,
        scanner: Scanner,
        regex: Regex,
    }

    fn pairs() -> Vec<Pair> {
        ALL.iter()
            .map(|&(name, pattern)| Pair {
                name,
                scanner: Scanner::for_pattern(pattern).unwrap(),
                regex: Regex::new(pattern).unwrap(),
            })
            .collect()
    }

    /// Panics, showing where, unless the scanner and the regex split `text` the same way.
    fn check(pair: &Pair, text: &str) {
        let mut want = pair.regex.find_iter(text).map(|m| {
            let m = m.unwrap();
            (m.start(), m.end())
        });
        let mut at = 0;
        let mut index = 0;
        let mut mismatch = None;
        pair.scanner.for_each_span(text, |s| {
            if mismatch.is_some() {
                return;
            }
            let got = (at, at + s.len());
            at += s.len();
            match want.next() {
                Some(w) if w == got => index += 1,
                w => mismatch = Some((index, got, w)),
            }
        });
        if mismatch.is_none() {
            if let Some(w) = want.next() {
                mismatch = Some((index, (at, at), Some(w)));
            }
        }
        if let Some((index, got, want)) = mismatch {
            let lo = got.0.saturating_sub(40);
            let lo = (0..=lo).rev().find(|&k| text.is_char_boundary(k)).unwrap();
            let hi = (got.1 + 40).min(text.len());
            let hi = (hi..=text.len())
                .find(|&k| text.is_char_boundary(k))
                .unwrap();
            let show = |r: Option<(usize, usize)>| r.map(|(a, b)| &text[a..b]);
            panic!(
                "{}: span #{index} differs: scanner {:?} {:?}, fancy-regex {:?} {:?}\n  around: {:?}\n  text: {:?}",
                pair.name,
                got,
                show(Some(got)),
                want,
                show(want),
                &text[lo..hi],
                if text.len() < 300 { text } else { "(long)" },
            );
        }
    }

    #[test]
    fn for_pattern_knows_every_preset() {
        for (name, pattern) in presets::PRESETS {
            assert!(Scanner::for_pattern(pattern).is_some(), "{name}");
        }
        assert_eq!(Scanner::for_pattern(r"\w+"), None);
        assert_eq!(
            Scanner::for_pattern(presets::NANOCHAT),
            Some(Scanner::Gpt4 { max_digits: 2 })
        );
    }

    #[test]
    fn known_splits() {
        let gpt4 = Scanner::Gpt4 { max_digits: 3 };
        assert_eq!(
            gpt4.spans("Hello world's 12345  \n\n x"),
            vec!["Hello", " world", "'s", " ", "123", "45", "  \n\n", " x"]
        );
        // The one place rustbpe's and tiktoken's spellings of GPT-4's pattern differ.
        assert_eq!(gpt4.spans("a\n  "), vec!["a", "\n", "  "]);
        assert_eq!(Scanner::Cl100k.spans("a\n  "), vec!["a", "\n  "]);
        assert_eq!(Scanner::Cl100k.spans("a\n  b"), vec!["a", "\n", " ", " b"]);
        // Case-insensitive contractions fold like regex-syntax: ſ is s.
        assert_eq!(gpt4.spans("'ſx"), vec!["'ſ", "x"]);
        assert_eq!(gpt4.spans("'Sx"), vec!["'S", "x"]);
        assert_eq!(gpt4.spans("'\u{212A}x"), vec!["'\u{212A}x"]);
        assert_eq!(Scanner::R50k.spans("'Sx"), vec!["'", "Sx"]);
        assert_eq!(Scanner::O200k.spans("dog'ſ"), vec!["dog'ſ"]);
        // o200k: a mark before an upper-case letter is a word of its own.
        assert_eq!(Scanner::O200k.spans("\u{301}A"), vec!["\u{301}", "A"]);
        assert_eq!(Scanner::O200k.spans("中A"), vec!["中", "A"]);
        assert_eq!(
            Scanner::O200k.spans("HELLOworld WORLD"),
            vec!["HELLOworld", " WORLD"]
        );
        assert_eq!(
            Scanner::O200k.spans("x += 1;\n// c"),
            vec!["x", " +=", " ", "1", ";\n//", " c"]
        );
    }

    /// Hand-picked strings around every alternative's edges (long: the list of cases).
    #[test]
    fn tricky_cases_match_fancy_regex() {
        let cases = [
            "",
            " ",
            "  ",
            "\n",
            "\r\n",
            " \n ",
            "a\n  ",
            "a \n ",
            "x  \n\n",
            "  x",
            "\t\n y",
            "\u{3000},",
            " \u{3000}x",
            "\u{a0}x",
            "\u{85}\n",
            "\u{2028}",
            "\u{b}\u{c}x",
            "'s",
            "'S",
            "'ſ",
            "'ſx",
            "'\u{212A}",
            "'ll",
            "'LL",
            "'lL'",
            "'ve",
            "'Re",
            "'re'",
            "don't",
            "DON'T",
            "dog's",
            "Dog'S",
            "I'M",
            "we'll've",
            "'",
            "''",
            "'''s",
            "’s",
            "a's's",
            " 's",
            "x'",
            "x''s",
            "\u{301}",
            "\u{301}A",
            " \u{301}A",
            "a\u{301}",
            "A\u{301}b",
            "ǅa",
            "ǅ",
            "ʰʰA",
            "Aʰ",
            "אב",
            "中A",
            "中文",
            "HELLO world",
            "HELLOworld",
            "helloWORLD",
            "12345",
            "٣٣٣٣",
            "²³¹⁴",
            "ⅫⅫⅫⅫ",
            "1a",
            "a1",
            "a\n//b",
            "x//\n//\ny",
            " //",
            "/**/",
            "foo();\r\n\r\n",
            "  {\n\t\treturn;\n\t}",
            "\u{1c}a",
            "\u{1f}\u{1f}",
            "😀😀 😀x",
            " 😀",
            "\u{200b}a",
            "\u{feff}x",
            "\u{180e} a",
            "a\u{2029}",
            "\n\u{3000}\n ",
            "   \u{301}a",
            "... ...",
            " ...\n\n",
        ];
        let pairs = pairs();
        for text in cases {
            for pair in &pairs {
                check(pair, text);
            }
        }
    }

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Pieces of text, grouped by what they exercise, with weights.
    const ALPHABET: &[(u32, &[&str])] = &[
        (8, &["a", "b", "x", "z", "A", "B", "X", "Z"]),
        (
            10,
            &[
                "s", "t", "d", "m", "l", "v", "r", "e", "S", "T", "D", "M", "L", "V", "R", "E",
            ],
        ),
        (10, &["'", "'", "'", "’"]),
        (
            3,
            &[
                "'s", "'ll", "'ve", "'re", "'S", "'LL", "'Ve", "'ſ", "'t", "'D",
            ],
        ),
        (3, &["ſ", "\u{212A}", "k", "K", "ß", "ẞ"]),
        (6, &["0", "1", "7", "9", "٣", "²", "Ⅻ", "½", "𝟘"]),
        (14, &[" ", " ", " ", "  "]),
        (8, &["\n", "\r", "\r\n", "\t", "\u{b}", "\u{c}"]),
        (
            4,
            &[
                "\u{85}", "\u{a0}", "\u{2028}", "\u{2029}", "\u{3000}", "\u{1680}", "\u{202f}",
            ],
        ),
        (
            2,
            &[
                "\u{1c}", "\u{1f}", "\u{0}", "\u{7f}", "\u{200b}", "\u{180e}", "\u{feff}",
            ],
        ),
        (
            8,
            &[
                ".", ",", ";", "(", ")", "{", "}", "-", "+", "=", "\"", "#", "*", "_", "!",
            ],
        ),
        (5, &["/", "/", "//", "/*", ":", ": ", "::"]),
        (6, &["é", "É", "ñ", "ø", "ö", "Ö", "ı", "İ"]),
        (
            6,
            &[
                "\u{300}", "\u{301}", "\u{308}", "\u{20dd}", "\u{93f}", "\u{94d}",
            ],
        ),
        (4, &["ǅ", "ǈ", "ʰ", "ʼ", "ー", "々"]),
        (5, &["א", "ב", "中", "文", "字", "ก", "ا"]),
        (3, &["😀", "👍", "\u{1f3fd}", "\u{200d}", "€", "©", "→"]),
        (2, &["Ω", "ω", "Σ", "σ", "ς", "Ж", "ж"]),
    ];

    fn random_text(rng: &mut Rng, max_pieces: usize) -> String {
        let total: u32 = ALPHABET.iter().map(|(w, _)| w).sum();
        let pieces = rng.below(max_pieces + 1);
        let mut text = String::new();
        for _ in 0..pieces {
            let mut pick = (rng.next() % u64::from(total)) as u32;
            let group = ALPHABET
                .iter()
                .find(|(w, _)| {
                    if pick < *w {
                        true
                    } else {
                        pick -= w;
                        false
                    }
                })
                .unwrap()
                .1;
            text.push_str(group[rng.below(group.len())]);
        }
        text
    }

    /// Differential test: many random strings over every class the patterns name.
    #[test]
    fn random_strings_match_fancy_regex() {
        let cases = if cfg!(debug_assertions) {
            20_000
        } else {
            100_000
        };
        let pairs = pairs();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for case in 0..cases {
            // Mostly short strings (where the edges are), some longer ones.
            let max_pieces = if case % 10 == 0 { 200 } else { 12 };
            let text = random_text(&mut rng, max_pieces);
            for pair in &pairs {
                check(pair, &text);
            }
        }
    }

    /// Up to `limit` bytes of a file, cut at a character boundary; None if it can't be read.
    fn read_prefix(path: &std::path::Path, limit: usize) -> Option<String> {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .ok()?
            .take(limit as u64)
            .read_to_end(&mut bytes)
            .ok()?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut end = text.len();
        while end > 0 && !text.is_char_boundary(end) {
            end -= 1;
        }
        Some(text[..end].to_owned())
    }

    #[test]
    fn ascii_letter_runs_end_where_a_byte_by_byte_scan_does() {
        // Letters next to the bytes just outside the ranges ('@', '[', '`', '{'), bytes of 0x80
        // and more, and runs across and at the ends of 16-byte loads.
        let alphabet = b"azAZmM@[`{09 \x80\xc3\xff";
        let mut state = 17u64;
        for round in 0..20_000 {
            let len = round % 70;
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    // Mostly letters, so that long runs happen.
                    let k = (state >> 59) as usize;
                    if k < 24 { alphabet[k % 6] } else { alphabet[k % alphabet.len()] }
                })
                .collect();
            for (fold, first) in [(0x20u8, b'a'), (0, b'a'), (0, b'A')] {
                let letter = |c: u8| (c | fold).wrapping_sub(first) < 26;
                for from in 0..=len {
                    let end = ascii_letters_end(&text, from, fold, first);
                    // It may stop early (the general step goes on from there), but never past
                    // a non-letter; with SSE2, exactly at the run's end (the last bytes in a
                    // load that ends at the text's end), unless the text is shorter than one
                    // load, which it leaves alone.
                    let want = (from..len).find(|&i| !letter(text[i])).unwrap_or(len);
                    assert!(end <= want, "{text:?} from {from}: {end} vs {want}");
                    if cfg!(target_arch = "x86_64") {
                        let exact = if len < 16 { from } else { want };
                        assert_eq!(end, exact, "{text:?} from {from}");
                    }
                    assert!(text[from..end].iter().all(|&c| letter(c)));
                }
            }
        }
    }

    /// The corpora of the folder named by `BPEFORGE_CORPUS_DIR` (none if it is unset).
    fn corpus_files() -> Vec<std::path::PathBuf> {
        let Some(dir) = std::env::var_os("BPEFORGE_CORPUS_DIR") else {
            return Vec::new();
        };
        let dir = std::path::PathBuf::from(dir);
        ["kernel-docs.txt", "kernel-code.txt"].iter().map(|name| dir.join(name)).collect()
    }

    /// The standard library's folder of the Python that `$PYTHON` (or `python3`) runs, if any.
    fn python_stdlib() -> Option<std::path::PathBuf> {
        let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
        let out = std::process::Command::new(python)
            .args(["-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"])
            .output()
            .ok()
            .filter(|out| out.status.success())?;
        Some(String::from_utf8(out.stdout).ok()?.trim().into())
    }

    /// Real text: the corpora of `BPEFORGE_CORPUS_DIR`, if set, and the sources of Python's
    /// standard library, if a Python is found.
    #[test]
    fn real_text_matches_fancy_regex() {
        let limit = if cfg!(debug_assertions) {
            256 << 10
        } else {
            4 << 20
        };
        let mut texts = Vec::new();
        for path in corpus_files() {
            texts.extend(read_prefix(&path, limit));
        }
        if let Some(dir) = python_stdlib().and_then(|stdlib| std::fs::read_dir(stdlib).ok()) {
            let mut paths: Vec<_> = dir
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "py"))
                .collect();
            paths.sort();
            let mut budget = limit * 2;
            for path in paths {
                if let Some(text) = read_prefix(&path, budget) {
                    budget = budget.saturating_sub(text.len());
                    texts.push(text);
                }
                if budget == 0 {
                    break;
                }
            }
        }
        let pairs = pairs();
        for text in &texts {
            for pair in &pairs {
                check(pair, text);
            }
        }
    }

    /// CPU time of this thread, in seconds (wall-clock time elsewhere than 64-bit Linux), so
    /// the figures hold up on a busy machine.
    fn thread_seconds() -> f64 {
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        {
            #[repr(C)]
            struct Timespec {
                sec: i64,
                nsec: i64,
            }
            extern "C" {
                fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
            }
            const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
            let mut ts = Timespec { sec: 0, nsec: 0 };
            // SAFETY: plain libc call with a valid out pointer.
            if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
                return ts.sec as f64 + ts.nsec as f64 * 1e-9;
            }
        }
        use std::sync::OnceLock;
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_secs_f64()
    }

    /// Throughput (per core, thread CPU time, best of 3) of the scanner against fancy-regex on
    /// the corpora of `BPEFORGE_CORPUS_DIR`:
    /// `BPEFORGE_CORPUS_DIR=<folder> cargo test --release --lib pretokenize::scan::tests::throughput -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn throughput() {
        let limit = 32 << 20;
        if corpus_files().is_empty() {
            println!("BPEFORGE_CORPUS_DIR is not set: nothing to measure");
        }
        for file in corpus_files() {
            let path = file.display();
            let Some(text) = read_prefix(&file, limit) else {
                println!("{path}: absent");
                continue;
            };
            let mb = text.len() as f64 / 1e6;
            for pair in pairs() {
                let mut scan = f64::INFINITY;
                let mut spans = 0usize;
                for _ in 0..3 {
                    let start = thread_seconds();
                    spans = 0;
                    pair.scanner.for_each_span(&text, |s| {
                        std::hint::black_box(s);
                        spans += 1
                    });
                    scan = scan.min(thread_seconds() - start);
                }
                let start = thread_seconds();
                let mut regex_spans = 0usize;
                for m in pair.regex.find_iter(&text) {
                    std::hint::black_box(m.unwrap());
                    regex_spans += 1;
                }
                let regex = thread_seconds() - start;
                assert_eq!(spans, regex_spans);
                println!(
                    "{path} ({mb:.1} MB) {:>8}: scanner {:7.1} MB/s, fancy-regex {:6.1} MB/s ({:.1}x), {spans} spans",
                    pair.name,
                    mb / scan,
                    mb / regex,
                    regex / scan,
                );
            }
        }
    }
}
