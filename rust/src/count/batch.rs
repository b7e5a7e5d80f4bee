//! Batches: texts stored end to end, as they go from whoever reads them to the counting
//! threads, and the [`Batcher`] that cuts a stream of texts into batches of a bounded size.

/// A batch of texts stored end to end in one buffer, so that handing over a batch costs one
/// copy of its bytes and no allocation per text.
#[derive(Default, Debug, Clone)]
pub struct Batch {
    text: String,
    /// Where each text ends in `text` (read by the counting, which splits a batch into tasks).
    pub(super) ends: Vec<usize>,
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
        self.ends.push(self.text.len());
    }

    /// Appends texts given as one buffer and the end offset of each text in it (as an Arrow
    /// string column stores them). Fails without changing the batch unless the offsets
    /// increase, within the buffer, and the bytes up to the last one are UTF-8 with every offset
    /// on a character boundary. The bytes are checked once copied, not where they are: the
    /// buffer may be foreign memory that someone else writes to meanwhile (see
    /// `readers/arrow.rs`), and only what was copied is ever read as text.
    pub fn extend_from_buffer(&mut self, data: &[u8], ends: impl IntoIterator<Item = usize>) -> Result<(), BufferError> {
        let base = self.text.len();
        let before = self.ends.len();
        let mut last = 0;
        for end in ends {
            if end < last || end > data.len() {
                self.ends.truncate(before);
                return Err(BufferError::OutOfOrder { end });
            }
            self.ends.push(base + end);
            last = end;
        }
        // SAFETY: the bytes appended are checked to be UTF-8 right below, and taken off again
        // if they are not, before anything reads `text` as a str; nothing in between can panic.
        let bytes = unsafe { self.text.as_mut_vec() };
        bytes.extend_from_slice(&data[..last]);
        let checked = match std::str::from_utf8(&bytes[base..]) {
            // Cut short at the end, and the buffer goes on with a continuation byte: the last
            // offset falls inside a character. (That byte is only looked at, never taken.)
            Err(e) if e.error_len().is_none() && data.get(last).is_some_and(|&b| b & 0xC0 == 0x80) => {
                Err(BufferError::InsideCharacter { end: last })
            }
            Err(e) => Err(BufferError::NotUtf8 { at: e.valid_up_to() }),
            Ok(added) => match self.ends[before..].iter().find(|&&end| !added.is_char_boundary(end - base)) {
                Some(&end) => Err(BufferError::InsideCharacter { end: end - base }),
                None => Ok(()),
            },
        };
        if checked.is_err() {
            bytes.truncate(base);
            self.ends.truncate(before);
        }
        checked
    }

    /// Empties the batch, keeping its memory for the next texts.
    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    /// Number of texts.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Total bytes of all texts.
    pub fn bytes(&self) -> usize {
        self.text.len()
    }

    /// All the texts, end to end.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// Text `i`.
    pub fn get(&self, i: usize) -> &str {
        &self.text[crate::item_range(&self.ends, i)]
    }
}

/// Why texts given as one buffer ([`TextSink::push_buffer`]) were refused, with a position in
/// that buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferError {
    /// The end offset `end` is below the one before it, or past the buffer.
    OutOfOrder { end: usize },
    /// The bytes are not UTF-8 from byte `at` on.
    NotUtf8 { at: usize },
    /// The end offset `end` falls inside a UTF-8 character.
    InsideCharacter { end: usize },
}

impl BufferError {
    /// The same error, for a buffer that starts `by` bytes later.
    fn shifted(self, by: usize) -> Self {
        match self {
            BufferError::OutOfOrder { end } => BufferError::OutOfOrder { end: end.wrapping_add(by) },
            BufferError::NotUtf8 { at } => BufferError::NotUtf8 { at: at + by },
            BufferError::InsideCharacter { end } => BufferError::InsideCharacter { end: end + by },
        }
    }
}

/// Where texts go as they are read: a [`Batch`], or a feeder that hands each batch on as soon
/// as it is full (so that a large input is never held whole).
pub trait TextSink {
    /// Appends one text.
    fn push(&mut self, text: &str);

    /// Appends texts given as one buffer and the end offset of each text in it (as an Arrow
    /// string column stores them), checking them as [`Batch::extend_from_buffer`] does, on the
    /// bytes copied. On an error the texts before the faulty one may have been taken.
    fn push_buffer(&mut self, data: &[u8], ends: &[usize]) -> Result<(), BufferError>;
}

impl TextSink for Batch {
    fn push(&mut self, text: &str) {
        Batch::push(self, text);
    }

    /// (A batch takes none of the texts on an error.)
    fn push_buffer(&mut self, data: &[u8], ends: &[usize]) -> Result<(), BufferError> {
        self.extend_from_buffer(data, ends.iter().copied())
    }
}

