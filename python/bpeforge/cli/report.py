"""The report ``bpeforge train`` prints on stdout: one aligned ``name  value`` row per line
(corpus, counts, pattern, timings, memory, the first and last merges, compression, outputs).

Everything here runs after the tokenizer is saved, and is bounded whatever the corpus: the
compression is measured on at most the corpus's hold-out budget of text (the held-out documents,
or the start of the training text), by :class:`bpeforge._core.Encoder`, which encodes as
tiktoken does in time that grows with the text and never gives up on a preset pattern; a
measurement that fails anyway is a line of the report, not an error. Tokens are shown cropped.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import _core
from .._base import BaseTokenizer
from .._errors import SPLIT_FAILED
from .._inputs import Corpus
from .arguments import one_line

Row = Tuple[str, str]
# The characters of a token the report shows (then its length).
TOKEN_SHOWN = 32


@dataclass
class Compression:
    """How well the new tokenizer compresses the text it was measured on."""

    label: str
    """What the text is: "held-out documents" or "training documents"."""
    note: str
    """Said under the figure (why the text is not held out), or ""."""
    documents: int
    bytes: int
    tokens: int
    failure: str = ""
    """Why compression could not be measured, or ""."""


@dataclass
class Timings:
    """Seconds spent after training: building the tokenizer, measuring it, saving it, and in all."""

    build: float
    eval: float
    save: float
    total: float


def token_text(token: bytes, shown: int = TOKEN_SHOWN) -> str:
    r"""A token's bytes for display: as a str literal when they are UTF-8, else as a bytes
    literal (so that a lone byte never looks like a character); a token longer than ``shown``
    characters (or bytes) is cut there, followed by its length.

    >>> print(token_text(b"hi"), token_text("é".encode()[:1]), token_text(b"\xc2\xa0"))
    'hi' b'\xc3' '\xa0'
    >>> print(token_text(b"ab" * 20, shown=4), token_text(b"\xff" * 9, shown=2))
    'abab'... (40 characters, 40 bytes) b'\xff\xff'... (9 bytes)
    """
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        if len(token) <= shown:
            return repr(token)
        return f"{token[:shown]!r}... ({len(token):,} bytes)"
    if len(text) <= shown:
        return repr(text)
    return f"{text[:shown]!r}... ({len(text):,} characters, {len(token):,} bytes)"


def peak_memory() -> Optional[int]:
    """Peak resident memory of this process in bytes, or None where it cannot be had."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def seconds(s: float) -> str:
    """A duration for the report.

    >>> seconds(1.234), seconds(125)
    ('1.23 s', '2 min 5 s')
    """
    return f"{s:.2f} s" if s < 60 else f"{int(s // 60)} min {s % 60:.0f} s"


def corpus_rows(corpus_label: str, corpus: Corpus, stats: Dict[str, Any]) -> List[Row]:
    """What was read: the corpus, its documents, characters, bytes and distinct spans."""
    nbytes = stats.get("bytes", corpus.bytes)
    held = f" (+ {len(corpus.heldout):,} held out)" if corpus.heldout else ""
    skipped = f" (skipped: {corpus.bad_lines.describe()})" if corpus.bad_lines.count else ""
    return [
        ("corpus", corpus_label + (" (stopped at --max-chars)" if corpus.stopped_early else "")),
        ("documents", f"{corpus.documents:,}{held}{skipped}"),
        ("characters", f"{corpus.chars:,}"),
        ("bytes", f"{nbytes:,} ({nbytes / 1e6:,.1f} MB)"),
        ("distinct spans", f"{stats.get('distinct_spans', 0):,}"),
    ]


def vocabulary_rows(pattern_label: str, merges: int, ranks: int, tokenizer: BaseTokenizer) -> List[Row]:
    """The split pattern and what the vocabulary is made of."""
    n_special = len(tokenizer.special_tokens)
    return [
        ("pattern", pattern_label),
        (
            "merges",
            f"{merges:,} -> vocabulary {tokenizer.n_vocab:,} = 256 bytes + {ranks - 256:,} merged tokens"
            + f" + {n_special} special token{'s' if n_special != 1 else ''}",
        ),
    ]


