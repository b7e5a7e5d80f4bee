#!/usr/bin/env python3
"""Bytes per distinct span at peak: train on corpora of random words with millions of distinct
spans and divide the memory training took by the distinct spans.

    python benches/span_memory.py generate --spans 1M,10M,30M --out /tmp/words
    python benches/span_memory.py measure --corpus /tmp/words/words-10M.txt --repeat 2

A corpus is random lowercase words of 5-12 letters, 50 a line (uniform lengths and letters, a
fixed seed: the same target always gives the same file), with about as many words as the
distinct spans asked for (a little more: five-letter words repeat). `measure` trains vocab 8192
(GPT-4's pattern) on each corpus in a fresh process and prints, per run:

- the metric: (peak RSS of the process - its RSS after the imports, before reading) / distinct
  spans, peak RSS as the kernel's high-water mark (`VmHWM` of /proc/self/status);
- the distinct spans, the seconds counting (reading included) and merging, and a hash of the
  ranks (to compare builds and thread counts: equal hashes, equal ranks).

The corpus is read with `bpeforge.TextReader` when the installed bpeforge has it, else through
Python (the file's lines, handed over in lists of 8192); the table says which. `--threads 1,2`
trains with each thread count (`num_threads`); `--repeat K` runs each K times.

`--trainer rustbpe` trains rustbpe instead (its `train_from_iterator` on the file's lines;
bytes/span then uses the distinct spans of a bpeforge run on the same corpus, given with
`--spans`), and `--limit-gb G` runs the child under an address-space limit of G GB (as `prlimit
--as` does), to see how far a trainer gets: the child's peak is also read from outside every
half second, so a child killed for memory still reports the peak it reached and when.

    python benches/span_memory.py measure --corpus /tmp/words/words-100M.txt --trainer rustbpe --limit-gb 20
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import textwrap
import time

LETTERS = bytes(range(ord("a"), ord("z") + 1))
# Byte value -> letter, for random bytes. 256 is not a multiple of 26: values 234..255 are
# mapped again by the next byte (see `letters`), so that every letter is as likely.
TO_LETTER = bytes(LETTERS[b % 26] for b in range(256))
WORDS_PER_LINE = 50


def parse_count(text: str) -> int:
    """`10M`, `500K`, `1000000`."""
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(text[-1].upper(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def expected_distinct(words: int) -> float:
    """The distinct spans `words` random words make: per length, the distinct draws of
    `words / 8` among 26^length (a line's first word, without its leading space, is a span of
    its own, nearly always new too), and the line end."""
    distinct = 0.0
    for length in range(5, 13):
        space = 26.0**length
        draws = words / 8
        distinct += space * -math.expm1(-draws / space)
    return distinct + 1


def words_for(spans: int) -> int:
    """The fewest words whose expected distinct spans reach `spans`."""
    low, high = spans // 2, spans * 2
    while low < high:
        mid = (low + high) // 2
        if expected_distinct(mid) >= spans:
            high = mid
        else:
            low = mid + 1
    return low


def letters(rng: random.Random, n: int) -> bytes:
    """`n` uniformly random lowercase letters."""
    out = bytearray()
    while len(out) < n:
        raw = rng.randbytes(n - len(out) + 64)
        out += raw.translate(TO_LETTER, bytes(range(234, 256)))  # drop the biased values
    return bytes(out[:n])


def generate(spans: int, path: str, seed: int) -> None:
    rng = random.Random(seed)
    words = words_for(spans)
    lines_left = math.ceil(words / WORDS_PER_LINE)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        while lines_left:
            lines = min(lines_left, 20000)
            lengths = [5 + b % 8 for b in rng.randbytes(lines * WORDS_PER_LINE)]
            text = letters(rng, sum(lengths))
            out, at = [], 0
            for k in range(lines):
                row = lengths[k * WORDS_PER_LINE:(k + 1) * WORDS_PER_LINE]
                cut = []
                for length in row:
                    cut.append(text[at:at + length])
                    at += length
                out.append(b" ".join(cut))
            f.write(b"\n".join(out) + b"\n")
            lines_left -= lines
    os.replace(tmp, path)


CHILD = textwrap.dedent(
    r"""
    import hashlib, itertools, json, sys, time
    def status(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    path, vocab, threads, trainer_name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if trainer_name == "rustbpe":
        import rustbpe
        after_imports = status("VmRSS")
        print(json.dumps({"after_imports": after_imports}), flush=True)
        trainer = rustbpe.Tokenizer()
        start = time.perf_counter()
        with open(path, encoding="utf-8") as f:
            trainer.train_from_iterator(f, vocab)
        seconds = time.perf_counter() - start
        ranks = hashlib.sha256(b"".join(b"%d %s\n" % (r, t.hex().encode()) for t, r in sorted(trainer.get_mergeable_ranks(), key=lambda x: x[1]))).hexdigest()
        print(json.dumps({"reader": "Python lines", "after_imports": after_imports, "peak": status("VmHWM"),
                          "seconds": seconds, "spans": None, "count_seconds": None, "merge_seconds": None, "ranks": ranks[:16]}))
        sys.exit(0)
    import bpeforge
    after_imports = status("VmRSS")
    print(json.dumps({"after_imports": after_imports}), flush=True)
    if hasattr(bpeforge, "TextReader"):
        reader, texts = "bpeforge.TextReader", bpeforge.TextReader(path)
    else:
        def lines():
            with open(path, encoding="utf-8") as f:
                while True:
                    batch = list(itertools.islice(f, 8192))
                    if not batch:
                        return
                    yield batch
        reader, texts = "Python lines, lists of 8192", lines()
    trainer = bpeforge.Trainer(num_threads=threads)
    start = time.perf_counter()
    trainer.train_from_iterator(texts, vocab)
    seconds = time.perf_counter() - start
    peak = status("VmHWM")
    ranks = hashlib.sha256(b"".join(b"%d %s\n" % (r, t.hex().encode()) for t, r in trainer.get_mergeable_ranks())).hexdigest()
    stats = trainer.stats
    print(json.dumps({"reader": reader, "after_imports": after_imports, "peak": peak, "seconds": seconds,
                      "spans": stats["distinct_spans"], "count_seconds": stats["count_seconds"],
                      "merge_seconds": stats["merge_seconds"], "ranks": ranks[:16]}))
    """
)


def peak_of(pid: int) -> int:
    """`VmHWM` of process `pid` in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure(corpus: str, vocab: int, threads: int, trainer: str = "bpeforge", limit_gb: float = 0) -> dict:
    """One training in a child process: its report, or for a child that failed, the peak it
    reached (read from outside), its exit status and when it ended."""
    def limit():
        if limit_gb:
            resource.setrlimit(resource.RLIMIT_AS, (int(limit_gb * 1e9), int(limit_gb * 1e9)))
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", CHILD, corpus, str(vocab), str(threads), trainer],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    seen = 0
    while child.poll() is None:
        seen = max(seen, peak_of(child.pid))
        time.sleep(0.5)
    out, err = child.communicate()
    lines = [json.loads(l) for l in out.strip().splitlines() if l.startswith("{")]
    if child.returncode != 0 or len(lines) < 2:
        return {"failed": f"exit {child.returncode} after {time.perf_counter() - start:.0f} s: {err.strip().splitlines()[-1:] }",
                "after_imports": lines[0]["after_imports"] if lines else 0, "peak": seen}
    return lines[-1]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write words-<N>.txt for each N")
    gen.add_argument("--spans", default="1M,10M,30M", help="distinct spans per corpus, e.g. 1M,10M,30M")
    gen.add_argument("--out", required=True, help="a folder (outside the repository: 30M spans is ~300 MB)")
    gen.add_argument("--seed", type=int, default=30)
    run = sub.add_parser("measure", help="train on each corpus and print the bytes per distinct span")
    run.add_argument("--corpus", required=True, help="comma-separated .txt files, e.g. words-1M.txt,words-10M.txt")
    run.add_argument("--vocab-size", type=int, default=8192)
    run.add_argument("--threads", default="2", help="comma-separated thread counts")
    run.add_argument("--repeat", type=int, default=1)
    run.add_argument("--trainer", default="bpeforge", choices=["bpeforge", "rustbpe"])
    run.add_argument("--limit-gb", type=float, default=0, help="address-space limit of the child, GB (0: none)")
    run.add_argument("--spans", type=int, default=0, help="distinct spans of the corpus, for --trainer rustbpe")
    args = ap.parse_args(argv)
    if args.command == "generate":
        os.makedirs(args.out, exist_ok=True)
        for target in args.spans.split(","):
            path = os.path.join(args.out, f"words-{target}.txt")
            generate(parse_count(target), path, args.seed)
            print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB", file=sys.stderr)
        return
    print("command:", " ".join([os.path.basename(sys.executable)] + sys.argv))
    print()
    print("| corpus | MB | threads | reader | distinct spans | peak - after imports MB | bytes/span | count s | merge s | ranks |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---|")
    for corpus in args.corpus.split(","):
        mb = os.path.getsize(corpus) / 1e6
        for threads in map(int, args.threads.split(",")):
            for _ in range(args.repeat):
                r = measure(corpus, args.vocab_size, threads, args.trainer, args.limit_gb)
                grown = r["peak"] - r["after_imports"]
                spans = r.get("spans") or args.spans
                per_span = f"{grown / spans:.1f}" if spans else ""
                name = os.path.basename(corpus) + ("" if args.trainer == "bpeforge" else f" ({args.trainer})")
                if "failed" in r:
                    print(f"| {name} | {mb:.0f} | {threads} | | {spans:,} | {grown / 1e6:.0f} (reached) | {per_span} | "
                          f"failed: {r['failed']} | | |", flush=True)
                    continue
                count = "" if r["count_seconds"] is None else f"{r['count_seconds']:.1f}"
                merge = f"{r['seconds']:.1f} in all" if r["merge_seconds"] is None else f"{r['merge_seconds']:.1f}"
                print(f"| {name} | {mb:.0f} | {threads} | {r['reader']} | {spans:,} | {grown / 1e6:.0f} | {per_span} | "
                      f"{count} | {merge} | `{r['ranks']}` |", flush=True)


if __name__ == "__main__":
    main()
