#!/usr/bin/env python3
"""Memory on one long span: a file of MB megabytes of one repeated character (a single span, and
tokens that double in length up to megabytes each), trained through the command line and through
the Python API, each in a fresh process.

    python benches/long_span.py --mb 50 --repeat 3

The metric is bytes per input byte: (the process's peak RSS - the peak of `bpeforge --help`) /
the file's bytes, peak RSS as the kernel's high-water mark (`VmHWM`, which the child reports). The
command line trains, saves the folder and the `.tiktoken` file and measures compression; the API
trains `Tokenizer.train_from_iterator(TextReader(FILE), V)` and saves the tokenizer. Runs of the
three alternate, and the table gives each one's median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

# Each child reports its own peak (VmHWM) as its last line of standard error: the rusage of a
# child counts the parent's pages too if it was forked before it exec'd.
PEAK = """
def _peak():
    import sys
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            print("peak", int(line.split()[1]) * 1024, file=sys.stderr)
import atexit; atexit.register(_peak)
"""

CLI = PEAK + """
import sys
from bpeforge.cli import main
sys.exit(main(sys.argv[1:]))
"""

API = PEAK + """
import sys, bpeforge
tok = bpeforge.Tokenizer.train_from_iterator(bpeforge.TextReader(sys.argv[1]), int(sys.argv[2]))
tok.save(sys.argv[3])
"""


def peak_of(code: str, *args: str) -> tuple[int, float]:
    """(peak RSS in bytes, seconds) of a child running ``code`` with ``args``; exits if it fails."""
    start = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    last = child.stderr.strip().splitlines()[-1:] or [""]
    if child.returncode != 0 or not last[0].startswith("peak "):
        sys.exit(f"{args} failed ({child.returncode}): {child.stderr[-500:]}")
    return int(last[0].split()[1]), seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=int, default=50, help="size of the span in MB (default 50)")
    p.add_argument("--vocab-size", type=int, default=300, help="vocab_size (default 300)")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.txt")
        with open(path, "w") as f:
            f.write("a" * (args.mb * 10**6))
        nbytes = os.path.getsize(path)
        runs: dict = {"help": [], "cli": [], "api": []}
        for k in range(args.repeat):
            out = os.path.join(tmp, f"out{k}")
            runs["help"].append(peak_of(CLI, "--help"))
            runs["cli"].append(peak_of(CLI, "train", path, "--vocab-size", str(args.vocab_size), "-o", out + "-cli", "--quiet"))
            runs["api"].append(peak_of(API, path, str(args.vocab_size), out + "-api"))
        base = statistics.median(peak for peak, _ in runs["help"])
        print(f"one span of {nbytes:,} bytes, vocab_size {args.vocab_size}, {args.repeat} runs each; "
              f"`bpeforge --help` peaks at {base / 1e6:.0f} MB\n")
        print("| path | peak RSS | bytes / input byte | seconds |")
        print("|---|---:|---:|---:|")
        for name, label in (("cli", "`bpeforge train`"), ("api", "`Tokenizer.train_from_iterator(TextReader)` + `save`")):
            peak = statistics.median(p for p, _ in runs[name])
            seconds = statistics.median(s for _, s in runs[name])
            print(f"| {label} | {peak / 1e6:.0f} MB | {(peak - base) / nbytes:.1f} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
