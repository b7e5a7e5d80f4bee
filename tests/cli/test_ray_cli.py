"""``bpeforge train --ray`` / ``--ray-address`` and ``bpeforge count --ray-address``: the inputs
counted on Ray train the ranks of training on them here (with --holdout 0: every document is
counted), and what cannot go with Ray is a one-line usage error. One local cluster (loopback
only, 2 CPUs) for the module; the commands run in this process (connected to it) or in a
subprocess connecting to it by address; one starts a local cluster of its own."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest

import bpeforge
from bpeforge import SpanCounts
from bpeforge.cli import main

from .helpers import assert_one_line_error, make_docs, report_value, run

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ray = pytest.importorskip("ray")
bray = pytest.importorskip("bpeforge.ray")
ray_local = pytest.importorskip("bpeforge._ray_local")
# A process connecting to the cluster: on loopback, and with the token of the cluster (Ray's
# local clusters require one, saved in ~/.ray/auth_token).
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token"}


@pytest.fixture(scope="module")
def cluster(ray_cluster):
    yield ray_cluster.address


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    d = tmp_path_factory.mktemp("shards")
    docs = make_docs(1500, seed=7)
    for i in range(5):
        pq.write_table(pa.table({"text": docs[i * 300 : (i + 1) * 300]}), d / f"part-{i}.parquet", row_group_size=100)
    (d / "more.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in docs[:100]), encoding="utf-8")
    return d, docs + docs[:100]


def ranks(folder):
    return bpeforge.Tokenizer.load(folder).mergeable_ranks


def run_here(*args):
    return main([str(a) for a in args])


def test_train_on_ray_trains_what_training_here_trains(cluster, shards, tmp_path, capsys):
    d, docs = shards
    assert run_here("train", d, "--ray-address", cluster, "--vocab-size", 600, "-o", tmp_path / "ray", "--eval-text", d / "more.jsonl") == 0
    out = capsys.readouterr().out
    assert "counted on the Ray cluster at" in report_value(out, "span counts")
    assert f"{len(docs):,} documents" in report_value(out, "span counts")
    assert "bytes/token on 1 text" in report_value(out, "compression")
    r = run("train", d, "--holdout", 0, "--vocab-size", 600, "-o", tmp_path / "here")
    assert r.returncode == 0, r.stderr
    assert ranks(tmp_path / "ray") == ranks(tmp_path / "here")


def test_extend_on_ray_counts_with_the_base_pattern(cluster, shards, tmp_path, capsys):
    """--extend with --ray: the new text is counted with the base's pattern (here gpt2, not the
    default), so the result is what extending here gives."""
    d, docs = shards
    base = bpeforge.Tokenizer.train_from_iterator(docs[:200], 400, pattern="gpt2", special_tokens=["<|bos|>"])
    base.save(tmp_path / "base")
    args = ("--extend", tmp_path / "base", "--vocab-size", 500)
    assert run_here("train", d, "--ray-address", cluster, *args, "-o", tmp_path / "ray") == 0
    here = base.extend(docs, vocab_size=500)
    assert ranks(tmp_path / "ray") == here.mergeable_ranks


def test_count_on_ray_saves_the_counts_of_counting_here(cluster, shards, tmp_path, capsys):
    d, docs = shards
    out = tmp_path / "c.parquet"
    assert run_here("count", d, "--ray-address", cluster, "-o", out, "--pattern", "gpt2", "--doc-cap", 40) == 0
    assert "counted on" in capsys.readouterr().out
    assert SpanCounts.load(out) == bpeforge.count([t[:40] for t in docs], "gpt2", options={"doc_cap": 40})


def test_a_bad_shard_is_one_line_naming_it(cluster, shards, tmp_path, capsys):
    d, _ = shards
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    assert run_here("train", d, bad, "--ray-address", cluster, "-o", tmp_path / "tok") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"bpeforge: error: {bad}")
    assert not (tmp_path / "tok").exists()


def test_what_cannot_go_with_ray_is_a_usage_error(shards, tmp_path):
    d, _ = shards
    out = tmp_path / "tok"
    assert_one_line_error(run("train", d, "--ray", "--ray-address", "auto", "-o", out), "--ray", "--ray-address")
    assert_one_line_error(run("train", d, "--ray", "--holdout", 5, "-o", out), "--holdout")
    assert_one_line_error(run("train", d, "--ray", "--max-chars", 5, "-o", out), "--max-chars")
    assert_one_line_error(run("train", "--ray", "--from-counts", d, "-o", out), "--from-counts")
    assert_one_line_error(run("train", "--ray", "-o", out), "INPUT")
    assert_one_line_error(run("count", "--ray", "-o", tmp_path / "c.parquet"), "INPUT")
    assert_one_line_error(run("train", d, "--ray", "--vocab-size", 3, "-o", out), "--vocab-size")
    assert not out.exists()


def test_a_subprocess_connects_by_address(cluster, shards, tmp_path):
    d, docs = shards
    r = run("count", d / "part-0.parquet", "--ray-address", cluster, "-o", tmp_path / "c.parquet", env=RAY_ENV)
    assert r.returncode == 0, r.stderr
    assert SpanCounts.load(tmp_path / "c.parquet") == bpeforge.count(docs[:300])


def test_ray_starts_a_local_cluster_and_leaves_nothing_behind(shards, tmp_path):
    d, docs = shards
    tmpdir = tempfile.mkdtemp(prefix="b", dir="/tmp")  # short: the cluster's folder goes in it
    try:
        r = run("train", d / "part-1.parquet", "--ray", "--threads", 1, "--vocab-size", 500, "-o", tmp_path / "tok", env={**RAY_ENV, "TMPDIR": tmpdir}, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "counted on a local Ray cluster, 1 node, 1 CPUs" in report_value(r.stdout, "span counts")
        assert "not measured: no --eval-text" in report_value(r.stdout, "compression")
        here = bpeforge.Tokenizer.train_from_iterator(docs[300:600], vocab_size=500)
        assert ranks(tmp_path / "tok") == here.mergeable_ranks
        assert ray_local.processes_using(tmpdir) == [] and os.listdir(tmpdir) == []
    finally:
        ray_local.end_processes(tmpdir)
        shutil.rmtree(tmpdir)


def test_ctrl_c_stops_the_command_and_its_tasks(cluster, tmp_path):
    """A task blocked reading a named pipe; Ctrl-C on the command: exit 130, one line, and the
    task stops (it would otherwise read what the pipe gives it for as long as it is given)."""
    import signal
    import subprocess
    import sys
    import time

    from .helpers import ENV

    fifo = tmp_path / "stream.txt"
    os.mkfifo(fifo)
    cmd = [sys.executable, "-m", "bpeforge", "count", str(fifo), "--ray-address", cluster, "-o", str(tmp_path / "c.parquet")]
    p = subprocess.Popen(cmd, env={**ENV, **RAY_ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The pipe opened for writing here opens once a worker opens it for reading: the task runs.
    writer = os.open(fifo, os.O_WRONLY)
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "bpeforge: interrupted"
    # The task stops reading: its end of the pipe closes (writing to it breaks) before the
    # test's deadline, however much is written to it meanwhile.
    deadline = time.monotonic() + 30
    with pytest.raises(BrokenPipeError):
        while time.monotonic() < deadline:
            os.write(writer, b"never counted\n")
            time.sleep(0.1)
    os.close(writer)
    assert not (tmp_path / "c.parquet").exists()
