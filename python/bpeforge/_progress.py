"""Training progress on the console: tqdm bars on a terminal, plain log lines otherwise.

:class:`ConsoleProgress` is a ready-made ``progress`` callback for
``bpeforge.Trainer.train_from_iterator(..., progress=...)``:

>>> import io, bpeforge
>>> out = io.StringIO()
>>> p = ConsoleProgress(file=out, bars=False, log=True)
>>> t = bpeforge.Trainer(bpeforge._patterns.resolve_pattern(None))
>>> t.train_from_iterator(["hello world"] * 20, 260, progress=p)
>>> p.close()
>>> print(out.getvalue().splitlines()[2])
Progress: 25% (1/4 merges) - Last merge: (32, 119) -> 256 (frequency: 20)

The trainer calls it as ``progress(phase, info)``: phase ``"count"`` after each item of the
iterator that filled a batch of texts, and at the end of the iterator (info: ``texts`` and
``bytes`` so far, and ``spans``, a lower bound of the distinct spans so far: each thread counts
in a table of its own, joined once at the end, where ``training_stats`` gives the exact number)
and ``"merge"`` about every 0.1% of the merges (info: ``done``, ``total``, ``pair``, ``token``,
``count``). The reading side can also be fed directly with :meth:`ConsoleProgress.reading` (finer
grained than the trainer's batches).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Mapping, Optional, TextIO


def tqdm_bar_class() -> Any:
    """tqdm's bar class, imported only when bars are shown (importing bpeforge stays light),
    or None if tqdm is missing."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency, but degrade to log lines
        return None
    return tqdm


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is an interactive terminal."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def merge_line(done: int, total: int, pair: Any, token: int, count: int) -> str:
    """The per-percent log line of the merge loop.

    >>> merge_line(501, 50025, (69, 120), 756, 166814)
    'Progress: 1% (501/50025 merges) - Last merge: (69, 120) -> 756 (frequency: 166814)'
    """
    pct = done * 100 // total if total else 100
    return f"Progress: {pct}% ({done}/{total} merges) - Last merge: ({pair[0]}, {pair[1]}) -> {token} (frequency: {count})"


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:,.1f} MB"


