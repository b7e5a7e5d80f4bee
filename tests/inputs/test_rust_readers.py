"""bpeforge.TextReader and bpeforge.JsonlReader against the Python readers they replace
(``read_text``, ``read_jsonl``, and the Corpus reading through them): the same documents, bad
lines, errors, hold-out and sample, on generated files (CRLF, no final newline, empty lines,
bytes that are not UTF-8, long lines, byte-order marks, .gz and .zst); and read by the trainer
in Rust, the same ranks (Ctrl-C: tests/core/test_reader_interrupt.py)."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge import InputError, JsonlReader, TextReader
from bpeforge._inputs import Corpus, Source

from .python_readers import PythonCorpus, read_jsonl, read_text
from strategies import examples

zstandard = pytest.importorskip("zstandard")

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Pieces of text files: words, accented and 4-byte characters, line ends of every kind, the
# separators tried below, byte-order marks, and bytes that are not UTF-8 (a lone continuation
# byte, a lead byte without its continuation, an encoded surrogate, an overlong form, 0xff).
TEXT_PIECES = [b"word", b" ", b"caf\xc3\xa9", b"\xf0\x9f\x98\x80", b"\xe2\x82\xac", b"\n", b"\r\n", b"\r", b"\n\n",
               b"<|e|>", b"<|", b"\xef\xbb\xbf", b"\x80", b"\xe9", b"\xed\xa0\x80", b"\xc0\xaf", b"\xff", b"\t", b"x" * 3000]


def compress(data: bytes, how: str) -> bytes:
    if how == "gz":
        return gzip.compress(data)
    if how == "zst":
        return zstandard.ZstdCompressor().compress(data)
    return data


def write(tmp_path, data: bytes, how: str, ext: str) -> Source:
    name = f"f.{ext}" + ("" if how == "plain" else f".{how}")
    path = tmp_path / name
    path.write_bytes(compress(data, how))
    return Source(path, "text" if ext == "txt" else "jsonl", {"plain": None, "gz": "gzip", "zst": "zstd"}[how])


def outcome(read):
    """(documents, None) or (None, the error's message)."""
    try:
        return [d for batch in read() for d in batch], None
    except InputError as e:
        return None, str(e)


text_files = st.lists(st.sampled_from(TEXT_PIECES), max_size=60).map(b"".join)


@SETTINGS
@given(data=text_files, separator=st.sampled_from(["\n", "\n\n", "<|e|>", ""]), skip=st.booleans(),
       how=st.sampled_from(["plain", "gz", "zst"]))
def test_text_reader_reads_what_read_text_reads(tmp_path, data, separator, skip, how):
    source = write(tmp_path, data, how, "txt")
    bad = inputs_bad_lines()
    want = outcome(lambda: read_text(source, separator, skip_bad_lines=skip, bad_lines=bad))
    reader = TextReader(source.path, separator, skip_bad_lines=skip, batch_docs=3)
    got = outcome(lambda: reader)
    assert got == want
    if want[1] is None:
        assert (reader.bad_lines, reader.bad_line_examples) == (bad.count, bad.examples)


def inputs_bad_lines():
    from bpeforge._inputs import BadLines

    return BadLines()


# JSONL lines: objects written by json.dumps (escaped or not, with lone surrogates, non-string
# and null texts, other fields, duplicate keys), and lines of raw pieces that are mostly not
# JSON at all, or JSON that serde_json refuses and Python's json takes (NaN, Infinity, numbers
# beyond a double, deep nesting, a lone surrogate in another field).
json_texts = st.text(alphabet=st.sampled_from(["a", "é", "😀", "\n", "\"", "\\", "\x00", "\x1f", "\ud800", "\udfff", "/", " "]), max_size=8)
json_values = st.one_of(json_texts, st.none(), st.integers(-(10**30), 10**30), st.floats(allow_nan=True), st.booleans(),
                        st.lists(st.integers(), max_size=2))


@st.composite
def json_lines(draw) -> bytes:
    kind = draw(st.integers(0, 4))
    if kind <= 1:
        obj = draw(st.dictionaries(st.sampled_from(["text", "id", "body", "te\u00e9xt"]), json_values, max_size=3))
        line = json.dumps(obj, ensure_ascii=draw(st.booleans()))
        if draw(st.booleans()) and obj:
            line = line[:-1] + ', "text": ' + json.dumps(draw(json_values)) + "}"  # a duplicate key, which wins
        return line.encode("utf-8", "surrogatepass")
    if kind == 2:
        depth = draw(st.sampled_from([1, 127, 128, 129, 200]))
        return ('{"text": "deep", "x": ' + "[" * depth + "]" * depth + "}").encode()
    pieces = ['{', '}', '"text"', ':', ' ', '"a\\u00e9"', '"\\ud83d\\ude00"', '"\\ud800"', 'NaN', '-Infinity', '1e400', '1.5',
              'null', 'true', '[', ']', ',', '"x"', '"\\q"', '\t', '\x0c']
    raw = "".join(draw(st.lists(st.sampled_from(pieces), max_size=10))).encode()
    return raw + draw(st.sampled_from([b"", b"\xff", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r"]))


jsonl_files = st.tuples(st.booleans(), st.lists(json_lines(), max_size=12), st.booleans()).map(
    lambda t: (b"\xef\xbb\xbf" if t[0] else b"") + b"\n".join(t[1]) + (b"\n" if t[2] else b""))


@SETTINGS
@given(data=jsonl_files, skip=st.booleans(), how=st.sampled_from(["plain", "plain", "gz", "zst"]))
def test_jsonl_reader_reads_what_read_jsonl_reads(tmp_path, data, skip, how):
    source = write(tmp_path, data, how, "jsonl")
    bad = inputs_bad_lines()
    want = outcome(lambda: read_jsonl(source, "text", skip, bad))
    reader = JsonlReader(source.path, "text", skip_bad_lines=skip, batch_docs=2)
    got = outcome(lambda: reader)
    assert got == want
    if want[1] is None:
        assert (reader.bad_lines, reader.bad_line_examples) == (bad.count, bad.examples)


def test_jsonl_lines_serde_refuses_are_read_as_python_reads_them(tmp_path):
    """NaN, numbers beyond a double, a lone surrogate outside the text, deep nesting: Python's
    json takes them; a lone surrogate in the text is a bad line in both readers."""
    lines = ['{"text": "nan", "x": NaN}', '{"text": "big", "x": 1e400}', '{"text": "sur", "x": "\\ud800"}',
             '{"text": "deep", "x": ' + "[" * 300 + "]" * 300 + "}", '{"text": "\\ud800 alone"}', '{"text": "\\ud83d\\ude00"}']
    p = tmp_path / "a.jsonl"
    p.write_text("\n".join(lines))
    reader = JsonlReader(p, skip_bad_lines=True)
    assert [d for b in reader for d in b] == ["nan", "big", "sur", "deep", "😀"]
    assert reader.bad_line_examples == [f"{p}:5: field 'text' holds a lone surrogate '\\ud800' at character 0 (not valid Unicode)"]
    with pytest.raises(InputError, match=r"a\.jsonl:5: field 'text' holds a lone surrogate"):
        list(JsonlReader(p))


corpus_options = st.fixed_dictionaries({
    "doc_cap": st.one_of(st.none(), st.integers(1, 40)),
    "max_chars": st.one_of(st.none(), st.integers(1, 3000)),
    "holdout_every": st.integers(0, 4),
    "holdout_max_bytes": st.integers(0, 200),
})


@SETTINGS
@given(files=st.lists(st.tuples(text_files, st.booleans()), min_size=1, max_size=3), options=corpus_options,
       separator=st.sampled_from(["\n", "<|e|>"]))
def test_corpus_selects_the_same_documents_with_either_reader(tmp_path, files, options, separator):
    """Documents cropped, the budget of characters, the hold-out and the sample, across files
    of both formats: the same with the Rust readers as with the Python ones."""
    sources = []
    for i, (data, as_jsonl) in enumerate(files):
        path = tmp_path / f"{i}.{'jsonl' if as_jsonl else 'txt'}"
        if as_jsonl:
            text = data.decode("utf-8", "replace")
            path.write_text("".join(json.dumps({"text": line}) + "\n" for line in text.split("\n")))
        else:
            path.write_bytes(data)
        sources.append(Source(path, "jsonl" if as_jsonl else "text"))
    results = []
    for make in (PythonCorpus, Corpus):
        corpus = make(sources, doc_separator=separator, skip_bad_lines=True, **options)
        docs = [d for batch in corpus for d in batch]
        results.append((docs, corpus.documents, corpus.chars, corpus.bytes, corpus.heldout, corpus.heldout_chars,
                        corpus.heldout_bytes, corpus.sample, corpus.sample_bytes, corpus.sample_cropped, corpus.stopped_early,
                        # Bad documents past the budget of characters: the Python reader counts
                        # those of the batch it was reading, the Rust one stops at the budget.
                        corpus.bad_lines.count if options["max_chars"] is None else None))
    assert results[1] == results[0]


def test_trainer_reads_the_readers_in_rust_with_the_same_ranks(tmp_path):
    lines = [f"line {i} with words {i % 97} and café {i % 13}" for i in range(20000)]
    (tmp_path / "a.txt").write_bytes(gzip.compress(("\r\n".join(lines) + "\n\n").encode()))
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in lines[:5000]))
    want = bpeforge.Trainer()
    want.train_from_iterator(lines + lines[:5000], 600)
    got = bpeforge.Trainer()
    got.train_from_iterator([TextReader(tmp_path / "a.txt", compression="gzip"),
                             JsonlReader(tmp_path / "b.jsonl")], 600)
    assert got.get_mergeable_ranks() == want.get_mergeable_ranks()


def test_a_reader_given_as_the_iterable_is_read_as_an_item(tmp_path):
    # The trainer and count read it in Rust (not as lists of str): the same ranks and counts as
    # its lines, and the documents left after some were iterated in Python.
    lines = [f"line {i} with words {i % 97} and café {i % 13}" for i in range(20000)]
    (tmp_path / "a.txt").write_text("\n".join(lines) + "\n")
    want = bpeforge.Trainer()
    want.train_from_iterator(lines, 600)
    got = bpeforge.Trainer()
    reader = TextReader(tmp_path / "a.txt")
    got.train_from_iterator(reader, 600)
    assert got.get_mergeable_ranks() == want.get_mergeable_ranks()
    assert reader.documents == len(lines) and next(reader, None) is None
    reader = TextReader(tmp_path / "a.txt", batch_docs=1000)
    assert next(reader) == lines[:1000]
    assert bpeforge.count(reader).most_common() == bpeforge.count(lines[1000:]).most_common()
    (tmp_path / "b.txt").write_bytes(b"ok\nbad \xe9\n")
    with pytest.raises(InputError, match=r"b\.txt:2: not valid UTF-8 \(byte 0xe9\)"):
        bpeforge.Trainer().train_from_iterator(TextReader(tmp_path / "b.txt"), 300)


def test_reader_errors_name_the_file_and_line(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"ok\r\n\nfine\nbad \xe9\n")
    with pytest.raises(InputError, match=r"a\.txt:4: not valid UTF-8 \(byte 0xe9\)"):
        bpeforge.Trainer().train_from_iterator([TextReader(p)], 300)
    with pytest.raises(InputError, match=r"nope\.txt: no such file"):
        TextReader(tmp_path / "nope.txt")
    with pytest.raises(InputError, match=r"a\.txt\.gz: cannot read \("):
        (tmp_path / "a.txt.gz").write_bytes(gzip.compress(b"x\n" * 10000)[:-20])
        list(TextReader(tmp_path / "a.txt.gz"))
