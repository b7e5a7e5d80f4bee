"""Arrow string arrays as items of ``Trainer.train_from_iterator`` (through the Arrow PyCapsule
interface, ``__arrow_c_array__``): the same ranks and the same figures as the same texts given as
str. (The Arrow path of the corpus readers is tested in tests/inputs/, and of `bpeforge train`
in cli/test_train.py.)"""

from __future__ import annotations

import gc
import re
import struct
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
import strategies
from bpeforge import _core

pa = pytest.importorskip("pyarrow")

VOCAB = 256 + 60


def train(items, vocab_size=VOCAB, **kw):
    t = _core.Trainer(**kw)
    t.train_from_iterator(items, vocab_size)
    return t


def same_training(arrow_items, texts):
    """Trains on `arrow_items` and on `texts` (str); asserts identical ranks, merges and counts."""
    a, b = train(arrow_items), train([t for t in texts if t is not None])
    assert a.get_mergeable_ranks() == b.get_mergeable_ranks()
    assert a.get_merges() == b.get_merges()
    for key in ("texts", "bytes", "distinct_spans"):
        assert a.stats[key] == b.stats[key], key


maybe_texts = st.lists(st.one_of(strategies.texts(max_pieces=6), st.just(""), st.none()), max_size=30)
STRING_TYPES = [pa.string(), pa.large_string()] + ([pa.string_view()] if hasattr(pa, "string_view") else [])


@settings(max_examples=strategies.examples(60), deadline=None)
@given(texts=maybe_texts, typ=st.sampled_from(STRING_TYPES), repeat=st.integers(1, 3))
def test_arrays_train_like_the_same_str(texts, typ, repeat):
    arr = pa.array(texts * repeat, typ)
    same_training([arr], texts * repeat)


@settings(max_examples=strategies.examples(60), deadline=None)
@given(
    texts=maybe_texts,
    prefix=st.lists(st.one_of(strategies.texts(max_pieces=3), st.none()), max_size=9),
    suffix=st.lists(st.one_of(strategies.texts(max_pieces=3), st.none()), max_size=9),
    typ=st.sampled_from(STRING_TYPES),
)
def test_sliced_arrays_read_from_their_offset(texts, prefix, suffix, typ):
    whole = pa.array(prefix + texts + suffix, typ)
    arr = whole.slice(len(prefix), len(texts))
    assert arr.offset == len(prefix)
    same_training([arr], texts)


@settings(max_examples=strategies.examples(40), deadline=None)
@given(texts=maybe_texts, cuts=st.lists(st.integers(0, 30), max_size=4), large=st.booleans())
def test_chunks_and_mixed_items(texts, cuts, large):
    bounds = sorted({0, len(texts), *(c for c in cuts if c <= len(texts))})
    chunked = pa.chunked_array(
        [pa.array(texts[a:b], pa.large_string() if large else pa.string()) for a, b in zip(bounds, bounds[1:])],
        pa.large_string() if large else pa.string(),
    )
    same_training(chunked.chunks, texts)
    # Arrays, str and lists of str mixed in one iterator, with small buffers.
    items = [chunked.chunks[0] if chunked.num_chunks else pa.array([], pa.string()), "plain str", ["a", "list"]]
    items += chunked.chunks[1:]
    t = _core.Trainer()
    t.train_from_iterator(items, VOCAB, buffer_size=2)
    first = texts[: bounds[1]] if len(bounds) > 1 else []
    same = [x for x in first if x is not None] + ["plain str", "a", "list"] + [x for x in texts[len(first):] if x is not None]
    assert t.get_mergeable_ranks() == train(same).get_mergeable_ranks()
    assert t.stats["texts"] == len(same)


def test_nulls_are_skipped_even_when_they_hold_bytes():
    # Entries 1 and 3 are null; entry 1 holds bytes, invalid UTF-8 among them (allowed for a null).
    data = b"hello\xff\xfejunkworld"
    offsets = struct.pack("<5i", 0, 5, 11, 11, 16)
    validity = bytes([0b0101])
    arr = pa.Array.from_buffers(pa.string(), 4, [pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)])
    assert arr.to_pylist() == ["hello", None, "", None]
    t = train([arr, arr.slice(1)])
    assert t.stats["texts"] == 2 + 1 and t.stats["bytes"] == 5
    assert train([pa.array([None, None])]).stats["texts"] == 0  # type null: nothing to read
    assert train([pa.array([], pa.string())]).stats["texts"] == 0


def test_any_object_with_the_capsule_interface():
    class Wrapped:
        def __init__(self, arr):
            self.arr = arr

        def __arrow_c_array__(self, requested_schema=None):
            return self.arr.__arrow_c_array__(requested_schema)

    texts = ["wrapped text", "more wrapped text", None, "é"]
    same_training([Wrapped(pa.array(texts))], texts)


def test_arrays_stay_intact_and_memory_is_released():
    gc.collect()
    before = pa.total_allocated_bytes()
    arr = pa.array([f"document {i} " * 20 for i in range(2000)])
    t = train([arr] * 5)
    assert t.stats["texts"] == 10000
    assert arr[1999].as_py() == "document 1999 " * 20 and arr.validate(full=True) is None
    del arr
    gc.collect()
    assert pa.total_allocated_bytes() == before  # the capsules released what they exported


class BadExport:
    def __init__(self, result):
        self.result = result

    def __arrow_c_array__(self, requested_schema=None):
        return self.result


