#!/usr/bin/env python3
"""Reading + counting text and JSONL files as `bpeforge train` does, with the Rust readers
(`TextReader`/`JsonlReader` handed to the trainer whole) against the Python readers
(`read_text`/`read_jsonl`: a str per document, lists of them handed over): paired runs, each in a
fresh process, alternating the two, with the same files.

    python benches/text_readers.py $BPEFORGE_CORPUS_DIR/kernel-code.txt $BPEFORGE_CORPUS_DIR/kernel-docs.txt --repeat 5
    python benches/text_readers.py corpus.txt.zst --repeat 3 --only rust
    python benches/text_readers.py corpus.txt --vocab-size 4096 --repeat 1     # the ranks of both compared

Each run builds the command line's corpus (`--holdout 0`, one document per line) and trains
with vocab_size 256 (no merges: the time is reading, splitting and counting); with a larger
--vocab-size the ranks of the two paths are compared too. MB/s = UTF-8 bytes of the documents
/ wall seconds; MB/CPU-s = the same over the process's user+sys seconds (all threads), which
load on a shared machine changes less than wall time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def child(mode: str, files: list, vocab_size: int, threads) -> dict:
    import bpeforge
    from bpeforge.cli.train import sized_stream
    from bpeforge._inputs import Corpus, expand_inputs

    if mode == "python":  # the Python readers: the tests' oracle
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
        from inputs.python_readers import PythonCorpus as Corpus  # noqa: F811
    corpus = Corpus(expand_inputs(files), holdout_every=0, readers=mode == "rust")
    trainer = bpeforge.Trainer(num_threads=threads)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    stream, buffer_size = sized_stream(corpus)
    trainer.train_from_iterator(stream, vocab_size, buffer_size)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    ranks = hashlib.sha256(b"".join(bytes(b) + b"\0" for b, _ in trainer.get_mergeable_ranks())).hexdigest()[:16]
    return {"wall": wall, "cpu": cpu, "bytes": corpus.total_bytes, "documents": corpus.documents, "ranks": ranks,
            "peak_rss_mb": r1.ru_maxrss / 1024}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="text or JSONL files (.gz/.zst too), read in this order")
    ap.add_argument("--repeat", type=int, default=3, help="pairs of runs (default 3)")
    ap.add_argument("--vocab-size", type=int, default=256, help="256: counting alone; more: the ranks are compared")
    ap.add_argument("--threads", type=int, default=None, help="trainer threads (default: all cores)")
    ap.add_argument("--only", choices=["rust", "python"], help="run one path only")
    ap.add_argument("--child", choices=["rust", "python"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.files, args.vocab_size, args.threads)))
        return
    modes = [args.only] if args.only else ["python", "rust"]
    results: dict = {m: [] for m in modes}
    for k in range(args.repeat):
        for mode in modes if k % 2 == 0 else modes[::-1]:
            cmd = [sys.executable, __file__, "--child", mode, "--vocab-size", str(args.vocab_size), *args.files]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            results[mode].append(r)
            print(f"round {k + 1} {mode:6}: {r['bytes'] / 1e6 / r['wall']:7.1f} MB/s ({r['wall']:.2f} s wall, "
                  f"{r['cpu']:.2f} s CPU, {r['bytes'] / 1e6 / r['cpu']:.1f} MB/CPU-s, peak {r['peak_rss_mb']:.0f} MB, "
                  f"{r['documents']:,} docs, ranks {r['ranks']})", flush=True)
    print(f"\n{os.cpu_count()} cores; files: {' '.join(os.path.basename(f) for f in args.files)}")
    for mode, rs in results.items():
        mbps = [r["bytes"] / 1e6 / r["wall"] for r in rs]
        cpu = [r["bytes"] / 1e6 / r["cpu"] for r in rs]
        print(f"{mode:6}: median {statistics.median(mbps):.1f} MB/s (best {max(mbps):.1f}), median {statistics.median(cpu):.1f} MB/CPU-s")
    if len(modes) == 2:
        ratios = [b["wall"] / a["wall"] for a, b in zip(results["rust"], results["python"])]
        print(f"python/rust wall time, per pair: {', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f})")
        same = {r["ranks"] for rs in results.values() for r in rs}
        print("ranks: the same in every run" if len(same) == 1 else f"ranks DIFFER: {same}")


if __name__ == "__main__":
    main()
