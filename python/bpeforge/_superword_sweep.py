"""Choosing a superword transition: compression at one vocabulary size for several transitions.

A superword tokenizer's second stage cannot be cut to size (truncating it does not give the
tokenizer of a later transition: the merges after the transition are learned over other spans),
so each transition is one training: from span counts of both patterns, counted once. Plain BPE
at the same size is trained too, as the baseline every row is compared with.

>>> import bpeforge
>>> texts = ["by the way, the cat sat on the mat"] * 20
>>> counts, superword = bpeforge.count(texts), bpeforge.count(texts, pattern="superword")
>>> sweep = sweep_superword_transitions(counts, superword, 300, [270, 290], {"sample": texts[0]}, special_tokens=[])
>>> [(r.transition, r.tokens) for r in sweep.rows]
[(None, 10), (270, 3), (290, 3)]
"""

from __future__ import annotations

import csv
import io as textio
import os
import warnings
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Union

from . import _core
from ._plot import plot_curves, text_size
from ._sweep import FORMAT, SweepText, measure_sizes, save_sweep_files
from ._tokenizer import Tokenizer

#: The folder of the plain BPE tokenizer in a saved transition sweep (the others are named by
#: their transition).
PLAIN = "plain"


class TransitionRow(NamedTuple):
    """The compression of one evaluation text by one tokenizer of a transition sweep."""

    source: str
    transition: Optional[int]
    """The superword transition (None: plain BPE, the baseline)."""
    vocab_size: int
    bytes: int
    chars: int
    tokens: int
    bytes_per_token: float
    tokens_per_char: float
    tokens_saved: Optional[float]
    """``(plain - tokens) / plain * 100``: fewer tokens than plain BPE (None for plain BPE)."""


def check_transitions(transitions: Iterable[Any], vocab_size: int, n_special: int) -> List[int]:
    """``transitions`` as increasing ints from 256 + ``n_special`` to ``vocab_size``; ValueError
    (TypeError for a non-integer) saying which rule is broken.

    >>> check_transitions([300, 280], 320, 0)
    Traceback (most recent call last):
    ValueError: superword transitions must be increasing: 280 comes after 300
    """
    if isinstance(transitions, (str, bytes)):
        raise TypeError("transitions must be a list of ints, not a str")
    values = [transition_int(t) for t in transitions]
    if not values:
        raise ValueError("no superword transitions given")
    for before, t in zip(values, values[1:]):
        if t <= before:
            raise ValueError(f"superword transitions must be increasing: {t:,} comes after {before:,}")
    least = 256 + n_special
    if values[0] < least or values[-1] > vocab_size:
        raise ValueError(f"superword transitions must be from 256 + {n_special} special tokens = {least} to the vocabulary size {vocab_size:,}")
    return values


