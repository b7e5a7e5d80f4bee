//! Arrow string arrays as items of `train_from_iterator`: any object with the Arrow PyCapsule
//! interface's `__arrow_c_array__` (a pyarrow Array, a chunk of a ChunkedArray, ...). The C
//! structs are read by [`crate::readers::arrow`]; this file only deals with the capsules.

use std::ffi::c_void;
use std::ptr::NonNull;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::readers::arrow::{append_strings, ArrowArray, ArrowSchema, ImportError};
use crate::count::TextSink;

/// Whether `item` offers `__arrow_c_array__`.
pub(super) fn is_array(item: &Bound<'_, PyAny>) -> PyResult<bool> {
    item.hasattr(intern!(item.py(), "__arrow_c_array__"))
}

/// Whether `item` offers only `__arrow_c_stream__` (a ChunkedArray, a Table): worth a hint.
pub(super) fn is_stream(item: &Bound<'_, PyAny>) -> bool {
    item.hasattr(intern!(item.py(), "__arrow_c_stream__")).unwrap_or(false)
}

/// The two pointers, to read without the GIL. They point into the capsules, which the caller
/// holds (so the producer cannot release them) until the read is over.
struct ExportedArray(NonNull<c_void>, NonNull<c_void>);

// SAFETY: the structs and their buffers are immutable while the capsules are held, and reading
// them needs no particular thread.
unsafe impl Send for ExportedArray {}

/// Appends the non-null strings of the Arrow array `item` to `sink` (without the GIL); nulls are
/// skipped. Errors name the array as `what` says ("item 3 of the iterator").
pub(super) fn push_array(item: &Bound<'_, PyAny>, what: &str, sink: &mut (impl TextSink + Send)) -> PyResult<()> {
    let py = item.py();
    let exported = item.call_method0(intern!(py, "__arrow_c_array__"))?;
    let not_capsules = || {
        PyTypeError::new_err(format!(
            "{what} has an __arrow_c_array__() that did not return a \
             pair of PyCapsules named \"arrow_schema\" and \"arrow_array\""
        ))
    };
    let pair = exported.cast::<PyTuple>().map_err(|_| not_capsules())?;
    if pair.len() != 2 {
        return Err(not_capsules());
    }
    // Keep both capsules alive (bound here) until the strings are copied: their destructors
    // call the structs' release callbacks. We never move the structs nor release them.
    let (schema, array) = (pair.get_item(0)?, pair.get_item(1)?);
    let schema = schema.cast::<PyCapsule>().map_err(|_| not_capsules())?;
    let array = array.cast::<PyCapsule>().map_err(|_| not_capsules())?;
    let structs = ExportedArray(
        schema.pointer_checked(Some(c"arrow_schema")).map_err(|_| not_capsules())?,
        array.pointer_checked(Some(c"arrow_array")).map_err(|_| not_capsules())?,
    );
    if !structs.0.cast::<ArrowSchema>().is_aligned() || !structs.1.cast::<ArrowArray>().is_aligned() {
        return Err(PyValueError::new_err(format!(
            "{what} exported misaligned Arrow C structs"
        )));
    }
    let read = py.detach(move || {
        let structs = structs;
        // SAFETY: capsules named arrow_schema / arrow_array hold an ArrowSchema / ArrowArray
        // (the PyCapsule interface), alive while we hold the capsules (until this function
        // returns); `append_strings` checks everything the C Data Interface lets it check.
        let read = unsafe {
            let schema = structs.0.cast::<ArrowSchema>().as_ref();
            let array = structs.1.cast::<ArrowArray>().as_ref();
            append_strings(schema, array, sink)
        };
        super::shutdown::safe_point(); // before taking the GIL again (see shutdown.rs)
        read
    });
    match read {
        Ok(_) => Ok(()),
        Err(ImportError::Unsupported(m)) => {
            Err(PyTypeError::new_err(format!("{what} is {m}")))
        }
        Err(ImportError::Malformed(m)) => Err(PyValueError::new_err(format!("{what} is {m}"))),
    }
}
