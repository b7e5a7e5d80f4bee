"""bpeforge.ray: counting files and Ray Datasets on a Ray cluster gives the counts (so the ranks)
of counting in one process, whatever the workers, files and blocks; a killed worker is retried
without counting twice; a bad file, a bad column, a pattern mismatch and Ctrl-C say what
happened. One local cluster (loopback only, 2 CPUs) for the module."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

import bpeforge
from bpeforge import SpanCounts
from bpeforge._errors import InputError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ray = pytest.importorskip("ray")
bray = pytest.importorskip("bpeforge.ray")


@pytest.fixture(scope="module")
def cluster(ray_cluster):
    yield ray


def make_docs(n, seed=0):
    import random

    rng = random.Random(seed)
    words = "the quick brown fox jumps over lazy dogs while int main return void struct é ☃ 123 4567".split()
    words += ["".join(rng.choices("abcdefghij", k=rng.randint(1, 7))) for _ in range(300)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 25))) + rng.choice([".", "\t", "  ", "!?"]) for _ in range(n)]


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Six files of three formats (one empty, one compressed) and their documents in order."""
    d = tmp_path_factory.mktemp("shards")
    docs = make_docs(1200)
    parts = [docs[i * 200 : (i + 1) * 200] for i in range(6)]
    pq.write_table(pa.table({"text": parts[0]}), d / "s0.parquet", row_group_size=50)
    pq.write_table(pa.table({"text": parts[1] + [None, ""]}), d / "s1.parquet")
    (d / "s2.txt").write_text("\n".join(parts[2]) + "\n", encoding="utf-8")
    (d / "s3.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in parts[3]), encoding="utf-8")
    import gzip

    with gzip.open(d / "s4.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(parts[4]))
    pq.write_table(pa.table({"text": parts[5]}), d / "s5.parquet")
    (d / "empty.txt").write_text("")
    files = sorted(p for p in d.iterdir())
    return files, docs


def ranks_of(counts, vocab=700):
    return bpeforge.Tokenizer.train_from_counts(counts, vocab_size=vocab, pattern=counts.pattern, special_tokens=[]).mergeable_ranks


# ------------------------------------------------------------------------------ exactness


@pytest.mark.parametrize("fan_in", [2, 8])
def test_files_count_as_in_one_process(cluster, shards, fan_in):
    files, docs = shards
    counts = bray.count_files(files, fan_in=fan_in)
    assert counts == bpeforge.count(docs)
    local = bpeforge.Tokenizer.train_from_iterator(docs, vocab_size=700, special_tokens=[])
    assert ranks_of(counts) == local.mergeable_ranks


def test_files_figures_and_options(cluster, shards):
    files, docs = shards
    counted = bray.count_files_with_figures([files[0].parent], "nanochat", doc_cap=12, num_cpus=2)
    assert counted.counts == bpeforge.count([d[:12] for d in docs], "nanochat", options={"doc_cap": 12})
    assert counted.counts.options == {"doc_cap": 12}
    f = counted.figures
    assert (f.shards, f.texts, f.bytes) == (len(files), len(docs), sum(len(d[:12].encode()) for d in docs))


@pytest.mark.parametrize("separator", ["\n", "<|endoftext|>", "\n\n"])
def test_large_files_are_counted_in_parts_as_in_one_process(cluster, shards, tmp_path, separator):
    """Files larger than split_bytes are counted in parts (byte ranges of text and JSONL, row
    groups of Parquet), with the counts of one process; a separator that overlaps itself, and a
    compressed file, stay whole."""
    files, docs = shards
    big = tmp_path / "big.txt"
    big.write_text(separator.join(docs) + separator, encoding="utf-8")
    counted = bray.count_files_with_figures(files + [big], doc_separator=separator, split_bytes=2_000, fan_in=3)
    whole = [d for s in bray.list_sources(files + [big], None) for batch in bray.read_file(s, bray.Reading(doc_separator=separator)) for d in batch]
    assert counted.counts == bpeforge.count(whole)
    if separator == "\n":
        assert counted.counts == bpeforge.count(docs + docs)
    parts = [bray.parts_of(s, bray.Reading(doc_separator=separator), 2_000) for s in bray.list_sources(files + [big], None)]
    by_name = {str(p[0].path.name): len(p) for p in parts}
    assert by_name["s0.parquet"] == 4 and by_name["s3.jsonl"] > 1 and by_name["s4.txt.gz"] == 1
    assert by_name["big.txt"] == (1 if separator == "\n\n" else -(-big.stat().st_size // 2_000))
    assert counted.figures.shards == sum(by_name.values())


def test_a_bad_line_in_a_part_names_its_line_in_the_file(cluster, tmp_path):
    path = tmp_path / "late.txt"
    path.write_bytes(b"".join(b"line %d is fine\n" % i for i in range(2_000)) + b"caf\xe9\n")
    with pytest.raises(InputError, match=r"late\.txt:2001: not valid UTF-8"):
        bray.count_files([path], split_bytes=1_000)


@pytest.mark.parametrize("blocks", [1, 3, 8])
def test_dataset_counts_as_in_one_process(cluster, blocks):
    docs = make_docs(900, seed=blocks)
    table = pa.table({"id": list(range(len(docs) + 2)), "text": docs + [None, ""]})
    ds = ray.data.from_arrow(table).repartition(blocks)
    counts = bray.count_dataset(ds, column="text", pattern="gpt2", fan_in=2)
    assert counts == bpeforge.count(docs, "gpt2")
    local = bpeforge.Tokenizer.train_from_iterator(docs, vocab_size=600, pattern="gpt2", special_tokens=[])
    assert ranks_of(counts, 600) == local.mergeable_ranks


def test_dataset_blocks_are_added_as_they_finish(cluster, tmp_path):
    """The block holding "last" waits until the driver has added a first group of blocks (it
    says so through progress): with counts added only after all blocks, it would wait in vain."""
    flag, waited = tmp_path / "added", tmp_path / "waited"

    def hold_the_last(batch):
        if "last" in batch.column("text").to_pylist():
            deadline = time.monotonic() + 60
            while not flag.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            if flag.exists():
                waited.touch()
        return batch

    def progress(phase, info):
        if info["done"] >= 1:
            flag.touch()

    docs = [f"document {i}" for i in range(30)] + ["last"]
    ds = ray.data.from_items([{"text": t} for t in docs], override_num_blocks=4)
    ds = ds.map_batches(hold_the_last, batch_format="pyarrow", batch_size=None)
    assert bray.count_dataset(ds, fan_in=2, progress=progress) == bpeforge.count(docs)
    assert waited.exists()


def test_dataset_read_from_parquet_files(cluster, shards):
    """Ray Data's own read_parquet, with what the ``ray`` extra installs (fsspec's HTTP
    filesystem, which Ray Data's file listing imports, needs aiohttp)."""
    files, docs = shards
    parquet = [str(p) for p in files if p.suffix == ".parquet"]
    ds = ray.data.read_parquet(parquet)
    wanted = [t for p in parquet for t in pq.read_table(p).column("text").to_pylist() if t]
    assert bray.count_dataset(ds) == bpeforge.count(wanted)


def test_nothing_to_count(cluster, shards):
    files, _ = shards
    empty = [p for p in files if p.name == "empty.txt"]
    counts = bray.count_files(empty, "gpt2")
    assert len(counts) == 0 and counts.pattern == bpeforge._patterns.resolve_pattern("gpt2")
    assert len(bray.count_files([])) == 0


# ------------------------------------------------------------------------------ faults


def read_after_a_kill(log):
    """A read function (a closure: it goes to the workers by value) that reads as bpeforge
    does, but whose first attempt at s3.jsonl records its pid in ``log`` and waits to be
    killed; every attempt is recorded."""

    def read(source, reading):
        if Path(source.path).name == "s3.jsonl":
            first = not log.exists()
            with open(log, "a") as f:
                f.write(f"{os.getpid()}\n")
            if first:
                time.sleep(120)
        return bray.read_file(source, reading)

    return read


def wait_for(path, lines=1, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().split()) >= lines:
            return [int(x) for x in path.read_text().split()]
        time.sleep(0.05)
    raise AssertionError(f"{path} never got {lines} line(s)")


def test_a_killed_worker_is_retried_and_nothing_counts_twice(cluster, shards, tmp_path):
    files, docs = shards
    log = tmp_path / "pids"

    def kill_the_first():
        pid = wait_for(log)[0]
        os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_the_first, daemon=True)
    killer.start()
    counts = bray.count_files(files, read=read_after_a_kill(log), fan_in=2)
    killer.join(5)
    pids = wait_for(log, 2)
    assert len(pids) == 2 and pids[0] != pids[1]  # killed, and retried in another worker
    assert counts == bpeforge.count(docs)


def test_a_file_that_cannot_be_read_is_named(cluster, shards, tmp_path):
    files, _ = shards
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is no Parquet file")
    with pytest.raises(InputError) as e:
        bray.count_files(files + [bad])
    assert str(e.value).startswith(str(bad)) and "Traceback" not in str(e.value)
    missing_column = tmp_path / "other.parquet"
    pq.write_table(pa.table({"body": ["x"]}), missing_column)
    with pytest.raises(InputError, match=r"other\.parquet: no column 'text'"):
        bray.count_files([missing_column])
    not_utf8 = tmp_path / "latin1.txt"
    not_utf8.write_bytes(b"caf\xe9\nok\n")
    with pytest.raises(InputError, match=r"latin1\.txt:1: not valid UTF-8"):
        bray.count_files([not_utf8])
    counted = bray.count_files_with_figures([not_utf8], skip_bad_lines=True)
    assert counted.counts == bpeforge.count(["ok"]) and counted.figures.bad_lines == 1
    with pytest.raises(InputError, match="nowhere.txt"):
        bray.count_files([tmp_path / "nowhere.txt"])  # listed on the driver


def test_a_bad_column_of_a_dataset_is_named(cluster):
    ds = ray.data.from_arrow(pa.table({"body": ["a", "b"], "n": [1, 2]}))
    with pytest.raises(ValueError, match=r"no column 'text' \(columns: body, n\)"):
        bray.count_dataset(ds)
    with pytest.raises(ValueError, match=r"column 'n' holds int64, not strings"):
        bray.count_dataset(ds, column="n")


def test_patterns_are_kept_apart(cluster, shards):
    files, docs = shards
    gpt2 = bray.count_files(files[:2], "gpt2")
    assert gpt2.pattern == bpeforge._patterns.resolve_pattern("gpt2")
    with pytest.raises(ValueError, match="'gpt4'.*'gpt2'|'gpt2'.*'gpt4'"):
        bpeforge.count(docs[:10]) + gpt2
    with pytest.raises(ValueError, match="gpt2"):
        bpeforge.Tokenizer.train_from_counts(gpt2, vocab_size=300, pattern="gpt4")
    with pytest.raises(ValueError, match="no such preset"):
        bray.count_files(files, "gtp4")
    with pytest.raises(ValueError, match="fan_in"):
        bray.count_files(files, fan_in=1)


def read_until_cancelled(log):
    """A read function that records its pid in ``log``, then waits until it is interrupted
    (as Ray cancels a running task), which it records too."""

    def read(source, reading):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        try:
            for _ in range(6000):
                time.sleep(0.05)
        except KeyboardInterrupt:
            with open(log, "a") as f:
                f.write("0\n")
            raise
        return []

    return read


def test_ctrl_c_cancels_the_tasks(cluster, shards, tmp_path):
    files, _ = shards
    log = tmp_path / "pids"

    def ctrl_c():
        wait_for(log)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        bray.count_files(files[:1], read=read_until_cancelled(log))
    assert wait_for(log, 2, seconds=30)[1] == 0  # the task was interrupted


def test_progress_says_files_bytes_and_rate(cluster, shards):
    files, docs = shards
    import io

    out = io.StringIO()
    progress = bpeforge._progress.ConsoleProgress(file=out, bars=False, log=True, log_interval=0.0)
    bray.count_files(files, progress=progress)
    text = out.getvalue()
    assert f"{len(files)}/{len(files)} files" in text or "Read " in text
    assert f"Read {len(docs):,} documents" in text and "MB/s" in text
    seen = []
    bray.count_files(files, progress=lambda phase, info: seen.append((phase, dict(info))))
    assert seen[-1] == ("count", {"texts": len(docs), "bytes": sum(len(d.encode()) for d in docs), "done": len(files), "total": len(files)})


def test_without_ray_the_message_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'bpeforge\[ray\]'"):
        bray.import_ray()
