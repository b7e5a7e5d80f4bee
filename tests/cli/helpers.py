"""What the tests of the command line share: running ``python -m bpeforge`` in a subprocess,
reading its report, checking what it saved and how it failed."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

import tiktoken.load

import bpeforge

PROGRESS_LINE = re.compile(r"^Progress: (\d+)% \((\d+)/(\d+) merges\) - Last merge: \((\d+), (\d+)\) -> (\d+) \(frequency: (\d+)\)$")
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
ENV.pop("BPEFORGE_DEBUG", None)


def run(*args, cwd=None, input=None, timeout=120, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bpeforge", *map(str, args)],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV if env is None else {**ENV, **env},
    )


def report_value(stdout: str, key: str) -> str:
    m = re.search(rf"^{re.escape(key)}\s+(.*)$", stdout, re.M)
    assert m, f"no {key!r} in the report:\n{stdout}"
    return m.group(1)


def report_int(stdout: str, key: str) -> int:
    return int(report_value(stdout, key).split()[0].replace(",", ""))


def make_docs(n: int = 2000, seed: int = 0) -> list:
    rng = random.Random(seed)
    syllables = ["ka", "to", "ri", "men", "sal", "bu", "ne", "ion", "str", "é", "qu", "ax"]
    words = "the quick brown fox jumps over the lazy dog while tokenizers merge frequent byte pairs".split()
    words += ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(400)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 30))) + rng.choice([".", "!", "?"]) for _ in range(n)]


def check_saved(folder: Path, text: str = "the quick brown fox jumps") -> bpeforge.Tokenizer:
    tok = bpeforge.Tokenizer.load(folder)
    assert tok.decode(tok.encode(text)) == text
    beside = folder.with_name(folder.name + ".tiktoken")
    assert beside.read_bytes() == (folder / "tokenizer.tiktoken").read_bytes()
    assert tiktoken.load.load_tiktoken_bpe(str(beside)) == tok.mergeable_ranks
    return tok


def assert_one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode != 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("bpeforge: error: "), r.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert r.stdout == ""


def no_outputs_in(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []
