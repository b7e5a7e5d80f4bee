//! A training's recipe: every option of one training, checked once when it is made, as one value
//! that `Trainer.learn` takes whole, whatever it learns from (texts, span counts, a base to
//! extend). A new option is a field here, checked here, and read by `Trainer.learn`: no path
//! re-plumbs it.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyString};

use super::args::{as_int, int_arg, type_name};
use super::counts::{pattern_shown, PySpanCounts};
use super::splitter_arg;
use crate::merge::{AlphabetRule, LearnOptions, ParityOptions, ParityTies, Selection};
use crate::pretokenize::presets;
use crate::Splitter;

/// Token ids (ranks and special ids) are below this: tiktoken's are 32-bit, and bpeforge trains at
/// most this many ranks.
pub(super) const MAX_TOKEN_ID: usize = 1 << 31;

/// nanochat's nine special tokens, a recipe's when none are given.
pub(super) const NANOCHAT_SPECIAL_TOKENS: [&str; 9] = [
    "<|bos|>",
    "<|user_start|>",
    "<|user_end|>",
    "<|assistant_start|>",
    "<|assistant_end|>",
    "<|python_start|>",
    "<|python_end|>",
    "<|output_start|>",
    "<|output_end|>",
];

/// The fields of a recipe, in the order `Recipe.as_dict` gives them.
const FIELDS: [&str; 19] = [
    "vocab_size",
    "pattern",
    "special_tokens",
    "min_frequency",
    "max_token_length",
    "max_token_chars",
    "doc_cap",
    "max_token_words",
    "superword_transition",
    "superword_pattern",
    "reserve_special_tokens",
    "pad_vocab_to_multiple_of",
    "tie_break",
    "initial_alphabet",
    "limit_alphabet",
    "parity",
    "parity_window",
    "parity_alpha",
    "global_merges",
];

/// The name of reserved special token `k` (Llama 3's).
fn reserved_name(k: usize) -> String {
    format!("<|reserved_special_token_{k}|>")
}

/// The window of the parity-aware `window` selection, and its alpha, when the recipe says
/// nothing (HuggingFace's `ParityBpeTrainer`'s defaults).
const PARITY_WINDOW: usize = 100;
const PARITY_ALPHA: f64 = 2.0;

/// The words a superword token may hold when the recipe says nothing (SuperBPE's).
const SUPERWORD_MAX_WORDS: usize = 4;

/// How a training breaks ties between pairs of equal counts, and so which single bytes it has
/// and how it numbers its tokens (see `merge/alphabet.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum TieBreak {
    /// The smallest pair by bpeforge's ids (tiktoken's layout): all 256 bytes at ids 0..255,
    /// merged tokens after them, special tokens after those.
    Bpeforge,
    /// HuggingFace `BpeTrainer`'s rule: the smallest pair by its ids, which are the special
    /// tokens first, then the alphabet (the bytes seen and `initial_alphabet`'s, at most
    /// `limit_alphabet`) in the order of GPT-2's byte-level characters, then merged tokens.
    HuggingFace,
}

impl TieBreak {
    fn name(self) -> &'static str {
        match self {
            TieBreak::Bpeforge => "bpeforge",
            TieBreak::HuggingFace => "huggingface",
        }
    }
}

/// Everything one training is asked to do, checked: the final vocabulary size (special tokens
/// included; with a base, its `n_vocab`), the split pattern, the special tokens (numbered after
/// the trained ranks), `min_frequency`, `max_token_length` (bytes), `max_token_chars`
/// (characters, as CJK corpora want), `doc_cap` (each document cropped to its first `doc_cap`
/// characters), `max_token_words` (words, runs of bytes other than the space), the superword
/// stage (from `superword_transition` ranks and special tokens on, merging goes on over spans
/// split by `superword_pattern`: SuperBPE; 4 words a token unless `max_token_words` says
/// otherwise), the layout of the vocabulary (`reserve_special_tokens` unused special tokens
/// after the others, counted in `vocab_size`, and the whole padded with more to a multiple of
/// `pad_vocab_to_multiple_of`), and the tie-break (`"bpeforge"` or `"huggingface"`, see
/// `TieBreak`) with, for HuggingFace's, the bytes always in the alphabet (`initial_alphabet`)
/// and the most it keeps (`limit_alphabet`), and parity-aware training (`parity`: "base" or
/// "window", with `parity_window` and `parity_alpha`, and `global_merges`; it learns from one
/// set of span counts per language, docs/parity.md). Immutable; `replace` makes a changed copy,
/// checked again.
#[pyclass(module = "bpeforge._core", frozen)]
#[derive(Clone)]
pub(super) struct Recipe {
    vocab_size: usize,
    splitter: Splitter,
    special_tokens: Vec<String>,
    min_frequency: u64,
    max_token_length: Option<usize>,
    max_token_chars: Option<usize>,
    doc_cap: Option<u64>,
    tie_break: TieBreak,
    /// Sorted, without repeats (HuggingFace's tie-break only).
    initial_alphabet: Vec<u8>,
    limit_alphabet: Option<usize>,
    max_token_words: Option<usize>,
    superword: Option<Superword>,
    /// How many of `special_tokens`, at its end, are reserved (named `reserved_name(k)`).
    reserved: usize,
    /// The vocabulary is padded with more reserved tokens to a multiple of this.
    pad_to: Option<usize>,
    /// Parity-aware training (one set of span counts per language), if asked.
    parity: Option<Parity>,
}

