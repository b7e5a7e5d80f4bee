"""SpanCounts: counting, adding, pickling, files, pruning, and training from counts with the same
ranks as training on the texts (against bpeforge's own text path and the reference trainer)."""

from __future__ import annotations

import itertools
import pickle
import warnings
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpeforge
import reference as R
import strategies as S
from bpeforge import SpanCounts

pytestmark = pytest.mark.filterwarnings("ignore:training stopped")
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
GPT4 = bpeforge._patterns.resolve_pattern(None)

mappings = st.dictionaries(st.binary(min_size=1, max_size=6), st.integers(0, 2**62), max_size=12)


def counts_of(mapping, pattern="gpt4"):
    return SpanCounts.from_mapping(mapping, pattern=pattern)


def plain(counts):
    return dict(counts.items())


# ------------------------------------------------------------------------------ counting


def test_count_gives_the_spans_the_pattern_splits_sorted():
    texts = ["hello world", "hello there", "world hello world", ""]
    counts = bpeforge.count(texts)
    want = Counter(s.encode() for t in texts for s in bpeforge.split(t, "gpt4"))
    assert plain(counts) == dict(want)
    assert [s for s, _ in counts.items()] == sorted(want)
    assert len(counts) == len(want) and counts.total == sum(want.values())
    assert counts.total_bytes == sum(len(s) * n for s, n in want.items())
    assert counts.pattern == GPT4 and counts.options == {}
    assert counts.most_common(2) == [(b" world", 2), (b"hello", 2)]
    assert counts["hello"] == 2 and counts[b" there"] == 1 and counts["absent"] == 0


def test_count_takes_what_the_trainer_takes(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    texts = ["a b c", "b c d", "c d e"] * 5
    one = bpeforge.count(texts, num_threads=1)
    assert bpeforge.count([texts[:4], texts[4:]]) == one
    assert bpeforge.count([pa.array(texts)]) == one
    assert bpeforge.count(iter(texts), buffer_size=1, num_threads=2) == one
    pq.write_table(pa.table({"text": texts}), tmp_path / "t.parquet", row_group_size=4)
    assert bpeforge.count(bpeforge.ParquetReader(tmp_path / "t.parquet", batch_rows=3)) == one
    assert SpanCounts.merge([one]) == one


def test_count_refuses_what_the_trainer_refuses():
    with pytest.raises(TypeError, match="got a str"):
        bpeforge.count("a text")
    with pytest.raises(TypeError, match="bytes"):
        bpeforge.count(b"a text")
    with pytest.raises(TypeError, match="item 1 of the iterator"):
        bpeforge.count(["ok", 3])
    with pytest.raises(ValueError, match="no such preset"):
        bpeforge.count(["x"], pattern="gpt5")


def test_count_reports_progress_and_records_options():
    seen = []
    counts = bpeforge.count(["abc"] * 10, progress=lambda phase, info: seen.append((phase, info["texts"])), options={"doc_cap": 5})
    assert seen[-1] == ("count", 10)
    assert counts.options == {"doc_cap": 5}
    assert counts != bpeforge.count(["abc"] * 10)  # the same spans, other options


# ------------------------------------------------------------------------------ adding


@settings(max_examples=S.examples(60), **SETTINGS)
@given(mappings, mappings, mappings)
def test_adding_is_exact_associative_and_commutative(a, b, c):
    x, y, z = counts_of(a), counts_of(b), counts_of(c)
    assert x + y == y + x
    assert (x + y) + z == x + (y + z) == SpanCounts.merge([z, x, y]) == sum([x, y, z])
    want = Counter({k: v for k, v in a.items() if v}) + Counter({k: v for k, v in b.items() if v}) + Counter({k: v for k, v in c.items() if v})
    assert plain(x + y + z) == dict(want)
    assert (x + y + z).total == sum(want.values())


def test_counts_of_shards_add_up_to_the_counts_of_the_whole():
    texts = [f"doc {i} says {'hello ' * (i % 4)}world" for i in range(200)]
    shards = [bpeforge.count(texts[i::3]) for i in range(3)]
    assert SpanCounts.merge(shards) == bpeforge.count(texts) == shards[2] + shards[0] + shards[1]


def test_overflow_is_refused():
    big = counts_of({"x": 2**64 - 1})
    with pytest.raises(OverflowError, match="2\\^64-1"):
        big + counts_of({"x": 1})
    with pytest.raises(OverflowError):
        counts_of([("x", 2**63), ("x", 2**63)])
    assert (big + counts_of({"y": 1})).total == 2**64


def test_different_patterns_are_refused_naming_both():
    a, b = counts_of({"x": 1}, "gpt4"), counts_of({"x": 1}, "gpt2")
    with pytest.raises(ValueError, match="'gpt4'.*'gpt2'"):
        a + b
    with pytest.raises(ValueError, match="'gpt2'.*'gpt4'"):
        SpanCounts.merge([b, a])
    custom = counts_of({"x": 1}, r"\w+|\s+")
    with pytest.raises(ValueError, match=r"\\\\w\+\|\\\\s\+"):
        a + custom
    with pytest.raises(ValueError, match="options"):
        a + SpanCounts.from_mapping({"x": 1}, pattern="gpt4", options={"doc_cap": 3})
    with pytest.raises(ValueError, match="at least one"):
        SpanCounts.merge([])
    with pytest.raises(TypeError, match="part 1"):
        SpanCounts.merge([a, {"x": 1}])
    with pytest.raises(TypeError):
        a + {"x": 1}


def test_from_mapping_checks_its_input():
    counts = counts_of({"b": 2, b"a": 1, "": 5, "z": 0})
    assert counts.items() == [(b"a", 1), (b"b", 2)]
    assert counts_of([("a", 1), (b"a", 2)]).items() == [(b"a", 3)]
    with pytest.raises(TypeError, match="pattern"):
        SpanCounts.from_mapping({"a": 1})  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="between 0 and 2\\^64-1"):
        counts_of({"a": -1})
    with pytest.raises(TypeError, match="item 0"):
        counts_of([3])
    with pytest.raises(ValueError, match="empty string"):
        counts_of({"a": 1}, pattern="a*")


