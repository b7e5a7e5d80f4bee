//! The hand-written preset scanners must split every string exactly as fancy-regex does with
//! the preset's pattern. Each input is tried twice: as (lossy) UTF-8, and with each byte picking
//! a piece from a table of the characters the patterns tell apart, which reaches the rare
//! classes (marks, title case, modifier letters, Unicode spaces and digits, `ſ`, ...) far more
//! often than raw bytes do.
#![no_main]

use std::sync::OnceLock;

use bpeforge::pretokenize::presets;
use bpeforge::pretokenize::scan::Scanner;
use fancy_regex::Regex;
use libfuzzer_sys::fuzz_target;

const PATTERNS: [&str; 5] = [
    presets::GPT4,
    presets::NANOCHAT,
    presets::CL100K,
    presets::R50K,
    presets::O200K,
];

const PIECES: &[&str] = &[
    "a",
    "z",
    "A",
    "Z",
    "s",
    "S",
    "t",
    "T",
    "d",
    "D",
    "m",
    "M",
    "l",
    "L",
    "v",
    "V",
    "r",
    "R",
    "e",
    "E",
    "k",
    "K",
    "ſ",
    "\u{212A}",
    "ß",
    "'",
    "'",
    "'",
    "’",
    "0",
    "7",
    "٣",
    "²",
    "Ⅻ",
    " ",
    " ",
    " ",
    "\t",
    "\n",
    "\r",
    "\u{b}",
    "\u{c}",
    "\u{85}",
    "\u{a0}",
    "\u{2028}",
    "\u{3000}",
    "\u{1c}",
    "\u{200b}",
    ".",
    ",",
    "(",
    "{",
    "-",
    "+",
    "=",
    "\"",
    "/",
    "/",
    "é",
    "É",
    "ı",
    "İ",
    "\u{300}",
    "\u{301}",
    "\u{93f}",
    "ǅ",
    "ʰ",
    "ー",
    "א",
    "中",
    "ا",
    "😀",
    "\u{1f3fd}",
    "€",
    "Σ",
    "ς",
    "\u{0}",
    "\u{7f}",
];

fn regexes() -> &'static [(Scanner, Regex)] {
    static REGEXES: OnceLock<Vec<(Scanner, Regex)>> = OnceLock::new();
    REGEXES.get_or_init(|| {
        PATTERNS
            .iter()
            .map(|p| (Scanner::for_pattern(p).unwrap(), Regex::new(p).unwrap()))
            .collect()
    })
}

fn check(text: &str) {
    for (scanner, regex) in regexes() {
        let want: Vec<&str> = regex.find_iter(text).map(|m| m.unwrap().as_str()).collect();
        let got = scanner.spans(text);
        assert_eq!(got, want, "{scanner:?} on {text:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    check(&String::from_utf8_lossy(data));
    let pieces: String = data
        .iter()
        .map(|&b| PIECES[b as usize % PIECES.len()])
        .collect();
    check(&pieces);
});
