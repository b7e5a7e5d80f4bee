//! Counting tokens from Python: the core's [`crate::encode::Encoder`] with its split pattern,
//! working without the GIL.

use std::sync::atomic::AtomicBool;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

use super::pool::Pool;
use super::{splitter_arg, to_py};
use crate::encode::Encoder as CoreEncoder;
use crate::memory::try_reserve_exact;
use crate::Splitter;

/// Encodes as tiktoken's `encode_ordinary` does with the same ranks and pattern, in time that
/// grows with the text (no regex engine's limits for the preset patterns, no quadratic merge on
/// long spans): for measuring compression.
#[pyclass(module = "bpeforge._core", frozen)]
pub struct Encoder {
    ranks: CoreEncoder,
    splitter: Splitter,
}

#[pymethods]
impl Encoder {
    /// `mergeable_ranks`: (token bytes, rank) pairs, every single byte among them; `pattern`: a
    /// preset's name or a regex that never matches an empty string.
    #[new]
    fn new(py: Python<'_>, mergeable_ranks: Vec<(Bound<'_, PyBytes>, u32)>, pattern: &str) -> PyResult<Self> {
        let splitter = splitter_arg(pattern)?;
        // Copied by fallible reservation: a run of one character trains tokens of megabytes.
        let copy = |token: &Bound<'_, PyBytes>| -> Result<Vec<u8>, crate::Error> {
            let mut bytes = Vec::new();
            try_reserve_exact(&mut bytes, token.as_bytes().len(), "copying the ranks to encode with")?;
            bytes.extend_from_slice(token.as_bytes());
            Ok(bytes)
        };
        let ranks: Vec<(Vec<u8>, u32)> =
            mergeable_ranks.iter().map(|(token, rank)| Ok((copy(token)?, *rank))).collect::<Result<_, crate::Error>>().map_err(to_py)?;
        let ranks = py.detach(|| CoreEncoder::new(ranks)).map_err(to_py)?;
        Ok(Self { ranks, splitter })
    }

    /// The token ids of `text` (special tokens in it are ordinary text).
    fn encode(&self, py: Python<'_>, text: &str) -> PyResult<Vec<u32>> {
        py.detach(|| self.ranks.encode(text, &self.splitter)).map_err(to_py)
    }

    /// The token ids of each text, as `encode` gives them, the texts encoded in parallel on all
    /// cores without the GIL.
    fn batch_encode(&self, py: Python<'_>, texts: Vec<String>) -> PyResult<Vec<Vec<u32>>> {
        // On the shared pool, never Rayon's global one, which a child made by fork() cannot use.
        let pool = Pool::shared().get()?;
        py.detach(|| pool.install(|| texts.par_iter().map(|text| self.ranks.encode(text, &self.splitter)).collect::<Result<Vec<_>, _>>()))
            .map_err(to_py)
    }

    /// `(tokens, bytes)`: how many tokens `texts` become together, and how many of their UTF-8
    /// bytes those tokens cover (text the pattern does not match is dropped, as tiktoken drops it).
    fn count(&self, py: Python<'_>, texts: Vec<String>) -> PyResult<(u64, u64)> {
        let stop = AtomicBool::new(false);
        // On the shared pool, never Rayon's global one, which a child made by fork() cannot use.
        let pool = Pool::shared().get()?;
        let count = py.detach(|| pool.install(|| self.ranks.count_all(&texts, &self.splitter, &stop))).map_err(to_py)?;
        Ok((count.tokens, count.bytes))
    }
}
