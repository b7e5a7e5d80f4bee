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
  thai       Thai sentences without spaces, with combining marks (\p{M}: the GPT-4 pattern cuts
             a word there, o200k's takes marks as letters and a sentence is one span)
  blobs      base64 and hex of random bytes, 1-64 KB a line: long runs of letters and digits

The same shape, size and seed always give the same file.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import string

EMOJI = ["\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466", "\U0001F3F3\uFE0F\u200D\U0001F308",
         "\U0001F469\U0001F3FD\u200D\U0001F4BB", "\U0001F9D1\u200D\U0001F680", "\u2764\uFE0F\u200D\U0001F525",
         "\U0001F1FA\U0001F1F8", "\U0001F600", "\U0001F389"]
CJK = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
CJK_WEIGHTS = [1 / (i + 1) for i in range(3000)]
THAI_CONSONANTS = [chr(c) for c in range(0x0E01, 0x0E2F)]
THAI_LEADS = ["\u0E40", "\u0E41", "\u0E42", "\u0E43", "\u0E44"]  # vowels written before the consonant (Lo)
THAI_MARKS = ["\u0E31", "\u0E34", "\u0E35", "\u0E36", "\u0E37", "\u0E38", "\u0E39", "\u0E47"]  # Mn
THAI_TONES = ["\u0E48", "\u0E49", "\u0E4A", "\u0E4B"]  # Mn
THAI_TAILS = ["\u0E32", "\u0E30", "\u0E33", "\u0E19", "\u0E07", "\u0E21", "\u0E22", "\u0E27"]
_thai_words: list = []


def thai_words() -> list:
    """20,000 distinct Thai words of 1-4 syllables (the same every run)."""
    if not _thai_words:
        rng, seen = random.Random(11), set()
        while len(seen) < 20000:
            word = ""
            for _ in range(rng.randint(1, 4)):
                word += (rng.choice(THAI_LEADS) if rng.random() < 0.25 else "") + rng.choice(THAI_CONSONANTS)
                word += rng.choice(THAI_MARKS) if rng.random() < 0.45 else ""
                word += rng.choice(THAI_TONES) if rng.random() < 0.4 else ""
                word += rng.choice(THAI_TAILS) if rng.random() < 0.6 else ""
            if word not in seen:
                seen.add(word)
                _thai_words.append(word)
    return _thai_words


THAI_WEIGHTS = [1 / (i + 1) for i in range(20000)]


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
    if shape == "thai":
        words = thai_words()
        return " ".join("".join(rng.choices(words, THAI_WEIGHTS, k=rng.randint(5, 30))) for _ in range(rng.randint(2, 10)))
    if shape == "blobs":
        raw = rng.randbytes(int(2 ** rng.uniform(10, 16)))
        return base64.b64encode(raw).decode() if rng.random() < 0.6 else raw.hex()
    raise ValueError(f"unknown shape {shape!r}")


SHAPES = ("runs", "abab", "spaces", "emoji", "cjk", "words", "thai", "blobs")


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