def time_rows(stats: Dict[str, Any], nbytes: int, merges: int, timings: Timings) -> List[Row]:
    """Seconds per phase, speeds, and the peak memory."""
    count_s = stats.get("count_seconds", 0.0)
    merge_s = stats.get("merge_seconds", 0.0)
    mbps = f", {nbytes / 1e6 / count_s:,.1f} MB/s" if count_s > 0 else ""
    mps = f", {merges / merge_s:,.0f} merges/s" if merge_s > 0 and merges else ""
    peak = peak_memory()
    return [
        ("time", f"reading + counting {seconds(count_s)}{mbps}; merging {seconds(merge_s)}{mps}"),
        (
            "",
            f"building the tokenizer {seconds(timings.build)}; evaluating {seconds(timings.eval)}; "
            f"saving {seconds(timings.save)}; total {seconds(timings.total)}",
        ),
        ("peak memory", f"{peak / 1e6:,.0f} MB (max RSS)" if peak is not None else "n/a"),
    ]


def merge_rows(merges: Sequence[Tuple[int, int, int, int]], ranks: Dict[bytes, int], show: int) -> List[Row]:
    """The first and last ``show`` merges, none listed twice."""
    if not merges:
        return []
    by_id = {rank: token for token, rank in ranks.items()}

    def merge_row(merge: Tuple[int, int, int, int]) -> str:
        left, right, token, count = merge
        return f"({left}, {right}) -> {token} {token_text(by_id.get(token, b''))} ({count:,})"

    first = merges[:show]
    last = merges[max(show, len(merges) - show) :]
    rows: List[Row] = [("first merges", merge_row(first[0]))]
    rows.extend(("", merge_row(m)) for m in first[1:])
    if last:
        if len(merges) > 2 * show:
            rows.append(("", "..."))
        rows.append(("last merges", merge_row(last[0])))
        rows.extend(("", merge_row(m)) for m in last[1:])
    return rows


def ordinal(n: int) -> str:
    """``n`` as an ordinal, for "each Nth document".

    >>> ordinal(2), ordinal(3), ordinal(11), ordinal(21), ordinal(100), ordinal(102)
    ('2nd', '3rd', '11th', '21st', '100th', '102nd')
    """
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def measure_compression(ranks: Dict[bytes, int], pattern: str, corpus: Corpus, holdout: int, warnings: List[str]) -> Compression:
    """Bytes per token of the ranks ``ranks`` and split pattern ``pattern`` on the held-out
    documents (or, when none were held out, on the corpus's sample: the start of the training
    text), at most the corpus's hold-out budget of text either way. A split pattern that skips
    text is warned about in ``warnings``, and only the bytes the tokens cover are counted. A
    measurement that fails gives a :class:`Compression` saying why, never an exception: the
    report must not cost the training."""
    if corpus.heldout:
        docs, nbytes, label, note = corpus.heldout, corpus.heldout_bytes, "held-out documents", ""
    else:
        if not holdout:
            why = "--holdout 0"
        elif corpus.documents < holdout:
            why = f"fewer than {holdout} documents"
        else:  # each one at a held-out position was trained on
            which = "each document" if holdout == 1 else f"each {ordinal(holdout)} document"
            why = f"{which} is larger than the hold-out budget of {corpus.holdout_max_bytes:,} bytes"
        docs, nbytes, label, note = corpus.sample, corpus.sample_bytes, "training documents", f"(not held out: {why})"
        if corpus.sample_cropped:
            note = f"(not held out: {why}; the first {nbytes:,} bytes of the training text, the last document cropped)"
    try:
        tokens, covered = _core.Encoder(list(ranks.items()), pattern).count(docs) if docs else (0, 0)
    except Exception as e:  # noqa: BLE001 - a report, after the tokenizer is saved
        if str(e).startswith(SPLIT_FAILED):
            reason = f"the split pattern's regex engine gave up on the {label} ({one_line(e)[len(SPLIT_FAILED):].lstrip(': ')})"
        else:
            reason = f"{one_line(e)} ({type(e).__name__})"
        return Compression(label, note, len(docs), nbytes, 0, failure=reason)
    # A custom pattern may leave text unmatched: that text is never tokenized (nor trained
    # on), so compression counts only the bytes the tokens cover, and the user is told.
    if covered != nbytes:
        warnings.append(
            f"the split pattern skips text: the tokens of the {label} cover {covered:,} of their "
            f"{nbytes:,} bytes; the rest is dropped when encoding (and was not trained on). "
            r"End the pattern with an alternative such as |\s+|\S to keep every character"
        )
        nbytes = covered
    return Compression(label, note, len(docs), nbytes, tokens)


