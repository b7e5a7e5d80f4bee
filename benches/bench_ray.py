#!/usr/bin/env python3
"""Counting on Ray against counting in one process, and what the merge node needs at scale.

    python benches/bench_ray.py overhead --corpus $BPEFORGE_CORPUS_DIR/kernel-code.parquet --shards 8 --repeat 3
    python benches/bench_ray.py scale --corpus $BPEFORGE_CORPUS_DIR/kernel-code.parquet
    python benches/bench_ray.py nodes --corpus $BPEFORGE_CORPUS_DIR/kernel-code.parquet --mb 200

overhead: the corpus is split into --shards Parquet files (in --workdir, default a temporary
folder), then counted alternately (A, B, A, B, ...) by
  A  bpeforge in this process: the shards read by the command line's reader (bpeforge._inputs)
     and counted on --cpus threads;
  B  bpeforge.ray.count_files on a local Ray cluster of --cpus CPUs (a worker task per shard,
     one thread each, the sums in a tree of reduce tasks), started and warmed up before the
     clock (its cold start is timed apart: ray.init and a first task).
Reading is included in both. Reported: each run's seconds, the B/A ratio of each pair and their
median, the driver's peak RSS during B above its RSS before (VmHWM reset through
/proc/self/clear_refs; it counts the object store's pages the driver reads), the same for its
private memory alone (RssAnon, sampled every 2 ms), and the final counts' size (in memory: span bytes + 16 bytes a span, the
Rust layout; packed: to_bytes). The counts of A and B are checked equal.

scale: distinct spans against corpus size on the first 1/64, 1/32, ..., all of the corpus
(Heaps' law V = K * n^beta fitted on bytes, least squares in log-log), and the merge node's
memory per distinct span measured by training from the full counts in a child process (its peak
RSS above the interpreter's, over the distinct spans), which together predict the merge node's
RAM at 100 GB and 1 TB of similar text.

nodes: one text file of --mb MB (the corpus's documents, repeated to the size; or synthetic
text without --corpus) counted by bpeforge.ray.count_files (parts of 64 MB, one task each) on a
cluster of one node, then of two nodes, --cpus-per-node CPUs each, both on loopback on this
machine (tests/two_nodes.py: Ray's cluster_utils). Each cluster is started and warmed up (a
first count, the workers importing bpeforge) before the clock; --repeat counts each, the median
kept. Reported: the seconds of each, and the ratio two nodes / one (the target: at most 0.8x);
the counts of both are checked equal. On a machine of 2 cores shared with other work, two nodes
of one CPU each is the most it can show.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def split_corpus(corpus: str, shards: int, workdir: str) -> list:
    """The corpus (.parquet with a ``text`` column, or .txt one document per line) written as
    ``shards`` Parquet files of about equal rows; reused if already there."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = [os.path.join(workdir, f"shard-{i:03d}.parquet") for i in range(shards)]
    if all(os.path.exists(p) for p in paths):
        return paths
    if corpus.endswith(".parquet"):
        texts = pq.read_table(corpus, columns=["text"]).column("text")
    else:
        with open(corpus, encoding="utf-8") as f:
            texts = pa.chunked_array([pa.array(f.read().split("\n"))])
    n = len(texts)
    for i, path in enumerate(paths):
        part = texts.slice(i * n // shards, (i + 1) * n // shards - i * n // shards)
        pq.write_table(pa.table({"text": part}), path + ".tmp", row_group_size=256)
        os.replace(path + ".tmp", path)
    return paths


def status() -> dict:
    """This process's memory figures from /proc/self/status, in bytes: VmRSS, VmHWM (its peak
    since the last reset), RssAnon (private), RssShmem (shared memory mapped: Ray's object
    store pages it read)."""
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssShmem"):
                values[key] = int(rest.split()[0]) * 1024
    return values


def rss_now():
    """This process's resident set size and its peak since the last reset, in bytes."""
    values = status()
    return values["VmRSS"], values["VmHWM"]


class PrivatePeak:
    """The peak of RssAnon (private memory) while running, sampled every 2 ms by a thread (the
    kernel keeps no peak of it)."""

    def __enter__(self):
        import threading

        self.peak = status()["RssAnon"]
        self._stop = threading.Event()

        def sample():
            while not self._stop.is_set():
                self.peak = max(self.peak, status()["RssAnon"])
                time.sleep(0.002)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, status()["RssAnon"])


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def count_here(paths: list, threads: int):
    import bpeforge._inputs as inputs
    from bpeforge._counts import count_with_figures

    sources = inputs.expand_inputs(paths)
    return count_with_figures(inputs.Corpus(sources), num_threads=threads, buffer_size=8192).counts


