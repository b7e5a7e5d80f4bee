//! The arguments of the bindings' functions, checked and converted, with errors that name them.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

/// Token ids are u32 in tiktoken; keep the vocabulary well inside that.
const MAX_VOCAB_SIZE: i64 = 1 << 31;

/// The progress callback, checked to be callable before any work starts (not at its first call,
/// part-way through an iterator).
pub(super) fn progress_arg(py: Python<'_>, progress: Option<Py<PyAny>>) -> PyResult<Option<Py<PyAny>>> {
    match progress {
        Some(p) if p.is_none(py) => Ok(None),
        Some(p) if !p.bind(py).is_callable() => Err(PyTypeError::new_err(format!(
            "progress must be a callable taking (phase, info), or None; got {}",
            type_name(p.bind(py))
        ))),
        p => Ok(p),
    }
}

/// An int argument within `lo..=hi`, or an error naming it.
pub(super) fn int_arg(value: &Bound<'_, PyAny>, name: &str, lo: i64, hi: i64) -> PyResult<i64> {
    let Some(int) = as_int(value) else {
        return Err(PyTypeError::new_err(format!("{name} must be an int, got {}", type_name(value))));
    };
    match int.extract::<i64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(PyValueError::new_err(format!("{name} must be between {lo} and {hi}, got {value}"))),
    }
}

/// `value` as a Python int, if it is an integer: an int, or another integer type (NumPy's), by
/// `operator.index`; not a bool (Python's or NumPy's), nor anything `operator.index` refuses.
pub(super) fn as_int<'py>(value: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    if value.is_instance_of::<PyBool>() {
        return None;
    }
    if value.is_instance_of::<PyInt>() {
        return Some(value.clone());
    }
    if matches!(type_name(value).as_str(), "bool_" | "bool") {
        return None; // numpy.bool_ still has __index__
    }
    value.py().import("operator").ok()?.call_method1("index", (value,)).ok()
}

/// `min_frequency`, 1 (never stop early) if not given.
pub(super) fn min_frequency_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    Ok(value.map_or(Ok(1), |v| int_arg(v, "min_frequency", 1, i64::MAX))? as u64)
}

/// `max_token_length` in bytes, None (no limit) if not given: at least 2, the shortest merge.
pub(super) fn max_token_length_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    match value {
        Some(v) if !v.is_none() => Ok(Some(int_arg(v, "max_token_length", 2, i64::MAX)? as usize)),
        _ => Ok(None),
    }
}

pub(super) fn vocab_size_arg(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    int_arg(value, "vocab_size", 256, MAX_VOCAB_SIZE).map(|v| v as usize).map_err(|e| {
        if e.is_instance_of::<PyValueError>(value.py()) {
            PyValueError::new_err(format!(
                "vocab_size must be at least 256 (the single-byte tokens) and at most {MAX_VOCAB_SIZE}, got {value}"
            ))
        } else {
            e
        }
    })
}

pub(super) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}
