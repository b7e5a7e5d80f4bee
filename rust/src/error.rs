//! The errors the core can report. Every failure reachable from user input is one of these,
//! never a panic, so the bindings can turn it into a Python exception.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// How many items (spans, counts) a long loop goes through between two looks at its stop flag,
/// after which it gives up with [`Error::Interrupted`]: a look is one relaxed load, and 65,536
/// items take well under a millisecond.
pub const STOP_EVERY: usize = 1 << 16;

/// Whether a long loop at its item `k` gives up: it looks at `stop` every [`STOP_EVERY`] items.
#[inline]
pub fn stop_due(k: usize, stop: &AtomicBool) -> bool {
    k % STOP_EVERY == 0 && stop.load(Ordering::Relaxed)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The split pattern does not compile.
    InvalidPattern(String),
    /// The regex engine gave up on a text (e.g. its backtracking limit was reached).
    Split(String),
    /// The split pattern matched an empty string, at byte `at` of a text.
    EmptyMatch { pattern: String, at: usize },
    /// A list of mergeable ranks breaks one of tiktoken's invariants.
    InvalidRanks(String),
    /// An option is out of range.
    InvalidOption(String),
    /// The caller asked the work to stop.
    Interrupted,
    /// A large structure could not grow: `bytes` asked for while `stage` (see
    /// [`crate::memory::try_reserve`]). The work is given up, its state dropped.
    OutOfMemory { stage: &'static str, bytes: usize },
    /// Something the code rules out happened: a bug in bpeforge.
    Internal(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidPattern(e) => write!(f, "invalid split pattern: {e}"),
            Error::Split(e) => write!(f, "the split pattern failed on a text: {e}"),
            Error::EmptyMatch { pattern, at } => write!(
                f,
                "the split pattern '{pattern}' matched an empty string (at byte {at} of a text); make every \
                 alternative consume at least one character (e.g. `+` instead of `*`)"
            ),
            Error::InvalidRanks(e) => write!(f, "invalid mergeable ranks: {e}"),
            Error::InvalidOption(e) => write!(f, "{e}"),
            Error::Interrupted => write!(f, "interrupted"),
            Error::OutOfMemory { stage, bytes } => f.write_str(&crate::memory::out_of_memory_message(stage, *bytes)),
            Error::Internal(e) => write!(f, "internal error (a bpeforge bug: please report it): {e}"),
        }
    }
}

impl std::error::Error for Error {}
