//! The split patterns people train with, by name.

/// GPT-4's pattern as rustbpe and nanochat write it; the default. It splits as cl100k_base except
/// for trailing whitespace holding a newline at the very end of a text: `"a\n  "` gives
/// `["a", "\n", "  "]` here and `["a", "\n  "]` with cl100k_base's `\s++$`.
pub const GPT4: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+";

/// nanochat's variant of GPT-4's pattern: numbers in groups of at most two digits.
pub const NANOCHAT: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+";

/// GPT-2's pattern (r50k_base and p50k_base), as tiktoken writes it.
pub const R50K: &str = r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";

/// cl100k_base's pattern, as tiktoken writes it.
pub const CL100K: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

/// o200k_base's pattern, as tiktoken writes it.
pub const O200K: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+(?!\S)",
    r"|\s+",
);

/// Preset names and their patterns (the first of [`NAMED`]: those with a scanner of their own
/// that bpeforge trains with by name; `superword` is the superword stage's).
pub const PRESETS: &[(&str, &str)] = NAMED.split_at(7).0;

/// The split pattern of the superword stage (SuperBPE's second stage, docs/superword.md): spans
/// no longer end at spaces, so tokens may hold several words, but still end at digits (in groups
/// of three at most), at runs of two or more punctuation characters, at spaces before a
/// newline or another space, at newlines, and between a colon and the space after it. The
/// first four alternatives are those SuperBPE's code isolates, plus newlines; the last takes
/// what lies between, a character at a time while none of the others would match there.
pub const SUPERWORD: &str = concat!(
    r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)|[\r\n]+",
    r"|[\s\S](?:(?!\p{N}| ?[^\s\p{L}\p{N}]{2}| +(?!\S)|[\r\n])(?:(?<!:) |[^ ]))*",
);

/// Every pattern known by name: the presets, and `superword` (split by the regex engine: it has
/// no scanner of its own).
pub const NAMED: &[(&str, &str)] = &[
    ("gpt4", GPT4),
    ("cl100k_base", CL100K),
    ("nanochat", NANOCHAT),
    ("gpt2", R50K),
    ("r50k_base", R50K),
    ("p50k_base", R50K),
    ("o200k_base", O200K),
    ("superword", SUPERWORD),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Splitter;

    #[test]
    fn every_preset_compiles() {
        for (name, pattern) in NAMED {
            assert!(Splitter::new(pattern).is_ok(), "{name}");
        }
        assert_eq!(&NAMED[..PRESETS.len()], PRESETS);
    }

    #[test]
    fn the_superword_pattern_cuts_where_it_says() {
        let s = Splitter::new(SUPERWORD).unwrap();
        assert!(!s.can_match_empty());
        let text = "By the way: it ran 12345 times... Then\n\n  it stopped!! a  b";
        let spans = s.spans(text).unwrap();
        assert_eq!(spans.concat(), text, "every character is in a span");
        assert_eq!(
            spans,
            ["By the way:", " it ran ", "123", "45", " times", "...", " Then", "\n\n", " ", " it stopped", "!!", " a", " ", " b"]
        );
    }
}
