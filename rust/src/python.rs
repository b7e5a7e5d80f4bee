//! The Python bindings (`bpeforge._core`): type conversion, the GIL, and errors. No logic.

use std::ops::ControlFlow;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::merge::{learn, LearnOptions, Merge};
use crate::pretokenize::presets;
use crate::vocab::check_ranks as check_ranks_core;
use crate::{Error, SpanCounts, Splitter, Vocab};

/// Token ids are u32 in tiktoken; keep the vocabulary well inside that.
const MAX_VOCAB_SIZE: i64 = 1 << 31;

fn to_py(e: Error) -> PyErr {
    match e {
        Error::Split(_) => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// Trains byte-level BPE ranks from text, as rustbpe does, exactly and deterministically.
#[pyclass(module = "bpeforge._core")]
pub struct Trainer {
    splitter: Splitter,
    pool: Option<rayon::ThreadPool>,
    vocab: Vocab,
    merges: Vec<Merge>,
}

impl Trainer {
    fn in_pool<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }
}

/// The str of one iterator item, or an error naming its position.
fn text_of(item: &Bound<'_, PyAny>, position: u64) -> PyResult<String> {
    let Ok(s) = item.cast::<PyString>() else {
        let type_name = item.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        return Err(PyTypeError::new_err(format!(
            "item {position} of the iterator is {type_name}, expected str"
        )));
    };
    s.to_cow().map(|c| c.into_owned()).map_err(|_| {
        PyValueError::new_err(format!(
            "item {position} of the iterator contains a lone surrogate (not valid Unicode); \
             clean it first, e.g. s.encode('utf-8', 'replace').decode('utf-8')"
        ))
    })
}

#[pymethods]
impl Trainer {
    /// Creates a trainer. `pattern=None` uses GPT-4's split pattern (as cl100k_base and
    /// rustbpe). `num_threads=None` uses all cores.
    #[new]
    #[pyo3(signature = (pattern=None, *, num_threads=None))]
    fn new(pattern: Option<&str>, num_threads: Option<i64>) -> PyResult<Self> {
        let splitter = Splitter::new(pattern.unwrap_or(presets::GPT4)).map_err(to_py)?;
        let pool = match num_threads {
            None => None,
            Some(n) if n >= 1 && n <= 1024 => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n as usize)
                    .build()
                    .map_err(|e| PyRuntimeError::new_err(format!("cannot start {n} threads: {e}")))?,
            ),
            Some(n) => return Err(PyValueError::new_err(format!("num_threads must be between 1 and 1024, got {n}"))),
        };
        Ok(Self { splitter, pool, vocab: Vocab::bytes(), merges: Vec::new() })
    }

    /// Trains on an iterable of str, replacing any earlier training. Texts are pulled in
    /// batches of `buffer_size` and split and counted on all threads without the GIL.
    /// `vocab_size` counts the 256 byte tokens; training stops earlier if no pair is left or
    /// the best pair occurs fewer than `min_frequency` times. `pattern`, if given, replaces
    /// the trainer's split pattern.
    #[pyo3(signature = (iterator, vocab_size, buffer_size=8192, pattern=None, *, min_frequency=1))]
    fn train_from_iterator(
        &mut self,
        py: Python<'_>,
        iterator: &Bound<'_, PyAny>,
        vocab_size: i64,
        buffer_size: i64,
        pattern: Option<&str>,
        min_frequency: i64,
    ) -> PyResult<()> {
        if !(256..=MAX_VOCAB_SIZE).contains(&vocab_size) {
            return Err(PyValueError::new_err(format!(
                "vocab_size must be at least 256 (the single-byte tokens) and at most {MAX_VOCAB_SIZE}, got {vocab_size}"
            )));
        }
        if buffer_size < 1 {
            return Err(PyValueError::new_err(format!("buffer_size must be at least 1, got {buffer_size}")));
        }
        if min_frequency < 1 {
            return Err(PyValueError::new_err(format!("min_frequency must be at least 1, got {min_frequency}")));
        }
        let splitter = match pattern {
            Some(p) => Splitter::new(p).map_err(to_py)?,
            None => self.splitter.clone(),
        };
        let mut iterator = iterator.try_iter().map_err(|_| {
            let type_name = iterator.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
            PyTypeError::new_err(format!("expected an iterable of str, got {type_name}"))
        })?;

        let buffer_size = buffer_size as usize;
        let mut counts = SpanCounts::new();
        let mut batch: Vec<String> = Vec::with_capacity(buffer_size.min(1 << 16));
        let mut position: u64 = 0;
        let mut exhausted = false;
        while !exhausted {
            batch.clear();
            while batch.len() < buffer_size {
                match iterator.next() {
                    Some(item) => {
                        batch.push(text_of(&item?, position)?);
                        position += 1;
                    }
                    None => {
                        exhausted = true;
                        break;
                    }
                }
            }
            py.detach(|| self.in_pool(|| counts.add_texts(&batch, &splitter))).map_err(to_py)?;
            py.check_signals()?;
        }

        let spans = py.detach(|| self.in_pool(|| counts.into_sorted()));
        let options = LearnOptions { vocab_size: vocab_size as usize, min_frequency: min_frequency as u64 };
        let mut interrupted: Option<PyErr> = None;
        let learned = py
            .detach(|| {
                learn(spans, &options, |merge, _| {
                    // Look for Ctrl-C now and then, so a long loop stays interruptible.
                    if merge.token % 256 == 0 {
                        if let Err(e) = Python::attach(|py| py.check_signals()) {
                            interrupted = Some(e);
                            return ControlFlow::Break(());
                        }
                    }
                    ControlFlow::Continue(())
                })
            })
            .map_err(to_py)?;
        if let Some(e) = interrupted {
            return Err(e);
        }
        self.splitter = splitter;
        self.vocab = learned.vocab;
        self.merges = learned.merges;
        Ok(())
    }

    /// The split pattern.
    fn get_pattern(&self) -> String {
        self.splitter.pattern().to_owned()
    }

    /// Number of ranks: 256 byte tokens + learned tokens.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The ranks as `[(token_bytes, rank)]`: the 256 single bytes, then learned tokens in order.
    fn get_mergeable_ranks<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, u32)> {
        self.vocab.tokens().enumerate().map(|(rank, t)| (PyBytes::new(py, t), rank as u32)).collect()
    }

    /// Every merge in order as `(left_id, right_id, token_id, count)`. A merge whose bytes
    /// were already a token reuses that token's id, so `token_id` is not always new.
    fn get_merges(&self) -> Vec<(u32, u32, u32, u64)> {
        self.merges.iter().map(|m| (m.pair.0, m.pair.1, m.token, m.count)).collect()
    }

    fn __repr__(&self) -> String {
        format!("Trainer(vocab_size={}, pattern={:?})", self.vocab.len(), self.splitter.pattern())
    }
}

/// Raises ValueError unless `ranks` (a list of `(bytes, rank)`) satisfies tiktoken's
/// invariants: ranks 0..n, the single bytes first, distinct bytes, and every later token the
/// concatenation of two lower-ranked tokens.
#[pyfunction]
fn check_ranks(py: Python<'_>, ranks: Vec<(Vec<u8>, u64)>) -> PyResult<()> {
    py.detach(|| check_ranks_core(&ranks)).map_err(to_py)
}

/// Splits `text` into spans with `pattern`, as training does (for tests and inspection).
#[pyfunction]
fn split(text: &str, pattern: &str) -> PyResult<Vec<String>> {
    let splitter = Splitter::new(pattern).map_err(to_py)?;
    Ok(splitter.spans(text).map_err(to_py)?.into_iter().map(str::to_owned).collect())
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Trainer>()?;
    m.add_function(wrap_pyfunction!(check_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(split, m)?)?;
    m.add("DEFAULT_PATTERN", presets::GPT4)?;
    m.add("PRESETS", presets::PRESETS.iter().map(|(n, p)| (*n, *p)).collect::<Vec<_>>())?;
    Ok(())
}
