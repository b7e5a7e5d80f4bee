//! Reading a HuggingFace `tokenizer.json` for `bpeforge.huggingface.from_huggingface`: the
//! model's vocabulary and merges, which hold millions of entries, are read straight into compact
//! arrays (the tokens' bytes back to back) and checked here; only the file's small parts (the
//! pre-tokenizer, the decoder, the added tokens, the model's flags) become Python objects, which
//! the Python side checks. The ranks come back as one dict of bytes to id.
//!
//! The file is parsed once by serde_json, with its recursion limit on (JSON nested more than 128
//! deep is refused as nested too deeply, as Python's `RecursionError` was). The vocabulary and
//! merges are read as Python's `json` would give them to the Python checks this replaces: a key
//! given twice keeps its first place and its last value, a merge is `"a b"` or `["a", "b"]`, an
//! id an integer (not a bool or a float). The checks, their order and their messages are those
//! of that Python code (tests/huggingface_reference.py keeps it, and the tests compare both).

use std::borrow::Cow;
use std::fmt;

use hashbrown::HashTable;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyString};
use ahash::RandomState;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::memory::try_reserve;
use crate::vocab::{check_ranks, shown, MAX_RANK};
use crate::Error;

/// What out of memory says reading was doing.
const READING: &str = "reading the tokenizer.json's vocabulary and merges";

// ------------------------------------------------------------------------------ byte-level alphabet

