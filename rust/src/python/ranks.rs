//! Mergeable ranks from Python (a dict of bytes to rank, or `(bytes, rank)` pairs): checked
//! against tiktoken's model of ids, and written as the text of a `.tiktoken` file. Both read the
//! tokens' bytes where Python holds them, without a copy: a run of one character trains tokens
//! of megabytes, whose ranks may weigh several times the text they were trained on.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMapping};

use super::{args, to_py};
use crate::vocab::{check_ranks as check_ranks_core, shown, MAX_RANK};
use crate::Error;

/// Raises ValueError unless `ranks` (a dict of bytes to rank, or a list of `(bytes, rank)`)
/// satisfies tiktoken's model of ids: distinct non-negative ranks, gaps allowed; every single
/// byte a token, at any rank; distinct, non-empty bytes; every longer token the concatenation of
/// two tokens of lower rank.
#[pyfunction]
pub fn check_ranks(py: Python<'_>, ranks: &Bound<'_, PyAny>) -> PyResult<()> {
    let pairs = ranks_arg(ranks)?;
    let tokens: Vec<(&[u8], u64)> = pairs.iter().map(|(token, rank)| (token.as_bytes(), *rank)).collect();
    py.detach(|| check_ranks_core(&tokens)).map_err(to_py)
}

/// The text of a `.tiktoken` file of `ranks` (as `check_ranks` takes them): one `base64(token)
/// rank` line per token, by rank. Made in place in the `bytes` returned (the text is a third
/// larger than the tokens: it is held once, and the tokens are not copied).
#[pyfunction]
pub fn ranks_to_tiktoken<'py>(py: Python<'py>, ranks: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let mut pairs = ranks_arg(ranks)?;
    pairs.sort_by_key(|(_, rank)| *rank);
    let line_len = |token: &[u8], rank: u64| token.len().div_ceil(3) * 4 + 2 + rank.checked_ilog10().unwrap_or(0) as usize + 1;
    let len = pairs.iter().map(|(token, rank)| line_len(token.as_bytes(), *rank)).sum();
    let text = PyBytes::new_with(py, len, |out| {
        let mut at = 0;
        for (token, rank) in &pairs {
            let token = token.as_bytes();
            let end = at + line_len(token, *rank);
            let written = STANDARD.encode_slice(token, &mut out[at..end]).map_err(|e| PyValueError::new_err(e.to_string()))?;
            let tail = format!(" {rank}\n");
            out[at + written..end].copy_from_slice(tail.as_bytes());
            at = end;
        }
        Ok(())
    });
    text.map_err(|e| match e.is_instance_of::<PyMemoryError>(py) {
        true => to_py(Error::OutOfMemory { stage: "writing the ranks as .tiktoken text", bytes: len }),
        false => e,
    })
}

/// The `(bytes, rank)` pairs of a `ranks` argument: a mapping's items, or any iterable of pairs.
fn ranks_arg<'py>(ranks: &Bound<'py, PyAny>) -> PyResult<Vec<(Bound<'py, PyBytes>, u64)>> {
    let items = if ranks.cast::<PyMapping>().is_ok() { ranks.call_method0("items")? } else { ranks.clone() };
    let shape = || PyTypeError::new_err("ranks must be a dict of bytes to int rank, or a list of (bytes, rank) pairs");
    let mut pairs = Vec::new();
    for item in items.try_iter().map_err(|_| shape())? {
        let (token, rank): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract().map_err(|_| shape())?;
        let token = token.cast_into::<PyBytes>().map_err(|_| shape())?;
        let Some(rank) = args::as_int(&rank) else { return Err(shape()) };
        let rank: u64 = match rank.extract::<i64>() {
            Ok(r) if r >= 0 => r as u64,
            _ => {
                let token = shown(token.as_bytes());
                return Err(PyValueError::new_err(format!(
                    "invalid mergeable ranks: rank {rank} of {token} is out of range: ranks must be non-negative and below {MAX_RANK}"
                )));
            }
        };
        pairs.push((token, rank));
    }
    Ok(pairs)
}