/// When a batch is full: once it holds `texts` texts and at least `min_bytes` bytes (handing
/// over many tiny batches costs more than counting them), or as soon as it holds `max_bytes`,
/// however few texts that is (bounded memory).
#[derive(Debug, Clone, Copy)]
pub(super) struct BatchSize {
    pub(super) texts: usize,
    pub(super) min_bytes: usize,
    pub(super) max_bytes: usize,
}

impl BatchSize {
    /// Whether a batch of `len` texts and `bytes` bytes is full.
    #[inline]
    pub(super) fn is_full(&self, len: usize, bytes: usize) -> bool {
        (len >= self.texts && bytes >= self.min_bytes) || bytes >= self.max_bytes
    }
}

/// Whoever takes the batches a [`Batcher`] fills: it gets each full batch and gives back an
/// empty one to fill next.
pub(super) trait BatchReceiver {
    fn receive(&mut self, full: Batch) -> Batch;
}

/// Fills a batch and hands it to its receiver the moment it is full, after whichever text
/// filled it, even in the middle of a buffer of texts: so a batch never holds more than
/// [`BatchSize`] allows (but for the one text that filled it), however many texts come at once.
pub(super) struct Batcher<R> {
    batch: Batch,
    size: BatchSize,
    /// Where the full batches go.
    pub(super) receiver: R,
}

impl<R: BatchReceiver> Batcher<R> {
    pub(super) fn new(size: BatchSize, receiver: R) -> Self {
        Batcher { batch: Batch::new(), size, receiver }
    }

    /// When a batch is full.
    #[inline]
    pub(super) fn size(&self) -> BatchSize {
        self.size
    }

    /// The batch being filled.
    pub(super) fn batch(&self) -> &Batch {
        &self.batch
    }

    /// Appends one text without handing the batch on; says whether the batch is now full (then
    /// the caller hands it on with [`Batcher::flush`], when it suits it).
    #[inline]
    pub(super) fn add(&mut self, text: &str) -> bool {
        self.batch.push(text);
        self.size.is_full(self.batch.len(), self.batch.bytes())
    }

    /// Hands the batch to the receiver, full or not, and starts the next one.
    pub(super) fn flush(&mut self) {
        let full = std::mem::take(&mut self.batch);
        self.batch = self.receiver.receive(full);
        self.batch.clear();
        // A batch that took one very long text (a document of tens of MB) grew to fit it: give
        // that memory back rather than keep it for batches of the usual size, in every batch
        // that goes round (the queue's and this one).
        if self.batch.text.capacity() > 2 * self.size.max_bytes {
            self.batch = Batch::new();
        }
    }
}

impl<R: BatchReceiver> TextSink for Batcher<R> {
    fn push(&mut self, text: &str) {
        if self.add(text) {
            self.flush();
        }
    }

