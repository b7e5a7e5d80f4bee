//! The Rayon pools that training runs on, made again after `fork()`.
//!
//! A child made by `fork()` (Python's `os.fork`, multiprocessing's "fork" context, the default
//! on Linux before Python 3.14) has only the thread that forked: the threads of every pool the
//! parent had started are gone, and work handed to such a pool waits for them forever. Rayon's
//! global pool cannot be made again, so training never runs on it: it runs on a [`Pool`] of this
//! module, which remembers the process that made its threads and, in any other process, makes
//! new ones. The copy of the old pool is leaked, never dropped: its threads' locks and queues
//! were copied in whatever state the fork caught them, so tearing it down could block.

use std::sync::{Arc, Mutex, PoisonError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::PyResult;
use rayon::{ThreadPool, ThreadPoolBuilder};

/// A Rayon pool of a fixed number of threads (or one per core), started on first use and again
/// in each process that uses it after a fork.
pub(super) struct Pool {
    /// The number of threads; `None` for Rayon's default (one per core, or `RAYON_NUM_THREADS`).
    threads: Option<usize>,
    /// The pool, with the id of the process whose threads it has.
    made: Mutex<Option<(u32, Arc<ThreadPool>)>>,
}

/// The pool of trainers made without `num_threads`, shared by all of them as Rayon's global
/// pool would be.
static SHARED: Pool = Pool::new(None);

impl Pool {
    pub(super) const fn new(threads: Option<usize>) -> Self {
        Pool { threads, made: Mutex::new(None) }
    }

    /// The pool shared by trainers that do not choose their number of threads.
    pub(super) fn shared() -> &'static Pool {
        &SHARED
    }

    /// The pool's threads in this process: started now if this process has none yet (its first
    /// use, or its first use in a child made by `fork()`).
    pub(super) fn get(&self) -> PyResult<Arc<ThreadPool>> {
        let process = std::process::id();
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        match made.take() {
            Some((owner, pool)) if owner == process => {
                *made = Some((owner, Arc::clone(&pool)));
                return Ok(pool);
            }
            // Another process's pool, copied here by fork(): its threads do not exist here.
            Some((_, stale)) => std::mem::forget(stale),
            None => {}
        }
        let mut builder = ThreadPoolBuilder::new().thread_name(|i| format!("bpeforge-{i}"));
        if let Some(n) = self.threads {
            builder = builder.num_threads(n);
        }
        let pool = Arc::new(builder.build().map_err(|e| match self.threads {
            Some(n) => PyRuntimeError::new_err(format!("cannot start {n} threads: {e}")),
            None => PyRuntimeError::new_err(format!("cannot start the training threads: {e}")),
        })?);
        *made = Some((process, Arc::clone(&pool)));
        Ok(pool)
    }
}