def transition_int(value: Any) -> int:
    """A transition, checked to be an int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a superword transition must be an int, got {type(value).__name__}")
    return value


class TransitionSweep:
    """Tokenizers of one vocabulary size, plain BPE and one per superword transition, and their
    compression: ``tokenizers`` (None for plain BPE, else the transition -> tokenizer) and a
    :class:`TransitionRow` per (source, tokenizer)."""

    def __init__(self, vocab_size: int, tokenizers: Mapping[Optional[int], Tokenizer], rows: Sequence[TransitionRow], corpus: str = "") -> None:
        self.vocab_size = vocab_size
        self.tokenizers: Dict[Optional[int], Tokenizer] = dict(tokenizers)
        self.rows: List[TransitionRow] = list(rows)
        self.corpus = corpus

    @property
    def title(self) -> str:
        return f"Bytes per token by superword transition, {self.vocab_size:,} tokens" + (f"\ntrained on {self.corpus}" if self.corpus else "")

    def table(self) -> str:
        """The rows as an aligned text table, a block per source."""
        headers = ["Source", "Transition", "Bytes/token", "Tokens", "Tokens/char", "Vs plain"]
        lines = []
        for k, r in enumerate(self.rows):
            first = k == 0 or self.rows[k - 1].source != r.source
            lines.append([
                r.source if first else "",
                "plain BPE" if r.transition is None else f"{r.transition:,}",
                f"{r.bytes_per_token:.3f}",
                f"{r.tokens:,}",
                f"{r.tokens_per_char:.3f}",
                "" if r.tokens_saved is None else f"{r.tokens_saved:+.1f}%",
            ])
        widths = [max(len(h), *(len(line[k]) for line in lines)) for k, h in enumerate(headers)]

        def render(cells: Sequence[str]) -> str:
            return "  ".join(c.ljust(widths[0]) if k == 0 else c.rjust(widths[k]) for k, c in enumerate(cells)).rstrip()

        out = [render(headers), "-" * (sum(widths) + 2 * (len(widths) - 1))] + [render(line) for line in lines]
        out.append(f"Vs plain: fewer tokens than plain BPE at {self.vocab_size:,} (positive: the superword tokenizer compresses better)")
        return "\n".join(out)

    def to_csv(self) -> str:
        buffer = textio.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(TransitionRow._fields)
        for r in self.rows:
            writer.writerow(["" if v is None else v for v in r])
        return buffer.getvalue()

    def to_json(self) -> Dict[str, Any]:
        return {
            "format": FORMAT,
            "version": 1,
            "kind": "superword-transitions",
            "corpus": self.corpus,
            "vocab_size": self.vocab_size,
            "transitions": [t for t in self.tokenizers if t is not None],
            "tokenizers": {PLAIN if t is None else str(t): f"{PLAIN if t is None else t}/" for t in self.tokenizers},
            "rows": [r._asdict() for r in self.rows],
        }

    def plot(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Bytes per token against the transition, one line per source, and plain BPE's as a
        flat line beside it."""
        curves: Dict[str, List[Any]] = {}
        transitions = sorted(t for t in self.tokenizers if t is not None)
        for r in self.rows:
            name = f"{r.source} ({text_size(r.bytes)})"
            if r.transition is None:
                curves[f"{name}, plain BPE"] = [(t, r.bytes_per_token, None) for t in (transitions[0], transitions[-1])]
            else:
                curves.setdefault(name, []).append((r.transition, r.bytes_per_token, None))
        plot_curves(curves, path, title=self.title, tick_labels={t: f"{t:,}" for t in transitions}, by_size=False,
                    x_label="superword transition (vocabulary size where stage 2 starts)")

    def save(self, directory: Union[str, "os.PathLike[str]"], *, plot: Optional[bool] = None) -> Optional[Path]:
        """Writes ``sweep.csv``, ``sweep.json``, each tokenizer (``plain/``, ``T/``) with its
        ``.tiktoken``, and ``sweep.png``, each atomically (as :meth:`bpeforge._sweep.Sweep.save`
        does: ``bpeforge sweep`` builds a fresh folder and switches it whole)."""
        tokenizers = {PLAIN if t is None else str(t): tokenizer for t, tokenizer in self.tokenizers.items()}
        return save_sweep_files(directory, tokenizers, self.to_csv(), self.to_json(), self.plot, plot)


def sweep_superword_transitions(
    counts: _core.SpanCounts,
    superword_counts: _core.SpanCounts,
    vocab_size: int,
    transitions: Iterable[int],
    eval_texts: Mapping[str, SweepText],
    *,
    num_threads: Optional[int] = None,
    progress: Any = False,
    corpus: str = "",
    **options: Any,
) -> TransitionSweep:
    """Trains plain BPE and one superword tokenizer per transition at ``vocab_size``, from span
    counts of both patterns (``options``: those of a recipe, as
    :meth:`bpeforge.Tokenizer.train_from_counts` takes them), and measures each on each of
    ``eval_texts`` (source name -> text, as :func:`bpeforge._sweep.sweep_vocab_sizes` takes them).
    ``superword_pattern`` and ``max_token_words`` go to the superword tokenizers (plain BPE with
    its pattern has no multi-word token anyway)."""
    special_tokens = options.get("special_tokens")
    n_special = (9 if special_tokens is None else len(special_tokens)) + options.get("reserve_special_tokens", 0)
    values = check_transitions(transitions, vocab_size, n_special)
    tokenizers: Dict[Optional[int], Tokenizer] = {}
    with warnings.catch_warnings(record=True) as stopped:
        warnings.simplefilter("always")
        common = dict(options, num_threads=num_threads, progress=progress)
        plain = {k: v for k, v in common.items() if k != "superword_pattern"}
        tokenizers[None] = Tokenizer.train_from_counts(counts, vocab_size, **plain)
        for t in values:
            tokenizers[t] = Tokenizer.train_from_counts(counts, vocab_size, superword_transition=t, superword_counts=superword_counts, **common)
    for w in stopped:
        warnings.warn(w.message, stacklevel=2)
    order = list(tokenizers)
    measured = measure_sizes(dict(enumerate(tokenizers.values())), eval_texts, num_threads=num_threads or 8)
    rows: List[TransitionRow] = []
    plain_tokens: Dict[str, int] = {}
    for r in measured:
        transition = order[r.vocab_size]
        if transition is None:
            plain_tokens[r.source] = r.tokens
        base = plain_tokens[r.source]
        saved = None if transition is None else (base - r.tokens) / base * 100
        rows.append(TransitionRow(r.source, transition, tokenizers[transition].n_vocab, r.bytes, r.chars, r.tokens,
                                  r.bytes_per_token, r.tokens_per_char, saved))
    return TransitionSweep(vocab_size, tokenizers, rows, corpus)
