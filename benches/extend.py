"""Extending a tokenizer on a real case: a base trained on English prose (kernel-docs), extended
with tokens learned from C (kernel-code), against the base and an English-only tokenizer of the
extended size; bytes per token on held-out English and C, and a check that every span encodes
as before unless it uses a new token. See benches/README.md ("Extending a tokenizer").

    python benches/extend.py --corpus-dir $BPEFORGE_CORPUS_DIR --out /tmp/extend-bench

The held-out text is the last 1 MB of kernel-docs.txt and the last 2 MB of kernel-code.txt; the
base trains on the rest of kernel-docs, the extension on the first 60 MB of kernel-code, each
cut at a line end. Every step is a ``bpeforge`` command, printed before it runs.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

import bpeforge
from bpeforge import _core


def split_file(source: Path, train_bytes: int, test_bytes: int, train: Path, test: Path) -> None:
    """The first ``train_bytes`` (at most all but the test part) and the last ``test_bytes`` of
    ``source``, each cut at a line end."""
    data = source.read_bytes()
    tail = data[-test_bytes:]
    head = data[: min(train_bytes, len(data) - test_bytes)]
    train.write_bytes(head[: head.rindex(b"\n") + 1])
    test.write_bytes(tail[tail.index(b"\n") + 1 :])


def bpeforge_command(*args: object) -> None:
    command = [sys.executable, "-m", "bpeforge", *map(str, args)]
    print("$ bpeforge " + shlex.join(map(str, args)), flush=True)
    subprocess.run(command, check=True)


def check_spans(base_dir: Path, extended_dir: Path, text_file: Path) -> str:
    """How the spans of ``text_file`` encode under both: as before, with a new token, otherwise."""
    base, extended = bpeforge.Tokenizer.load(base_dir), bpeforge.Tokenizer.load(extended_dir)
    same = new = other = 0
    spans = _core.split(text_file.read_text(encoding="utf-8"), base.pattern)
    for span in spans:
        a, b = base.encode_ordinary(span), extended.encode_ordinary(span)
        if a == b:
            same += 1
        elif any(i >= base.n_vocab for i in b):
            new += 1
        else:
            other += 1
    return f"{text_file.name}: {len(spans):,} spans, {same:,} encoded as before, {new:,} with a new token, {other} otherwise"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus-dir", type=Path, required=True, help="holds kernel-docs.txt and kernel-code.txt")
    parser.add_argument("--out", type=Path, required=True, help="folder for the texts and tokenizers")
    parser.add_argument("--base-size", type=int, default=16384)
    parser.add_argument("--new-tokens", type=int, default=8192)
    args = parser.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    split_file(args.corpus_dir / "kernel-docs.txt", 1 << 40, 1_000_000, out / "en-train.txt", out / "en-test.txt")
    split_file(args.corpus_dir / "kernel-code.txt", 60_000_000, 2_000_000, out / "code-train.txt", out / "code-test.txt")
    size = args.base_size + args.new_tokens
    common = ["--special-tokens", "none", "--holdout", 0, "--force", "-q"]
    bpeforge_command("train", out / "en-train.txt", "--vocab-size", args.base_size, *common, "-o", out / "en")
    bpeforge_command("train", "--extend", out / "en", "--vocab-size", size, "--holdout", 0, "--force", "-q", "-o", out / "en+code", out / "code-train.txt")
    bpeforge_command("train", out / "en-train.txt", "--vocab-size", size, *common, "-o", out / "en-only")
    bpeforge_command("eval", out / "en", out / "en+code", out / "en-only", "--color", "never", "--text", out / "en-test.txt", out / "code-test.txt")
    for text in ("en-test.txt", "code-test.txt"):
        print(check_spans(out / "en", out / "en+code", out / text))


if __name__ == "__main__":
    main()