def overhead(args) -> None:
    import bpeforge

    workdir = args.workdir or tempfile.mkdtemp(prefix="bpeforge-ray-bench-")
    os.makedirs(workdir, exist_ok=True)
    paths = split_corpus(args.corpus, args.shards, workdir)
    total = sum(os.path.getsize(p) for p in paths)
    print(f"{len(paths)} shards in {workdir} ({total / 1e6:,.1f} MB of Parquet)")

    t = time.perf_counter()
    import bpeforge.ray as bray

    cluster = bray.start_local_cluster(num_cpus=args.cpus, logging_level="ERROR")
    ray = cluster.ray
    ray.get(ray.remote(lambda: 0).remote())
    cold = time.perf_counter() - t
    print(f"cold start (ray.init + a first task): {cold:.1f} s")
    t = time.perf_counter()
    warm = bray.count_files(paths[:1])  # workers import bpeforge once
    print(f"first count_files (workers import bpeforge): {time.perf_counter() - t:.1f} s")
    del warm

    rows, ratios = [], []
    here_counts = ray_counts = None
    peak_rise, private_rise = [], []
    for k in range(args.repeat):
        t = time.perf_counter()
        here_counts = count_here(paths, args.cpus)
        a = time.perf_counter() - t
        del here_counts
        ray_counts = None
        before = status()
        reset_peak()
        with PrivatePeak() as private:
            t = time.perf_counter()
            ray_counts = bray.count_files(paths)
            b = time.perf_counter() - t
        _, peak = rss_now()
        peak_rise.append(peak - before["VmRSS"])
        private_rise.append(private.peak - before["RssAnon"])
        ratios.append(b / a)
        rows.append([k + 1, f"{a:.2f}", f"{b:.2f}", f"{b / a:.2f}x", f"{(peak - before['VmRSS']) / 1e6:,.1f}", f"{private_rise[-1] / 1e6:,.1f}"])
        print(f"round {k + 1}: in-process {a:.2f} s, Ray {b:.2f} s, ratio {b / a:.2f}x; driver peak above its RSS before: "
              f"{peak_rise[-1] / 1e6:,.1f} MB, private memory only: {private_rise[-1] / 1e6:,.1f} MB", flush=True)
    here_counts = count_here(paths, args.cpus)
    assert here_counts == ray_counts, "Ray's counts differ from the in-process counts"
    del here_counts
    span_bytes = sum(len(s) for s, _ in ray_counts.items())
    in_memory = span_bytes + 16 * len(ray_counts)
    packed = len(ray_counts.to_bytes())
    print()
    print(bl.markdown_table(["round", "in-process s", "Ray s", "Ray / in-process", "driver RSS peak rise MB", "private only MB"], rows))
    print()
    print(f"median ratio Ray / in-process: {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x, max {max(ratios):.2f}x)")
    print(f"final counts: {len(ray_counts):,} distinct spans, {in_memory / 1e6:,.1f} MB in memory (span bytes {span_bytes / 1e6:,.1f} MB + 16 B a span), {packed / 1e6:,.1f} MB packed")
    print(f"driver peak rise: median {statistics.median(peak_rise) / 1e6:,.1f} MB = {statistics.median(peak_rise) / in_memory:.2f}x the counts in memory; "
          f"private memory only: {statistics.median(private_rise) / 1e6:,.1f} MB = {statistics.median(private_rise) / in_memory:.2f}x")
    print(f"driver peak RSS (whole process, ru_maxrss, in-process runs included): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:,.0f} MB")
    cluster.stop()


