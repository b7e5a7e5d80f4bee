//! The other half of a shared merge: the merge loop's second thread. A merge of many spans is
//! shared, this thread merging one half of its spans and the other thread the other half (and
//! likewise the sums of the pairs on its two sides). `join` runs two closures at once, one on
//! this thread and one on the other, and returns when both are done, like `rayon::join`. Merges
//! come one after the other, tens of thousands of them, most a few microseconds long, so the
//! other thread does not sleep between them as a pool's threads do (waking one takes longer than
//! such a merge): it watches for the next job, spinning at first, then yielding its core, and
//! napping only once none came for a millisecond (the loop is making small merges alone, or
//! calling back into Python).
//!
//! As with `rayon::join`, the job is the other thread's only once it claims it: if this thread
//! is done with its own part first and the other has not started, this thread takes the job
//! back and runs it too. So when the system has not given the other thread a core (another
//! process is busy on it), that thread never holds the loop up, as waiting for it at every shared merge would.
//!
//! Why a thread of our own rather than `rayon::join` on the pool (or crossbeam, whose scoped
//! threads and channels would also start or wake a thread per job): with `rayon::join` in its
//! place, the merge phase takes about a quarter longer on kernel-docs in its fastest runs, and a
//! few percent longer at the median on kernel-docs and kernel-code, the pool's idle thread having
//! gone to sleep between merges; only on a machine whose cores are all busy do the two come out
//! even. Measured with builds of each, run alternately: `Trainer.train_from_counts` on the span
//! counts of kernel-docs (vocab_size 32768) and kernel-code (65536), its `stats["merge_seconds"]`
//! (the figure `benches/compare.py` shows as "merge", without the counting around it);
//! benches/README.md has the figures.

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The round that tells the other thread to leave.
const LEAVE: u64 = u64::MAX;

type Job = dyn FnMut() + Send;

struct Shared {
    /// Bumped by `join` for each job (then `LEAVE`).
    round: AtomicU64,
    /// The last round claimed, by the other thread (to run its job) or by `join` (to take it back).
    claimed: AtomicU64,
    /// The last round the other thread finished.
    done: AtomicU64,
    /// The job of the current round, written by `join` before it publishes the round and read
    /// by the other thread after it sees it.
    job: UnsafeCell<Option<*mut Job>>,
    /// Set by the other thread when the job panicked: `join` then panics too.
    panic: UnsafeCell<Option<Box<dyn std::any::Any + Send>>>,
}