/// Whether GPT-2's byte-level alphabet spells byte `b` as the character of the same code point
/// (the printable Latin-1 bytes); the others are spelled from U+0100 on, in byte order.
const fn printable(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The bytes spelled U+0100, U+0101, ... in the byte-level alphabet.
const SHIFTED: [u8; 68] = {
    let mut table = [0u8; 68];
    let (mut b, mut k) = (0usize, 0usize);
    while b < 256 {
        if !printable(b as u8) {
            table[k] = b as u8;
            k += 1;
        }
        b += 1;
    }
    table
};

/// The byte that character `c` stands for in the byte-level alphabet, if it is one of it.
fn byte_of(c: char) -> Option<u8> {
    let code = c as u32;
    if code < 256 && printable(code as u8) {
        Some(code as u8)
    } else {
        SHIFTED.get(code.checked_sub(256)? as usize).copied()
    }
}

/// `token` spelled in the byte-level alphabet (bpeforge.huggingface.byte_level).
fn byte_level(token: &[u8]) -> String {
    token
        .iter()
        .map(|&b| match printable(b) {
            true => b as char,
            false => char::from_u32(256 + SHIFTED.iter().position(|&s| s == b).unwrap_or(0) as u32).unwrap_or('?'),
        })
        .collect()
}

/// Appends the bytes `text` spells in the byte-level alphabet to `out`; false (and `out` as it
/// was) if a character of it is not in the alphabet.
fn push_byte_level(text: &str, out: &mut Vec<u8>) -> Result<bool, Error> {
    try_reserve(out, text.len(), READING)?; // (a character is one byte here, or two or more in UTF-8)
    let start = out.len();
    for c in text.chars() {
        match byte_of(c) {
            Some(b) => out.push(b),
            None => {
                out.truncate(start);
                return Ok(false);
            }
        }
    }
    Ok(true)
}

// ------------------------------------------------------------------------------ what is read

/// An id of the vocabulary as Python's `json` reads it: an int (kept exactly up to 2^64), or
/// anything else.
#[derive(Clone, Copy, PartialEq)]
enum Id {
    Int(i128),
    NotInt,
}

/// The model's vocabulary: its entries in the order of their first place in the file, each
/// with its last value (a Python dict's order), the tokens' bytes back to back.
#[derive(Default)]
struct Vocab {
    /// The bytes each entry's text spells in the byte-level alphabet, back to back (nothing for
    /// a text outside the alphabet).
    bytes: Vec<u8>,
    ends: Vec<usize>,
    ids: Vec<i64>,
    /// The ids that are no i64 (rare): a larger int, or no int at all.
    odd_ids: FxHashMap<u32, Id>,
    /// The texts outside the byte-level alphabet, by entry.
    unspelled: FxHashMap<u32, String>,
    unspelled_by_text: FxHashMap<String, u32>,
    /// The entries spelled in the alphabet, by their bytes (hashed with random keys: a file
    /// cannot aim at collisions).
    index: HashTable<u32>,
    hasher: RandomState,
}

impl Vocab {
    fn token(&self, entry: u32) -> &[u8] {
        let e = entry as usize;
        &self.bytes[if e == 0 { 0 } else { self.ends[e - 1] }..self.ends[e]]
    }

    fn id(&self, entry: u32) -> Id {
        match self.odd_ids.get(&entry) {
            Some(id) => *id,
            None => Id::Int(self.ids[entry as usize] as i128),
        }
    }

    fn set_id(&mut self, entry: u32, id: Id) {
        match id {
            Id::Int(i) if i64::try_from(i).is_ok() => {
                self.ids[entry as usize] = i as i64;
                self.odd_ids.remove(&entry);
            }
            _ => {
                self.odd_ids.insert(entry, id);
            }
        }
    }

    /// The entry's text as the file spells it.
    fn text(&self, entry: u32) -> String {
        match self.unspelled.get(&entry) {
            Some(text) => text.clone(),
            None => byte_level(self.token(entry)),
        }
    }

    fn find(&self, token: &[u8]) -> Option<u32> {
        self.index.find(self.hasher.hash_one(token), |&j| self.token(j) == token).copied()
    }

    /// Adds the entry `text: id`, or gives an entry already read under that text its new id.
    /// [`Error::OutOfMemory`] if the arrays cannot grow (Rust would end the process instead).
    fn add(&mut self, text: &str, id: Id) -> Result<(), Error> {
        let start = self.bytes.len();
        let entry = self.ends.len() as u32;
        try_reserve(&mut self.ends, 1, READING)?;
        try_reserve(&mut self.ids, 1, READING)?;
        if push_byte_level(text, &mut self.bytes)? {
            let (bytes, ends, hasher) = (&self.bytes, &self.ends, &self.hasher);
            let token = &bytes[start..];
            let hash = hasher.hash_one(token);
            let slice = |j: u32| &bytes[if j == 0 { 0 } else { ends[j as usize - 1] }..ends[j as usize]];
            if let Some(&first) = self.index.find(hash, |&j| slice(j) == token) {
                self.bytes.truncate(start);
                self.set_id(first, id);
                return Ok(());
            }
            let slots = self.index.capacity().max(1) * 2;
            self.index.try_reserve(1, |&j| hasher.hash_one(slice(j))).map_err(|_| Error::OutOfMemory { stage: READING, bytes: slots * 5 })?;
            self.index.insert_unique(hash, entry, |&j| hasher.hash_one(slice(j)));
        } else {
            if let Some(&first) = self.unspelled_by_text.get(text) {
                self.set_id(first, id);
                return Ok(());
            }
            self.unspelled.insert(entry, text.to_owned());
            self.unspelled_by_text.insert(text.to_owned(), entry);
        }
        self.ends.push(self.bytes.len());
        self.ids.push(0);
        self.set_id(entry, id);
        Ok(())
    }
}

/// The model's merges, each two tokens of the byte-level alphabet, up to the first one that is
/// not (which the checks stop at).
#[derive(Default)]
struct Merges {
    /// Each merge's two tokens back to back (so the token it makes is one slice).
    bytes: Vec<u8>,
    middles: Vec<usize>,
    ends: Vec<usize>,
    /// Whether the merge was written as a list `["a", "b"]` rather than as `"a b"`.
    listed: Vec<bool>,
    /// The first merge that is not two byte-level tokens: its place and its JSON (a Python object).
    bad: Option<(usize, Py<PyAny>)>,
}

impl Merges {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn parts(&self, i: usize) -> (&[u8], &[u8]) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        (&self.bytes[start..self.middles[i]], &self.bytes[self.middles[i]..self.ends[i]])
    }

    fn made(&self, i: usize) -> &[u8] {
        &self.bytes[if i == 0 { 0 } else { self.ends[i - 1] }..self.ends[i]]
    }

    /// Whether the merge is two byte-level tokens (then pushed); [`Error::OutOfMemory`] if the
    /// arrays cannot grow (Rust would end the process instead).
    fn push(&mut self, left: &str, right: &str, listed: bool) -> Result<bool, Error> {
        try_reserve(&mut self.middles, 1, READING)?;
        try_reserve(&mut self.ends, 1, READING)?;
        try_reserve(&mut self.listed, 1, READING)?;
        let start = self.bytes.len();
        if !push_byte_level(left, &mut self.bytes)? {
            return Ok(false);
        }
        let middle = self.bytes.len();
        if !push_byte_level(right, &mut self.bytes)? {
            self.bytes.truncate(start);
            return Ok(false);
        }
        self.middles.push(middle);
        self.ends.push(self.bytes.len());
        self.listed.push(listed);
        Ok(true)
    }
}

