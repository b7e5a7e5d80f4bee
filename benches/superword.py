"""Superword tokens against plain BPE: tokens on held-out text and training time, at equal size.

For each vocabulary size, trains plain BPE and SuperBPE (``superword_transition``) on the same
documents of a Parquet corpus (column ``text``; every 100th document held out), each in a fresh
child process, and counts the tokens each gives the held-out documents (each encoded alone, as
ordinary text). Prints a Markdown table: tokens, bytes per token, the superword tokenizer's
tokens saved, and training seconds with their ratio (measured in the same run, one after the
other).

    python benches/superword.py --corpus /path/kernel-docs.parquet --sizes 32768:24576,65536:49152
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, time, warnings
import pyarrow.parquet as pq
import bpeforge
config = json.loads(sys.argv[1])
docs = [d for d in pq.read_table(config["corpus"], columns=["text"]).column("text").to_pylist() if d]
train = [d for i, d in enumerate(docs) if i % 100 != 99]
held = [d for i, d in enumerate(docs) if i % 100 == 99]
options = {"special_tokens": [], "superword_transition": config["transition"]}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    tok = bpeforge.Tokenizer.train_from_iterator(train, config["vocab_size"], **options)
    seconds = time.perf_counter() - started
tokens = sum(len(ids) for ids in tok.encoding.encode_ordinary_batch(held))
print(json.dumps({"seconds": seconds, "tokens": tokens, "bytes": sum(len(d.encode()) for d in held), "n_vocab": tok.n_vocab,
                  "superword_spans": tok.training_stats.get("superword_spans", 0)}))
"""


def measure(corpus: str, vocab_size: int, transition: int | None) -> dict:
    """One training in a fresh child: its seconds and the held-out tokens."""
    config = json.dumps({"corpus": corpus, "vocab_size": vocab_size, "transition": transition})
    done = subprocess.run([sys.executable, "-c", CHILD, config], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="a Parquet file with a text column")
    p.add_argument("--sizes", default="32768:24576,65536:49152", help="SIZE:TRANSITION,... (default %(default)s)")
    args = p.parse_args()
    rows = []
    for pair in args.sizes.split(","):
        size, transition = (int(x) for x in pair.split(":"))
        plain = measure(args.corpus, size, None)
        superword = measure(args.corpus, size, transition)
        saved = (plain["tokens"] - superword["tokens"]) / plain["tokens"] * 100
        rows.append(
            f"| {size:,} | {transition:,} | {plain['tokens']:,} | {superword['tokens']:,} | "
            f"{plain['bytes'] / plain['tokens']:.2f} | {superword['bytes'] / superword['tokens']:.2f} | {saved:.1f}% | "
            f"{plain['seconds']:.1f} | {superword['seconds']:.1f} | {superword['seconds'] / plain['seconds']:.2f}x |"
        )
    print(f"held-out: every 100th document of {os.path.basename(args.corpus)}, each encoded alone\n")
    print("| vocab | transition | plain tokens | superword tokens | plain B/tok | superword B/tok | tokens saved | plain s | superword s | time ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