def compression_rows(compression: Compression) -> List[Row]:
    """Bytes per token on the text measured, and why that text, if it was not held out."""
    c = compression
    if c.failure:
        return [("compression", f"not measured: {c.failure}")]
    if not c.tokens:
        return [("compression", "n/a (no text to measure it on)")]
    rows: List[Row] = [
        (
            "compression",
            f"{c.bytes / c.tokens:.2f} bytes/token on {c.documents:,} {c.label[:-1] if c.documents == 1 else c.label} "
            f"({c.bytes:,} bytes -> {c.tokens:,} tokens)",
        )
    ]
    if c.note:
        rows.append(("", c.note))
    return rows


def format_report(
    *,
    trained_on: List[Row],
    nbytes: int,
    stats: Dict[str, Any],
    merges: Sequence[Tuple[int, int, int, int]],
    ranks: Dict[bytes, int],
    tokenizer: BaseTokenizer,
    pattern_label: str,
    compression: Compression,
    timings: Timings,
    folder: Path,
    tiktoken_file: Path,
    show: int = 5,
) -> str:
    """The training report printed on stdout: the rows on what was trained on (``trained_on``:
    a corpus's :func:`corpus_rows`, or span counts' :func:`counts_rows`), the rows of the
    functions above in order (``nbytes``, the bytes read, for the counting speed), then where
    the outputs were saved; names aligned."""
    rows = list(trained_on)
    rows += vocabulary_rows(pattern_label, len(merges), len(ranks), tokenizer)
    rows += time_rows(stats, nbytes, len(merges), timings)
    rows += merge_rows(merges, ranks, show)
    rows += compression_rows(compression)
    rows.append(("saved", saved_as(folder, tiktoken_file)))
    return aligned(rows)


def saved_as(folder: Path, tiktoken_file: Path) -> str:
    """The report's line on the outputs: bpeforge's folder, or (HuggingFace's tie-break)
    HuggingFace's tokenizer.json in it."""
    if (folder / "bpeforge.json").exists():
        return f"{folder}/ (bpeforge.Tokenizer.load) and {tiktoken_file}"
    return f"{folder}/tokenizer.json (HuggingFace's, tokenizers.Tokenizer.from_file) and {tiktoken_file}"


def aligned(rows: Sequence[Row]) -> str:
    """The rows as the commands print them: one a line, the names padded to the longest."""
    width = max(len(name) for name, _ in rows)
    return "".join(f"{name:<{width}}  {value}\n" for name, value in rows)


# ------------------------------------------------------------------------------ training from span counts


def measure_on_file(ranks: Dict[bytes, int], pattern: str, path: Optional[str], max_bytes: int) -> Compression:
    """Bytes per token on the first ``max_bytes`` of the text file ``path`` (``--eval-text``),
    cut at a character boundary; without one, a :class:`Compression` saying it was not
    measured (span counts hold no text). Never raises: the tokenizer is saved already."""
    if path is None:
        return Compression("texts", "", 0, 0, 0, failure="no --eval-text FILE given (span counts hold no text to measure on)")
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 4)
        cut = len(data) > max_bytes
        text = data[:max_bytes].decode("utf-8", "ignore") if cut else data.decode("utf-8")
        tokens, covered = _core.Encoder(list(ranks.items()), pattern).count([text])
    except Exception as e:  # noqa: BLE001 - a report, after the tokenizer is saved
        return Compression("texts", "", 0, 0, 0, failure=f"--eval-text {path}: {one_line(e)} ({type(e).__name__})")
    note = f"(--eval-text {path}" + (f", its first {covered:,} bytes)" if cut else ")")
    return Compression("texts", note, 1, covered, tokens)


def counts_rows(source: str, made: str, counts: Any, stats: Dict[str, Any]) -> List[Row]:
    """The report's rows on span counts trained on, in place of the corpus's: ``counts`` (a
    SpanCounts) ``made`` from ``source`` (loaded, or counted on Ray) in ``load_seconds`` of
    ``stats``, its distinct spans and occurrences."""
    return [
        ("span counts", f"{source} ({made} in {seconds(stats.get('load_seconds', 0.0))})"),
        ("distinct spans", f"{len(counts):,}"),
        ("span occurrences", f"{counts.total:,} ({counts.total_bytes:,} bytes, {counts.total_bytes / 1e6:,.1f} MB)"),
    ]