/// A part of the model read here: absent, not of the shape the checks need, or read.
enum Part<T> {
    Absent,
    Other,
    Read(T),
}

impl<T> Default for Part<T> {
    fn default() -> Self {
        Part::Absent
    }
}

/// The vocabulary and merges of a `tokenizer.json`'s model, read by `read_tokenizer_json`; the
/// Python side asks for their shape, then for the ranks (`ranks`), which are checked here.
#[pyclass(module = "bpeforge._core")]
pub struct HuggingfaceModel {
    vocab: Part<Vocab>,
    merges: Part<Merges>,
}

// ------------------------------------------------------------------------------ parsing

/// Values of the small parts of the file, made as Python's `json` makes them (a key given twice
/// keeps its last value).
#[derive(Clone, Copy)]
struct PyValue<'py>(Python<'py>);

impl<'de, 'py> DeserializeSeed<'de> for PyValue<'py> {
    type Value = Bound<'py, PyAny>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// A Python error met while reading (making an object: MemoryError), kept for
/// `read_tokenizer_json` to raise once serde_json has unwound.
fn py_err<E: de::Error>(py: Python<'_>, e: PyErr) -> E {
    let message = e.to_string();
    e.restore(py);
    E::custom(message)
}

impl<'de, 'py> Visitor<'de> for PyValue<'py> {
    type Value = Bound<'py, PyAny>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(PyBool::new(self.0, v).to_owned().into_any())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        let Ok(v) = v.into_pyobject(self.0);
        Ok(v.into_any())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        let Ok(v) = v.into_pyobject(self.0);
        Ok(v.into_any())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(PyFloat::new(self.0, v).into_any())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(PyString::new(self.0, v).into_any())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.0.None().into_bound(self.0))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let list = PyList::empty(self.0);
        while let Some(item) = seq.next_element_seed(self)? {
            list.append(item).map_err(|e| py_err(self.0, e))?;
        }
        Ok(list.into_any())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let dict = PyDict::new(self.0);
        while let Some(key) = map.next_key_seed(Text)? {
            let value = map.next_value_seed(self)?;
            dict.set_item(&*key, value).map_err(|e| py_err(self.0, e))?;
        }
        Ok(dict.into_any())
    }
}

/// A JSON string, borrowed from the file where it holds no escape.
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A value read and dropped, nested arrays and objects through the deserializer's recursion
/// limit (serde's `IgnoredAny` skips them without it).
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Skip)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
}