def scale(args) -> None:
    import bpeforge

    fractions = [1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0]
    corpus = {"path": args.corpus, "feed": "list"}
    points = []
    counts = None
    for f in fractions:
        st = bl.Stats()
        it = bl.corpus_iter(dict(corpus, fraction=f), st)
        counts = bpeforge.count(it)
        if f == 1 / 4:
            quarter = counts
        points.append((st.bytes, len(counts)))
        print(f"fraction {f:.4f}: {st.bytes / 1e6:9,.1f} MB, {len(counts):>11,} distinct spans", flush=True)
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(v) for _, v in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    beta = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    k = math.exp(my - beta * mx)
    print(f"Heaps' law fit: V = {k:.3g} * bytes^{beta:.3f}")

    # The merge node's memory per distinct span: the rise of a child's RSS while it loads packed
    # counts and trains from them, for the counts of a quarter of the corpus and of all of it;
    # the difference over the difference in distinct spans leaves out what does not grow with
    # the spans (the vocabulary's tables, the interpreter).
    measured = [merge_node_rise(quarter, args.vocab_size), merge_node_rise(counts, args.vocab_size)]
    for distinct, rise in measured:
        print(f"merge node: loading + training {args.vocab_size:,} tokens from {distinct:,} distinct spans: RSS rise {rise / 1e6:,.1f} MB ({rise / distinct:.0f} B a span)")
    (v1, r1), (v2, r2) = measured
    per_span = max((r2 - r1) / (v2 - v1), r2 / v2)
    print(f"bytes per distinct span used below: {per_span:.0f} (the larger of the marginal {(r2 - r1) / (v2 - v1):.0f} and the whole {r2 / v2:.0f})")
    rows = []
    for label, size in [("kernel-code (measured)", points[-1][0]), ("100 GB", 100e9), ("1 TB", 1e12)]:
        v = k * size**beta
        rows.append([label, f"{v:,.0f}", f"{v * per_span / 1e9:,.1f}"])
    print()
    print(bl.markdown_table(["corpus", "distinct spans (Heaps)", f"merge node RAM GB ({per_span:.0f} B/span)"], rows))
    print(json.dumps({"points": points, "k": k, "beta": beta, "bytes_per_span": per_span, "merge_node": measured}))


MERGE_NODE = """
import sys, bpeforge
def status():
    with open("/proc/self/status") as f:
        return {k: int(v.split()[0]) * 1024 for k, _, v in (l.partition(":") for l in f) if k in ("VmRSS", "VmHWM")}
before = status()["VmRSS"]
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
data = open(sys.argv[1], "rb").read()
c = bpeforge.SpanCounts.from_bytes(data)
del data
bpeforge.Tokenizer.train_from_counts(c, vocab_size=int(sys.argv[2]), pattern=c.pattern)
print(len(c), status()["VmHWM"] - before)
"""


