//! The Python bindings (`bpeforge._core`): they convert types, release the GIL around the core's
//! heavy work, pull texts from Python iterators into the core's counter, watch for Ctrl-C and
//! map the core's errors to Python exceptions. The training itself lives in the core modules,
//! which know nothing of Python.
//!
//! - `trainer.rs`: the `Trainer` class;
//! - `feed.rs`: counting the texts of a Python iterator; `arrow.rs`: Arrow arrays among them;
//! - `learn.rs`: the merge loop, watched for Ctrl-C and progress; `progress.rs`: the callback;
//! - `args.rs`: arguments checked; `pool.rs`: the thread pools; `shutdown.rs`: interpreter exit;
//! - `parquet.rs`: the `ParquetReader` class; `encode.rs`: the `Encoder` class (counting tokens);
//! - `counts.rs`: the `SpanCounts` class and `count_texts`;
//! - `ranks.rs`: mergeable ranks checked, and written as a `.tiktoken` file's text;
//! - `huggingface_import.rs`: a HuggingFace `tokenizer.json`'s vocabulary and merges read and checked;
//! - `readers.rs`: the `TextReader` and `JsonlReader` classes (and `InputError`).

use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

mod args;
mod arrow;
mod counts;
mod encode;
mod feed;
mod huggingface_import;
mod learn;
mod merge_order;
mod parquet;
mod pool;
mod progress;
mod ranks;
mod readers;
mod recipe;
mod shutdown;
mod trainer;

use crate::pretokenize::presets;
use crate::{Error, Splitter};

use args::{int_arg, type_name};

fn to_py(e: Error) -> PyErr {
    match e {
        Error::Split(_) | Error::Internal(_) => PyRuntimeError::new_err(e.to_string()),
        Error::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// The regex of a `pattern` argument: a preset's name (see `PRESETS`), `superword` (see
/// `SUPERWORD_PATTERN`) or a regex. A string with
/// no regex syntax at all (which would split out only copies of itself) is taken for a misspelt
/// preset name: a ValueError. (The Python package's `resolve_pattern` calls this too.)
#[pyfunction]
#[pyo3(name = "resolve_pattern")]
fn pattern_regex(pattern: &str) -> PyResult<&str> {
    if let Some((_, regex)) = presets::NAMED.iter().find(|(name, _)| *name == pattern) {
        return Ok(regex);
    }
    const SYNTAX: &str = "\\[](){}|?*+^$.";
    if !pattern.chars().any(|c| SYNTAX.contains(c)) {
        let names: Vec<&str> = presets::NAMED.iter().map(|(name, _)| *name).collect();
        let syntax: Vec<String> = SYNTAX.chars().map(String::from).collect();
        return Err(PyValueError::new_err(format!(
            "'{pattern}': no such preset (choose from {}); a regex needs at least one of {}",
            names.join(", "),
            syntax.join(" ")
        )));
    }
    Ok(pattern)
}

/// The splitter of a `pattern` argument (see [`pattern_regex`]) that never matches an empty
/// string.
fn splitter_arg(pattern: &str) -> PyResult<Splitter> {
    checked_splitter(pattern_regex(pattern)?)
}

/// The splitter of a regex that compiles and never matches an empty string (tiktoken panics on
/// empty matches, so such a pattern cannot encode; and training would lose text after one).
fn checked_splitter(pattern: &str) -> PyResult<Splitter> {
    let splitter = Splitter::new(pattern).map_err(to_py)?;
    if splitter.can_match_empty() {
        return Err(PyValueError::new_err(format!(
            "the split pattern '{pattern}' can match an empty string, which tiktoken cannot encode with; \
             make every alternative consume at least one character (e.g. `+` instead of `*`)"
        )));
    }
    Ok(splitter)
}

/// Raises ValueError unless `pattern` compiles and never matches an empty string (tiktoken
/// panics on empty matches, so such a pattern cannot encode).
#[pyfunction]
fn check_pattern(pattern: &str) -> PyResult<()> {
    checked_splitter(pattern).map(drop)
}

/// Splits `text` into spans with `pattern` (a preset's name or a regex), as training does (for
/// tests and inspection). Preset patterns use the fast scanner unless `fast=False`, which forces
/// fancy-regex.
#[pyfunction]
#[pyo3(signature = (text, pattern, *, fast=true))]
fn split(text: &str, pattern: &str, fast: bool) -> PyResult<Vec<String>> {
    let regex = pattern_regex(pattern)?;
    let splitter = if fast { Splitter::new(regex) } else { Splitter::with_regex(regex) }.map_err(to_py)?;
    Ok(splitter.spans(text).map_err(to_py)?.into_iter().map(str::to_owned).collect())
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<trainer::Trainer>()?;
    m.add_class::<recipe::Recipe>()?;
    m.add("NANOCHAT_SPECIAL_TOKENS", recipe::NANOCHAT_SPECIAL_TOKENS)?;
    m.add_class::<parquet::ParquetReader>()?;
    m.add_class::<encode::Encoder>()?;
    m.add_class::<counts::PySpanCounts>()?;
    m.add_function(wrap_pyfunction!(counts::count_texts, m)?)?;
    m.add_class::<readers::DocumentReader>()?;
    m.add_class::<readers::TextReader>()?;
    m.add_class::<readers::JsonlReader>()?;
    m.add_function(wrap_pyfunction!(readers::arrow_documents, m)?)?;
    m.add_function(wrap_pyfunction!(parquet::parquet_documents, m)?)?;
    m.add("InputError", m.py().get_type::<readers::InputError>())?;
    m.add_function(wrap_pyfunction!(ranks::check_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(ranks::ranks_to_tiktoken, m)?)?;
    m.add_function(wrap_pyfunction!(split, m)?)?;
    m.add_function(wrap_pyfunction!(check_pattern, m)?)?;
    m.add_function(wrap_pyfunction!(merge_order::first_merge_disagreement, m)?)?;
    m.add_function(wrap_pyfunction!(merge_order::huggingface_merges, m)?)?;
    m.add_function(wrap_pyfunction!(huggingface_import::read_tokenizer_json, m)?)?;
    m.add_class::<huggingface_import::HuggingfaceModel>()?;
    m.add_function(wrap_pyfunction!(pattern_regex, m)?)?;
    m.add("DEFAULT_PATTERN", presets::GPT4)?;
    m.add("PRESETS", presets::PRESETS.iter().map(|(n, p)| (*n, *p)).collect::<Vec<_>>())?;
    m.add("SUPERWORD_PATTERN", presets::SUPERWORD)?;
    shutdown::register(m)?;
    Ok(())
}