/// Implements the visits of values a seed does not take as `Skip` does, giving `$other`.
macro_rules! skip_others {
    ($other:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
}

/// An id of the vocabulary.
struct IdSeed;

impl<'de> DeserializeSeed<'de> for IdSeed {
    type Value = Id;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Id, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdSeed {
    type Value = Id;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an id")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Id, E> {
        Ok(Id::NotInt)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
        Ok(Id::Int(v as i128))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        Ok(Id::Int(v as i128))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Id, E> {
        Ok(Id::NotInt)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Id, E> {
        Ok(Id::NotInt)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
        Ok(Id::NotInt)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Id, A::Error> {
        Skip.visit_seq(seq).map(|_| Id::NotInt)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Id, A::Error> {
        Skip.visit_map(map).map(|_| Id::NotInt)
    }
}

/// The model's `"vocab"`: a mapping read into a [`Vocab`], anything else skipped.
struct VocabSeed;

impl<'de> DeserializeSeed<'de> for VocabSeed {
    type Value = Part<Vocab>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for VocabSeed {
    type Value = Part<Vocab>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a vocabulary")
    }
    skip_others!(Part::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Skip.visit_seq(seq).map(|_| Part::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut vocab = Vocab::default();
        while let Some(text) = map.next_key_seed(Text)? {
            let id = map.next_value_seed(IdSeed)?;
            vocab.add(&text, id).map_err(|e| <A::Error as de::Error>::custom(e.to_string()))?;
        }
        Ok(Part::Read(vocab))
    }
}

/// One element of a merge written as a list: a string, or any other value (as Python's).
enum Element<'de, 'py> {
    Text(Cow<'de, str>),
    Other(Bound<'py, PyAny>),
}

struct ElementSeed<'py>(Python<'py>);

impl<'de, 'py> DeserializeSeed<'de> for ElementSeed<'py> {
    type Value = Element<'de, 'py>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'py> Visitor<'de> for ElementSeed<'py> {
    type Value = Element<'de, 'py>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Element::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Element::Text(Cow::Owned(v.to_owned())))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        PyValue(self.0).visit_bool(v).map(Element::Other)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        PyValue(self.0).visit_i64(v).map(Element::Other)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        PyValue(self.0).visit_u64(v).map(Element::Other)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        PyValue(self.0).visit_f64(v).map(Element::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        PyValue(self.0).visit_unit().map(Element::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        PyValue(self.0).visit_seq(seq).map(Element::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        PyValue(self.0).visit_map(map).map(Element::Other)
    }
}

impl<'de, 'py> Element<'de, 'py> {
    fn into_py(self, py: Python<'py>) -> Bound<'py, PyAny> {
        match self {
            Element::Text(text) => PyString::new(py, &text).into_any(),
            Element::Other(value) => value,
        }
    }
}

/// One merge, pushed onto `merges` if it is two byte-level tokens; else kept as the first bad
/// one. After a bad one, the merges are only read.
struct MergeSeed<'a, 'py> {
    py: Python<'py>,
    merges: &'a mut Merges,
    place: usize,
}

impl<'de, 'a, 'py> DeserializeSeed<'de> for MergeSeed<'a, 'py> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.merges.bad.is_some() {
            return Skip.deserialize(d);
        }
        d.deserialize_any(self)
    }
}

impl<'a, 'py> MergeSeed<'a, 'py> {
    fn bad(self, value: Bound<'py, PyAny>) {
        self.merges.bad = Some((self.place, value.unbind()));
    }
}

impl<'de, 'a, 'py> Visitor<'de> for MergeSeed<'a, 'py> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a merge")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        let mut parts = v.split(' ');
        if let (Some(left), Some(right), None) = (parts.next(), parts.next(), parts.next()) {
            if self.merges.push(left, right, false).map_err(|e| E::custom(e.to_string()))? {
                return Ok(());
            }
        }
        let value = PyString::new(self.py, v).into_any();
        self.bad(value);
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut elements = Vec::new();
        while let Some(element) = seq.next_element_seed(ElementSeed(self.py))? {
            elements.push(element);
        }
        if let [Element::Text(left), Element::Text(right)] = &elements[..] {
            if self.merges.push(left, right, true).map_err(|e| <A::Error as de::Error>::custom(e.to_string()))? {
                return Ok(());
            }
        }
        let list = PyList::new(self.py, elements.into_iter().map(|e| e.into_py(self.py))).map_err(|e| py_err(self.py, e))?;
        self.bad(list.into_any());
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        let value = PyValue(self.py).visit_bool(v)?;
        self.bad(value);
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        let value = PyValue(self.py).visit_i64(v)?;
        self.bad(value);
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        let value = PyValue(self.py).visit_u64(v)?;
        self.bad(value);
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        let value = PyValue(self.py).visit_f64(v)?;
        self.bad(value);
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        let value = PyValue(self.py).visit_unit()?;
        self.bad(value);
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let value = PyValue(self.py).visit_map(map)?;
        self.bad(value);
        Ok(())
    }
}

/// The model's `"merges"`: a list read into [`Merges`], anything else skipped.
struct MergesSeed<'py>(Python<'py>);

impl<'de, 'py> DeserializeSeed<'de> for MergesSeed<'py> {
    type Value = Part<Merges>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'py> Visitor<'de> for MergesSeed<'py> {
    type Value = Part<Merges>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("merges")
    }
    skip_others!(Part::Other);
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Skip.visit_map(map).map(|_| Part::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut merges = Merges::default();
        let mut place = 0;
        while seq.next_element_seed(MergeSeed { py: self.0, merges: &mut merges, place })?.is_some() {
            place += 1;
        }
        Ok(Part::Read(merges))
    }
}

/// The file's `"model"`: an object becomes its small keys as a Python dict and the vocabulary
/// and merges read here; anything else, its Python value.
struct ModelSeed<'py>(Python<'py>);

type Model<'py> = (Bound<'py, PyAny>, Option<HuggingfaceModel>);

impl<'de, 'py> DeserializeSeed<'de> for ModelSeed<'py> {
    type Value = Model<'py>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'py> Visitor<'de> for ModelSeed<'py> {
    type Value = Model<'py>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a model")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok((PyValue(self.0).visit_bool(v)?, None))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok((PyValue(self.0).visit_i64(v)?, None))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok((PyValue(self.0).visit_u64(v)?, None))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok((PyValue(self.0).visit_f64(v)?, None))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((PyValue(self.0).visit_str(v)?, None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok((PyValue(self.0).visit_unit()?, None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Ok((PyValue(self.0).visit_seq(seq)?, None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let small = PyDict::new(self.0);
        let mut model = HuggingfaceModel { vocab: Part::Absent, merges: Part::Absent };
        while let Some(key) = map.next_key_seed(Text)? {
            match &*key {
                "vocab" => model.vocab = map.next_value_seed(VocabSeed)?,
                "merges" => model.merges = map.next_value_seed(MergesSeed(self.0))?,
                _ => {
                    let value = map.next_value_seed(PyValue(self.0))?;
                    small.set_item(&*key, value).map_err(|e| py_err(self.0, e))?;
                }
            }
        }
        Ok((small.into_any(), Some(model)))
    }
}

/// The whole file: an object becomes a Python dict of its small parts (the model's own small
/// keys under `"model"`) and the model read here; anything else, None.
struct FileSeed<'py>(Python<'py>);

