//! Which documents of a stream go to training, as the command line reads a corpus: each cropped
//! to a number of characters, reading stopped once a budget of characters is read, every Nth
//! held out (within a budget of bytes) to measure compression on, the start of the training
//! text kept as a sample; what goes where counted. Every reader applies it, whatever the format
//! (text, JSONL, Parquet, pyarrow's arrays): the one place these rules live in the package. The
//! tests check it against a plain Python oracle (`tests/inputs/python_readers.py`'s
//! `PythonCorpus`), which applies the same rules to batches (which does not change the outcome).

/// The options of a [`Selection`]; the default takes every document whole.
#[derive(Debug, Clone, Default)]
pub struct SelectionOptions {
    /// Each document is cropped to its first `doc_cap` characters.
    pub doc_cap: Option<u64>,
    /// Reading stops once this many characters were taken (training and held out), the last
    /// document cropped to fit.
    pub max_chars: Option<u64>,
    /// Every `holdout_every`-th document (0: none) is held out if it fits in what is left of
    /// `holdout_max_bytes`; a larger one is trained on (so none is ever held out whole).
    pub holdout_every: u64,
    pub holdout_max_bytes: u64,
    /// Documents taken before this stream (of earlier files): the hold-out counts on from them.
    pub documents_before: u64,
    /// The start of the training text kept in [`Selection::sample`], up to this many bytes.
    pub sample_max_bytes: u64,
}

/// Applies [`SelectionOptions`] to documents one at a time, and counts (see the module's comment).
#[derive(Debug, Default)]
pub struct Selection {
    options: SelectionOptions,
    /// Documents taken (training and held out), for the hold-out's positions.
    seen: u64,
    /// Training documents, their characters and UTF-8 bytes.
    pub documents: u64,
    pub chars: u64,
    pub bytes: u64,
    pub heldout: Vec<String>,
    pub heldout_chars: u64,
    pub heldout_bytes: u64,
    pub sample: Vec<String>,
    pub sample_bytes: u64,
    /// The last document of the sample is cropped to fit (the sample takes no more).
    pub sample_cropped: bool,
    /// `max_chars` was reached: no more documents are taken.
    pub stopped: bool,
}

/// The first `n` characters of `text` (all of it if it has fewer), and how many that is.
pub fn crop_chars(text: &str, n: u64) -> (&str, u64) {
    if (text.len() as u64) <= n {
        return (text, count_chars(text)); // bytes bound characters from above
    }
    match text.char_indices().nth(n as usize) {
        Some((end, _)) => (&text[..end], n),
        None => (text, count_chars(text)),
    }
}

/// Characters (code points) of `text`.
#[inline]
pub fn count_chars(text: &str) -> u64 {
    if text.is_ascii() {
        text.len() as u64
    } else {
        text.chars().count() as u64
    }
}

impl Selection {
    pub fn new(options: SelectionOptions) -> Self {
        let stopped = options.max_chars == Some(0);
        Selection { options, stopped, ..Default::default() }
    }

    /// The part of `doc` (non-empty) that goes to training, or None if it is held out or
    /// reading has stopped ([`Selection::stopped`]).
    pub fn take<'a>(&mut self, doc: &'a str) -> Option<&'a str> {
        if self.stopped {
            return None;
        }
        let o = &self.options;
        let needs_chars = o.doc_cap.is_some() || o.max_chars.is_some();
        let (mut doc, mut chars) = match o.doc_cap {
            Some(cap) => crop_chars(doc, cap),
            None if needs_chars => (doc, count_chars(doc)),
            None => (doc, 0), // counted below, once the document is kept
        };
        if let Some(max) = o.max_chars {
            let room = max - (self.chars + self.heldout_chars);
            if chars >= room {
                self.stopped = true;
                (doc, chars) = crop_chars(doc, room);
            }
        }
        if !needs_chars {
            chars = count_chars(doc);
        }
        let position = o.documents_before + self.seen;
        self.seen += 1;
        let every = o.holdout_every;
        if every > 0 && (position + 1) % every == 0 && self.heldout_bytes + doc.len() as u64 <= o.holdout_max_bytes {
            self.heldout.push(doc.to_owned());
            self.heldout_chars += chars;
            self.heldout_bytes += doc.len() as u64;
            return None;
        }
        self.documents += 1;
        self.chars += chars;
        self.bytes += doc.len() as u64;
        if !self.sample_full() {
            self.keep_in_sample(doc);
        }
        Some(doc)
    }

    /// Whether the sample takes no more text.
    pub fn sample_full(&self) -> bool {
        self.sample_cropped || self.sample_bytes >= self.options.sample_max_bytes
    }

    fn keep_in_sample(&mut self, doc: &str) {
        let room = (self.options.sample_max_bytes - self.sample_bytes) as usize;
        let mut kept = doc;
        if doc.len() > room {
            let mut cut = room;
            while !doc.is_char_boundary(cut) {
                cut -= 1;
            }
            kept = &doc[..cut];
            self.sample_cropped = true;
        }
        if !kept.is_empty() {
            self.sample.push(kept.to_owned());
            self.sample_bytes += kept.len() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crops_stops_holds_out_and_samples() {
        let options = SelectionOptions {
            doc_cap: Some(3),
            max_chars: Some(11),
            holdout_every: 2,
            holdout_max_bytes: 4,
            documents_before: 0,
            sample_max_bytes: 5,
        };
        let mut s = Selection::new(options);
        let taken: Vec<Option<&str>> = ["abcdef", "éé", "xy", "zzzz", "q"].iter().map(|d| s.take(d)).collect();
        // "abc" (3), "éé" held (4 bytes), "xy" (2), "zzz" would be held but no budget: trained, 3 chars; total 10; "q" 1: 11 -> stop
        assert_eq!(taken, [Some("abc"), None, Some("xy"), Some("zzz"), Some("q")]);
        assert!(s.stopped);
        assert_eq!(s.heldout, ["éé"]);
        assert_eq!((s.documents, s.chars, s.bytes, s.heldout_chars, s.heldout_bytes), (4, 9, 9, 2, 4));
        assert_eq!(s.sample, ["abc", "xy"]);
        assert!(!s.sample_cropped); // full at 5 bytes: "zzz" not looked at
        assert_eq!(s.take("more"), None);
    }
}