def malformed(offsets, data, n, fmt="<{}i", typ=None):
    typ = typ or pa.string()
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(struct.pack(fmt.format(len(offsets)), *offsets)), pa.py_buffer(data)])


@pytest.mark.parametrize(
    "item, error, message",
    [
        (pa.array([1, 2]), TypeError, "item 1 of the iterator is an Arrow array of type int64"),
        (pa.array([b"bytes"]), TypeError, "type binary (format \"z\"), expected strings"),
        (pa.array([b"bytes"], pa.large_binary()), TypeError, "cast it to a string type"),
        (pa.array([["a"]]), TypeError, "type list"),
        (pa.record_batch({"text": ["a"]}), TypeError, "pass one of its columns, e.g. batch.column('text')"),
        (pa.chunked_array([["a"]]), TypeError, "pass its chunks, e.g. chunked_array.chunks"),
        (pa.array(["a", "b"]).dictionary_encode(), TypeError, "dictionary-encoded Arrow array; decode it first"),
        (malformed([0, 3, 2], b"abc", 2), ValueError, "malformed Arrow array: offsets decrease at entry 1 (3 then 2)"),
        (malformed([0, 1, 3], b"a\xff\xfe", 2), ValueError, "not valid UTF-8 (at byte 1 of the data buffer)"),
        (malformed([0, 2, 3], "aé".encode(), 2), ValueError, "offset 2 falls inside a UTF-8 character"),
        (malformed([0, 1, 3], b"a\xff\xfe", 2, "<{}q", pa.large_string()), ValueError, "not valid UTF-8"),
        (BadExport(None), TypeError, "did not return a pair of PyCapsules"),
        (BadExport((1, 2)), TypeError, "did not return a pair of PyCapsules"),
        (BadExport(pa.array(["a"]).__arrow_c_array__()[::-1]), TypeError, "did not return a pair of PyCapsules"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_unsupported_and_malformed_arrays_are_clear_errors(item, error, message):
    t = _core.Trainer()
    t.train_from_iterator(["keep me keep me"], 258)
    ranks = t.get_mergeable_ranks()
    with pytest.raises(error) as e:
        t.train_from_iterator(["fine", item], 300)
    assert message in str(e.value)
    assert "item 1 of" in str(e.value)
    assert t.get_mergeable_ranks() == ranks  # the trainer keeps its old state


@pytest.mark.parametrize("buffer_size", [1, 8192])
def test_a_lone_lead_byte_is_named_the_same_however_the_array_is_cut_into_batches(buffer_size):
    # The bytes are checked batch by batch: a batch that ends on a lead byte the data does not
    # go on from is not UTF-8 there, not an offset inside a character.
    data = b"a" * (1 << 20) + b"\xc3" + b"a"
    offsets = pa.py_buffer(struct.pack("<3i", 0, (1 << 20) + 1, (1 << 20) + 2))
    arr = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(data)])
    with pytest.raises(ValueError, match=re.escape(f"not valid UTF-8 (at byte {1 << 20} of the data buffer)")):
        _core.Trainer().train_from_iterator([arr], 300, buffer_size)


@pytest.mark.parametrize("typ", ["string", "string_view"])
def test_bytes_changed_while_an_array_is_copied_never_pass_as_text(typ):
    # pyarrow shares a bytearray's memory; another thread may write to it whenever training
    # lets Python run (each batch handed on). Bytes are checked once copied, so a training
    # either refuses the array or learns from valid text only, never tokens of invalid UTF-8.
    n, width = 200_000, 64
    data = bytearray(b"abcdefgh" * (n * width // 8))
    if typ == "string":
        offsets = pa.py_buffer(struct.pack(f"{n + 1}i", *range(0, n * width + 1, width)))
        arr = pa.Array.from_buffers(pa.string(), n, [None, offsets, pa.py_buffer(data)])
    else:  # views into one data buffer (strings longer than 12 bytes are not inline)
        views = b"".join(struct.pack("<i4sii", width, b"abcd", 0, i * width) for i in range(n))
        arr = pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views), pa.py_buffer(data)])
    training = threading.Event()
    training.set()
    changes = []

    def change():
        tail = len(data) // 2
        while training.is_set():
            data[tail:] = b"\xf7" * (len(data) - tail)
            time.sleep(0.001)
            data[tail:] = b"abcdefgh" * ((len(data) - tail) // 8)
            time.sleep(0.001)
            changes.append(1)

    thread = threading.Thread(target=change)
    thread.start()
    try:
        t = _core.Trainer(num_threads=2)
        t.train_from_iterator([arr] * 4, 300, 64)
    except ValueError as e:
        assert "not valid UTF-8" in str(e)
    else:
        assert not any(b"\xf7" in token for token, _ in t.get_mergeable_ranks())
    finally:
        training.clear()
        thread.join()
    assert changes  # the bytes did change during the training


def test_arrays_inside_lists_are_not_texts():
    with pytest.raises(TypeError, match=r"item 0\[1\] of the iterator is StringArray, expected str$"):
        train([["a", pa.array(["b"])]])


def test_tokenizer_trains_from_arrow_arrays():
    texts = ["the Arrow path", "the str path", None] * 50
    a = bpeforge.Tokenizer.train_from_iterator([pa.array(texts)], vocab_size=265, special_tokens=[])
    b = bpeforge.Tokenizer.train_from_iterator([t for t in texts if t], vocab_size=265, special_tokens=[])
    assert a.mergeable_ranks == b.mergeable_ranks