type File<'py> = (Option<Bound<'py, PyDict>>, Option<HuggingfaceModel>);

impl<'de, 'py> DeserializeSeed<'de> for FileSeed<'py> {
    type Value = File<'py>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'py> Visitor<'de> for FileSeed<'py> {
    type Value = File<'py>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a tokenizer.json")
    }
    skip_others!((None, None));
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Skip.visit_seq(seq).map(|_| (None, None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let data = PyDict::new(self.0);
        let mut model = None;
        while let Some(key) = map.next_key_seed(Text)? {
            if key == "model" {
                let (value, read) = map.next_value_seed(ModelSeed(self.0))?;
                data.set_item("model", value).map_err(|e| py_err(self.0, e))?;
                model = read;
            } else {
                let value = map.next_value_seed(PyValue(self.0))?;
                data.set_item(&*key, value).map_err(|e| py_err(self.0, e))?;
            }
        }
        Ok((Some(data), model))
    }
}

/// Reads the text of a `tokenizer.json` (`data`, its bytes): `(the file as a dict of its small
/// parts, or None if it is no JSON object; the model's vocabulary and merges, or None if it has
/// no "model" object; None)`, or, for a file that is not JSON, `(None, None, (kind, detail))`
/// with kind "nested" (nested deeper than 128) or "syntax" (serde_json's message as detail).
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn read_tokenizer_json<'py>(
    py: Python<'py>,
    data: &[u8],
) -> PyResult<(Option<Bound<'py, PyDict>>, Option<HuggingfaceModel>, Option<(&'static str, String)>)> {
    let mut de = serde_json::Deserializer::from_slice(data);
    let read = FileSeed(py).deserialize(&mut de).and_then(|file| de.end().map(|_| file));
    match read {
        Ok((data, model)) => Ok((data, model, None)),
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => Ok((None, None, Some(("nested", e.to_string())))),
        Err(e) if e.is_syntax() || e.is_eof() || e.is_io() => Ok((None, None, Some(("syntax", e.to_string())))),
        // The arrays could not grow (see `Vocab::add`): serde's message, less its " at line ...".
        Err(e) if e.to_string().starts_with("out of memory") => {
            let message = e.to_string();
            let end = message.rfind(" at line ").unwrap_or(message.len());
            Err(PyMemoryError::new_err(message[..end].to_string()))
        }
        // What a visitor raised (a Python error making an object, such as MemoryError).
        Err(e) => Err(PyErr::take(py).unwrap_or_else(|| PyValueError::new_err(e.to_string()))),
    }
}

// ------------------------------------------------------------------------------ checks

/// Why the ranks cannot be read, as the Python checks said it (formatted with Python's reprs).
enum Refusal {
    NotMapping,
    OtherSpecialsId { entry: u32 },
    NotSpelled { entry: u32 },
    MissingByte { byte: u8, missing: usize },
    Ranks(String),
    MergeNotTwoTokens,
    MergeNotInVocabulary { merge: usize },
    MergeOrder { merge: usize, made: u32, last: u32 },
    Unmade { entry: u32, rank: u32, count: usize },
    NotReached { entry: u32, parts: usize },
}

fn id_text(id: Id) -> String {
    match id {
        Id::Int(i) => i.to_string(),
        Id::NotInt => "?".into(),
    }
}

