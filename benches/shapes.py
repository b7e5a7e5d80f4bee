#!/usr/bin/env python3
"""Write a synthetic corpus of one shape (one text per line), to check speed, memory and exact
ranks beyond prose and C code: the shapes where a trainer's costs grow differently.

    python benches/shapes.py runs /tmp/shapes/runs.txt --mb 20
    python benches/compare.py --corpus /tmp/shapes/runs.txt --vocab-size 32768 --only rustbpe,bpeforge

Shapes:
  runs       lines of one letter repeated 1,000-20,000 times (one long span each, by length)
  abab       lines of "ab" repeated 500-10,000 times
  spaces     x, 100-5,000 spaces, y, 100-2,000 tabs, z: long whitespace spans
  emoji      lines of 20-200 emoji, ZWJ sequences and flags (each line one span)
  cjk        Chinese without spaces, a Zipf draw over 3,000 characters, commas and stops
  words      15 random lowercase words per line: millions of distinct spans

The same shape, size and seed always give the same file.
"""

from __future__ import annotations

import argparse
import os
import random
import string

EMOJI = ["\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466", "\U0001F3F3\uFE0F\u200D\U0001F308",
         "\U0001F469\U0001F3FD\u200D\U0001F4BB", "\U0001F9D1\u200D\U0001F680", "\u2764\uFE0F\u200D\U0001F525",
         "\U0001F1FA\U0001F1F8", "\U0001F600", "\U0001F389"]
CJK = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
CJK_WEIGHTS = [1 / (i + 1) for i in range(3000)]


def line(shape: str, rng: random.Random) -> str:
    if shape == "runs":
        return "a" * rng.randint(1000, 20000)
    if shape == "abab":
        return "ab" * rng.randint(500, 10000)
    if shape == "spaces":
        return "x" + " " * rng.randint(100, 5000) + "y" + "\t" * rng.randint(100, 2000) + "z"
    if shape == "emoji":
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(20, 200)))
    if shape == "cjk":
        parts = []
        for _ in range(rng.randint(3, 10)):
            parts.append("".join(rng.choices(CJK, CJK_WEIGHTS, k=rng.randint(20, 120))))
            parts.append(rng.choice("\uFF0C\u3002\u3001\uFF1B"))
        return "".join(parts)
    if shape == "words":
        return " ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 12))) for _ in range(15))
    raise ValueError(f"unknown shape {shape!r}")


SHAPES = ("runs", "abab", "spaces", "emoji", "cjk", "words")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("Shapes:")[1])
    ap.add_argument("shape", choices=SHAPES)
    ap.add_argument("out", help="the .txt file to write")
    ap.add_argument("--mb", type=float, default=20.0, help="size in MB (default 20)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    target, written = int(args.mb * 1e6), 0
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        while written < target:
            text = line(args.shape, rng) + "\n"
            f.write(text)
            written += len(text.encode("utf-8"))
    print(f"{args.out}: {args.shape}, {written / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
