"""Items larger than a batch (a list of str, an Arrow array): ``train_from_iterator`` cuts them
into batches as it reads them, so it trains exactly as on the same texts one by one, and its
memory does not grow with the size of an item."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from bpeforge import _core, _inputs as inputs

pa = pytest.importorskip("pyarrow")

VOCAB = 256 + 40


def stdlib_lines(limit_bytes: int) -> list:
    """Lines of this Python's standard library sources, about `limit_bytes` of them."""
    lines, total = [], 0
    for path in inputs.stdlib_sources()[1]:
        for line in path.path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            lines.append(line)
            total += len(line.encode())
            if total >= limit_bytes:
                return lines
    return lines


def trained(items, buffer_size=None):
    t = _core.Trainer()
    t.train_from_iterator(items, VOCAB, buffer_size)
    return t.get_merges(), t.stats["texts"], t.stats["bytes"], t.stats["distinct_spans"]


@pytest.mark.parametrize("buffer_size", [None, 3])
def test_items_larger_than_a_batch_train_like_their_texts(buffer_size):
    lines = stdlib_lines(5 << 20)  # more than two batches' worth (a batch holds at most 2 MiB)
    assert sum(len(x.encode()) for x in lines) > 2 * (2 << 20)
    one_by_one = trained(iter(lines))
    assert one_by_one[1] == len(lines)
    assert trained([lines], buffer_size) == one_by_one
    # Nulls cut the array's text into runs, and the array starts at an offset.
    with_nulls = [None, "skipped"] + [x for i, line in enumerate(lines) for x in ((line, None) if i % 97 == 0 else (line,))]
    arr = pa.array(with_nulls, pa.large_string()).slice(2)
    assert arr.offset == 2 and arr.null_count > 100
    assert trained([arr], buffer_size) == one_by_one
    half = len(lines) // 2
    assert trained([lines[:half], pa.array(lines[half:])], buffer_size) == one_by_one


def test_a_text_longer_than_a_batch_trains_the_same_counted_where_it_is():
    # On two threads a str longer than a batch is counted where it is (after the batch being
    # filled is handed on); on one thread, or in an Arrow array, it is copied into a batch.
    long = "".join(stdlib_lines(5 << 20))
    assert len(long.encode()) > 2 << 20
    items = ["a few words first", "and more", long, "then after it", [long, "x"]]
    arrow = ["a few words first", "and more", pa.array([long]), "then after it", pa.array([long, "x"])]

    def on(threads, items):
        t = _core.Trainer(num_threads=threads)
        t.train_from_iterator(iter(items), VOCAB)
        return t.get_merges(), t.stats["texts"], t.stats["bytes"], t.stats["distinct_spans"]

    where_it_is = on(2, items)
    assert where_it_is[1:3] == (6, 2 * len(long.encode()) + len("a few words firstand morethen after itx"))
    assert on(1, items) == where_it_is
    assert on(2, arrow) == where_it_is


@pytest.mark.parametrize("last", ["short", "long"])
def test_what_the_feeder_counted_while_the_worker_was_behind_is_kept(last):
    # Texts from a list come faster than one thread counts them: the queue fills, and the
    # feeder counts what it has no room for, into a table it hands to the worker once it is
    # done feeding. A batch comes after that (a short last text, in the last batch), or none (a
    # last text longer than a batch is counted where it is; the pause before it lets the
    # worker empty the queue, so the worker takes the table once the queue closes): either way
    # its counts are kept.
    lines = stdlib_lines(12 << 20)
    texts = ["".join(lines[i : i + 2000]) for i in range(0, len(lines), 2000)] * 3
    tail = "a short one" if last == "short" else "".join(lines[: len(lines) // 4])
    assert last == "short" or len(tail.encode()) > 2 << 20

    def items():
        yield from texts
        if last == "long":
            time.sleep(0.3)
        yield tail

    def on(threads):
        t = _core.Trainer(num_threads=threads)
        t.train_from_iterator(items(), VOCAB)
        return t.get_merges(), t.stats["texts"], t.stats["bytes"], t.stats["distinct_spans"]

    assert on(2) == on(1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak RSS from /proc")
@pytest.mark.parametrize("kind", ["list", "arrow", "str"])
def test_memory_does_not_grow_with_the_size_of_an_item(kind):
    # One item of 96 MiB of text. A list repeats one str (so it takes no memory itself); an array
    # holds its 96 MiB before the training starts, and so does a str. The peak RSS during
    # training, above the RSS just before it, must stay far below the item's size: the batches
    # are bounded, not the item, and a text longer than a batch is counted where it is.
    script = textwrap.dedent(
        f"""
        import pyarrow as pa
        from bpeforge import _core

        def status_mb(key):
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1]) / 1024

        line = "the same words again and again, " * 32  # 1 KiB
        n = 96 * 1024
        if {kind!r} == "list":
            item = [line] * n
        elif {kind!r} == "str":
            item = line * n
        else:
            data = (line * n).encode()
            offsets = pa.array(range(0, len(data) + 1, len(line)), pa.int64())
            item = pa.Array.from_buffers(pa.large_string(), n, [None, offsets.buffers()[1], pa.py_buffer(data)])
            del data
        t = _core.Trainer(num_threads=2)  # (a long str is copied into a batch on one thread)
        t.train_from_iterator(["warm up: threads and tables"], 257)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # the peak (VmHWM) starts again from here
        before = status_mb("VmRSS")
        t.train_from_iterator([item], 300)
        assert t.stats["texts"] == (1 if {kind!r} == "str" else n) and t.stats["bytes"] == n * 1024
        print(status_mb("VmHWM") - before)
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    grew = float(r.stdout)
    assert grew < 40, f"peak RSS grew by {grew:.0f} MB while training on one item of 96 MB"