/// A recipe's parity-aware training: how each merge's language is chosen, and how many merges
/// come first on all languages' counts summed.
#[derive(Clone)]
struct Parity {
    selection: Selection,
    global_merges: usize,
}

/// A recipe's superword stage: from `transition` (the vocabulary size, special tokens included,
/// that the first stage trains to) on, spans are split by `splitter`.
#[derive(Clone)]
struct Superword {
    transition: usize,
    splitter: Splitter,
}

/// An `OptionError` (`bpeforge._errors`: a ValueError naming its option) saying `message`.
pub(super) fn option_error(py: Python<'_>, option: &str, message: String) -> PyErr {
    let made = py
        .import("bpeforge._errors")
        .and_then(|errors| errors.getattr("OptionError"))
        .and_then(|class| class.call1((option, message.clone())));
    match made {
        Ok(error) => PyErr::from_value(error),
        Err(_) => PyValueError::new_err(message), // bpeforge's Python package is not importable
    }
}

/// `result` with a ValueError turned into an `OptionError` naming `option` (a TypeError kept).
fn naming<T>(py: Python<'_>, option: &str, result: PyResult<T>) -> PyResult<T> {
    result.map_err(|e| if e.is_instance_of::<PyValueError>(py) { option_error(py, option, e.value(py).to_string()) } else { e })
}

/// The special tokens of a recipe: a list (or other sequence) of distinct, non-empty str; None
/// for nanochat's nine.
fn special_tokens_arg(py: Python<'_>, value: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(NANOCHAT_SPECIAL_TOKENS.iter().map(|s| s.to_string()).collect());
    };
    if value.is_instance_of::<PyString>() || value.is_instance_of::<PyDict>() || value.hasattr("keys")? {
        return Err(PyTypeError::new_err(format!(
            "special_tokens must be a list of str, not a {}: training numbers them after the trained ranks, so no ids are taken here",
            type_name(value)
        )));
    }
    let items = value.try_iter().map_err(|_| PyTypeError::new_err(format!("special_tokens must be a list of str, got {}", type_name(value))))?;
    let mut names: Vec<String> = Vec::new();
    for item in items {
        let item = item?;
        let Ok(s) = item.cast::<PyString>() else {
            return Err(option_error(py, "special_tokens", format!("special tokens must be non-empty str, got {}", item.repr()?)));
        };
        let Ok(name) = s.to_str() else {
            return Err(option_error(py, "special_tokens", format!("special token {} is not valid UTF-8 text (it holds a lone surrogate)", item.repr()?)));
        };
        if name.is_empty() {
            return Err(option_error(py, "special_tokens", "special tokens must be non-empty str, got ''".into()));
        }
        if names.iter().any(|n| n == name) {
            return Err(option_error(py, "special_tokens", format!("special token {} is given twice", item.repr()?)));
        }
        names.push(name.to_owned());
    }
    Ok(names)
}

/// A pattern option (a preset's name, `superword` or a regex, that never matches an empty
/// string), None if not given.
fn pattern_field(py: Python<'_>, option: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Splitter>> {
    let Some(value) = value.filter(|v| !v.is_none()) else { return Ok(None) };
    let Ok(text) = value.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!("{option} must be a str (a preset's name or a regex), got {}", type_name(value))));
    };
    naming(py, option, splitter_arg(text.to_str()?)).map(Some)
}

/// The tie-break option: "bpeforge" (None) or "huggingface".
fn tie_break_arg(py: Python<'_>, value: Option<&Bound<'_, PyAny>>) -> PyResult<TieBreak> {
    let Some(value) = value.filter(|v| !v.is_none()) else { return Ok(TieBreak::Bpeforge) };
    let Ok(name) = value.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!("tie_break must be a str ('bpeforge' or 'huggingface'), got {}", type_name(value))));
    };
    match name.to_str()? {
        "bpeforge" => Ok(TieBreak::Bpeforge),
        "huggingface" => Ok(TieBreak::HuggingFace),
        other => Err(option_error(py, "tie_break", format!("tie_break must be 'bpeforge' or 'huggingface', got {other:?}"))),
    }
}

/// The initial alphabet: bytes (or a bytearray) or an iterable of ints 0..=255, sorted and
/// without repeats; None for none.
fn initial_alphabet_arg(py: Python<'_>, value: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<u8>> {
    let Some(value) = value.filter(|v| !v.is_none()) else { return Ok(Vec::new()) };
    let mut bytes: Vec<u8> = if let Ok(b) = value.cast::<PyBytes>() {
        b.as_bytes().to_vec()
    } else if let Ok(b) = value.cast::<PyByteArray>() {
        b.to_vec()
    } else if value.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "initial_alphabet must be bytes or an iterable of ints 0..255, not a str (bpeforge.huggingface reads HuggingFace's characters)",
        ));
    } else {
        let items = value.try_iter().map_err(|_| PyTypeError::new_err(format!("initial_alphabet must be bytes or an iterable of ints 0..255, got {}", type_name(value))))?;
        let mut bytes = Vec::new();
        for item in items {
            let item = item?;
            let byte = naming(py, "initial_alphabet", int_arg(&item, "a byte of initial_alphabet", 0, 255))?;
            bytes.push(byte as u8);
        }
        bytes
    };
    bytes.sort_unstable();
    bytes.dedup();
    Ok(bytes)
}