#[pymethods]
impl HuggingfaceModel {
    /// Whether the model's `"vocab"` is a mapping of token to integer id.
    #[getter]
    fn vocab_is_mapping(&self) -> bool {
        match &self.vocab {
            Part::Read(vocab) => !vocab.odd_ids.values().any(|id| *id == Id::NotInt),
            _ => false,
        }
    }

    /// Whether the model's `"merges"` is a list.
    #[getter]
    fn merges_is_list(&self) -> bool {
        matches!(self.merges, Part::Read(_))
    }

    /// The ranks (a dict of token bytes to id) of the vocabulary's entries other than the
    /// `specials` (a dict of name to id), once checked as `from_huggingface` documents: each
    /// entry spelled in the byte-level alphabet or a special token at its id; every single
    /// byte; tiktoken's model of ids (`check_ranks`); each merge two tokens making a token, in
    /// the order of the ids made; every longer token made by a merge; and unless
    /// `ignore_merges`, each token's bytes merged back into it by the merges. ValueError naming
    /// the first problem otherwise. The vocabulary and merges are let go of as they are used.
    fn ranks<'py>(&mut self, py: Python<'py>, specials: FxHashMap<String, i128>, ignore_merges: bool) -> PyResult<Bound<'py, PyDict>> {
        let (Part::Read(vocab), Part::Read(merges)) = (std::mem::take(&mut self.vocab), std::mem::take(&mut self.merges)) else {
            return Err(PyValueError::new_err("the vocabulary and merges were not read, or were already taken"));
        };
        let checked = py.detach(|| checked_ranks(&vocab, &merges, &specials, ignore_merges));
        let kept = match checked {
            Ok(kept) => kept,
            Err(refusal) => return Err(PyValueError::new_err(refusal_message(py, refusal, &vocab, &merges)?)),
        };
        drop(merges);
        let Vocab { bytes, ends, ids, .. } = vocab;
        let ranks = PyDict::new(py);
        for entry in kept {
            let e = entry as usize;
            let token = &bytes[if e == 0 { 0 } else { ends[e - 1] }..ends[e]];
            ranks.set_item(PyBytes::new(py, token), ids[e])?;
        }
        Ok(ranks)
    }
}