    fn push_buffer(&mut self, data: &[u8], ends: &[usize]) -> Result<(), BufferError> {
        let (mut first, mut base) = (0, 0); // the next text, and where it starts in `data`
        while first < ends.len() {
            let (len, bytes) = (self.batch.len(), self.batch.bytes());
            // The text that fills the batch, if one does; else all that are left go in.
            let fills = (first..ends.len())
                .find(|&i| self.size.is_full(len + i + 1 - first, bytes + ends[i].saturating_sub(base)));
            let last = fills.unwrap_or(ends.len() - 1);
            // (Offsets out of order wrap around here, and then fail the batch's check.)
            let rest = data.get(base..).unwrap_or_default();
            self.batch
                .extend_from_buffer(rest, ends[first..=last].iter().map(|&e| e.wrapping_sub(base)))
                .map_err(|e| e.shifted(base))?;
            if fills.is_some() {
                self.flush();
            }
            (first, base) = (last + 1, ends[last]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_from_buffers_hold_the_same_texts() {
        let mut a = Batch::new();
        for t in ["héllo", "", "wörld!"] {
            a.push(t);
        }
        let mut b = Batch::new();
        b.extend_from_buffer("héllowörld!".as_bytes(), [6, 6, 13]).unwrap();
        assert_eq!((0..3).map(|i| a.get(i)).collect::<Vec<_>>(), (0..3).map(|i| b.get(i)).collect::<Vec<_>>());
        assert_eq!(b.extend_from_buffer("héllo".as_bytes(), [2]), Err(BufferError::InsideCharacter { end: 2 }));
        assert_eq!(b.extend_from_buffer(b"hello", [3, 2]), Err(BufferError::OutOfOrder { end: 2 }));
        assert_eq!(b.extend_from_buffer(b"hello", [6]), Err(BufferError::OutOfOrder { end: 6 }), "past the buffer");
        assert_eq!(b.extend_from_buffer(b"ab\xffcd", [2, 5]), Err(BufferError::NotUtf8 { at: 2 }));
        assert_eq!(b.extend_from_buffer("ab€".as_bytes(), [4]), Err(BufferError::InsideCharacter { end: 4 }), "cut short");
        // A lead byte the buffer does not go on from is not UTF-8, wherever the last offset is.
        assert_eq!(b.extend_from_buffer(b"abc\xc3", [2, 4]), Err(BufferError::NotUtf8 { at: 3 }));
        assert_eq!(b.extend_from_buffer(b"abc\xc3a", [4, 5]), Err(BufferError::NotUtf8 { at: 3 }));
        assert_eq!(b.extend_from_buffer(b"abc\xc3a", [4]), Err(BufferError::NotUtf8 { at: 3 }));
        assert_eq!(b.len(), 3, "a failed extend leaves the batch as it was");
        assert_eq!(b.bytes(), "héllowörld!".len());
        b.extend_from_buffer(b"ab\xffcd", [2]).unwrap(); // only the bytes up to the last end are taken
        assert_eq!(b.get(3), "ab");
    }

    /// Keeps every batch handed on.
    #[derive(Default)]
    struct Kept(Vec<Vec<String>>);

    impl BatchReceiver for Kept {
        fn receive(&mut self, full: Batch) -> Batch {
            self.0.push((0..full.len()).map(|i| full.get(i).to_string()).collect());
            full // (given back to be filled again, as the counting worker does)
        }
    }

    #[test]
    fn a_batch_grown_by_one_long_text_is_not_kept_for_the_next_texts() {
        let size = BatchSize { texts: 4, min_bytes: 0, max_bytes: 100 };
        let mut batcher = Batcher::new(size, Kept::default());
        batcher.push(&"a".repeat(50));
        batcher.push(&"b".repeat(10_000)); // fills the batch: it is handed on, and given back
        assert_eq!(batcher.receiver.0.len(), 1);
        assert!(batcher.batch().is_empty());
        assert!(batcher.batch().text.capacity() <= 2 * size.max_bytes, "the long text's memory was kept");
        batcher.push(&"c".repeat(150)); // a batch of the usual size keeps its memory
        assert!(batcher.batch().is_empty() && batcher.batch().text.capacity() >= 150);
        assert_eq!(batcher.receiver.0[1], vec!["c".repeat(150)]);
    }

    #[test]
    fn batcher_hands_on_each_batch_as_the_text_that_fills_it_comes() {
        let mut draw = crate::test_random(7);
        let mut next = |n: usize| draw(n as u64) as usize;
        for round in 0..300 {
            let size = BatchSize { texts: 1 + next(6), min_bytes: next(20), max_bytes: 1 + next(60) };
            let mut batcher = Batcher::new(size, Kept::default());
            let mut all: Vec<String> = Vec::new();
            for _ in 0..next(12) {
                // Texts of 0 to 39 characters, some of them two bytes long.
                let mut texts: Vec<String> = Vec::new();
                for _ in 0..next(8) {
                    let n = next(40);
                    texts.push((0..n).map(|k| if (k + round) % 7 == 0 { 'é' } else { 'a' }).collect());
                }
                if next(3) == 0 {
                    for t in &texts {
                        batcher.push(t);
                    }
                } else {
                    let data = texts.concat();
                    let ends: Vec<usize> = texts.iter().scan(0, |end, t| { *end += t.len(); Some(*end) }).collect();
                    batcher.push_buffer(data.as_bytes(), &ends).unwrap();
                }
                all.extend(texts);
            }
            let rest: Vec<String> = (0..batcher.batch().len()).map(|i| batcher.batch().get(i).to_string()).collect();
            let bytes = |texts: &[String]| texts.iter().map(String::len).sum::<usize>();
            for batch in &batcher.receiver.0 {
                assert!(size.is_full(batch.len(), bytes(batch)), "round {round}: a batch was handed on before it was full");
                let before = &batch[..batch.len() - 1];
                assert!(!size.is_full(before.len(), bytes(before)), "round {round}: a batch was full before its last text");
            }
            assert!(!size.is_full(rest.len(), bytes(&rest)), "round {round}: a full batch was kept");
            let got: Vec<String> = batcher.receiver.0.concat().into_iter().chain(rest).collect();
            assert_eq!(got, all, "round {round}: texts lost, added or out of order");
        }
    }

    #[test]
    fn batcher_fails_on_bad_offsets() {
        let size = BatchSize { texts: 1, min_bytes: 0, max_bytes: 100 };
        let mut batcher = Batcher::new(size, Kept::default());
        assert_eq!(batcher.push_buffer("héllo".as_bytes(), &[2]), Err(BufferError::InsideCharacter { end: 2 }));
        assert_eq!(batcher.push_buffer(b"hello", &[3, 2]), Err(BufferError::OutOfOrder { end: 2 }));
        // Positions are in the buffer given, whichever batch the faulty text went to.
        assert_eq!(batcher.push_buffer(b"a\xff", &[1, 2]), Err(BufferError::NotUtf8 { at: 1 }));
    }
}
