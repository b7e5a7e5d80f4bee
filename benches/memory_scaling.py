"""Peak memory against corpus size: train on the same corpus streamed 1x and 4x (repeated) and
print peak RSS, distinct spans and time for each trainer. Memory should follow the number of
distinct spans (the same for both), not the corpus size.

    python benches/memory_scaling.py --corpus $BPEFORGE_CORPUS_DIR/kernel-docs.txt --vocab-size 32768
"""

import argparse
import json
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    trainer, path, repeat, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    def texts():
        for _ in range(repeat):
            with open(path, encoding="utf-8") as f:
                yield from f
    start = time.perf_counter()
    if trainer == "bpeforge":
        import bpeforge
        t = bpeforge.Trainer()
        t.train_from_iterator(texts(), vocab)
        spans = t.stats["distinct_spans"]
    else:
        import rustbpe
        t = rustbpe.Tokenizer()
        t.train_from_iterator(texts(), vocab)
        spans = None
    print(json.dumps({"seconds": time.perf_counter() - start, "spans": spans,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    """
)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="a .txt file, one text per line")
    ap.add_argument("--vocab-size", type=int, default=32768)
    ap.add_argument("--repeats", default="1,4")
    ap.add_argument("--only", default="bpeforge,rustbpe")
    args = ap.parse_args()
    size = os.path.getsize(args.corpus) / 1e6
    print("command:", " ".join([os.path.basename(sys.executable)] + sys.argv))
    print(f"corpus: {args.corpus} ({size:.1f} MB), vocab {args.vocab_size}\n")
    print("| trainer | corpus | MB streamed | seconds | distinct spans | peak RSS MB |")
    print("|---|---|---:|---:|---:|---:|")
    for trainer in args.only.split(","):
        for k in map(int, args.repeats.split(",")):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, trainer, args.corpus, str(k), str(args.vocab_size)],
                check=True, capture_output=True, text=True,
            ).stdout
            r = json.loads(out.strip().splitlines()[-1])
            spans = "" if r["spans"] is None else f"{r['spans']:,}"
            print(f"| {trainer} | {k}x | {size * k:.0f} | {r['seconds']:.2f} | {spans} | {r['rss_mb']:.0f} |")


if __name__ == "__main__":
    main()
