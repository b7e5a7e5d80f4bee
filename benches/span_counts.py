#!/usr/bin/env python3
"""Span counts files and sums: bytes per distinct span on disk (Parquet) and packed (pickle),
and the throughput of saving, loading and adding counts.

    python benches/span_counts.py --corpus $BPEFORGE_CORPUS_DIR/kernel-docs.txt --repeat 5
    python benches/span_counts.py --corpus $BPEFORGE_CORPUS_DIR/kernel-code.txt --shards 8 --repeat 3

The corpus (one text per line) is cut into --shards stretches of about equal bytes, each counted
on its own (`bpeforge.count`, not timed here: see count_throughput.py); the shards' counts are
then added (`SpanCounts.merge`, and the first two with `+`), the sum saved, loaded, packed
(`to_bytes`, what pickling moves) and unpacked, each --repeat times, medians shown. With
--check, the sum is compared with the counts of the whole corpus counted at once.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def shard_texts(path: str, shards: int):
    """The lines of the file at `path`, as `shards` iterators of about equal bytes, read one
    after the other from one open file (each must be consumed before the next)."""
    budget = os.path.getsize(path) / shards
    f = open(path, encoding="utf-8", errors="replace", newline="\n")

    def part():
        nbytes = 0
        for line in f:
            yield line
            nbytes += len(line)
            if nbytes >= budget:
                return

    for _ in range(shards):
        yield part()


def timed(repeat: int, fn):
    """The median seconds of `repeat` calls of `fn`, and its last result."""
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return bl.median(times), result


def main(argv=None):
    import bpeforge

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=bl.BUILD_HINT)
    ap.add_argument("--corpus", required=True, metavar="PATH", help=".txt, one text per line")
    ap.add_argument("--shards", type=int, default=8, help="counted apart, then added (default 8)")
    ap.add_argument("--pattern", default="gpt4")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="also count the whole corpus at once and compare")
    args = ap.parse_args(argv)
    bl.check_corpus(args.corpus)

    t = time.perf_counter()
    parts = [bpeforge.count(texts, args.pattern) for texts in shard_texts(args.corpus, args.shards)]
    count_s = time.perf_counter() - t
    spans_in = sum(len(p) for p in parts)
    merge_s, whole = timed(args.repeat, lambda: bpeforge.SpanCounts.merge(parts))
    add_s, _ = timed(args.repeat, lambda: parts[0] + parts[1])
    if args.check:
        assert whole == bpeforge.count(open(args.corpus, encoding="utf-8", errors="replace", newline="\n"), args.pattern)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "counts.parquet")
        save_s, _ = timed(args.repeat, lambda: whole.save(path))
        size = os.path.getsize(path)
        load_s, loaded = timed(args.repeat, lambda: bpeforge.SpanCounts.load(path))
        assert loaded == whole
    pack_s, packed = timed(args.repeat, whole.to_bytes)
    unpack_s, _ = timed(args.repeat, lambda: bpeforge.SpanCounts.from_bytes(packed))
    pickled = len(pickle.dumps(whole))
    n = len(whole)
    span_bytes = sum(len(s) for s, _ in whole.items())

    print(f"corpus: {bl.describe_corpus({'path': args.corpus})}; pattern {args.pattern}; {args.shards} shards "
          f"counted in {count_s:.1f} s; {n:,} distinct spans ({span_bytes / n:.1f} bytes each), "
          f"{whole.total:,} occurrences; bpeforge {bpeforge.__version__}, {bl.nproc()} cores")
    rows = [
        ["Parquet file (save)", f"{size / n:.2f}", f"{save_s:.3f}", f"{n / save_s / 1e6:.2f}"],
        ["Parquet file (load)", "", f"{load_s:.3f}", f"{n / load_s / 1e6:.2f}"],
        ["packed, to_bytes / pickle", f"{len(packed) / n:.2f} / {pickled / n:.2f}", f"{pack_s:.3f}", f"{n / pack_s / 1e6:.2f}"],
        ["packed, from_bytes", "", f"{unpack_s:.3f}", f"{n / unpack_s / 1e6:.2f}"],
        [f"merge of {args.shards} shards ({spans_in:,} spans in)", "", f"{merge_s:.3f}", f"{spans_in / merge_s / 1e6:.2f} in"],
        [f"shard 0 + shard 1 ({len(parts[0]) + len(parts[1]):,} spans in)", "", f"{add_s:.3f}",
         f"{(len(parts[0]) + len(parts[1])) / add_s / 1e6:.2f} in"],
    ]
    print(bl.markdown_table(["operation", "bytes / distinct span", "seconds (median)", "M spans/s"], rows))


if __name__ == "__main__":
    main()