/// The entries of `vocab` that are ranks (in the vocabulary's order), once every check passes.
fn checked_ranks(vocab: &Vocab, merges: &Merges, specials: &FxHashMap<String, i128>, ignore_merges: bool) -> Result<Vec<u32>, Refusal> {
    let special_ids: FxHashSet<i128> = specials.values().copied().collect();
    let n = vocab.ends.len() as u32;
    let mut kept = Vec::with_capacity(n as usize);
    let mut is_rank = vec![false; n as usize];
    for entry in 0..n {
        let Id::Int(id) = vocab.id(entry) else { return Err(Refusal::NotMapping) };
        if special_ids.contains(&id) {
            if specials.get(&vocab.text(entry)) != Some(&id) {
                return Err(Refusal::OtherSpecialsId { entry });
            }
            continue;
        }
        if vocab.unspelled.contains_key(&entry) || vocab.token(entry).is_empty() {
            return Err(Refusal::NotSpelled { entry });
        }
        kept.push(entry);
        is_rank[entry as usize] = true;
    }
    let rank_of = |token: &[u8]| vocab.find(token).filter(|&j| is_rank[j as usize]).map(|j| vocab.ids[j as usize]);
    let missing: Vec<u8> = (0..=255u8).filter(|&b| rank_of(&[b]).is_none()).collect();
    if let Some(&byte) = missing.first() {
        return Err(Refusal::MissingByte { byte, missing: missing.len() });
    }
    // check_ranks as Python's `_core.check_ranks` runs it: a rank outside i64 or negative first.
    let mut tokens: Vec<(&[u8], u64)> = Vec::with_capacity(kept.len());
    for &entry in &kept {
        let token = vocab.token(entry);
        match vocab.id(entry) {
            Id::Int(id) if (0..=i64::MAX as i128).contains(&id) => tokens.push((token, id as u64)),
            id => {
                return Err(Refusal::Ranks(format!(
                    "invalid mergeable ranks: rank {} of {} is out of range: ranks must be non-negative and below {MAX_RANK}",
                    id_text(id),
                    shown(token)
                )))
            }
        }
    }
    check_ranks(&tokens).map_err(|e| Refusal::Ranks(e.to_string()))?;
    drop(tokens);
    // Ranks are now below 2^31.
    let rank_of = |token: &[u8]| rank_of(token).map(|r| r as u32);
    let stop = merges.bad.as_ref().map_or(merges.len(), |(place, _)| *place);
    let mut made_by = vec![[0u32; 3]; stop]; // (left, right, made) ranks of each merge
    let mut last: Option<u32> = None;
    let mut made_count = 0usize;
    for (i, slot) in made_by.iter_mut().enumerate() {
        let (left, right) = merges.parts(i);
        let (Some(made), Some(l), Some(r)) = (rank_of(merges.made(i)), rank_of(left), rank_of(right)) else {
            return Err(Refusal::MergeNotInVocabulary { merge: i });
        };
        if let Some(last) = last.filter(|&last| made < last) {
            return Err(Refusal::MergeOrder { merge: i, made, last });
        }
        made_count += usize::from(last != Some(made));
        last = Some(made);
        *slot = [l, r, made];
    }
    if merges.bad.is_some() {
        return Err(Refusal::MergeNotTwoTokens);
    }
    let longer = kept.iter().filter(|&&e| vocab.token(e).len() > 1).count();
    if made_count < longer {
        let made: FxHashSet<u32> = made_by.iter().map(|m| m[2]).collect();
        let unmade: Vec<u32> =
            kept.iter().copied().filter(|&e| vocab.token(e).len() > 1 && !made.contains(&(vocab.ids[e as usize] as u32))).collect();
        if let Some(&entry) = unmade.iter().min_by_key(|&&e| vocab.ids[e as usize]) {
            return Err(Refusal::Unmade { entry, rank: vocab.ids[entry as usize] as u32, count: unmade.len() });
        }
    }
    if !ignore_merges {
        let pair_hash = |l: u32, r: u32| vocab.hasher.hash_one((l, r));
        let mut priority: HashTable<u32> = HashTable::with_capacity(made_by.len());
        for (place, &[l, r, _]) in made_by.iter().enumerate() {
            let hash = pair_hash(l, r);
            if priority.find(hash, |&p| made_by[p as usize][..2] == [l, r]).is_none() {
                priority.insert_unique(hash, place as u32, |&p| pair_hash(made_by[p as usize][0], made_by[p as usize][1]));
            }
        }
        // (Every single byte is a rank: checked above.)
        let byte_rank: Vec<u32> = (0..=255u8).map(|b| rank_of(&[b]).unwrap_or(u32::MAX)).collect();
        let key = |a: u32, b: u32| priority.find(pair_hash(a, b), |&p| made_by[p as usize][..2] == [a, b]).map(|&p| (p, made_by[p as usize][2]));
        let mut merger = Merger::default();
        for &entry in &kept {
            let parts = merger.parts(vocab.token(entry), &byte_rank, &key);
            if parts != 1 {
                return Err(Refusal::NotReached { entry, parts });
            }
        }
    }
    Ok(kept)
}

/// HuggingFace's merge loop over one token (bpeforge.huggingface.merged with the merges' places
/// as keys): each byte a part, the two adjacent parts whose pair is listed first merged (the
/// leftmost of equals) until no pair is listed; parts are known by their ranks.
#[derive(Default)]
struct Merger {
    ends: Vec<usize>,
    prev: Vec<usize>,
    alive: Vec<bool>,
    rank: Vec<u32>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(u32, usize, usize, usize)>>,
}

impl Merger {
    /// How many parts `token` ends in.
    fn parts(&mut self, token: &[u8], byte_rank: &[u32], key: &impl Fn(u32, u32) -> Option<(u32, u32)>) -> usize {
        let n = token.len();
        if n < 2 {
            return 1;
        }
        self.ends.clear();
        self.ends.extend(1..=n);
        self.prev.clear();
        self.prev.extend((0..n).map(|i| i.wrapping_sub(1)));
        self.alive.clear();
        self.alive.resize(n, true);
        self.rank.clear();
        self.rank.extend(token.iter().map(|&b| byte_rank[b as usize]));
        self.heap.clear();
        for i in 0..n - 1 {
            if let Some((k, _)) = key(self.rank[i], self.rank[i + 1]) {
                self.heap.push(std::cmp::Reverse((k, i, i + 1, i + 2)));
            }
        }
        let mut parts = n;
        while let Some(std::cmp::Reverse((k, start, middle, end))) = self.heap.pop() {
            if !(self.alive[start] && self.alive[middle] && self.ends[start] == middle && self.ends[middle] == end) {
                continue; // one of the two parts was merged away since
            }
            let Some((_, made)) = key(self.rank[start], self.rank[middle]).filter(|&(place, _)| place == k) else {
                continue;
            };
            self.alive[middle] = false;
            self.ends[start] = end;
            self.rank[start] = made;
            parts -= 1;
            if end < n {
                self.prev[end] = start;
                let following = self.ends[end];
                if let Some((k2, _)) = key(made, self.rank[end]) {
                    self.heap.push(std::cmp::Reverse((k2, start, end, following)));
                }
            }
            if self.prev[start] != usize::MAX {
                let before = self.prev[start];
                if let Some((k2, _)) = key(self.rank[before], made) {
                    self.heap.push(std::cmp::Reverse((k2, before, start, end)));
                }
            }
        }
        parts
    }
}

