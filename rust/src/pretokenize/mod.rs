//! Pre-tokenization: cutting a text into spans that merges never cross.

pub mod classes;
pub mod presets;
pub mod scan;

use fancy_regex::Regex;

use crate::Error;
use scan::Scanner;

/// Splits text into spans exactly as `regex.findall(pattern, text)` does: leftmost-first,
/// non-overlapping matches. Text between matches is dropped. A pattern must not match an empty
/// string (the regex engines disagree on where the next match starts after one, and tiktoken
/// cannot encode with such a pattern): an empty match is an error, [`Error::EmptyMatch`].
///
/// The preset patterns (by their exact strings) are split by a hand-written scanner, an order
/// of magnitude faster than the regex engine and proven equal to it by tests and fuzzing; any
/// other pattern goes through fancy-regex.
#[derive(Clone, Debug)]
pub struct Splitter {
    pattern: String,
    engine: Engine,
}

#[derive(Clone, Debug)]
enum Engine {
    Scanner(Scanner),
    Regex(Regex),
}

impl Splitter {
    /// Compiles `pattern` (fancy-regex syntax: look-around and possessive quantifiers allowed).
    pub fn new(pattern: &str) -> Result<Self, Error> {
        let engine = match Scanner::for_pattern(pattern) {
            Some(scanner) => Engine::Scanner(scanner),
            None => Engine::Regex(Self::regex(pattern)?),
        };
        Ok(Self { pattern: pattern.to_owned(), engine })
    }

    /// The same pattern, always through fancy-regex (the slow twin of the scanner, for tests).
    pub fn with_regex(pattern: &str) -> Result<Self, Error> {
        Ok(Self { pattern: pattern.to_owned(), engine: Engine::Regex(Self::regex(pattern)?) })
    }

    fn regex(pattern: &str) -> Result<Regex, Error> {
        Regex::new(pattern).map_err(|e| Error::InvalidPattern(e.to_string()))
    }

    /// The pattern string this splitter was built from.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the fast scanner (rather than the regex engine) does the splitting.
    pub fn is_fast(&self) -> bool {
        matches!(self.engine, Engine::Scanner(_))
    }

    /// Whether the pattern can match an empty string (see [`Splitter`]). Exact for patterns the
    /// plain regex syntax covers; for look-around and the like, probed on typical text, on
    /// each character of the pattern and on the pattern itself (a look-ahead such as `(?=x)`
    /// matches empty only before what it looks for). Splitting still reports an empty match
    /// the probes missed.
    pub fn can_match_empty(&self) -> bool {
        let Engine::Regex(regex) = &self.engine else { return false };
        if let Ok(hir) = regex_syntax::Parser::new().parse(&self.pattern) {
            return hir.properties().minimum_len() == Some(0);
        }
        const PROBES: &[&str] = &["", "a", "A", "1", " ", "\n", "\r\n", "'s", "ab cd\n12 34", "é", "日本", "🎉", "\t", "a  b"];
        let ascii: String = (' '..='~').collect();
        let chars: Vec<String> = self.pattern.chars().map(String::from).collect();
        let literal: String = self.pattern.chars().filter(|c| !"\\[](){}|?*+^$.=!<:".contains(*c)).collect();
        let empty_at = |probe: &str| (0..=probe.len()).filter(|&at| probe.is_char_boundary(at)).any(|at| {
            regex.find_from_pos(probe, at).is_ok_and(|m| m.is_some_and(|m| m.as_str().is_empty()))
        });
        let extra = [ascii.as_str(), self.pattern.as_str(), literal.as_str()];
        let found = PROBES.iter().copied().chain(extra).chain(chars.iter().map(String::as_str)).any(empty_at);
        found
    }

    /// Calls `on_span` with each non-empty span of `text`, left to right.
    pub fn for_each_span<'t>(&self, text: &'t str, mut on_span: impl FnMut(&'t str)) -> Result<(), Error> {
        match &self.engine {
            Engine::Scanner(scanner) => scanner.for_each_span(text, on_span),
            Engine::Regex(regex) => {
                // Each search starts where the last match ended (not `find_iter`, which hides
                // an empty match right after a match and skips a character past it).
                let mut at = 0;
                while let Some(found) = regex.find_from_pos(text, at).map_err(|e| Error::Split(e.to_string()))? {
                    if found.as_str().is_empty() {
                        return Err(Error::EmptyMatch { pattern: self.pattern.clone(), at: found.start() });
                    }
                    on_span(found.as_str());
                    at = found.end();
                }
            }
        }
        Ok(())
    }

    /// The spans of `text`, for tests and small inputs.
    pub fn spans<'t>(&self, text: &'t str) -> Result<Vec<&'t str>, Error> {
        let mut spans = Vec::new();
        self.for_each_span(text, |s| spans.push(s))?;
        Ok(spans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_gpt4() {
        let s = Splitter::new(presets::GPT4).unwrap();
        assert_eq!(
            s.spans("Hello world's 12345  \n\n x").unwrap(),
            vec!["Hello", " world", "'s", " ", "123", "45", "  \n\n", " x"]
        );
    }

    #[test]
    fn invalid_pattern_is_an_error() {
        assert!(matches!(Splitter::new("(unclosed"), Err(Error::InvalidPattern(_))));
    }

    #[test]
    fn presets_take_the_fast_path_and_others_the_regex() {
        for (name, pattern) in presets::NAMED {
            assert!(Splitter::new(pattern).unwrap().is_fast(), "{name}");
        }
        assert!(!Splitter::new(r"\S+|\s+").unwrap().is_fast());
        assert!(!Splitter::with_regex(presets::GPT4).unwrap().is_fast());
    }

    #[test]
    fn patterns_that_match_empty_strings_are_detected() {
        for p in ["a*", "x?", "(?=a)", "(?!b)|c", "\\b", "a*(?=b)", r"(?=x)|\w+|\s+|[^\w\s]+", r"(?<=q)|\S+|\s+"] {
            assert!(Splitter::new(p).unwrap().can_match_empty(), "{p}");
        }
        for p in [r"\S+|\s+", "a+(?=b)", presets::GPT4, presets::O200K] {
            assert!(!Splitter::new(p).unwrap().can_match_empty(), "{p}");
            assert!(!Splitter::with_regex(p).unwrap().can_match_empty(), "{p}");
        }
    }

    #[test]
    fn an_empty_match_is_an_error() {
        let s = Splitter::new("a*").unwrap();
        assert_eq!(s.spans("aab").unwrap_err(), Error::EmptyMatch { pattern: "a*".into(), at: 2 });
        // Look-ahead: empty only before an "x" (fancy-regex would then skip the "x" itself).
        let s = Splitter::new(r"(?=x)|\w+|\s+").unwrap();
        assert_eq!(s.spans("ab cd").unwrap(), vec!["ab", " ", "cd"]);
        assert_eq!(s.spans("ab x").unwrap_err(), Error::EmptyMatch { pattern: r"(?=x)|\w+|\s+".into(), at: 3 });
        // Right after a match: fancy-regex's `find_iter` hides this one and skips the " ".
        let s = Splitter::new(r"(?<=\d{3}x)|\S+|\s+").unwrap();
        assert_eq!(s.spans("123x yz").unwrap_err(), Error::EmptyMatch { pattern: r"(?<=\d{3}x)|\S+|\s+".into(), at: 4 });
    }
}
