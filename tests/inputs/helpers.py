"""What the tests of the corpus readers share."""

from __future__ import annotations

import json
from pathlib import Path

from bpeforge._inputs import Source, detect


def docs_of(batches) -> list:
    """The documents of batches of str."""
    return [d for batch in batches for d in batch]


def text_source(path: Path) -> Source:
    fmt, compression = detect(path)
    return Source(path, fmt or "text", compression)


def write_jsonl(path: Path, rows) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
