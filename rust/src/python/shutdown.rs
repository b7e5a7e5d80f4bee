//! Interpreter exit while a training runs in a daemon thread.
//!
//! Once Python starts finalizing, a daemon thread that takes the GIL again is ended on the spot
//! (CPython before 3.14 calls `pthread_exit`), which unwinds through this extension's frames and
//! aborts the process ("FATAL: exception not rethrown", or a fatal error in
//! `PyGILState_Release`). So at exit, before finalizing, an `atexit` hook raises a flag and
//! waits (without the GIL) until every training still running has reached a point where it
//! stops for good without touching Python again: its thread then sleeps until the process
//! ends. Non-daemon threads are joined before `atexit` hooks run, so only daemon threads stop.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

/// Set by the `atexit` hook: trainings stop at their next safe point.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Trainings running, and those of them stopped for good.
static RUNNING: AtomicUsize = AtomicUsize::new(0);
static STOPPED: AtomicUsize = AtomicUsize::new(0);

/// How long the hook waits for trainings to stop (one blocked in the user's iterator may never
/// get there; the process then exits as it would have without the hook).
const WAIT: Duration = Duration::from_secs(2);

/// Counts a training as running while it lives.
pub(super) struct Running(());

impl Running {
    pub(super) fn start() -> Self {
        RUNNING.fetch_add(1, Ordering::SeqCst);
        Running(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The thread that ran the hook (the one finalizing Python, which goes on running it: a later
/// `atexit` hook may even train, and must not be stopped).
static EXIT_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// Whether the interpreter is about to finalize and this thread would be ended by it: a
/// training must then [`stop_for_good`].
pub(super) fn exiting() -> bool {
    EXITING.load(Ordering::Relaxed) && EXIT_THREAD.get() != Some(&std::thread::current().id())
}

/// Stops this training's thread for good (until the process ends), without the GIL. Call it
/// without the GIL (inside `Python::detach`), at a point where no Python object is borrowed.
pub(super) fn stop_for_good() -> ! {
    STOPPED.fetch_add(1, Ordering::SeqCst);
    loop {
        std::thread::park();
    }
}

/// The `atexit` hook: raises the flag, then lets the running trainings reach a safe point.
#[pyfunction]
fn _before_exit(py: Python<'_>) {
    let _ = EXIT_THREAD.set(std::thread::current().id()); // (set once: there is one exit)
    EXITING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let since = Instant::now();
        while STOPPED.load(Ordering::SeqCst) < RUNNING.load(Ordering::SeqCst) && since.elapsed() < WAIT {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Registers the hook with `atexit`.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let hook = wrap_pyfunction!(_before_exit, m)?;
    m.py().import("atexit")?.call_method1("register", (hook,))?;
    Ok(())
}
