//! The progress callback of a training: `progress(phase, info)`, and how often the merge loop
//! calls it.

use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::merge::Merge;

/// How often the merge loop reports progress: every `step` merges (about 0.1% of the total) or
/// every quarter second, whichever comes first.
pub(super) struct Pacer {
    step: usize,
    last_done: usize,
    last_time: Instant,
}

impl Pacer {
    pub(super) fn new(total: usize) -> Self {
        Self { step: (total / 1000).max(1), last_done: 0, last_time: Instant::now() }
    }

    pub(super) fn due(&mut self, done: usize, total: usize) -> bool {
        if done == total || done - self.last_done >= self.step || self.last_time.elapsed().as_millis() >= 250 {
            self.last_done = done;
            self.last_time = Instant::now();
            return true;
        }
        false
    }
}

/// Calls the user's progress callback, if any, with `(phase, info)`.
pub(super) fn report(py: Python<'_>, progress: Option<&Py<PyAny>>, phase: &str, info: &[(&str, Py<PyAny>)]) -> PyResult<()> {
    let Some(callback) = progress else { return Ok(()) };
    let dict = PyDict::new(py);
    for (k, v) in info {
        dict.set_item(k, v)?;
    }
    callback.call1(py, (phase, dict))?;
    Ok(())
}

pub(super) fn report_merge(py: Python<'_>, progress: Option<&Py<PyAny>>, done: usize, total: usize, merge: &Merge) -> PyResult<()> {
    report(py, progress, "merge", &[
        ("done", done.into_pyobject(py)?.into_any().unbind()),
        ("total", total.into_pyobject(py)?.into_any().unbind()),
        ("pair", merge.pair.into_pyobject(py)?.into_any().unbind()),
        ("token", merge.token.into_pyobject(py)?.into_any().unbind()),
        ("count", merge.count.into_pyobject(py)?.into_any().unbind()),
    ])
}