# ------------------------------------------------------------------------------ bytes and pickles


@settings(max_examples=S.examples(40), **SETTINGS)
@given(mappings)
def test_pickles_and_bytes_round_trip_compactly(mapping):
    counts = counts_of(mapping)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(counts, protocol)) == counts
    data = counts.to_bytes()
    assert SpanCounts.from_bytes(data) == counts
    spans = sum(len(s) for s, _ in counts.items())
    assert len(pickle.dumps(counts)) <= 200 + len(GPT4) + spans + 11 * len(counts)


def test_damaged_bytes_are_refused():
    data = bytearray(counts_of({"hello": 3, "world": 2**40}).to_bytes())
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x10
        with pytest.raises(ValueError):
            SpanCounts.from_bytes(bytes(bad))
    with pytest.raises(ValueError, match="BPSC"):
        SpanCounts.from_bytes(b"not counts")
    with pytest.raises(TypeError):
        SpanCounts.from_bytes("text")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ pruning


def test_prune_drops_rare_spans_and_says_how_much():
    counts = counts_of({"a": 6, "b": 1, "c": 2, "d": 1})
    pruned, share = counts.prune(2)
    assert pruned.items() == [(b"a", 6), (b"c", 2)]
    assert share == pytest.approx(2 / 10)
    assert counts.prune(1) == (counts, 0.0)
    assert counts.prune(100)[1] == 1.0
    with pytest.raises(ValueError, match="min_count"):
        counts.prune(0)


# ------------------------------------------------------------------------------ training


def ranks_of(tok):
    return sorted(tok.mergeable_ranks.items(), key=lambda kv: kv[1])


@settings(max_examples=S.examples(40), **SETTINGS)
@given(S.corpora(), st.sampled_from([256, 260, 300]), st.sampled_from([None, "gpt2", r"\S+|\s+"]), st.integers(1, 4))
def test_ranks_from_counts_are_those_from_the_texts_and_the_reference(corpus, vocab_size, pattern, shards):
    regex = bpeforge._patterns.resolve_pattern(pattern)
    parts = [bpeforge.count(corpus[i::shards], pattern) for i in range(shards)]
    counts = SpanCounts.merge(parts)
    trainer = bpeforge.Trainer(regex)
    trainer.train_from_counts(counts, vocab_size)
    from_counts = trainer.get_mergeable_ranks()
    trainer.train_from_iterator(corpus, vocab_size)
    assert from_counts == trainer.get_mergeable_ranks()
    want = R.train_ranks(corpus, vocab_size, regex)
    if len(want) == len({b for b, _ in want}):  # no reuse of bytes (see the reference)
        assert from_counts == want