def merge_node_rise(counts, vocab_size: int):
    """(distinct spans, RSS rise in bytes) of a child process that reads ``counts`` packed,
    unpacks them and trains ``vocab_size`` tokens from them."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "counts.bin")
        with open(path, "wb") as fh:
            fh.write(counts.to_bytes())
        out = subprocess.run([sys.executable, "-c", MERGE_NODE, path, str(vocab_size)], capture_output=True, text=True, check=True).stdout
    distinct, rise = map(int, out.split())
    return distinct, rise


def big_text_file(corpus, mb: int, workdir: str) -> str:
    """A text file of about ``mb`` MB, one document per line: the corpus's documents (Parquet
    column ``text``, or lines of a .txt) repeated to the size, or synthetic words."""
    path = os.path.join(workdir, f"one-{mb}mb.txt")
    if os.path.exists(path) and os.path.getsize(path) >= mb * 1_000_000:
        return path
    if corpus is None:
        import random

        rng = random.Random(0)
        words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(1, 9))) for _ in range(20_000)]
        docs = [" ".join(rng.choices(words, k=rng.randint(5, 60))) for _ in range(40_000)]
    elif corpus.endswith(".parquet"):
        import pyarrow.parquet as pq

        docs = [t.replace("\n", " ") for t in pq.read_table(corpus, columns=["text"]).column("text").to_pylist() if t]
    else:
        with open(corpus, encoding="utf-8") as f:
            docs = [line for line in f.read().split("\n") if line]
    block = ("\n".join(docs) + "\n").encode("utf-8")
    with open(path + ".tmp", "wb") as f:
        written = 0
        while written < mb * 1_000_000:
            f.write(block)
            written += len(block)
    os.replace(path + ".tmp", path)
    return path


def nodes(args) -> None:
    # Before Ray is imported: a node on 127.0.0.1 stays there (see bpeforge/ray_local.py).
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}
    os.environ.update(env)
    import ray

    import bpeforge.ray as bray

    workdir = args.workdir or tempfile.mkdtemp(prefix="bpeforge-ray-bench-")
    os.makedirs(workdir, exist_ok=True)
    path = big_text_file(args.corpus, args.mb, workdir)
    size = os.path.getsize(path)
    warm = os.path.join(workdir, "warm.txt")
    with open(warm, "w") as f:
        f.write("a few words to warm the workers up\n" * 100)
    helper = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "two_nodes.py")
    print(f"{path}: {size / 1e6:,.1f} MB, {-(-size // bray.SPLIT_BYTES)} parts of at most {bray.SPLIT_BYTES / 1e6:.0f} MB")
    seconds, counts = {}, {}
    for n in (1, 2):
        folder = tempfile.mkdtemp(prefix="b", dir="/tmp")
        cluster = subprocess.Popen([sys.executable, helper, folder, str(args.cpus_per_node), str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        try:
            address = cluster.stdout.readline().strip()
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
            bray.count_files([warm])
            runs = []
            for k in range(args.repeat):
                t = time.perf_counter()
                counted = bray.count_files_with_figures([path])
                runs.append(time.perf_counter() - t)
                print(f"{n} node{'s' if n > 1 else ''}, run {k + 1}: {runs[-1]:.2f} s, tasks on {len(counted.figures.nodes)} node(s)", flush=True)
            seconds[n], counts[n] = statistics.median(runs), counted.counts
            ray.shutdown()
        finally:
            cluster.stdin.close()
            cluster.wait(timeout=120)
            from bpeforge._ray_local import end_processes

            end_processes(folder)
            subprocess.run(["rm", "-rf", folder])
    assert counts[1] == counts[2], "two nodes counted otherwise than one"
    ratio = seconds[2] / seconds[1]
    print()
    print(bl.markdown_table(["nodes", "CPUs", "median s", "MB/s"], [[n, n * args.cpus_per_node, f"{seconds[n]:.2f}", f"{size / 1e6 / seconds[n]:,.1f}"] for n in (1, 2)]))
    print()
    print(f"two nodes / one: {ratio:.2f}x ({'within' if ratio <= 0.8 else 'ABOVE'} the 0.8x target)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=bl.BUILD_HINT)
    sub = ap.add_subparsers(dest="what", required=True)
    o = sub.add_parser("overhead", help="Ray against one process")
    o.add_argument("--corpus", required=True, help=".parquet (column text) or .txt")
    o.add_argument("--shards", type=int, default=8)
    o.add_argument("--cpus", type=int, default=2, help="Ray's CPUs, and the in-process counting threads")
    o.add_argument("--repeat", type=int, default=3)
    o.add_argument("--workdir", help="where the shards go (default: a temporary folder)")
    s = sub.add_parser("scale", help="Heaps' law and the merge node's RAM")
    s.add_argument("--corpus", required=True)
    s.add_argument("--vocab-size", type=int, default=32768)
    n = sub.add_parser("nodes", help="one large file on two nodes against one")
    n.add_argument("--corpus", help=".parquet (column text) or .txt (default: synthetic text)")
    n.add_argument("--mb", type=int, default=200)
    n.add_argument("--cpus-per-node", type=int, default=1)
    n.add_argument("--repeat", type=int, default=3)
    n.add_argument("--workdir", help="where the file goes (default: a temporary folder)")
    args = ap.parse_args(argv)
    bl.check_corpus(args.corpus)
    {"overhead": overhead, "scale": scale, "nodes": nodes}[args.what](args)


if __name__ == "__main__":
    main()