/// An optional int option of at least `lo`, None if not given.
fn optional_int_arg(value: Option<&Bound<'_, PyAny>>, name: &str, lo: i64) -> PyResult<Option<u64>> {
    match value {
        Some(v) if !v.is_none() => Ok(Some(int_arg(v, name, lo, i64::MAX)? as u64)),
        _ => Ok(None),
    }
}

/// The parity options: `parity` ("base", "window" or None), the window's size and alpha (with
/// "window" only), and `global_merges` (with parity only).
fn parity_arg(
    py: Python<'_>,
    parity: Option<&Bound<'_, PyAny>>,
    window: Option<&Bound<'_, PyAny>>,
    alpha: Option<&Bound<'_, PyAny>>,
    global_merges: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Parity>> {
    let given = |v: Option<&Bound<'_, PyAny>>| v.is_some_and(|v| !v.is_none());
    let name = match parity.filter(|v| !v.is_none()) {
        None => None,
        Some(v) => match v.cast::<PyString>() {
            Ok(s) => Some(s.to_str()?.to_owned()),
            Err(_) => return Err(PyTypeError::new_err(format!("parity must be a str ('base' or 'window'), got {}", type_name(v)))),
        },
    };
    let selection = match name.as_deref() {
        None => {
            for (option, value) in [("parity_window", window), ("parity_alpha", alpha), ("global_merges", global_merges)] {
                if given(value) {
                    return Err(option_error(py, option, format!("{option} goes with parity ('base' or 'window')")));
                }
            }
            return Ok(None);
        }
        Some("base") => {
            for (option, value) in [("parity_window", window), ("parity_alpha", alpha)] {
                if given(value) {
                    return Err(option_error(py, option, format!("{option} goes with parity='window'")));
                }
            }
            Selection::Base
        }
        Some("window") => {
            let size = naming(py, "parity_window", optional_int_arg(window, "parity_window", 1))?.map_or(PARITY_WINDOW, |n| n as usize);
            let alpha = match alpha.filter(|v| !v.is_none()) {
                None => PARITY_ALPHA,
                Some(v) => {
                    let a: f64 = v.extract().map_err(|_| PyTypeError::new_err(format!("parity_alpha must be a number, got {}", type_name(v))))?;
                    if !(a.is_finite() && a > 0.0) {
                        return Err(option_error(py, "parity_alpha", format!("parity_alpha must be a positive finite number, got {a}")));
                    }
                    a
                }
            };
            Selection::Window { size, alpha }
        }
        Some(other) => return Err(option_error(py, "parity", format!("parity must be 'base' or 'window', got {other:?}"))),
    };
    let global_merges = naming(py, "global_merges", optional_int_arg(global_merges, "global_merges", 0))?.unwrap_or(0) as usize;
    Ok(Some(Parity { selection, global_merges }))
}

#[pymethods]
impl Recipe {
    /// Checks every option (see the class's doc); a bad one raises `bpeforge.OptionError` (a
    /// ValueError naming it), a value of the wrong type TypeError. `pattern` is a preset's name,
    /// a regex, or None for GPT-4's; `special_tokens` None for nanochat's nine, `[]` for none.
    #[new]
    #[pyo3(signature = (
        vocab_size, *, pattern=None, special_tokens=None, min_frequency=None, max_token_length=None, doc_cap=None,
        max_token_words=None, superword_transition=None, superword_pattern=None, reserve_special_tokens=None,
        pad_vocab_to_multiple_of=None, tie_break=None, initial_alphabet=None, limit_alphabet=None, max_token_chars=None, parity=None,
        parity_window=None, parity_alpha=None, global_merges=None, base=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        vocab_size: &Bound<'_, PyAny>,
        pattern: Option<&Bound<'_, PyAny>>,
        special_tokens: Option<&Bound<'_, PyAny>>,
        min_frequency: Option<&Bound<'_, PyAny>>,
        max_token_length: Option<&Bound<'_, PyAny>>,
        doc_cap: Option<&Bound<'_, PyAny>>,
        max_token_words: Option<&Bound<'_, PyAny>>,
        superword_transition: Option<&Bound<'_, PyAny>>,
        superword_pattern: Option<&Bound<'_, PyAny>>,
        reserve_special_tokens: Option<&Bound<'_, PyAny>>,
        pad_vocab_to_multiple_of: Option<&Bound<'_, PyAny>>,
        tie_break: Option<&Bound<'_, PyAny>>,
        initial_alphabet: Option<&Bound<'_, PyAny>>,
        limit_alphabet: Option<&Bound<'_, PyAny>>,
        max_token_chars: Option<&Bound<'_, PyAny>>,
        parity: Option<&Bound<'_, PyAny>>,
        parity_window: Option<&Bound<'_, PyAny>>,
        parity_alpha: Option<&Bound<'_, PyAny>>,
        global_merges: Option<&Bound<'_, PyAny>>,
        base: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut special_tokens = special_tokens_arg(py, special_tokens)?;
        let reserved = naming(py, "reserve_special_tokens", optional_int_arg(reserve_special_tokens, "reserve_special_tokens", 0))?.unwrap_or(0) as usize;
        if reserved > MAX_TOKEN_ID {
            return Err(option_error(py, "reserve_special_tokens", format!("reserve_special_tokens must be at most {MAX_TOKEN_ID}, got {reserved}")));
        }
        for name in (0..reserved).map(reserved_name) {
            if special_tokens.contains(&name) {
                return Err(option_error(py, "special_tokens", format!("special token {name:?} is given, and reserved too (reserve_special_tokens)")));
            }
            special_tokens.push(name);
        }
        let pad_to = naming(py, "pad_vocab_to_multiple_of", optional_int_arg(pad_vocab_to_multiple_of, "pad_vocab_to_multiple_of", 1))?.map(|m| m as usize);
        let tie_break = tie_break_arg(py, tie_break)?;
        let Some(size) = as_int(vocab_size) else {
            return Err(PyTypeError::new_err(format!("vocab_size must be an int, got {}", type_name(vocab_size))));
        };
        let base = base.filter(|b| !b.is_none()).map(base_arg).transpose()?;
        // With a base to extend, the size is checked against the base's (see `check_base`).
        // HuggingFace's alphabet is known only once the spans are counted, and fills the
        // vocabulary first: a smaller vocab_size than it holds just learns no merge (HuggingFace
        // adds the special tokens whatever the size).
        let (least, why) = match (base.is_some(), tie_break) {
            (true, _) | (false, TieBreak::HuggingFace) => (0, String::new()),
            (false, TieBreak::Bpeforge) => (256 + special_tokens.len(), format!("256 + {} special tokens = ", special_tokens.len())),
        };
        let vocab_size = match size.extract::<i64>() {
            Ok(v) if v >= least as i64 && v <= MAX_TOKEN_ID as i64 => v as usize,
            _ if base.is_some() => MAX_TOKEN_ID + 1, // refused by check_base, naming the base's size
            _ => return Err(option_error(py, "vocab_size", format!("vocab_size must be at least {why}{least} and at most {MAX_TOKEN_ID}, got {size}"))),
        };
        if let Some(m) = pad_to {
            if vocab_size.div_ceil(m) * m > MAX_TOKEN_ID {
                return Err(option_error(py, "pad_vocab_to_multiple_of", format!(
                    "vocab_size {vocab_size} padded to a multiple of {m} is more than {MAX_TOKEN_ID} ids"
                )));
            }
        };
        let splitter = pattern_field(py, "pattern", pattern)?.unwrap_or(splitter_arg(presets::GPT4)?);
        let min_frequency = naming(py, "min_frequency", optional_int_arg(min_frequency, "min_frequency", 1))?.unwrap_or(1);
        let max_token_length = match max_token_length.filter(|v| !v.is_none()) {
            None => None,
            Some(v) => match int_arg(v, "max_token_length", 2, i64::MAX) {
                Ok(n) => Some(n as usize),
                Err(e) if e.is_instance_of::<PyValueError>(py) => {
                    return Err(option_error(py, "max_token_length", format!("max_token_length must be at least 2 bytes (the shortest merged token), got {v}")))
                }
                Err(e) => return Err(e),
            },
        };
        let doc_cap = naming(py, "doc_cap", optional_int_arg(doc_cap, "doc_cap", 1))?;
        let mut max_token_words = naming(py, "max_token_words", optional_int_arg(max_token_words, "max_token_words", 1))?.map(|n| n as usize);
        let superword_pattern = pattern_field(py, "superword_pattern", superword_pattern)?;
        let superword = match naming(py, "superword_transition", optional_int_arg(superword_transition, "superword_transition", 1))? {
            None if superword_pattern.is_some() => {
                return Err(option_error(py, "superword_pattern", "superword_pattern goes with superword_transition (the size the superword stage starts from)".into()))
            }
            None => None,
            Some(t) => {
                let least = 256 + special_tokens.len();
                if !(least as u64..=vocab_size as u64).contains(&t) {
                    return Err(option_error(py, "superword_transition", format!(
                        "superword_transition must be at least 256 + {} special tokens = {least} and at most vocab_size ({vocab_size}), got {t}",
                        special_tokens.len()
                    )));
                }
                max_token_words.get_or_insert(SUPERWORD_MAX_WORDS);
                Some(Superword { transition: t as usize, splitter: superword_pattern.unwrap_or(splitter_arg(presets::SUPERWORD)?) })
            }
        };
        if superword.is_some() && base.is_some() {
            return Err(option_error(py, "superword_transition", "a superword stage trains from the single bytes: to add superword tokens to a tokenizer, extend it with pattern='superword'".into()));
        }
        let max_token_chars = naming(py, "max_token_chars", optional_int_arg(max_token_chars, "max_token_chars", 2))?.map(|n| n as usize);
        let initial_alphabet = initial_alphabet_arg(py, initial_alphabet)?;
        let limit_alphabet = naming(py, "limit_alphabet", optional_int_arg(limit_alphabet, "limit_alphabet", 0))?.map(|n| n as usize);
        if tie_break == TieBreak::Bpeforge {
            for (option, given) in [("initial_alphabet", !initial_alphabet.is_empty()), ("limit_alphabet", limit_alphabet.is_some())] {
                if given {
                    return Err(option_error(py, option, format!(
                        "{option} needs tie_break='huggingface': bpeforge's own alphabet is all 256 bytes, as tiktoken needs"
                    )));
                }
            }
        }
        if pad_to.is_some() && tie_break == TieBreak::HuggingFace {
            return Err(option_error(py, "pad_vocab_to_multiple_of", "tie_break='huggingface' puts the special tokens first: the vocabulary cannot be padded after the ranks".into()));
        }
        if superword.is_some() && tie_break == TieBreak::HuggingFace {
            return Err(option_error(py, "tie_break", "tie_break='huggingface' goes without a superword stage (HuggingFace's layout numbers one alphabet)".into()));
        }
        let parity = parity_arg(py, parity, parity_window, parity_alpha, global_merges)?;
        if parity.is_some() && superword.is_some() {
            return Err(option_error(py, "parity", "parity-aware training goes without a superword stage".into()));
        }
        if parity.is_some() && base.is_some() {
            return Err(option_error(py, "parity", "parity-aware training learns from the single bytes: it cannot extend a base".into()));
        }
        let recipe = Recipe {
            vocab_size,
            splitter,
            special_tokens,
            min_frequency,
            max_token_length,
            max_token_chars,
            doc_cap,
            max_token_words,
            superword,
            reserved,
            pad_to,
            tie_break,
            initial_alphabet,
            limit_alphabet,
            parity,
        };
        if let Some(base) = &base {
            recipe.check_base(py, base, &size.to_string())?;
        }
        Ok(recipe)
    }

    /// The final vocabulary size: ranks and special tokens (with a base, its `n_vocab`).
    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The split pattern, as a regex (a preset's name is resolved).
    #[getter]
    fn pattern(&self) -> &str {
        self.splitter.pattern()
    }

    /// The special tokens' names as given (the reserved ones are `special_token_names`').
    #[getter]
    fn special_tokens(&self) -> Vec<String> {
        self.special_tokens[..self.special_tokens.len() - self.reserved].to_vec()
    }

    /// How many unused special tokens are reserved after the others.
    #[getter]
    fn reserve_special_tokens(&self) -> usize {
        self.reserved
    }

    /// The vocabulary is padded with reserved special tokens to a multiple of this (None: not).
    #[getter]
    fn pad_vocab_to_multiple_of(&self) -> Option<usize> {
        self.pad_to
    }

    /// The special tokens of a tokenizer with `ranks` ranks, numbered after them in this order:
    /// those given, those reserved (`<|reserved_special_token_0|>`, ...), and as many more
    /// reserved ones as make `ranks` and all of them a multiple of `pad_vocab_to_multiple_of`.
    fn special_token_names(&self, ranks: usize) -> Vec<String> {
        let mut names = self.special_tokens.clone();
        if let Some(m) = self.pad_to {
            let size = ranks + names.len();
            names.extend((self.reserved..self.reserved + (size.div_ceil(m) * m - size)).map(reserved_name));
        }
        names
    }

    /// Training stops when the best pair occurs fewer times than this.
    #[getter]
    fn min_frequency(&self) -> u64 {
        self.min_frequency
    }

    /// No token longer than this many bytes is made (None: no limit).
    #[getter]
    fn max_token_length(&self) -> Option<usize> {
        self.max_token_length
    }

    /// No token of more than this many characters is made (None: no limit): the UTF-8
    /// characters its bytes start, a first byte continuing a character counting as one.
    #[getter]
    fn max_token_chars(&self) -> Option<usize> {
        self.max_token_chars
    }

    /// Each document is cropped to its first this many characters (None: whole).
    #[getter]
    fn doc_cap(&self) -> Option<u64> {
        self.doc_cap
    }

    /// No token holds more than this many words (runs of bytes other than the space; None: no
    /// limit).
    #[getter]
    fn max_token_words(&self) -> Option<usize> {
        self.max_token_words
    }

    /// The vocabulary size (special tokens included) the first stage trains to before the
    /// superword stage (None: no superword stage).
    #[getter]
    fn superword_transition(&self) -> Option<usize> {
        self.superword.as_ref().map(|s| s.transition)
    }

    /// The split pattern of the superword stage, as a regex (None: no superword stage).
    #[getter]
    fn superword_pattern(&self) -> Option<&str> {
        self.superword.as_ref().map(|s| s.splitter.pattern())
    }

    /// The pattern the trained tokenizer splits by: the superword stage's, if there is one.
    #[getter]
    fn encoding_pattern(&self) -> &str {
        self.superword_pattern().unwrap_or(self.pattern())
    }

    /// How ties between pairs of equal counts are broken: "bpeforge" or "huggingface".
    #[getter]
    fn tie_break(&self) -> &'static str {
        self.tie_break.name()
    }

    /// The bytes always in the alphabet (HuggingFace's tie-break), sorted; None for none.
    #[getter]
    fn initial_alphabet<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        (!self.initial_alphabet.is_empty()).then(|| PyBytes::new(py, &self.initial_alphabet))
    }

    /// The most single bytes the alphabet keeps (HuggingFace's tie-break; None: no limit).
    #[getter]
    fn limit_alphabet(&self) -> Option<usize> {
        self.limit_alphabet
    }

    /// Parity-aware training: "base" or "window" (see `Selection`), None for plain training.
    #[getter]
    fn parity(&self) -> Option<&'static str> {
        self.parity.as_ref().map(|p| match p.selection {
            Selection::Base => "base",
            Selection::Window { .. } => "window",
        })
    }

    /// The moving window of parity's "window" selection, in merges (None otherwise).
    #[getter]
    fn parity_window(&self) -> Option<usize> {
        match self.parity.as_ref()?.selection {
            Selection::Window { size, .. } => Some(size),
            Selection::Base => None,
        }
    }

    /// The alpha of parity's "window" selection: a language chosen more than alpha / languages
    /// of the window's merges is passed over (None otherwise).
    #[getter]
    fn parity_alpha(&self) -> Option<f64> {
        match self.parity.as_ref()?.selection {
            Selection::Window { alpha, .. } => Some(alpha),
            Selection::Base => None,
        }
    }

    /// With parity, the first merges made on all languages' counts summed (None: no parity).
    #[getter]
    fn global_merges(&self) -> Option<usize> {
        self.parity.as_ref().map(|p| p.global_merges)
    }

    /// The names of a recipe's fields, in the order `as_dict` gives them.
    #[staticmethod]
    fn fields() -> Vec<&'static str> {
        FIELDS.to_vec()
    }

    /// Every field, by name: what makes `Recipe(**recipe.as_dict())` the same recipe.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("vocab_size", self.vocab_size)?;
        d.set_item("pattern", self.pattern())?;
        d.set_item("special_tokens", self.special_tokens())?;
        d.set_item("min_frequency", self.min_frequency)?;
        d.set_item("max_token_length", self.max_token_length)?;
        d.set_item("max_token_chars", self.max_token_chars)?;
        d.set_item("doc_cap", self.doc_cap)?;
        d.set_item("max_token_words", self.max_token_words)?;
        d.set_item("superword_transition", self.superword_transition())?;
        d.set_item("superword_pattern", self.superword_pattern())?;
        d.set_item("reserve_special_tokens", self.reserved)?;
        d.set_item("pad_vocab_to_multiple_of", self.pad_to)?;
        d.set_item("tie_break", self.tie_break())?;
        d.set_item("initial_alphabet", self.initial_alphabet(py))?;
        d.set_item("limit_alphabet", self.limit_alphabet)?;
        d.set_item("parity", self.parity())?;
        d.set_item("parity_window", self.parity_window())?;
        d.set_item("parity_alpha", self.parity_alpha())?;
        d.set_item("global_merges", self.global_merges())?;
        Ok(d)
    }

    /// A copy with the fields given changed, checked as a new recipe is.
    #[pyo3(signature = (**changes))]
    fn replace(&self, py: Python<'_>, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let fields = self.as_dict(py)?;
        if let Some(changes) = changes {
            for (name, value) in changes.iter() {
                if !fields.contains(&name)? {
                    return Err(PyTypeError::new_err(format!("a Recipe has no field {name} (its fields: {})", FIELDS.join(", "))));
                }
                fields.set_item(name, value)?;
            }
        }
        let field = |name: &str| fields.get_item(name).ok().flatten();
        let vocab_size = match field("vocab_size") {
            Some(size) => size,
            None => self.vocab_size.into_pyobject(py)?.into_any(), // as_dict always has it
        };
        Recipe::new(
            py,
            &vocab_size,
            field("pattern").as_ref(),
            field("special_tokens").as_ref(),
            field("min_frequency").as_ref(),
            field("max_token_length").as_ref(),
            field("doc_cap").as_ref(),
            field("max_token_words").as_ref(),
            field("superword_transition").as_ref(),
            field("superword_pattern").as_ref(),
            field("reserve_special_tokens").as_ref(),
            field("pad_vocab_to_multiple_of").as_ref(),
            field("tie_break").as_ref(),
            field("initial_alphabet").as_ref(),
            field("limit_alphabet").as_ref(),
            field("max_token_chars").as_ref(),
            field("parity").as_ref(),
            field("parity_window").as_ref(),
            field("parity_alpha").as_ref(),
            field("global_merges").as_ref(),
            None,
        )
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        match other.cast::<Recipe>() {
            Ok(other) => self.as_dict(py)?.eq(other.get().as_dict(py)?),
            Err(_) => Ok(false),
        }
    }

    fn __repr__(&self) -> String {
        let optional = |v: Option<String>| v.unwrap_or_else(|| "None".into());
        let superword = match &self.superword {
            None => String::new(),
            Some(s) => format!(", superword_transition={}, superword_pattern={}", s.transition, pattern_shown(s.splitter.pattern())),
        };
        format!(
            "Recipe(vocab_size={}, pattern={}, special_tokens={:?}, min_frequency={}, max_token_length={}, {}doc_cap={}, max_token_words={}{superword}, \
             reserve_special_tokens={}, pad_vocab_to_multiple_of={}{}{})",
            self.vocab_size,
            pattern_shown(self.pattern()),
            self.special_tokens(),
            self.min_frequency,
            optional(self.max_token_length.map(|v| v.to_string())),
            self.max_token_chars.map_or(String::new(), |n| format!("max_token_chars={n}, ")),
            optional(self.doc_cap.map(|v| v.to_string())),
            optional(self.max_token_words.map(|v| v.to_string())),
            self.reserved,
            optional(self.pad_to.map(|v| v.to_string())),
            match self.tie_break {
                TieBreak::Bpeforge => String::new(),
                TieBreak::HuggingFace => format!(
                    ", tie_break='huggingface', initial_alphabet={}, limit_alphabet={}",
                    if self.initial_alphabet.is_empty() { "None".to_string() } else { format!("<{} bytes>", self.initial_alphabet.len()) },
                    optional(self.limit_alphabet.map(|v| v.to_string()))
                ),
            },
            match &self.parity {
                None => String::new(),
                Some(Parity { selection: Selection::Base, global_merges }) => format!(", parity='base', global_merges={global_merges}"),
                Some(Parity { selection: Selection::Window { size, alpha }, global_merges }) => {
                    format!(", parity='window', parity_window={size}, parity_alpha={alpha}, global_merges={global_merges}")
                }
            },
        )
    }
}

