#!/usr/bin/env python3
"""Pre-tokenize + count throughput alone: train with vocab_size=256 (no merges), so the time is the
regex split and span counting (plus handing the texts over from Python). bpeforge is run with each
preset pattern of bpeforge.PATTERNS, and rustbpe with the same pattern for reference, each in a
fresh process, one after the other.

    python benches/count_throughput.py --corpus $BPEFORGE_CORPUS_DIR/kernel-docs.txt
    python benches/count_throughput.py --stdlib --patterns gpt4,o200k_base --repeat 3
    python benches/count_throughput.py --corpus $BPEFORGE_CORPUS_DIR/kernel-docs.txt --feed arrow --only bpeforge

By default the corpus is read into memory before the clock starts (--stream to time reading too).
MB/s = corpus bytes / wall seconds; MB/s/core = MB/s / nproc; MB/CPU-s = corpus bytes / (user+sys).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def main(argv=None):
    import bpeforge

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=bl.BUILD_HINT)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--corpus", metavar="PATH", help=".txt (one text per line) or .parquet (column `text`)")
    src.add_argument("--stdlib", action="store_true", help="use this Python's standard library *.py sources")
    ap.add_argument("--fraction", type=bl.parse_fraction, default=1.0, help="first F of the corpus (e.g. 1/8)")
    ap.add_argument("--patterns", default=",".join(bpeforge.PATTERNS), help="comma-separated preset names (default: all)")
    ap.add_argument("--only", default="bpeforge,rustbpe", help="trainers (default: bpeforge,rustbpe)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per (pattern, trainer), round-robin; medians shown")
    ap.add_argument("--stream", action="store_true", help="stream the corpus inside the timed call instead of preloading it")
    ap.add_argument("--buffer-size", type=int, default=8192)
    ap.add_argument("--feed", choices=("str",) + bl.BATCH_FEEDS, default="str",
                    help="how bpeforge gets the preloaded texts: one str each (default, as rustbpe), lists of "
                         "65536 str, or pyarrow string arrays of 65536 texts (no Python str per text)")
    args = ap.parse_args(argv)
    if args.feed != "str" and args.stream:
        ap.error("--feed list/arrow regroups preloaded texts: not with --stream")

    pats = [p.strip() for p in args.patterns.split(",") if p.strip()]
    for p in pats:
        if p not in bpeforge.PATTERNS:
            ap.error(f"unknown preset {p!r}; known: {', '.join(bpeforge.PATTERNS)}")
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    for n in names:
        if n not in ("bpeforge", "rustbpe"):
            ap.error("--only takes bpeforge and/or rustbpe")
    if args.corpus:
        bl.check_corpus(args.corpus)
    corpus = {"path": args.corpus, "stdlib": args.stdlib, "fraction": args.fraction}
    ncpu = bl.nproc()

    for line in bl.machine_info():
        print(line)
    print(f"corpus: {bl.describe_corpus(corpus)} ({'streamed' if args.stream else 'preloaded'})")
    print(f"vocab_size 256 (no merges); patterns: {', '.join(pats)}; trainers: {', '.join(names)}; repeat {args.repeat}; "
          f"bpeforge fed {args.feed} (rustbpe: str)")
    print(flush=True)

    workdir = tempfile.mkdtemp(prefix="bpeforge-count-")
    res = {}
    failed = False
    try:
        for k in range(args.repeat):
            for p in pats:
                for n in names:
                    r = bl.run_child(n, corpus, 256, bpeforge.PATTERNS[p], workdir, f"{n}-{p}-{k}",
                                     preload=not args.stream, buffer_size=args.buffer_size,
                                     batch_feed=None if args.feed == "str" else args.feed)
                    res.setdefault((p, n), []).append(r)
                    if "error" in r:
                        failed = True
                        print(f"  [{k + 1}/{args.repeat}] {p} {n}: FAILED {r['error']}", file=sys.stderr, flush=True)
                    else:
                        if r["n_ranks"] != 256:
                            print(f"  warning: {n} returned {r['n_ranks']} ranks at vocab_size 256", file=sys.stderr)
                        print(f"  [{k + 1}/{args.repeat}] {p} {n}: {r['seconds']:.2f} s wall, {r['cpu_seconds']:.2f} s CPU, "
                              f"{r['bytes'] / 1e6 / r['seconds']:.1f} MB/s", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    mb = next((r["bytes"] / 1e6 for rs in res.values() for r in rs if "error" not in r), 0.0)
    print(f"corpus as fed: {mb:.1f} MB")
    print()
    header = ["pattern"]
    for n in names:
        header += [f"{n} MB/s", f"{n} MB/s/core", f"{n} MB/CPU-s"]
    if len(names) == 2:
        header += ["bpeforge / rustbpe"]
    header += ["distinct spans"]
    rows = []
    for p in pats:
        row = [p]
        for n in names:
            rs = [r for r in res.get((p, n), []) if "error" not in r]
            if not rs:
                row += ["FAILED", "", ""]
                continue
            wall = bl.median([r["seconds"] for r in rs])
            cpu = bl.median([r["cpu_seconds"] for r in rs])
            row += [f"{mb / wall:.1f}", f"{mb / wall / ncpu:.1f}", f"{mb / cpu:.1f}"]
        if len(names) == 2:
            pairs = [(a, b) for a, b in zip(res[(p, "bpeforge")], res[(p, "rustbpe")]) if "error" not in a and "error" not in b]
            row.append(f"{bl.median([b['seconds'] / a['seconds'] for a, b in pairs]):.2f}x" if pairs else "n/a")
        bf = [r for r in res.get((p, "bpeforge"), []) if "error" not in r]
        row.append(bf[0]["stats"].get("distinct_spans", "?") if bf and "stats" in bf[0] else "")
        rows.append(row)
    print(bl.markdown_table(header, rows))
    print()
    print(f"MB/s/core = MB/s / nproc ({ncpu}); MB/CPU-s = MB / (user+sys seconds of the whole process during the call).")
    if len(names) == 2:
        print("bpeforge / rustbpe: median over rounds of rustbpe's wall time / bpeforge's in the same round (>1: bpeforge faster).")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
