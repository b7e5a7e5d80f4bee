#!/usr/bin/env python3
"""Memory and time of `Tokenizer.from_huggingface` on a large vocabulary: a folder saved by
bpeforge (tokenizer.json of ENTRIES ranks: the 256 bytes, every two-byte token, then three-byte
tokens; about 75 MB for 2M entries, with every way of making each token as a merge) read back,
each run in a fresh process.

    python benches/hf_import.py --entries 2000000 --repeat 3 [--folder DIR]

The table gives, per run, the seconds of the import and its peak memory: the process's
high-water mark (`VmHWM`) after the import minus the one after `import bpeforge`, beside the size
of the ranks it returns (the dict of bytes to id, measured as the growth of the resident set
when the same dict is built in Python). The folder is written once into a temporary directory
(or DIR, kept for later runs).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = """
import sys, time
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
import bpeforge
base = status("VmHWM")
t = time.perf_counter()
tok = bpeforge.Tokenizer.from_huggingface(sys.argv[1])
seconds = time.perf_counter() - t
print(tok.n_vocab, seconds, status("VmHWM") - base)
"""

RANKS_SIZE = """
import itertools, sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) * 1024
before = rss()
n = int(sys.argv[1])
ranks = {bytes([b]): b for b in range(256)}
for length in (2, 3, 4):
    for t in itertools.product(range(256), repeat=length):
        if len(ranks) >= n:
            break
        ranks[bytes(t)] = len(ranks)
print(rss() - before)
"""


def ranks(n: int) -> dict[bytes, int]:
    out = {bytes([b]): b for b in range(256)}
    for length in (2, 3, 4):
        for t in itertools.product(range(256), repeat=length):
            if len(out) >= n:
                return out
            out[bytes(t)] = len(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", help="where the saved folder is (written if it has no tokenizer.json)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder or os.path.join(tmp, "hf")
        if not os.path.exists(os.path.join(folder, "tokenizer.json")):
            import bpeforge
            from bpeforge import huggingface

            t = time.perf_counter()
            huggingface.save_huggingface(bpeforge.Tokenizer(ranks(args.entries)), folder)
            print(f"wrote {folder} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        size = os.path.getsize(os.path.join(folder, "tokenizer.json"))
        ranks_mb = int(subprocess.run([sys.executable, "-c", RANKS_SIZE, str(args.entries)], capture_output=True, text=True, check=True).stdout) / 1e6
        rows = []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, "-c", CHILD, folder], capture_output=True, text=True, check=True).stdout.split()
            rows.append((float(out[1]), int(out[2]) / 1e6))
        print(f"tokenizer.json: {size / 1e6:.0f} MB, {args.entries:,} entries; the ranks as a dict: {ranks_mb:.0f} MB")
        print(f"{'run':>4} {'seconds':>8} {'peak MB':>8} {'peak / ranks':>13}")
        for i, (seconds, peak) in enumerate(rows):
            print(f"{i + 1:>4} {seconds:>8.1f} {peak:>8.0f} {peak / ranks_mb:>13.2f}")
        seconds, peak = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        print(f"{'med':>4} {seconds:>8.1f} {peak:>8.0f} {peak / ranks_mb:>13.2f}")


if __name__ == "__main__":
    main()
