//! A second thread for the merge loop: `join` runs two closures at once, one here and one
//! there, and returns when both are done, like `rayon::join`. Merges come one after the
//! other, tens of thousands of them, most a few microseconds long, so the helper does not
//! sleep between them as a pool's threads do (waking one takes longer than such a merge): it
//! watches for the next job, spinning at first, then yielding its core, and napping only once
//! none came for a millisecond (the loop is making small merges alone, or calling back into
//! Python).

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The round that tells the helper to leave.
const LEAVE: u64 = u64::MAX;

type Job = dyn FnMut() + Send;

struct Shared {
    /// Bumped by `join` for each job (then `LEAVE`).
    round: AtomicU64,
    /// The last round the helper finished.
    done: AtomicU64,
    /// The job of the current round, written by `join` before it publishes the round and read
    /// by the helper after it sees it.
    job: UnsafeCell<Option<*mut Job>>,
    /// Set by the helper when the job panicked: `join` then panics too.
    panic: UnsafeCell<Option<Box<dyn std::any::Any + Send>>>,
}

// SAFETY: `job` and `panic` are written by one side and read by the other only across the
// release/acquire pair of `round` (job: join -> helper) or `done` (panic: helper -> join), and
// `join` does not return, nor touch them again, before `done` says the helper is finished.
unsafe impl Sync for Shared {}
// SAFETY: as above; the job it points to is `Send`.
unsafe impl Send for Shared {}

pub(super) struct Helper {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Waits until `ready()`: spinning for a while, then yielding the core, then napping.
fn wait_until(ready: impl Fn() -> bool) {
    for _ in 0..1 << 14 {
        if ready() {
            return;
        }
        std::hint::spin_loop();
    }
    let since = Instant::now();
    while !ready() {
        if since.elapsed() < Duration::from_millis(1) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

impl Helper {
    /// Starts the helper thread; `None` if the system refuses one (the loop then works alone).
    pub(super) fn start() -> Option<Helper> {
        let shared = Arc::new(Shared {
            round: AtomicU64::new(0),
            done: AtomicU64::new(0),
            job: UnsafeCell::new(None),
            panic: UnsafeCell::new(None),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new().name("bpeforge-merge".into()).spawn(move || serve(&theirs)).ok()?;
        Some(Helper { shared, thread: Some(thread) })
    }

    /// Runs `here` on this thread and `there` on the helper at the same time; returns `here`'s
    /// result once both are done. A panic in either is raised here, after both are done.
    pub(super) fn join<R>(&self, here: impl FnOnce() -> R, there: impl FnOnce() + Send) -> R {
        let mut there = Some(there);
        let mut job = move || {
            if let Some(f) = there.take() {
                f()
            }
        };
        let job: &mut (dyn FnMut() + Send + '_) = &mut job;
        // SAFETY: only the lifetime is erased. The helper calls the job before it stores the
        // round in `done`, and this function waits for that (in `Finish`, even if `here`
        // panics) before `job` goes out of scope.
        let job: *mut Job = unsafe { std::mem::transmute::<*mut (dyn FnMut() + Send + '_), *mut Job>(job) };
        let round = self.shared.round.load(Ordering::Relaxed) + 1;
        // SAFETY: the helper is done with the previous round (every `join` waits for it), and
        // reads `job` only after the store below.
        unsafe { *self.shared.job.get() = Some(job) };
        self.shared.round.store(round, Ordering::Release);
        let finish = Finish { shared: &self.shared, round };
        let result = here();
        drop(finish);
        // SAFETY: the helper is done with this round (`finish` waited), so it no longer writes.
        if let Some(payload) = unsafe { (*self.shared.panic.get()).take() } {
            resume_unwind(payload);
        }
        result
    }
}

/// Waits for the helper to finish `round`, when dropped: `join` must not return (or unwind)
/// while the helper may still run a job that borrows from its caller.
struct Finish<'a> {
    shared: &'a Shared,
    round: u64,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        wait_until(|| self.shared.done.load(Ordering::Acquire) == self.round);
    }
}

/// The helper thread: runs each round's job until told to leave.
fn serve(shared: &Shared) {
    let mut seen = 0;
    loop {
        wait_until(|| shared.round.load(Ordering::Acquire) != seen);
        let round = shared.round.load(Ordering::Acquire);
        if round == LEAVE {
            return;
        }
        seen = round;
        // SAFETY: `join` wrote the job before publishing this round (acquired above) and keeps
        // it alive until `done` says this round is finished.
        if let Some(job) = unsafe { (*shared.job.get()).take() } {
            // SAFETY: as above: the job is alive, and only this thread calls it.
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| unsafe { (*job)() })) {
                // SAFETY: `join` reads `panic` only after `done` shows this round.
                unsafe { *shared.panic.get() = Some(payload) };
            }
        }
        shared.done.store(round, Ordering::Release);
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.shared.round.store(LEAVE, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join(); // the helper catches its jobs' panics, so it never panics
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_run_and_see_their_borrows() {
        let helper = Helper::start().unwrap();
        let mut theirs = vec![0u64; 1000];
        for round in 1..=3000u64 {
            let (mine, done) = (round * 2, &mut theirs);
            let got = helper.join(|| mine + 1, || done[(round % 1000) as usize] += round);
            assert_eq!(got, round * 2 + 1);
        }
        assert_eq!(theirs.iter().sum::<u64>(), 3000 * 3001 / 2);
    }

    #[test]
    fn a_panic_on_the_helper_is_raised_by_join() {
        let helper = Helper::start().unwrap();
        let caught = catch_unwind(AssertUnwindSafe(|| helper.join(|| 1, || panic!("on the helper"))));
        assert!(caught.is_err());
        // The helper keeps serving.
        let mut x = 0;
        assert_eq!(helper.join(|| 2, || x = 5), 2);
        assert_eq!(x, 5);
    }
}