def test_tokenizer_from_counts_equals_tokenizer_from_texts():
    texts = [f"the {i % 7} cats and {i % 5} dogs, said the {i}th" for i in range(300)]
    counts = bpeforge.count(texts, "nanochat")
    a = bpeforge.Tokenizer.train_from_counts(counts, vocab_size=400)
    b = bpeforge.Tokenizer.train_from_iterator(texts, vocab_size=400, pattern="nanochat")
    assert ranks_of(a) == ranks_of(b) and a.pattern == b.pattern and a.special_tokens == b.special_tokens
    assert a.training_stats["bytes"] == sum(len(t.encode()) for t in texts)
    with pytest.raises(ValueError, match="'nanochat'.*'gpt4'"):
        bpeforge.Tokenizer.train_from_counts(counts, vocab_size=400, pattern="gpt4")
    with pytest.raises(ValueError, match="'nanochat'.*'gpt4'"):
        bpeforge.Trainer().train_from_counts(counts, 300)
    with pytest.raises(bpeforge.NoTextError):
        bpeforge.Tokenizer.train_from_counts(counts_of({}), vocab_size=300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        small = bpeforge.Tokenizer.train_from_counts(counts_of({"ab": 3}), vocab_size=300, special_tokens=[])
    assert small.n_vocab == 257 and "stopped" in str(caught[0].message)


def test_training_borrows_the_counts_and_leaves_them_as_they_were():
    counts = bpeforge.count(["abcabc abc"] * 20)
    before = counts.to_bytes()
    for _ in range(2):
        bpeforge.Tokenizer.train_from_counts(counts, vocab_size=270, special_tokens=[])
    assert counts.to_bytes() == before


def test_counts_in_the_billions_train_exactly():
    counts = counts_of({"ab": 3_000_000_000, "bc": 3_000_000_001, "abc": 1})
    t = bpeforge.Trainer()
    t.train_from_counts(counts, 257)
    assert t.get_merges() == [(98, 99, 256, 3_000_000_002)]


# ------------------------------------------------------------------------------ files


def test_saved_counts_load_equal(tmp_path):
    counts = bpeforge.count([f"line {i} é 🙂" for i in range(500)], options={"doc_cap": 100})
    path = tmp_path / "part-0.parquet"
    counts.save(path)
    assert SpanCounts.load(path) == counts
    assert SpanCounts.load(str(path)) == counts
    assert [p.name for p in tmp_path.iterdir()] == ["part-0.parquet"]  # no temporary file left
    counts.save(tmp_path / "new" / "folders" / "part-1.parquet")  # created, as count -o does (the README's snippet)
    assert SpanCounts.load(tmp_path / "new" / "folders") == counts


def test_a_folder_loads_as_the_sum_of_its_files(tmp_path):
    a, b = bpeforge.count(["one two"]), bpeforge.count(["two three", "three"])
    a.save(tmp_path / "a.parquet")
    b.save(tmp_path / "b.parquet")
    (tmp_path / ".hidden.parquet").write_bytes(b"partial")
    (tmp_path / "notes.txt").write_text("not counts")
    assert SpanCounts.load(tmp_path) == a + b
    counts_of({"x": 1}, "gpt2").save(tmp_path / "c.parquet")
    with pytest.raises(ValueError, match=r"a\.parquet.*c\.parquet|c\.parquet.*a\.parquet"):
        SpanCounts.load(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no .parquet"):
        SpanCounts.load(empty)


def test_saved_files_are_what_pyarrow_reads(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    counts = counts_of({"b": 2, "a": 2**64 - 1})
    counts.save(tmp_path / "c.parquet")
    table = pq.read_table(tmp_path / "c.parquet")
    assert str(table.schema.field("span").type) == "binary" and str(table.schema.field("count").type) == "uint64"
    assert table.column("span").to_pylist() == [b"a", b"b"] and table.column("count").to_pylist() == [2**64 - 1, 2]
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
    assert meta["bpeforge.span_counts.pattern"] == GPT4 and meta["bpeforge.span_counts.total"] == str(2**64 + 1)


def test_every_damaged_file_is_named(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    good = tmp_path / "good.parquet"
    counts_of({"a": 1, "b": 2, "c": 3}).save(good)
    table = pq.read_table(good)
    meta = table.schema.metadata

    def variant(name, spans, counts, change=None, count_type=pa.uint64()):
        m = dict(meta)
        if change:
            m.update({k.encode(): v.encode() for k, v in change.items()})
        t = pa.table({"span": pa.array(spans, pa.binary()), "count": pa.array(counts, count_type)}).replace_schema_metadata(m)
        path = tmp_path / name
        pq.write_table(t, path)
        return path

    cases = {
        variant("order.parquet", [b"b", b"a", b"c"], [2, 1, 3]): "row 1: a span out of order",
        variant("repeat.parquet", [b"a", b"a", b"c"], [1, 2, 3]): "row 1: a span repeated",
        variant("zero.parquet", [b"a", b"b", b"c"], [1, 0, 3]): "row 1: a count of 0",
        variant("total.parquet", [b"a", b"b", b"c"], [1, 2, 4]): "sum to 7",
        variant("crc.parquet", [b"a", b"b", b"d"], [1, 2, 3]): "checksum mismatch",
        variant("rows.parquet", [b"a", b"b"], [1, 2]): "2 rows, the metadata says 3",
        variant("version.parquet", [b"a", b"b", b"c"], [1, 2, 3], {"bpeforge.span_counts.format": "9"}): "format version 9",
        variant("signed.parquet", [b"a", b"b", b"c"], [1, 2, 3], count_type=pa.int64()): "not uint64",
    }
    for path, message in cases.items():
        with pytest.raises(ValueError, match=f"{path.name}.*{message}"):
            SpanCounts.load(path)
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"span": [b"a"], "count": pa.array([1], pa.uint64())}), foreign)
    with pytest.raises(ValueError, match="foreign.parquet.*from_parquet"):
        SpanCounts.load(foreign)
    data = good.read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut.parquet"):
        SpanCounts.load(cut)
    flipped = tmp_path / "flipped.parquet"
    for i in range(4, len(data) - 8, 7):
        damaged = bytearray(data)
        damaged[i] ^= 0x55
        flipped.write_bytes(bytes(damaged))
        try:
            loaded = SpanCounts.load(flipped)
        except ValueError as e:
            assert "flipped.parquet" in str(e)
        else:
            assert loaded == SpanCounts.load(good), f"byte {i} changed the counts undetected"
    with pytest.raises(FileNotFoundError, match="missing.parquet"):
        SpanCounts.load(tmp_path / "missing.parquet")


def test_from_parquet_reads_counts_made_elsewhere(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "spark.parquet"
    pq.write_table(pa.table({"w": ["b", "a", "b", "c"], "n": pa.array([1, 2, 3, 0], pa.int64())}), path)
    counts = SpanCounts.from_parquet(path, span="w", count="n", pattern="gpt4")
    assert counts.items() == [(b"a", 2), (b"b", 4)] and counts.pattern == GPT4
    path2 = tmp_path / "binary.parquet"
    pq.write_table(pa.table({"span": pa.array([b"\xff", b"a"], pa.binary()), "count": pa.array([5, 6], pa.int32())}), path2)
    assert SpanCounts.from_parquet(path2, pattern="gpt2").items() == [(b"a", 6), (b"\xff", 5)]
    bad = {
        "negative": ({"span": ["a"], "count": pa.array([-1], pa.int64())}, "row 0: a negative count"),
        "null": ({"span": ["a", None], "count": pa.array([1, 2], pa.int64())}, "row 1: the span is null"),
        "nullcount": ({"span": ["a", "b"], "count": pa.array([1, None], pa.int64())}, "row 1: the count is null"),
        "empty": ({"span": ["a", ""], "count": pa.array([1, 2], pa.int64())}, "row 1: an empty span"),
        "floats": ({"span": ["a"], "count": pa.array([1.0])}, "column 'count' holds double"),
        "nocol": ({"text": ["a"], "count": pa.array([1])}, "no column 'span'"),
    }
    for name, (columns, message) in bad.items():
        p = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table(columns), p)
        with pytest.raises(ValueError, match=f"{name}.parquet.*{message}"):
            SpanCounts.from_parquet(p, pattern="gpt4")
    over = tmp_path / "over.parquet"
    pq.write_table(pa.table({"span": ["a", "a"], "count": pa.array([2**63, 2**63], pa.uint64())}), over)
    with pytest.raises(ValueError, match="2\\^64-1"):
        SpanCounts.from_parquet(over, pattern="gpt4")