fn repr(value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(value.repr()?.to_string())
}

fn str_repr(py: Python<'_>, text: &str) -> PyResult<String> {
    repr(&PyString::new(py, text).into_any())
}

/// The merge at `place` as the file wrote it (a Python str or list), in Python's repr.
fn merge_repr(py: Python<'_>, merges: &Merges, place: usize) -> PyResult<String> {
    if let Some((bad, value)) = &merges.bad {
        if *bad == place {
            return repr(value.bind(py));
        }
    }
    let (left, right) = merges.parts(place);
    let (left, right) = (byte_level(left), byte_level(right));
    if merges.listed[place] {
        repr(&PyList::new(py, [left, right])?.into_any())
    } else {
        str_repr(py, &format!("{left} {right}"))
    }
}

fn refusal_message(py: Python<'_>, refusal: Refusal, vocab: &Vocab, merges: &Merges) -> PyResult<String> {
    let text = |entry: u32| str_repr(py, &vocab.text(entry));
    Ok(match refusal {
        Refusal::OtherSpecialsId { entry } => format!(
            "vocabulary entry {} has id {}, the id of a special token of another name",
            text(entry)?,
            id_text(vocab.id(entry))
        ),
        Refusal::NotSpelled { entry } => {
            format!("vocabulary entry {} (id {}) is not spelled in the byte-level alphabet", text(entry)?, id_text(vocab.id(entry)))
        }
        Refusal::MissingByte { byte, missing } => {
            let shown = repr(&PyBytes::new(py, &[byte]).into_any())?;
            format!("the single byte {shown} is not in the vocabulary ({missing} bytes missing)")
        }
        Refusal::Ranks(message) => message,
        Refusal::NotMapping => "the model's \"vocab\" is not a mapping of token to integer id".into(),
        Refusal::MergeNotTwoTokens => {
            let place = merges.bad.as_ref().map_or(0, |(place, _)| *place);
            format!("merge {place} ({}) is not two byte-level tokens", merge_repr(py, merges, place)?)
        }
        Refusal::MergeNotInVocabulary { merge } => {
            format!("merge {merge} ({}) joins or makes a token that is not in the vocabulary", merge_repr(py, merges, merge)?)
        }
        Refusal::MergeOrder { merge, made, last } => format!(
            "merge {merge} ({}) makes id {made}, after a merge that made id {last}: the merges' order does not follow the ids \
             they make, which tiktoken's ranks need",
            merge_repr(py, merges, merge)?
        ),
        Refusal::Unmade { entry, rank, count } => format!(
            "vocabulary entry {} (id {rank}) is made by no merge: HF gives it only for a span that is that token whole, where \
             tiktoken also merges its parts inside longer spans{}",
            text(entry)?,
            if count > 1 { format!(" ({count} such entries)") } else { String::new() }
        ),
        Refusal::NotReached { entry, parts } => format!(
            "ignore_merges is off and the merges turn the token {} into {parts} parts, where tiktoken takes a span that is a token whole",
            text(entry)?
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alphabet_spells_each_byte_as_one_character_and_back() {
        let spelled = byte_level(&(0..=255u8).collect::<Vec<_>>());
        assert_eq!(spelled.chars().count(), 256);
        let mut back = Vec::new();
        assert!(push_byte_level(&spelled, &mut back));
        assert_eq!(back, (0..=255u8).collect::<Vec<_>>());
        assert_eq!(byte_level(b"a b\n"), "aĠbĊ");
        assert!(!push_byte_level("日", &mut back));
        assert_eq!(back.len(), 256);
    }
}