/// The tokenizer a recipe extends: its ranks, special tokens and `n_vocab`, read
/// from a `bpeforge.Tokenizer` (or any object with those attributes).
#[derive(FromPyObject)]
pub(super) struct Base {
    #[pyo3(attribute("mergeable_ranks"))]
    ranks: std::collections::HashMap<Vec<u8>, u32>,
    #[pyo3(attribute("special_tokens"))]
    special_tokens: std::collections::HashMap<String, u32>,
    #[pyo3(attribute("n_vocab"))]
    n_vocab: usize,
}

impl Base {
    /// The base's ranks, as `(bytes, id)`.
    pub(super) fn ranks(&self) -> Vec<(Vec<u8>, u32)> {
        self.ranks.iter().map(|(token, &id)| (token.clone(), id)).collect()
    }

    /// The id of the first new token: the base's `n_vocab`, above all its ids.
    pub(super) fn first_id(&self) -> u32 {
        self.n_vocab as u32
    }
}

/// Refuses, as an `OptionError` naming the option, span counts not split by `pattern` (the
/// option `option`) or not counted with `doc_cap`.
fn check_counts(py: Python<'_>, option: &str, made: &PySpanCounts, pattern: &str, doc_cap: Option<u64>) -> PyResult<()> {
    if made.pattern != pattern {
        return Err(option_error(py, option, format!(
            "the span counts were split by {}, the training asks for {}: counts train only with the pattern they were made with",
            pattern_shown(&made.pattern),
            pattern_shown(pattern)
        )));
    }
    let counted_cap = made.doc_cap();
    if counted_cap != doc_cap {
        let said = |cap: Option<u64>| cap.map_or("whole documents".to_string(), |n| format!("documents cropped to {n} characters"));
        return Err(option_error(py, "doc_cap", format!(
            "the span counts were counted from {}, the training asks for {}: counts train only with the doc_cap they were made with",
            said(counted_cap),
            said(doc_cap)
        )));
    }
    Ok(())
}