class ConsoleProgress:
    """Shows training progress on ``file`` (stderr by default).

    ``bars``: tqdm bars for reading (documents, MB, MB/s) and for the merge loop (merges
    done/total, rate, ETA); ``None`` means "if ``file`` is a terminal". ``log``: plain lines --
    a reading update every ``log_interval`` seconds when there is no bar, the start and end of
    each phase, and at each 1% of the merges a line like ``Progress: 1% (501/50025 merges) -
    Last merge: (69, 120) -> 756 (frequency: 166814)``; ``None`` means the same as ``bars``.
    ``merge_lines_after``: the per-percent lines start only once the merge loop has run that
    many seconds (the command line, beside a bar, waits a few: a merge loop of a fraction of a
    second is not worth a hundred lines); 0, the default, logs them all.
    Call :meth:`close` when training ends (or fails) to close the bars.
    """

    def __init__(
        self,
        *,
        file: Optional[TextIO] = None,
        bars: Optional[bool] = None,
        log: Optional[bool] = None,
        log_interval: float = 5.0,
        merge_lines_after: float = 0.0,
    ) -> None:
        self.file = file if file is not None else sys.stderr
        tty = is_terminal(self.file)
        self._tqdm: Any = tqdm_bar_class() if (tty if bars is None else bars) else None
        self.bars = self._tqdm is not None
        self.log = (tty if log is None else log)
        self.log_interval = log_interval
        self.merge_lines_after = merge_lines_after
        self._read_bar: Any = None  # tqdm bars, made when first needed
        self._merge_bar: Any = None
        self._t0: Optional[float] = None
        self._docs = 0
        self._bytes = 0
        self._spans = 0
        self._reader_fed = False
        self._reading_done = False
        self._last_log = 0.0
        self._merge_t0: Optional[float] = None
        self._merge_total = 0
        self._merge_done = 0
        self._last_pct = 0
        self._last_merge: Optional[Mapping[str, Any]] = None
        self._closed = False

    # ---------------------------------------------------------------------------- output

    def write(self, message: str) -> None:
        """Prints a line on the progress stream, above the bars if there are any."""
        if self._read_bar is not None or self._merge_bar is not None:
            self._tqdm.write(message, file=self.file)
        else:
            print(message, file=self.file, flush=True)

    def _bar(self, **kwargs):
        return self._tqdm(file=self.file, dynamic_ncols=True, mininterval=0.1, **kwargs)

    # ---------------------------------------------------------------------------- reading

    def reading(self, documents: int, nbytes: int, note: Optional[str] = None) -> None:
        """Reading has reached ``documents`` documents and ``nbytes`` bytes of text (running totals)."""
        self._reader_fed = True
        self._update_reading(documents, nbytes, note)

    def _update_reading(self, documents: int, nbytes: int, note: Optional[str] = None) -> None:
        if self._reading_done:
            return
        now = time.perf_counter()
        if self._t0 is None:
            self._t0 = now
            self._last_log = now
        self._docs, self._bytes = documents, nbytes
        if self.bars:
            if self._read_bar is None:
                self._read_bar = self._bar(desc="Reading", unit="B", unit_scale=True, unit_divisor=1000)
            bar = self._read_bar
            postfix = f"{documents:,} docs" + (f", {note}" if note else "")
            bar.set_postfix_str(postfix, refresh=False)
            bar.update(nbytes - bar.n)
        elif self.log and now - self._last_log >= self.log_interval:
            self._last_log = now
            self.write(f"Reading: {documents:,} documents, {_mb(nbytes)} ({self._rate(nbytes, now)})")

    def _rate(self, nbytes: int, now: float) -> str:
        elapsed = now - (self._t0 or now)
        return f"{nbytes / 1e6 / elapsed:,.1f} MB/s" if elapsed > 0 else "- MB/s"

    def end_reading(self) -> None:
        """Closes the reading bar and logs the totals (done on the first merge, or by :meth:`close`)."""
        if self._reading_done:
            return
        self._reading_done = True
        if self._read_bar is not None:
            self._read_bar.close()
            self._read_bar = None
        if self.log and self._t0 is not None:
            now = time.perf_counter()
            self.write(
                f"Read {self._docs:,} documents, {_mb(self._bytes)} in {now - self._t0:.1f} s "
                f"({self._rate(self._bytes, now)}); {self._spans:,}+ distinct spans"
            )

    # ---------------------------------------------------------------------------- callback

    def __call__(self, phase: str, info: Mapping[str, Any]) -> None:
        if phase == "count":
            self._spans = info.get("spans", self._spans)
            if not self._reader_fed:
                self._update_reading(info.get("texts", 0), info.get("bytes", 0))
        elif phase == "merge":
            self._merge(info)

    def _merge(self, info: Mapping[str, Any]) -> None:
        total, done = info["total"], info["done"]
        if self._merge_t0 is None:
            self.end_reading()
            self._merge_t0 = time.perf_counter()
            self._merge_total = total
            if self.log:
                self.write(f"Starting BPE training: {total:,} merges to compute")
            if self.bars:
                self._merge_bar = self._bar(desc="Merging", total=total, unit="merge")
        self._merge_done = done
        self._last_merge = info
        if self._merge_bar is not None:
            self._merge_bar.update(done - self._merge_bar.n)
        pct = done * 100 // total if total else 100
        if self.log and pct > self._last_pct and time.perf_counter() - self._merge_t0 >= self.merge_lines_after:
            self._last_pct = pct
            self.write(merge_line(done, total, info["pair"], info["token"], info["count"]))

    def close(self) -> None:
        """Closes the bars and logs how training ended. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self.end_reading()
        if self._merge_bar is not None:
            self._merge_bar.close()
            self._merge_bar = None
        if self.log and self._merge_t0 is not None:
            elapsed = time.perf_counter() - self._merge_t0
            if self._merge_done < self._merge_total:
                self.write(f"Stopped after {self._merge_done:,} of {self._merge_total:,} merges in {elapsed:.1f} s")
            else:
                self.write(f"Finished training: {self._merge_done:,} merges in {elapsed:.1f} s")

    def abort(self) -> None:
        """Closes the bars without logging an end (after an error or Ctrl-C)."""
        self._closed = True
        for bar in (self._read_bar, self._merge_bar):
            if bar is not None:
                bar.close()
        self._read_bar = self._merge_bar = None
