//! The bad JSONL lines and text documents that are not UTF-8 skipped (with `skip_bad_lines`):
//! counted, with the first few messages kept.

/// Messages kept, at most.
pub const KEEP: usize = 5;

#[derive(Debug, Default, Clone)]
pub struct BadLines {
    pub count: u64,
    pub examples: Vec<String>,
}

impl BadLines {
    /// Counts one skipped line or document, keeping its message if fewer than [`KEEP`] are kept.
    pub fn add(&mut self, message: impl FnOnce() -> String) {
        self.count += 1;
        if self.examples.len() < KEEP {
            self.examples.push(message());
        }
    }
}
