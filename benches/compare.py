#!/usr/bin/env python3
"""Train bpeforge and its peers (rustbpe, HF tokenizers' BpeTrainer, bpeasy) on the same corpus,
split pattern and vocab size, one after the other, each in a fresh process; print a markdown table
of wall time, CPU time, peak RSS, number of ranks, whether the mergeable ranks are identical to
rustbpe's, and each trainer's speed relative to rustbpe in the same run.

    python benches/compare.py --corpus $BPEFORGE_CORPUS_DIR/kernel-docs.txt --vocab-size 32768
    python benches/compare.py --stdlib --vocab-size 4096 --only rustbpe,bpeforge --repeat 3
    python benches/compare.py --corpus $BPEFORGE_CORPUS_DIR/kernel-code.parquet --fraction 1/8
    python benches/compare.py --corpus $BPEFORGE_CORPUS_DIR/kernel-docs.txt --huggingface

--huggingface compares HF tokenizers' BpeTrainer with bpeforge.huggingface.train_from_iterator on
the same Tokenizer and BpeTrainer (every byte in the alphabet, the pattern as a Split), and with
the other trainers that promise HF's vocabulary: ffbpe (its byte-level alphabet and HF's
tie-break) and, with --pattern gpt2 (the only one it trains with), gigatoken
(tie_breaking="huggingface"): wall time, peak memory, and whether the vocabularies are
identical (ids included).

See benches/README.md for what is measured and how.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=bl.BUILD_HINT)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--corpus", metavar="PATH", help=".txt (one text per line) or .parquet (column `text`)")
    src.add_argument("--stdlib", action="store_true", help="use this Python's standard library *.py sources")
    ap.add_argument("--vocab-size", type=int, default=32768, help="ranks including the 256 bytes (default 32768)")
    ap.add_argument("--fraction", type=bl.parse_fraction, default=1.0,
                    help="use only the first F of the corpus: bytes for .txt/--stdlib, rows for .parquet (e.g. 1/8, 0.25)")
    ap.add_argument("--only", default=None, help=f"comma-separated trainers (default: {','.join(DEFAULT_TRAINERS)}; with --huggingface {','.join(HF_TRAINERS)}, and gigatoken-hf with --pattern gpt2)")
    ap.add_argument("--huggingface", action="store_true",
                    help="HuggingFace mode: hf-tokenizers against bpeforge-hf (bpeforge with HF's tie-break), HF the reference")
    ap.add_argument("--repeat", type=int, default=1, help="runs per trainer, round-robin; the table shows medians")
    ap.add_argument("--pattern", default="gpt4", help="preset name from bpeforge.PATTERNS or a regex (default gpt4)")
    ap.add_argument("--parquet-reader", choices=bl.PARQUET_READERS, default="bpeforge",
                    help="what reads a .parquet corpus for every trainer: bpeforge.ParquetReader (default) or pyarrow")
    ap.add_argument("--preload", action="store_true", help="read the corpus into memory before timing (default: stream it)")
    ap.add_argument("--buffer-size", type=int, default=8192, help="buffer_size for rustbpe and bpeforge (default 8192)")
    ap.add_argument("--keep-ranks", metavar="DIR", help="keep the ranks files (tiktoken format) in DIR")
    ap.add_argument("--busy", type=int, default=0, metavar="N",
                    help="keep N other processes spinning on the cores throughout, as on a shared machine (default 0)")
    args = ap.parse_args(argv)

    import bpeforge

    pattern = bpeforge._patterns.resolve_pattern(args.pattern)
    default = DEFAULT_TRAINERS
    if args.huggingface:
        default = HF_TRAINERS + (("gigatoken-hf",) if pattern == bpeforge.PATTERNS["gpt2"] else ())
    only = args.only or ",".join(default)
    names = [n.strip() for n in only.split(",") if n.strip()]
    for n in names:
        if n not in bl.TRAINERS:
            ap.error(f"unknown trainer {n!r}; known: {', '.join(bl.TRAINERS)}")
    if args.corpus:
        bl.check_corpus(args.corpus)
    corpus = {"path": args.corpus, "stdlib": args.stdlib, "fraction": args.fraction, "reader": args.parquet_reader}

    for line in bl.machine_info():
        print(line)
    print(f"corpus: {bl.describe_corpus(corpus)}{' (preloaded)' if args.preload else ' (streamed)'}")
    print(f"vocab_size: {args.vocab_size}, pattern: {args.pattern if args.pattern in bpeforge.PATTERNS else 'custom'} {pattern!r}")
    print(f"trainers (sequential, one fresh process each): {', '.join(names)}; repeat {args.repeat}")
    if args.busy:
        print(f"busy: {args.busy} other process(es) spinning (pure Python loops) throughout, reader alone included")
    print(flush=True)

    workdir = tempfile.mkdtemp(prefix="bpeforge-compare-")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        # The reader alone, once: its peak RSS is part of every trainer's (see report()).
        reader = bl.run_child(bl.READER, corpus, args.vocab_size, pattern, workdir, "reader", preload=args.preload)
        runs = bl.run_rounds(names, args.repeat, lambda n, k: bl.run_child(
            n, corpus, args.vocab_size, pattern, workdir, f"{n}-{k}", preload=args.preload, buffer_size=args.buffer_size))
        report(runs, names, args, reader)
        failed = any("error" in r for rs in runs.values() for r in rs)
        if args.keep_ranks:
            os.makedirs(args.keep_ranks, exist_ok=True)
            for n in names:
                for k, r in enumerate(runs[n]):
                    if "ranks_path" in r:
                        shutil.copy(r["ranks_path"], os.path.join(args.keep_ranks, f"{n}-{k}.tiktoken"))
            print(f"\nranks files kept in {args.keep_ranks}")
    finally:
        for p in busy:
            p.kill()
            p.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


DEFAULT_TRAINERS = ("rustbpe", "bpeforge", "hf-tokenizers", "bpeasy")
HF_TRAINERS = ("hf-tokenizers", "bpeforge-hf", "ffbpe-hf")


def fmt_tok(t):
    return "None" if t is None else f"{t[1]}:{t[0]!r}"


def report(runs, names, args, reader=None):
    ok = {n: [r for r in runs[n] if "error" not in r] for n in names}
    reference = "hf-tokenizers" if args.huggingface else "rustbpe"
    ref_name = reference if ok.get(reference) else None
    ref = bl.read_ranks(ok[reference][0]["ranks_path"]) if ref_name else None
    ref_set = {t for t, _ in ref} if ref else None
    notes = []

    rows = []
    for n in names:
        rs = ok[n]
        if not rs:
            rows.append([n, "FAILED"] + [""] * 9)
            notes.append(f"{n} failed: {runs[n][0]['error']}")
            continue
        ranks = bl.read_ranks(rs[0]["ranks_path"])
        # identical to rustbpe?
        if ref is None:
            same = "n/a"
        elif n == reference:
            same = "(reference)"
        else:
            d = bl.first_difference(ranks, ref)
            if d is None:
                same = "yes"
            else:
                same = f"no (rank {d[0]})"
                notes.append(f"{n} vs {reference}: first differing rank {d[0]}: {n} has {fmt_tok(d[1])}, {reference} has {fmt_tok(d[2])}")
        shared = "n/a" if ref_set is None else f"{100 * len({t for t, _ in ranks} & ref_set) / len(ref_set):.2f}%"
        # deterministic across repeats?
        for k, r in enumerate(rs[1:], 1):
            d = bl.first_difference(bl.read_ranks(r["ranks_path"]), ranks)
            if d is not None:
                notes.append(f"{n}: run {k + 1} differs from run 1 at rank {d[0]} (not deterministic)")
                break
        dup = len(ranks) - len({t for t, _ in ranks})
        if dup:
            notes.append(f"{n}: {dup} rank(s) repeat the bytes of an earlier rank (tiktoken cannot load such ranks)")
        wall = bl.median([r["seconds"] for r in rs])
        cpu = bl.median([r["cpu_seconds"] for r in rs])
        mb = rs[0]["bytes"] / 1e6
        peak = max(r["peak_rss_mb"] for r in rs)
        # ratios: median over rounds of rustbpe's time / this trainer's time in the same round
        speed = cpu_ratio = "n/a"
        if ref_name:
            pairs = [(a, b) for a, b in zip(runs[reference], runs[n]) if "error" not in a and "error" not in b]
            if pairs:
                speed = f"{bl.median([a['seconds'] / b['seconds'] for a, b in pairs]):.2f}x"
                cpu_ratio = f"{bl.median([a['cpu_seconds'] / b['cpu_seconds'] for a, b in pairs]):.2f}x"
        wall_s = f"{wall:.2f}" if len(rs) == 1 else f"{wall:.2f} ({min(r['seconds'] for r in rs):.2f}-{max(r['seconds'] for r in rs):.2f})"
        rows.append([n, wall_s, f"{cpu:.2f}", f"{cpu / wall:.2f}", f"{mb / wall:.1f}", f"{peak:.0f}",
                     rs[0]["n_ranks"], same, shared, speed, cpu_ratio])
        if n == "bpeforge" and "stats" in rs[0]:
            s = rs[0]["stats"]
            notes.append(f"bpeforge stats (run 1): {s.get('distinct_spans')} distinct spans, count {s.get('count_seconds', 0):.2f} s, "
                         f"merge {s.get('merge_seconds', 0):.2f} s")

    any_ok = next((ok[n][0] for n in names if ok[n]), None)
    if any_ok:
        print(f"corpus as fed: {any_ok['texts']} texts, {any_ok['bytes'] / 1e6:.1f} MB")
        base = ", ".join(f"{n} {ok[n][0]['base_rss_mb']:.0f}" for n in names if ok[n])
        notes.append(f"RSS before training (interpreter + imports{' + corpus' if args.preload else ''}), MB: {base}")
    if reader is not None and "error" not in reader:
        over = {n: max(r["peak_rss_mb"] for r in ok[n]) - reader["peak_rss_mb"] for n in names if ok[n]}
        line = ", ".join(f"{n} {mb:.0f}" for n, mb in over.items())
        if over.get("rustbpe", 0) > 0 and "bpeforge" in over:
            line += f" (bpeforge / rustbpe: {over['bpeforge'] / over['rustbpe']:.2f})"
        if over.get("hf-tokenizers", 0) > 0 and "bpeforge-hf" in over:
            line += f" (bpeforge-hf / hf-tokenizers: {over['bpeforge-hf'] / over['hf-tokenizers']:.2f})"
        notes.append(f"the corpus reader alone (every text iterated and dropped, no trainer): {reader['seconds']:.2f} s, "
                     f"peak RSS {reader['peak_rss_mb']:.0f} MB; peak RSS above it, MB: {line}")
    notes.append(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print(bl.markdown_table(
        ["trainer", "wall s", "CPU s", "CPU/wall", "MB/s", "peak RSS MB", "ranks", f"ranks == {reference}",
         f"tokens shared w/ {reference}", f"speed vs {reference}", f"CPU vs {reference}"], rows))
    print()
    print("wall/CPU: the training call only, median over runs (min-max when --repeat > 1); CPU = user+sys of all threads.")
    print(f"speed/CPU vs {reference}: median over rounds of {reference}'s time / the trainer's time in the same round (>1: faster / cheaper).")
    print("hf-tokenizers ranks: single bytes renumbered to their byte value, learned tokens keep their ids (merge order).")
    for x in notes:
        print(f"- {x}")


if __name__ == "__main__":
    sys.exit(main())
