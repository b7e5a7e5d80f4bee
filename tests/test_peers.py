"""Identical ranks to rustbpe (nanochat's trainer) on real text, when rustbpe is installed.

(tests/test_rustbpe.py compares bpeforge.rustbpe with rustbpe, a test dependency, on every API.)
"""

import sys
from pathlib import Path

import pytest

import bpeforge

rustbpe = pytest.importorskip("rustbpe")


def stdlib_texts(limit_bytes):
    root = Path(sys.modules["os"].__file__).parent
    total = 0
    for path in sorted(root.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        total += len(text.encode())
        yield text
        if total > limit_bytes:
            return


@pytest.mark.parametrize("vocab_size, pattern", [(2048, None), (1024, bpeforge.PATTERNS["nanochat"])])
def test_same_ranks_as_rustbpe(vocab_size, pattern):
    texts = list(stdlib_texts(3_000_000))
    theirs = rustbpe.Tokenizer()
    theirs.train_from_iterator(iter(texts), vocab_size, pattern=pattern or bpeforge._core.DEFAULT_PATTERN)
    ours = bpeforge.Trainer(pattern)
    ours.train_from_iterator(iter(texts), vocab_size)
    assert ours.get_pattern() == theirs.get_pattern()
    assert ours.get_mergeable_ranks() == [(bytes(b), r) for b, r in theirs.get_mergeable_ranks()]
