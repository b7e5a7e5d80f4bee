//! Reading a Parquet file can fail on the file, or by a bug: [`ReadError`] and [`Failure`], for
//! the Parquet reader (`readers/parquet.rs`) and span counts files (`span_counts/file.rs`) alike.
//!
//! Damaged files: the crate returns errors for most damage, but panics on some damaged pages
//! (the Python tests change one byte of a small file at random and meet such panics). Those
//! panics are caught ([`catch_reader_panics`]) and become a [`ReadError`] naming the file, as
//! any other damage does. Telling them from a panic of bpeforge's own code, a bug, which must
//! say so rather than blame the file, needs the panic's location, which only a panic hook sees;
//! the hook also keeps the crate's panic messages off stderr (they go in the error instead). So
//! a process-wide hook is installed, once, in front of the one before it, and acts only on the
//! thread and during the call that asked for it.

use std::cell::Cell;
use std::panic::AssertUnwindSafe;
use std::sync::Once;

/// Why a Parquet file cannot be read: the file itself (missing, unreadable), or its contents.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    /// Not a Parquet file, a damaged one, or no column of strings by that name; the message
    /// says which.
    Format(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::Format(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// How reading failed: on the file, or by a bug of bpeforge's own code (a panic there; its
/// message).
#[derive(Debug)]
pub enum Failure {
    Read(ReadError),
    Bug(String),
}

/// The folder of bpeforge's source files as the compiler names them, and panics with them: the
/// crate's source root, the folder of this file (`rust/src/` when bpeforge is the package
/// cargo builds, a full path when it is built as a dependency; `--remap-path-prefix` changes both
/// alike).
fn own_source_dir() -> &'static str {
    let file = file!();
    let parent = |path: &'static str| path.rfind(['/', '\\']).map_or("", |at| &path[..at]);
    let root = parent(file);
    if root.is_empty() { "" } else { &file[..=root.len()] }
}

/// Whether a panic at `file` (its location's file, as the panic gives it) is in bpeforge's own
/// code, a bug, rather than in the crates that read Parquet, which panic on some damaged files.
/// A panic the standard library raises on its own (such as "capacity overflow", located in the
/// library) counts as theirs.
pub fn panicked_in_own_code(file: &str) -> bool {
    let own = own_source_dir();
    !own.is_empty() && file.starts_with(own)
}

thread_local! {
    /// Set while this thread runs [`catch_reader_panics`].
    static CATCHING_READER_PANICS: Cell<bool> = const { Cell::new(false) };
    /// Set by the panic hook when a panic under [`catch_reader_panics`] was in bpeforge's own code.
    static PANIC_IN_OWN_CODE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` (the reader), turning a panic of the crates that read Parquet (on a damaged file)
/// into a [`ReadError`] whose message is the panic's, and a panic of bpeforge's own code into a
/// [`Failure::Bug`]. A crate's panic prints nothing: its message goes in the error; a bug's is
/// printed as any panic is. (A panic hook is installed for this, once, in front of the one
/// before; panics elsewhere still go to that one.)
pub fn catch_reader_panics<T>(f: impl FnOnce() -> Result<T, ReadError>) -> Result<T, Failure> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let (catching, own) = (CATCHING_READER_PANICS.with(Cell::get), info.location().is_some_and(|at| panicked_in_own_code(at.file())));
            if catching {
                PANIC_IN_OWN_CODE.with(|o| o.set(own));
            }
            if own || !catching {
                before(info)
            }
        }));
    });
    CATCHING_READER_PANICS.with(|g| g.set(true));
    PANIC_IN_OWN_CODE.with(|o| o.set(false));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING_READER_PANICS.with(|g| g.set(false));
    match result {
        Ok(read) => read.map_err(Failure::Read),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            Err(if PANIC_IN_OWN_CODE.with(Cell::get) {
                Failure::Bug(what.to_string())
            } else {
                Failure::Read(ReadError::Format(format!("cannot read it (the Parquet reader failed: {what})")))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_in_own_code_are_told_from_the_crates() {
        let here = std::panic::Location::caller().file();
        assert!(panicked_in_own_code(here), "{here}");
        let bindings = format!("{}python/parquet.rs", own_source_dir());
        assert!(panicked_in_own_code(&bindings), "{bindings}");
        for theirs in [
            "/cargo-home/registry/src/index.crates.io-0000000000000000/parquet-57.3.2/src/encodings/rle.rs",
            "/rustc/0000000000000000000000000000000000000000/library/core/src/slice/index.rs",
            "C:\\cargo-home\\registry\\src\\parquet-57.3.2\\src\\file\\reader.rs",
        ] {
            assert!(!panicked_in_own_code(theirs), "{theirs}");
        }
    }

    #[test]
    fn reader_panics_are_told_from_bugs() {
        assert!(matches!(catch_reader_panics(|| Ok(7)), Ok(7)));
        let failed = catch_reader_panics::<()>(|| Err(ReadError::Format("no column".into())));
        assert!(matches!(failed, Err(Failure::Read(ReadError::Format(m))) if m == "no column"));
        let ours = catch_reader_panics::<()>(|| panic!("a bug of ours"));
        assert!(matches!(&ours, Err(Failure::Bug(m)) if m == "a bug of ours"), "{ours:?}");
        // A panic located outside bpeforge's files, as the parquet crate's are (here the standard
        // library's own), after the bug above: the file's, not a bug.
        let theirs = catch_reader_panics::<()>(|| {
            let huge: Vec<u8> = Vec::with_capacity(usize::MAX);
            Ok(drop(huge))
        });
        assert!(
            matches!(&theirs, Err(Failure::Read(ReadError::Format(m))) if m.starts_with("cannot read it (the Parquet reader failed: capacity overflow")),
            "{theirs:?}"
        );
        assert!(matches!(catch_reader_panics(|| Ok(1)), Ok(1)), "panics are no longer caught");
    }
}
