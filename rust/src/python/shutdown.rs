//! Interpreter exit while a training runs in a daemon thread.
//!
//! Once Python finalizes, a daemon thread that takes the GIL again is ended on the spot (CPython
//! before 3.14 calls `pthread_exit`), which unwinds through this extension's frames and aborts
//! the process ("FATAL: exception not rethrown", or a fatal error in `PyGILState_Release`).
//! Python 3.14 instead leaves such a thread blocked for good; trainings do the same, themselves:
//!
//! - Before taking the GIL again (at the end of every section run without it, and before each
//!   check for Ctrl-C or progress report made from one), a training looks whether Python is
//!   finalizing (`Py_IsFinalizing`, read without the GIL); if so its thread sleeps until the
//!   process ends.
//! - A daemon thread can also be stopped inside Python code it calls (the iterator, which may
//!   read a file, or a callback) when finalization starts. So an `atexit` hook, which runs
//!   before finalization, gives the trainings running then a moment to reach a safe point (an
//!   item pulled, a batch handed on, the merge watcher's wake-up), where each pauses without
//!   the GIL. A paused training sleeps for good once Python finalizes; if that has not happened
//!   three seconds later (a later `atexit` hook may be waiting for it: for a lock it holds, say),
//!   it goes on, and does not pause again. (If Python then finalizes while the training's thread
//!   is inside the user's Python code, the abort can still happen.)
//!
//! A training started after the hook ran pauses too (once), unless it runs on the hook's own
//! thread, which is never stopped (a later `atexit` hook may train): the pauses are bounded, so
//! a later hook that waits for a training (or starts one in a thread and joins it) is delayed,
//! never blocked.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

/// Set by the `atexit` hook: trainings running then pause at their next safe point.
static EXITING: AtomicBool = AtomicBool::new(false);

/// The trainings of this process that may pause, and those paused now. (A child made by
/// `fork()` starts with none: the parent's other threads were not copied.)
struct Trainings {
    process: u32,
    pausable: usize,
    paused: usize,
}

static TRAININGS: Mutex<Trainings> = Mutex::new(Trainings { process: 0, pausable: 0, paused: 0 });

fn trainings<R>(f: impl FnOnce(&mut Trainings) -> R) -> R {
    let mut trainings = TRAININGS.lock().unwrap_or_else(PoisonError::into_inner);
    let process = std::process::id();
    if trainings.process != process {
        *trainings = Trainings { process, pausable: 0, paused: 0 };
    }
    f(&mut trainings)
}

/// How long the hook waits for trainings to pause (one blocked in the user's iterator may never
/// get there; the process then exits as it would have without the hook).
const WAIT: Duration = Duration::from_secs(2);
/// How long a paused training waits for finalization before it goes on: longer than the hook
/// may wait for others, so that none goes on before the hook is done.
const PAUSE: Duration = Duration::from_secs(3);

/// What this thread's training (if any) may still do at exit.
#[derive(Clone, Copy, PartialEq)]
enum Stage {
    /// No training on this thread.
    None,
    /// A training that pauses at its next safe point once the hook ran.
    MayPause,
    /// A training that paused once already, or runs on the hook's thread: it goes on.
    GoesOn,
}

thread_local! {
    static STAGE: Cell<Stage> = const { Cell::new(Stage::None) };
}

/// Marks this thread as training while it lives. A thread pauses once, however many trainings
/// it nests (one may run in another's progress callback): only its outermost one counts.
pub(super) struct Running {
    outer: Stage,
}

impl Running {
    pub(super) fn start() -> Self {
        let outer = STAGE.with(Cell::get);
        let stage = match outer {
            Stage::None if is_exit_thread() => Stage::GoesOn,
            Stage::None => {
                trainings(|c| c.pausable += 1);
                Stage::MayPause
            }
            nested => nested,
        };
        STAGE.with(|s| s.set(stage));
        Running { outer }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let stage = STAGE.with(Cell::get);
        if self.outer == Stage::None {
            STAGE.with(|s| s.set(Stage::None));
            if stage == Stage::MayPause {
                trainings(|c| c.pausable = c.pausable.saturating_sub(1));
            }
        }
        // A nested training leaves the stage as it is: a pause it made stands for the thread.
    }
}

/// Whether a training holding the GIL should call [`safe_point`] (without it) now.
pub(super) fn pause_due() -> bool {
    EXITING.load(Ordering::Relaxed) && STAGE.with(Cell::get) == Stage::MayPause
}

/// A safe point of a training holding the GIL: [`safe_point`], without the GIL, if the exit
/// hook asked this training to pause (else nothing: a cheap check, made once per item).
pub(super) fn pause_point(py: Python<'_>) {
    if pause_due() {
        py.detach(safe_point);
    }
}

/// Whether Python is finalizing, read without the GIL (`Py_IsFinalizing`, public since 3.13;
/// `_Py_IsFinalizing` before). False where neither can be found.
fn finalizing() -> bool {
    type IsFinalizing = unsafe extern "C" fn() -> c_int;
    static FUNCTION: OnceLock<Option<IsFinalizing>> = OnceLock::new();
    let function = FUNCTION.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            extern "C" {
                fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
            }
            for name in [c"Py_IsFinalizing", c"_Py_IsFinalizing"] {
                // SAFETY: dlsym with RTLD_DEFAULT (null on glibc and musl) looks the name up in
                // the process's global symbols; the name is a valid C string.
                let found = unsafe { dlsym(std::ptr::null_mut(), name.as_ptr()) };
                if !found.is_null() {
                    // SAFETY: both functions take nothing and return an int (a bool).
                    return Some(unsafe { std::mem::transmute::<*mut c_void, IsFinalizing>(found) });
                }
            }
        }
        None
    });
    // SAFETY: the function only reads the runtime's finalizing flag atomically: it needs no GIL.
    function.is_some_and(|f| unsafe { f() } != 0)
}

/// Whether this is the thread that ran the exit hook (and finalizes Python): finalization never
/// ends it, and a later `atexit` hook or a finalizer on it may train.
fn is_exit_thread() -> bool {
    EXIT_THREAD.get() == Some(&std::thread::current().id())
}

/// Call without the GIL, where no Python object is borrowed, before taking the GIL again (or
/// at a safe point of the training): sleeps for good if Python is finalizing, and pauses (see
/// the module's comment) if the exit hook asked this training to.
pub(super) fn safe_point() {
    if is_exit_thread() {
        return;
    }
    if finalizing() {
        stop_for_good();
    }
    if !pause_due() {
        return;
    }
    STAGE.with(|s| s.set(Stage::GoesOn));
    trainings(|c| c.paused += 1);
    let since = Instant::now();
    while since.elapsed() < PAUSE {
        if finalizing() {
            stop_for_good();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    trainings(|c| {
        c.paused = c.paused.saturating_sub(1);
        c.pausable = c.pausable.saturating_sub(1); // no longer pausable (see Running's drop)
    });
}

/// This thread sleeps until the process ends, never taking the GIL again.
fn stop_for_good() -> ! {
    loop {
        std::thread::park();
    }
}

/// The thread that ran the hook, which goes on to finalize Python.
static EXIT_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// The `atexit` hook: asks the running trainings to pause, and gives them a moment to.
#[pyfunction]
fn _before_exit(py: Python<'_>) {
    let _ = EXIT_THREAD.set(std::thread::current().id()); // (set once: there is one exit)
    EXITING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let since = Instant::now();
        while trainings(|c| c.paused < c.pausable) && since.elapsed() < WAIT {
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