/// The base of a `base` argument: a tokenizer (or any object with its attributes), or a TypeError.
pub(super) fn base_arg(base: &Bound<'_, PyAny>) -> PyResult<Base> {
    base.extract::<Base>().map_err(|_| {
        PyTypeError::new_err(format!("the base must be a bpeforge tokenizer, got {} (load it first, e.g. Tokenizer.load)", type_name(base)))
    })
}

/// A recipe made concrete for what it learns from: the merge loop's options and the ranks asked.
pub(super) struct Plan {
    pub splitter: Splitter,
    pub options: LearnOptions,
    /// The ranks the training should end with: the single bytes (or the base's) and the new ones.
    pub ranks_asked: usize,
    /// The superword stage, if the recipe has one.
    pub superword: Option<SuperwordPlan>,
    /// The superword stage's pattern, which the trained tokenizer splits by, if there is one.
    pub superword_splitter: Option<Splitter>,
    /// Where the special tokens go with HuggingFace's layout (first, at ids 0..n), `None` for
    /// bpeforge's (after the ranks, numbered by the caller).
    pub specials_first: Option<u32>,
    /// Parity-aware training's options (but the target ratios, which come with the languages),
    /// if the recipe asks for it.
    pub parity: Option<ParityOptions>,
}

/// The superword stage of a plan: the ranks the first stage trains, and the superword pattern.
pub(super) struct SuperwordPlan {
    pub first_ranks: usize,
    pub splitter: Splitter,
}

