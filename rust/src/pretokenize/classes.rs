//! Character classes of the preset split patterns, as lookup tables.
//!
//! Every character belongs to exactly one [`Class`]: one of the five letter categories, a mark, a
//! number, `\r`/`\n`, other white space, or anything else. The classes are derived at first use
//! from `regex-syntax` — the crate fancy-regex hands its character classes to — so they follow
//! exactly the Unicode version fancy-regex matches with (`\p{L}`, `\p{Lu}`, ..., `\p{M}`,
//! `\p{N}`, and `\s`, which is Unicode `White_Space` there, not Python's `str.isspace`).
//!
//! The sets the patterns name are unions of classes, held as bit masks over the class numbers
//! ([`L`], [`P`], [`X`], ...), so a membership test is a shift and an and.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex_syntax::hir::{Class as HirClass, ClassUnicode, ClassUnicodeRange, HirKind};

/// The class of one character, `0..=9`; [`END`] stands for "past the end of the text".
pub type Class = u8;

/// `\p{Lu}`
pub const LU: Class = 0;
/// `\p{Ll}`
pub const LL: Class = 1;
/// `\p{Lt}`
pub const LT: Class = 2;
/// `\p{Lm}`
pub const LM: Class = 3;
/// `\p{Lo}`
pub const LO: Class = 4;
/// `\p{M}`
pub const MARK: Class = 5;
/// `\p{N}`
pub const NUM: Class = 6;
/// `\s` other than `\r` and `\n`
pub const WS: Class = 7;
/// `\r` or `\n`
pub const NL: Class = 8;
/// Anything else: punctuation, symbols, controls, unassigned, ...
pub const OTHER: Class = 9;
/// Past the end of the text: in no set.
pub const END: Class = 15;

/// A set of classes, one bit per class.
pub type Set = u16;

const fn bit(c: Class) -> Set {
    1 << c
}

/// `\p{L}`
pub const L: Set = bit(LU) | bit(LL) | bit(LT) | bit(LM) | bit(LO);
/// `\p{N}`
pub const N: Set = bit(NUM);
/// `\s`
pub const S: Set = bit(WS) | bit(NL);
/// `[\r\n]`
pub const CRLF: Set = bit(NL);
/// `[^\s\p{L}\p{N}]`: punctuation, symbols, marks, ...
pub const P: Set = bit(MARK) | bit(OTHER);
/// `[^\r\n\p{L}\p{N}]`: `P` and white space other than `\r\n`.
pub const X: Set = bit(MARK) | bit(WS) | bit(OTHER);
/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`
pub const UPPER: Set = bit(LU) | bit(LT) | bit(LM) | bit(LO) | bit(MARK);
/// o200k's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`
pub const LOWER: Set = bit(LL) | bit(LM) | bit(LO) | bit(MARK);

/// Whether class `c` is in set `s` (never for [`END`]).
#[inline(always)]
pub const fn is(s: Set, c: Class) -> bool {
    (s >> c) & 1 != 0
}

/// Number of code points covered by the tables.
const CODE_POINTS: usize = 0x11_0000;
/// Code points per second-stage block.
const BLOCK: usize = 256;

/// The class of every character: a byte table for ASCII, a two-stage table for the rest.
pub struct Tables {
    /// Class of each ASCII byte.
    pub ascii: [Class; 128],
    /// Block number of each run of 256 code points.
    stage1: Box<[u16]>,
    /// Deduplicated blocks of classes.
    stage2: Box<[[Class; BLOCK]]>,
    /// For each contraction letter `l`, the characters `(?i:l)` matches (simple case folding).
    folds: [(u8, Box<[char]>); 8],
}

