"""Counting on a real cluster of two nodes (each its own raylet, object store and workers, one
CPU each), on loopback only, started for this module by tests/two_nodes.py and stopped after
(only its own processes): ``bpeforge count --ray-address`` counts exactly, and the parts of
one large file are counted on both nodes. The speed of two nodes against one: benches/bench_ray.py nodes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import bpeforge

psutil = pytest.importorskip("psutil")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("ray")
ray_local = pytest.importorskip("bpeforge._ray_local")

HERE = Path(__file__).parent
# A process connecting to the cluster: with the token of Ray's local clusters (~/.ray/auth_token).
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
ENV.pop("BPEFORGE_DEBUG", None)


@pytest.fixture(scope="module")
def two_nodes():
    """The address of a two-node cluster (its files in a private folder, removed after)."""
    folder = tempfile.mkdtemp(prefix="b", dir="/tmp")  # short: Ray's Unix sockets go in it
    helper = subprocess.Popen(
        [sys.executable, str(HERE / "two_nodes.py"), folder],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )
    try:
        address = helper.stdout.readline().strip()
        assert address.startswith("127.0.0.1:"), helper.stderr.read() if helper.poll() is not None else address
        yield address, folder
    finally:
        helper.stdin.close()
        try:
            helper.wait(timeout=60)
        except subprocess.TimeoutExpired:
            helper.kill()
        ray_local.end_processes(folder)  # what the helper left, if anything: of this cluster only
        shutil.rmtree(folder, ignore_errors=True)


def make_docs(n, seed):
    import random

    rng = random.Random(seed)
    words = "the quick brown fox jumps over lazy dogs while int main return void é ☃ 123".split()
    words += ["".join(rng.choices("abcdefghij", k=rng.randint(1, 7))) for _ in range(200)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 25))) for _ in range(n)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Eight files (text, JSONL, Parquet) and their documents."""
    d = tmp_path_factory.mktemp("nodes")
    docs = make_docs(4000, seed=3)
    parts = [docs[i * 500 : (i + 1) * 500] for i in range(8)]
    for i, part in enumerate(parts):
        if i % 3 == 0:
            (d / f"p{i}.txt").write_text("\n".join(part) + "\n", encoding="utf-8")
        elif i % 3 == 1:
            (d / f"p{i}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in part), encoding="utf-8")
        else:
            pq.write_table(pa.table({"text": part}), d / f"p{i}.parquet", row_group_size=100)
    return d, docs


def test_the_cluster_has_two_nodes_on_loopback_only(two_nodes):
    _, folder = two_nodes
    pids = {p.pid for p in ray_local.processes_using(folder)}
    found = [(psutil.Process(c.pid).name(), c.laddr.ip) for c in psutil.net_connections(kind="inet") if c.pid in pids and c.laddr and (c.status == psutil.CONN_LISTEN or c.type == 2)]
    assert sum(1 for name, _ in found if name == "raylet") >= 2, found  # two raylets, listening
    assert [(n, ip) for n, ip in found if ip not in ("127.0.0.1", "::ffff:127.0.0.1")] == []


def test_count_with_ray_address_counts_exactly(two_nodes, corpus, tmp_path):
    address, _ = two_nodes
    d, docs = corpus
    out = tmp_path / "c.parquet"
    cmd = [sys.executable, "-m", "bpeforge", "count", str(d), "--ray-address", address, "-o", str(out), "--pattern", "gpt2"]
    r = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "2 nodes, 2 CPUs" in r.stdout
    assert bpeforge.SpanCounts.load(out) == bpeforge.count(docs, "gpt2")


SPREAD = """
import json, sys, ray, bpeforge.ray as bray
ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
counted = bray.count_files_with_figures(sys.argv[3:], split_bytes=int(sys.argv[2]), fan_in=2)
print(json.dumps({"nodes": len(counted.figures.nodes), "parts": counted.figures.shards, "cluster": len([n for n in ray.nodes() if n["Alive"]]), "counts": counted.counts.to_bytes().hex()}))
"""


def test_one_large_file_is_counted_on_both_nodes(two_nodes, corpus, tmp_path):
    """One file larger than split_bytes: its parts are counted on both nodes, exactly."""
    address, _ = two_nodes
    _, docs = corpus
    big = tmp_path / "one.txt"
    big.write_text("\n".join(docs) + "\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-c", SPREAD, address, "20000", str(big)], env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["cluster"] == 2 and result["nodes"] == 2 and result["parts"] == -(-big.stat().st_size // 20000)
    assert bpeforge.SpanCounts.from_bytes(bytes.fromhex(result["counts"])) == bpeforge.count(docs)
