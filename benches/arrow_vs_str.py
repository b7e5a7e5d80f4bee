#!/usr/bin/env python3
"""bpeforge fed from a Parquet file three ways, same corpus, pattern and vocab size, one fresh
process per run: "arrow" hands each record batch's pyarrow string array to Rust (the Arrow C Data
Interface, no Python str per document), "list" hands `column.to_pylist()` lists of str, "str"
one str per document (what compare.py feeds every trainer). Prints a markdown table of wall time,
CPU time, peak RSS, and each feed's speed relative to "list".

    python benches/arrow_vs_str.py --corpus $BPEFORGE_CORPUS_DIR/kernel-docs.parquet --vocab-size 32768
    python benches/arrow_vs_str.py --corpus $BPEFORGE_CORPUS_DIR/kernel-code.parquet --vocab-size 65536 --repeat 3

See benches/README.md.
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=bl.BUILD_HINT)
    ap.add_argument("--corpus", required=True, metavar="PATH", help=".parquet file with a `text` column")
    ap.add_argument("--vocab-size", type=int, default=32768, help="ranks including the 256 bytes (default 32768)")
    ap.add_argument("--fraction", type=bl.parse_fraction, default=1.0, help="use only the first F of the rows (e.g. 1/8)")
    ap.add_argument("--feeds", default="arrow,list,str", help="comma-separated, from arrow, list, str (default: all three)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per feed, round-robin; the table shows medians")
    ap.add_argument("--pattern", default="gpt4", help="preset name or regex (default gpt4)")
    ap.add_argument("--buffer-size", type=int, default=8192, help="buffer_size of train_from_iterator (default 8192)")
    args = ap.parse_args(argv)

    import bpeforge

    if not args.corpus.endswith(".parquet"):
        ap.error("--corpus must be a .parquet file")
    bl.check_corpus(args.corpus)
    feeds = [f.strip() for f in args.feeds.split(",") if f.strip()]
    for f in feeds:
        if f not in bl.PARQUET_FEEDS:
            ap.error(f"unknown feed {f!r}; known: {', '.join(bl.PARQUET_FEEDS)}")
    pattern = bpeforge._patterns.resolve_pattern(args.pattern)

    for line in bl.machine_info():
        print(line)
    corpus = {"path": args.corpus, "stdlib": False, "fraction": args.fraction, "reader": "pyarrow"}
    print(f"corpus: {bl.describe_corpus(corpus)} (streamed, record batches of 1024 rows)")
    print(f"vocab_size: {args.vocab_size}, pattern: {args.pattern}, buffer_size: {args.buffer_size}")
    print(f"feeds (sequential, one fresh process each): {', '.join(feeds)}; repeat {args.repeat}")
    print(flush=True)

    workdir = tempfile.mkdtemp(prefix="bpeforge-arrow-")
    try:
        runs = bl.run_rounds(feeds, args.repeat, lambda f, k: bl.run_child(
            "bpeforge", {**corpus, "feed": f}, args.vocab_size, pattern, workdir, f"{f}-{k}", buffer_size=args.buffer_size))
        failed = report(runs, feeds)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


def report(runs, feeds) -> bool:
    ok = {f: [r for r in runs[f] if "error" not in r] for f in feeds}
    ref = "list" if ok.get("list") else next((f for f in feeds if ok[f]), None)
    ref_ranks = bl.read_ranks(ok[ref][0]["ranks_path"]) if ref else None
    rows, notes = [], []
    for f in feeds:
        rs = ok[f]
        if not rs:
            rows.append([f, "FAILED"] + [""] * 10)
            notes.append(f"{f} failed: {runs[f][0]['error']}")
            continue
        ranks = bl.read_ranks(rs[0]["ranks_path"])
        d = bl.first_difference(ranks, ref_ranks)
        same = "(reference)" if f == ref else ("yes" if d is None else f"no (rank {d[0]})")
        for r in rs[1:]:
            if bl.first_difference(bl.read_ranks(r["ranks_path"]), ranks) is not None:
                notes.append(f"{f}: runs differ (not deterministic)")
                break
        wall = bl.median([r["seconds"] for r in rs])
        cpu = bl.median([r["cpu_seconds"] for r in rs])
        count = bl.median([r["stats"]["count_seconds"] for r in rs])
        merge = bl.median([r["stats"]["merge_seconds"] for r in rs])
        peak = max(r["peak_rss_mb"] for r in rs)
        pairs = [(a, b) for a, b in zip(runs[ref], runs[f]) if "error" not in a and "error" not in b]
        speed = f"{bl.median([a['seconds'] / b['seconds'] for a, b in pairs]):.2f}x" if pairs else "n/a"
        cpu_ratio = f"{bl.median([a['cpu_seconds'] / b['cpu_seconds'] for a, b in pairs]):.2f}x" if pairs else "n/a"
        count_ratio = (f"{bl.median([a['stats']['count_seconds'] / b['stats']['count_seconds'] for a, b in pairs]):.2f}x"
                       if pairs else "n/a")
        wall_s = f"{wall:.2f}" if len(rs) == 1 else f"{wall:.2f} ({min(r['seconds'] for r in rs):.2f}-{max(r['seconds'] for r in rs):.2f})"
        rows.append([f, wall_s, f"{cpu:.2f}", f"{rs[0]['bytes'] / 1e6 / wall:.1f}", f"{peak:.0f}", f"{count:.2f}",
                     f"{merge:.2f}", rs[0]["stats"]["texts"], same, speed, cpu_ratio, count_ratio])
    any_ok = next((ok[f][0] for f in feeds if ok[f]), None)
    if any_ok:
        print(f"corpus as fed: {any_ok['stats']['texts']} texts, {any_ok['bytes'] / 1e6:.1f} MB, "
              f"{any_ok['stats']['distinct_spans']} distinct spans")
        notes.append("RSS before training (interpreter + imports), MB: "
                     + ", ".join(f"{f} {ok[f][0]['base_rss_mb']:.0f}" for f in feeds if ok[f]))
    notes.append(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print(bl.markdown_table(
        ["feed", "wall s", "CPU s", "MB/s", "peak RSS MB", "read+count s", "merge s", "texts", f"ranks == {ref}",
         f"speed vs {ref}", f"CPU vs {ref}", f"read+count vs {ref}"], rows))
    print()
    print("wall/CPU: the train_from_iterator call (reading the Parquet file, handing texts over, counting, merging),")
    print("median over runs; CPU = user+sys of all threads. Ratios: the reference's time / the feed's time in the same")
    print("round, median over rounds (>1: faster). read+count s = stats['count_seconds'], merge s = stats['merge_seconds'].")
    for x in notes:
        print(f"- {x}")
    return any("error" in r for rs in runs.values() for r in rs)


if __name__ == "__main__":
    sys.exit(main())