impl Tables {
    /// The tables, built on first use.
    #[inline]
    pub fn get() -> &'static Tables {
        static TABLES: OnceLock<Tables> = OnceLock::new();
        TABLES.get_or_init(Tables::build)
    }

    /// The class of code point `cp`.
    #[inline(always)]
    pub fn class_of(&self, cp: u32) -> Class {
        let cp = cp as usize;
        // `cp < 0x110000` always (it comes from a `str`), so both indexes are in bounds; the
        // compiler cannot see it, so spare the checks.
        debug_assert!(cp < CODE_POINTS);
        unsafe {
            let block = *self.stage1.get_unchecked(cp / BLOCK) as usize;
            *self.stage2.get_unchecked(block).get_unchecked(cp % BLOCK)
        }
    }

    /// The class of character `c`.
    pub fn class_of_char(&self, c: char) -> Class {
        self.class_of(c as u32)
    }

    /// Whether `c` matches the ASCII letter `letter` case-insensitively, as `(?i:letter)` does.
    /// `letter` must be one of the contraction letters `sdmtlvre`.
    #[inline]
    pub fn folds_to(&self, c: char, letter: u8) -> bool {
        for (l, chars) in &self.folds {
            if *l == letter {
                return chars.contains(&c);
            }
        }
        // panic-free: the scanner only asks about the letters of the contractions, all in `folds`.
        unreachable!("not a contraction letter: {}", letter as char)
    }

    fn build() -> Tables {
        let mut table = vec![OTHER; CODE_POINTS];
        let mut assigned = vec![false; CODE_POINTS];
        let mut fill = |pattern: &str, class: Class| {
            for (lo, hi) in unicode_class(pattern) {
                for cp in lo..=hi {
                    let cp = cp as usize;
                    // panic-free: the fixed classes below are disjoint (built by every test that splits).
                    assert!(!assigned[cp], "U+{cp:04X} is in two classes");
                    assigned[cp] = true;
                    table[cp] = class;
                }
            }
        };
        fill(r"\p{Lu}", LU);
        fill(r"\p{Ll}", LL);
        fill(r"\p{Lt}", LT);
        fill(r"\p{Lm}", LM);
        fill(r"\p{Lo}", LO);
        fill(r"\p{M}", MARK);
        fill(r"\p{N}", NUM);
        fill(r"[\s&&[^\r\n]]", WS);
        fill(r"[\r\n]", NL);

        let mut ascii = [OTHER; 128];
        ascii.copy_from_slice(&table[..128]);

        let mut block_ids: HashMap<&[Class], u16> = HashMap::new();
        let mut stage2: Vec<[Class; BLOCK]> = Vec::new();
        let stage1 = table
            .chunks_exact(BLOCK)
            .map(|chunk| {
                *block_ids.entry(chunk).or_insert_with(|| {
                    // panic-free: chunks_exact(BLOCK) yields slices of exactly BLOCK classes.
                    stage2.push(chunk.try_into().unwrap());
                    // panic-free: 0x110000 / BLOCK blocks at most, far below u16::MAX.
                    u16::try_from(stage2.len() - 1).unwrap()
                })
            })
            .collect();

        let folds = [b's', b'd', b'm', b't', b'l', b'v', b'r', b'e'].map(|l| {
            let c = l as char;
            let mut class = ClassUnicode::new([ClassUnicodeRange::new(c, c)]);
            class.case_fold_simple();
            let chars: Vec<char> = class
                .ranges()
                .iter()
                .flat_map(|r| r.start()..=r.end())
                .collect();
            (l, chars.into_boxed_slice())
        });

        Tables {
            ascii,
            stage1,
            stage2: stage2.into_boxed_slice(),
            folds,
        }
    }
}

/// The code point ranges of a pattern that is a single Unicode class, as regex-syntax reads it.
pub fn unicode_class(pattern: &str) -> Vec<(u32, u32)> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        // panic-free: only called with the fixed class patterns of this file, which parse (tested).
        .unwrap_or_else(|e| panic!("{pattern}: {e}"));
    match hir.kind() {
        HirKind::Class(HirClass::Unicode(class)) => class
            .ranges()
            .iter()
            .map(|r| (r.start() as u32, r.end() as u32))
            .collect(),
        // panic-free: the fixed patterns of this file are single classes (tested).
        other => panic!("{pattern} is not a Unicode class: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_of(pattern: &str) -> Vec<bool> {
        let mut v = vec![false; CODE_POINTS];
        for (lo, hi) in unicode_class(pattern) {
            for cp in lo..=hi {
                v[cp as usize] = true;
            }
        }
        v
    }

    /// Every set the scanner uses agrees with regex-syntax on every code point.
    #[test]
    fn sets_match_regex_syntax() {
        let t = Tables::get();
        for (set, pattern) in [
            (L, r"\p{L}"),
            (N, r"\p{N}"),
            (S, r"\s"),
            (CRLF, r"[\r\n]"),
            (P, r"[^\s\p{L}\p{N}]"),
            (X, r"[^\r\n\p{L}\p{N}]"),
            (UPPER, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
            (LOWER, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
        ] {
            let want = set_of(pattern);
            for cp in 0..CODE_POINTS as u32 {
                if char::from_u32(cp).is_none() {
                    continue;
                }
                assert_eq!(
                    is(set, t.class_of(cp)),
                    want[cp as usize],
                    "{pattern} U+{cp:04X}"
                );
                if cp < 128 {
                    assert_eq!(t.ascii[cp as usize], t.class_of(cp));
                }
            }
        }
    }

    #[test]
    fn folds() {
        let t = Tables::get();
        assert!(t.folds_to('\u{17F}', b's'));
        assert!(t.folds_to('S', b's'));
        assert!(!t.folds_to('t', b's'));
        assert!(t.folds_to('T', b't'));
        assert!(!t.folds_to('\u{212A}', b'l'));
    }

    #[test]
    fn spot_checks() {
        let t = Tables::get();
        assert_eq!(t.class_of_char('a'), LL);
        assert_eq!(t.class_of_char('ǅ'), LT);
        assert_eq!(t.class_of_char('ʰ'), LM);
        assert_eq!(t.class_of_char('א'), LO);
        assert_eq!(t.class_of_char('\u{301}'), MARK);
        assert_eq!(t.class_of_char('²'), NUM);
        assert_eq!(t.class_of_char('Ⅻ'), NUM);
        assert_eq!(t.class_of_char('\u{85}'), WS);
        assert_eq!(t.class_of_char('\u{3000}'), WS);
        assert_eq!(t.class_of_char('\u{1c}'), OTHER);
        assert_eq!(t.class_of_char('\r'), NL);
        assert_eq!(t.class_of_char('\u{212A}'), LU);
    }
}
