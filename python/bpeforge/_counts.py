"""Counting spans: texts in, :class:`~bpeforge.SpanCounts` out.

Training depends only on how often each distinct span occurs, so counts made anywhere (on
other machines, from other shards, loaded from files) can be added and trained from, with the
same ranks as training on all the texts at once:

    texts ──count──▶ SpanCounts ──(+ more SpanCounts)──▶ Tokenizer.train_from_counts

The class itself is Rust (``_core.SpanCounts``); this module counts through the compiled
counter, with the ``progress`` argument training takes.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Union

from . import _core
from ._patterns import resolve_pattern
from ._progress import ConsoleProgress
from ._training import ProgressCallback, ProgressOfRun


class Counted:
    """What :func:`count_with_figures` gives: the counts, and the texts and bytes read."""

    def __init__(self, counts: _core.SpanCounts, texts: int, nbytes: int) -> None:
        self.counts = counts
        self.texts = texts
        self.bytes = nbytes


def count_with_figures(
    texts: Iterable[Any],
    pattern: Optional[str] = None,
    *,
    num_threads: Optional[int] = None,
    buffer_size: int = 8192,
    progress: Union[bool, ProgressCallback, ConsoleProgress, None] = False,
    options: Optional[Mapping[str, Any]] = None,
) -> Counted:
    """:func:`count`, with the number of texts and bytes read."""
    if isinstance(texts, bytes):
        raise TypeError("texts must be an iterable of str, not bytes (decode them and wrap the text in a list)")
    if type(texts).__name__ == "DataFrame":  # pandas, polars...: iterating gives column names
        raise TypeError("texts is a DataFrame, whose items are its column names; pass the text column, e.g. df['text']")
    regex = resolve_pattern(pattern)
    with ProgressOfRun(progress) as callback:
        counts, ntexts, nbytes = _core.count_texts(
            texts,
            regex,
            num_threads=num_threads,
            buffer_size=buffer_size,
            progress=callback,
            options=dict(options) if options is not None else None,
        )
    return Counted(counts, ntexts, nbytes)


def count(
    texts: Iterable[Any],
    pattern: Optional[str] = None,
    *,
    num_threads: Optional[int] = None,
    buffer_size: int = 8192,
    progress: Union[bool, ProgressCallback, ConsoleProgress, None] = False,
    options: Optional[Mapping[str, Any]] = None,
) -> _core.SpanCounts:
    """Counts the spans of ``texts``: any iterable ``Tokenizer.train_from_iterator`` takes
    (str, lists of str, Arrow string arrays, a ``ParquetReader``), consumed once, split and
    counted without the GIL while the next texts are pulled. ``pattern`` is a preset's name,
    a regex or None for GPT-4's; ``progress`` as in training (phase ``"count"``);
    ``options`` records counting options that changed the texts (e.g. ``{"doc_cap": 1000}``).
    Every text is counted: no hold-out, no sampling.

    >>> counts = count(["hello world", "hello"])
    >>> len(counts), counts.total, counts.most_common(1)
    (2, 3, [(b'hello', 2)])
    """
    return count_with_figures(
        texts, pattern, num_threads=num_threads, buffer_size=buffer_size, progress=progress, options=options
    ).counts