impl Recipe {
    /// Whether the recipe trains parity-aware (from one set of span counts per language).
    pub(super) fn has_parity(&self) -> bool {
        self.parity.is_some()
    }

    /// Each document is cropped to this many characters, if set.
    pub(super) fn doc_cap_chars(&self) -> Option<u64> {
        self.doc_cap
    }

    /// The recipe made with the arguments of `Trainer`'s own methods (rustbpe's shape): no
    /// special tokens, `vocab_size` counting the ranks alone.
    pub(super) fn of_ranks(splitter: Splitter, vocab_size: usize, min_frequency: u64, max_token_length: Option<usize>, doc_cap: Option<u64>) -> Self {
        Recipe {
            vocab_size,
            splitter,
            special_tokens: Vec::new(),
            min_frequency,
            max_token_length,
            max_token_chars: None,
            doc_cap,
            max_token_words: None,
            superword: None,
            reserved: 0,
            pad_to: None,
            tie_break: TieBreak::Bpeforge,
            initial_alphabet: Vec::new(),
            limit_alphabet: None,
            parity: None,
        }
    }
    /// Refuses, as an `OptionError` naming the option, a base this recipe cannot extend: one
    /// whose special tokens are not the recipe's (an extension keeps them, with their ids), or
    /// with as many ids as the recipe's `vocab_size` or more (`asked`: the size as given). The
    /// split pattern may differ: the new texts are split by the recipe's, and each span starts
    /// as the base encodes it.
    fn check_base(&self, py: Python<'_>, base: &Base, asked: &str) -> PyResult<()> {
        if self.pad_to.is_some() {
            return Err(option_error(py, "pad_vocab_to_multiple_of", "an extension keeps the base's special tokens: it cannot pad the vocabulary".into()));
        }
        let mut names: Vec<(&u32, &String)> = base.special_tokens.iter().map(|(name, id)| (id, name)).collect();
        names.sort();
        if names.iter().map(|(_, name)| name.as_str()).ne(self.special_tokens.iter().map(String::as_str)) {
            let names: Vec<&String> = names.iter().map(|(_, name)| *name).collect();
            return Err(option_error(py, "special_tokens", format!(
                "the base tokenizer's special tokens are {names:?}, the recipe's {:?}: an extension keeps the base's",
                self.special_tokens
            )));
        }
        if !(base.n_vocab..=MAX_TOKEN_ID).contains(&self.vocab_size) {
            return Err(option_error(py, "vocab_size", format!(
                "vocab_size must be at least the base's {} ids (new tokens are numbered after them, special tokens included) \
                 and at most {MAX_TOKEN_ID}, got {asked}",
                base.n_vocab
            )));
        }
        Ok(())
    }

