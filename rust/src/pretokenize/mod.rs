//! Pre-tokenization: cutting a text into spans that merges never cross.

pub mod presets;

use fancy_regex::Regex;

use crate::Error;

/// Splits text into spans exactly as `regex.findall(pattern, text)` does: leftmost-first,
/// non-overlapping matches. Text between matches is dropped; empty matches carry no bytes and
/// are skipped.
#[derive(Clone, Debug)]
pub struct Splitter {
    pattern: String,
    regex: Regex,
}

impl Splitter {
    /// Compiles `pattern` (fancy-regex syntax: look-around and possessive quantifiers allowed).
    pub fn new(pattern: &str) -> Result<Self, Error> {
        let regex = Regex::new(pattern).map_err(|e| Error::InvalidPattern(e.to_string()))?;
        Ok(Self { pattern: pattern.to_owned(), regex })
    }

    /// The pattern string this splitter was built from.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Calls `on_span` with each non-empty span of `text`, left to right.
    pub fn for_each_span<'t>(&self, text: &'t str, mut on_span: impl FnMut(&'t str)) -> Result<(), Error> {
        for found in self.regex.find_iter(text) {
            let found = found.map_err(|e| Error::Split(e.to_string()))?;
            if !found.as_str().is_empty() {
                on_span(found.as_str());
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
    fn empty_matches_are_skipped() {
        let s = Splitter::new("a*").unwrap();
        assert_eq!(s.spans("baab").unwrap(), vec!["aa"]);
    }
}
