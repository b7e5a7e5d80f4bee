#!/usr/bin/env python3
"""`TextReader` against Python reading the same file: `Trainer.train_from_iterator` counting a
text file (vocab_size 256: no merges, the time is reading, splitting and counting) fed four
ways, in paired runs, each in a fresh process, the ways alternated from round to round:

- ``open``: ``trainer.train_from_iterator(open(path), 256)``, a str per line, read by Python;
- ``reader``: ``trainer.train_from_iterator(TextReader(path), 256)``, the reader as the iterable;
- ``reader-item``: ``trainer.train_from_iterator([TextReader(path)], 256)``, the reader as one item;
- ``reader-lists``: ``trainer.train_from_iterator(b for b in TextReader(path))``, the reader
  iterated in Python: lists of str, a str per document (as ``reader`` was read before the
  trainer took a reader given as the iterable for an item).

    python benches/text_reader_vs_open.py big.txt --repeat 3
    python benches/text_reader_vs_open.py big.txt --modes open,reader --threads 2

The texts differ slightly: Python's lines keep their "\\n" and empty lines are texts, the
reader's lines do not and are skipped (so the ranks are not compared). The reader is to be no
slower than ``open``: wall time, and CPU (user+sys of the whole process, all threads, over the
timed call), which a busy machine changes less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

MODES = ("open", "reader", "reader-item", "reader-lists")


def child(mode: str, path: str, threads) -> dict:
    import bpeforge

    trainer = bpeforge.Trainer(num_threads=threads)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if mode == "open":
        with open(path) as f:
            trainer.train_from_iterator(f, 256)
    elif mode == "reader":
        trainer.train_from_iterator(bpeforge.TextReader(path), 256)
    elif mode == "reader-item":
        trainer.train_from_iterator([bpeforge.TextReader(path)], 256)
    else:
        trainer.train_from_iterator((batch for batch in bpeforge.TextReader(path)), 256)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"wall": wall, "cpu": cpu, "peak_rss_mb": r1.ru_maxrss / 1024}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", help="a text file, one document per line")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated, of: " + ", ".join(MODES))
    ap.add_argument("--threads", type=int, default=None, help="trainer threads (default: all cores)")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.file, args.threads)))
        return
    modes = args.modes.split(",")
    if bad := [m for m in modes if m not in MODES]:
        ap.error(f"unknown mode(s) {', '.join(bad)} (choose from {', '.join(MODES)})")
    size = os.path.getsize(args.file)
    results: dict = {m: [] for m in modes}
    for k in range(args.repeat):
        for mode in modes[k % len(modes):] + modes[:k % len(modes)]:  # each way first in turn
            cmd = [sys.executable, __file__, "--child", mode, args.file]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            results[mode].append(r)
            print(f"round {k + 1} {mode:12}: {r['wall']:6.2f} s wall ({size / 1e6 / r['wall']:6.1f} MB/s), "
                  f"{r['cpu']:6.2f} s CPU, peak {r['peak_rss_mb']:.0f} MB", flush=True)
    print(f"\n{os.cpu_count()} cores; {os.path.basename(args.file)}, {size / 1e6:.0f} MB; load average {os.getloadavg()[0]:.1f}")
    for mode, rs in results.items():
        walls, cpus = [r["wall"] for r in rs], [r["cpu"] for r in rs]
        print(f"{mode:12}: median {statistics.median(walls):.2f} s wall (best {min(walls):.2f}), median {statistics.median(cpus):.2f} s CPU")
    if "open" in results:
        for mode in [m for m in modes if m != "open"]:
            for what in ("wall", "cpu"):
                ratios = [r[what] / o[what] for r, o in zip(results[mode], results["open"])]
                print(f"{mode}/open {what}, per round: {', '.join(f'{x:.3f}' for x in ratios)} (median {statistics.median(ratios):.3f})")


if __name__ == "__main__":
    main()