    /// The plan of this recipe learning from `counts` (span counts, if that is what it learns
    /// from) and extending `base` (if any): each is checked to go with the recipe (counts made
    /// with its pattern and `doc_cap`, a base with its pattern, special tokens and fewer ids
    /// than its `vocab_size`), and the mixed counts' `min_frequency` read in occurrences of the
    /// mixed corpus (`bpeforge._mixing.min_count`). A mismatch raises `OptionError` naming the
    /// option.
    pub(super) fn plan(
        &self,
        py: Python<'_>,
        counts: Option<&Bound<'_, PySpanCounts>>,
        languages: &[Bound<'_, PySpanCounts>],
        superword_counts: Option<&Bound<'_, PySpanCounts>>,
        base: Option<&Base>,
    ) -> PyResult<Plan> {
        let mut min_frequency = self.min_frequency;
        if let (Some(made), Some(superword)) = (superword_counts, &self.superword) {
            check_counts(py, "superword_pattern", made.get(), superword.splitter.pattern(), self.doc_cap)?;
        }
        if let Some(counts) = counts {
            check_counts(py, "pattern", counts.get(), self.pattern(), self.doc_cap)?;
            min_frequency = py.import("bpeforge._mixing")?.getattr("min_count")?.call1((counts, self.min_frequency))?.extract()?;
        }
        // Each language's counts are its own (min_frequency counts a pair in one language).
        for counts in languages {
            check_counts(py, "pattern", counts.get(), self.pattern(), self.doc_cap)?;
        }
        let ranks_asked = match base {
            None => self.vocab_size.saturating_sub(self.special_tokens.len()),
            Some(_) if self.tie_break == TieBreak::HuggingFace => {
                return Err(option_error(py, "tie_break", "tie_break='huggingface' trains from the single bytes only: \
                     an extension keeps the base's tokens and ids, which HuggingFace's layout would renumber".into()));
            }
            Some(base) => {
                self.check_base(py, base, &self.vocab_size.to_string())?;
                base.ranks.len() + (self.vocab_size - base.n_vocab)
            }
        };
        let alphabet = match self.tie_break {
            TieBreak::Bpeforge => AlphabetRule::Bytes,
            TieBreak::HuggingFace => AlphabetRule::ByteLevel { initial: self.initial_alphabet.clone(), limit: self.limit_alphabet },
        };
        let options = LearnOptions {
            vocab_size: ranks_asked,
            min_frequency,
            max_token_length: self.max_token_length,
            max_token_words: self.max_token_words,
            max_token_chars: self.max_token_chars,
            alphabet,
        };
        let specials_first = (self.tie_break == TieBreak::HuggingFace).then_some(self.special_tokens.len() as u32);
        let superword = self.superword.as_ref().map(|s| SuperwordPlan { first_ranks: s.transition - self.special_tokens.len(), splitter: s.splitter.clone() });
        let superword_splitter = superword.as_ref().map(|s| s.splitter.clone());
        let parity = self.parity.as_ref().map(|p| ParityOptions {
            selection: p.selection,
            global_merges: p.global_merges,
            ratio: None,
            // HuggingFace's layout trains as its ParityBpeTrainer does, ties included.
            ties: if self.tie_break == TieBreak::HuggingFace { ParityTies::GreatestSpelling } else { ParityTies::SmallestIds },
        });
        Ok(Plan { splitter: self.splitter.clone(), options, ranks_asked, superword, superword_splitter, specials_first, parity })
    }
}