impl Shared {
    /// Claims `round` for the caller, if no one has: each round is claimed once, by the
    /// other thread (to run its job) or by `join` (to take the job back).
    fn claim(&self, round: u64) -> bool {
        self.claimed.compare_exchange(round - 1, round, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }
}

// SAFETY: `job` and `panic` are written by one side and read by the other only across the
// release/acquire pair of `round` (job: join -> other thread) or `done` (panic: other thread ->
// join), and `join` does not return, nor touch them again, before `done` says the other thread
// is finished.
unsafe impl Sync for Shared {}
// SAFETY: as above; the job it points to is `Send`.
unsafe impl Send for Shared {}

pub(super) struct OtherHalf {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Not `Sync`: `join` must be called by one thread at a time (rounds are numbered by it).
    _one_caller: std::marker::PhantomData<std::cell::Cell<()>>,
}

// Checked when compiling: were `OtherHalf` `Sync`, both impls below would apply to it and the
// trait's type parameter could not be inferred (the test of static_assertions'
// assert_not_impl_any).
const _: fn() = || {
    trait AmbiguousIfSync<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfSync<()> for T {}
    impl<T: ?Sized + Sync> AmbiguousIfSync<u8> for T {}
    <OtherHalf as AmbiguousIfSync<_>>::check();
};

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

impl OtherHalf {
    /// Starts the other thread; `None` if the system refuses one (the loop then works alone).
    pub(super) fn start() -> Option<OtherHalf> {
        let shared = Arc::new(Shared {
            round: AtomicU64::new(0),
            claimed: AtomicU64::new(0),
            done: AtomicU64::new(0),
            job: UnsafeCell::new(None),
            panic: UnsafeCell::new(None),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new().name("bpeforge-merge".into()).spawn(move || serve(&theirs)).ok()?;
        Some(OtherHalf { shared, thread: Some(thread), _one_caller: std::marker::PhantomData })
    }

    /// Runs `first` on this thread and `second` on the other thread at the same time (or
    /// `second` on this thread after `first`, if the other thread has not started it by
    /// then); returns `first`'s result once both are done. A panic in either is raised
    /// here, after both are done.
    pub(super) fn join<R>(&self, first: impl FnOnce() -> R, second: impl FnOnce() + Send) -> R {
        let mut second = Some(second);
        let mut run_second = move || {
            if let Some(f) = second.take() {
                f()
            }
        };
        let job: &mut (dyn FnMut() + Send + '_) = &mut run_second;
        // SAFETY: only the lifetime is erased. The other thread calls the job only once it has
        // claimed the round, and before it stores the round in `done`; this function either
        // claims the round itself (then the other thread never calls the job) or waits for `done`
        // (in `Finish`, even if `first` panics) before `run_second` goes out of scope.
        let job: *mut Job = unsafe { std::mem::transmute::<*mut (dyn FnMut() + Send + '_), *mut Job>(job) };
        let round = self.shared.round.load(Ordering::Relaxed) + 1;
        // SAFETY: the other thread is done with the previous round (every `join` claims it or waits
        // for it), and reads `job` only after the store below.
        unsafe { *self.shared.job.get() = Some(job) };
        self.shared.round.store(round, Ordering::Release);
        let mut finish = Finish { shared: &self.shared, round, settled: false };
        let result = first();
        if finish.take_back() {
            // The other thread has not started: the job is this thread's (a panic in it unwinds
            // from here, with nothing to wait for).
            finish.settled = true;
            run_second();
            return result;
        }
        drop(finish);
        // SAFETY: the other thread is done with this round (`finish` waited), so it no
        // longer writes.
        if let Some(payload) = unsafe { (*self.shared.panic.get()).take() } {
            resume_unwind(payload);
        }
        result
    }
}

/// Settles `round` when dropped, unless `join` did: takes the job back if the other thread has not
/// claimed it, else waits for the other thread to finish it. `join` must not return (or unwind)
/// while the other thread may still run a job that borrows from its caller.
struct Finish<'a> {
    shared: &'a Shared,
    round: u64,
    /// The job was taken back and run on this thread: nothing to wait for.
    settled: bool,
}

impl Finish<'_> {
    /// Claims the round for this thread, if the other thread has not: then the other thread
    /// will not run its job.
    fn take_back(&self) -> bool {
        self.shared.claim(self.round)
    }
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        if !self.settled && !self.take_back() {
            wait_until(|| self.shared.done.load(Ordering::Acquire) == self.round);
            if std::thread::panicking() {
                // `first` panicked and that panic goes on; a panic of the other
                // thread's job in this round is dropped with it, not left for a
                // later round to raise. SAFETY: the other thread is done with
                // this round (waited above), so it no longer writes.
                drop(unsafe { (*self.shared.panic.get()).take() });
            }
        }
    }
}

/// The other thread: runs each round's job until told to leave.
fn serve(shared: &Shared) {
    let mut seen = 0;
    loop {
        wait_until(|| shared.round.load(Ordering::Acquire) != seen);
        let round = shared.round.load(Ordering::Acquire);
        if round == LEAVE {
            return;
        }
        seen = round;
        // Each round is claimed once, by whichever side comes first: `join` takes its job back
        // if it is done with its own part before the other thread gets here.
        if !shared.claim(round) {
            continue;
        }
        // SAFETY: `join` wrote the job before publishing this round (acquired above) and keeps
        // it alive until `done` says this round is finished, since the other thread claimed it.
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

impl Drop for OtherHalf {
    fn drop(&mut self) {
        self.shared.round.store(LEAVE, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join(); // the other thread catches its jobs' panics, so it never panics
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_run_and_see_their_borrows() {
        let other_half = OtherHalf::start().unwrap();
        let mut theirs = vec![0u64; 1000];
        for round in 1..=3000u64 {
            let (mine, done) = (round * 2, &mut theirs);
            let got = other_half.join(|| mine + 1, || done[(round % 1000) as usize] += round);
            assert_eq!(got, round * 2 + 1);
        }
        assert_eq!(theirs.iter().sum::<u64>(), 3000 * 3001 / 2);
    }

    #[test]
    fn each_job_runs_once_on_whichever_side_claims_it() {
        // `first` takes from nothing to a few microseconds, so some jobs are claimed by the
        // other thread and some taken back by `join`; each must run exactly once either way.
        let other_half = OtherHalf::start().unwrap();
        let ran: Vec<AtomicU64> = (0..20_000).map(|_| AtomicU64::new(0)).collect();
        let this_thread = std::thread::current().id();
        let mut taken_back = 0;
        for round in 0..ran.len() {
            let spin = round % 7 * 200;
            let side = std::sync::Mutex::new(None);
            other_half.join(
                || (0..spin).fold(0u64, |a, i| std::hint::black_box(a ^ i as u64)),
                || {
                    ran[round].fetch_add(1, Ordering::Relaxed);
                    *side.lock().unwrap() = Some(std::thread::current().id());
                },
            );
            taken_back += usize::from(side.into_inner().unwrap() == Some(this_thread));
        }
        assert!(ran.iter().all(|n| n.load(Ordering::Relaxed) == 1));
        eprintln!("{taken_back} of {} jobs taken back", ran.len());
    }

    #[test]
    fn panics_on_both_sides_leave_nothing_for_the_next_round() {
        let other_half = OtherHalf::start().unwrap();
        for _ in 0..200 {
            let started = std::sync::atomic::AtomicBool::new(false);
            let caught = catch_unwind(AssertUnwindSafe(|| {
                other_half.join(
                    || {
                        // Give the other thread time to claim its job, so that both sides panic.
                        let since = Instant::now();
                        while !started.load(Ordering::SeqCst) && since.elapsed() < Duration::from_millis(50) {}
                        panic!("first")
                    },
                    || {
                        started.store(true, Ordering::SeqCst);
                        panic!("second")
                    },
                )
            }));
            assert!(caught.is_err());
            let mut ran = false;
            other_half.join(|| (), || ran = true); // must not raise the earlier "second"
            assert!(ran);
        }
    }

    #[test]
    fn a_panic_on_the_other_thread_is_raised_by_join() {
        let other_half = OtherHalf::start().unwrap();
        let caught = catch_unwind(AssertUnwindSafe(|| other_half.join(|| 1, || panic!("on the other thread"))));
        assert!(caught.is_err());
        // The other thread keeps serving.
        let mut x = 0;
        assert_eq!(other_half.join(|| 2, || x = 5), 2);
        assert_eq!(x, 5);
    }
}
