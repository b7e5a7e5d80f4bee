"""Parity-aware training: one vocabulary fair across languages (Foroutan et al., "Parity-Aware
Byte-Pair Encoding", arXiv 2508.04796; docs/parity.md).

Each language is counted apart; every merge is made for the language compressed worst so far
(on its dev text if given, else against a target ratio, else on its training text), as
HuggingFace's ``ParityBpeTrainer`` does. :func:`train` trains it from texts or span counts by
name, and the same training without parity (plain BPE on the languages summed, at the same
size), so that :class:`ParityReport` can show what parity changed for each language: its bytes
per token before (plain) and after (parity), as a table and as a plot against the vocabulary
size. ``bpeforge train --source NAME=PATH ... --parity`` is the command line's way to it.

    >>> import bpeforge.parity
    >>> run = bpeforge.parity.train({"en": ["the cat sat"] * 20, "fi": ["kissa istui matolla"] * 20}, 270, special_tokens=[])
    >>> run.report.languages, run.tokenizer.n_vocab
    (['en', 'fi'], 270)
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Optional, Union

from . import _core
from ._counts import count
from ._plot import plot_parity
from ._tokenizer import Tokenizer
from ._training import ProgressCallback, Recipe, TrainedRanks, Training

__all__ = ["ParityReport", "ParityRun", "train", "train_counts"]

Texts = Union[Iterable[Any], _core.SpanCounts]

#: A number of global merges past any training: the run is then plain BPE.
ALL_GLOBAL = 2**31


class ParityReport:
    """How each language fared: its measured bytes (the dev text's, else the training text's),
    and its length in tokens after each merge, with parity and without (plain BPE of the
    languages summed, as training to the same size without parity would merge)."""

    def __init__(self, languages: list[str], parity: dict[str, Any], plain: Optional[dict[str, Any]], first_merge_size: int) -> None:
        self.languages = languages
        #: Whether the lengths measure the dev texts (else the training texts).
        self.on_dev: bool = parity["on_dev"]
        #: Each language's measured bytes (tokens before the first merge: single bytes).
        self.bytes: list[int] = [lengths[0] for lengths in parity["lengths"]]
        self.parity_lengths: list[list[int]] = parity["lengths"]
        self.plain_lengths: Optional[list[list[int]]] = plain["lengths"] if plain else None
        #: The language each merge was made for (None: a global merge).
        self.chosen: list[Optional[int]] = parity["chosen"]
        #: For each language, the merges made when it ran out of pairs, or None.
        self.exhausted: list[Optional[int]] = parity["exhausted"]
        #: The vocabulary size before the first merge (special tokens and alphabet).
        self.first_merge_size = first_merge_size

    def bytes_per_token(self, lengths: list[int]) -> float:
        """A language's bytes per token at the end of ``lengths`` (its bytes, the first length,
        over its last length; NaN for a text of no tokens)."""
        return lengths[0] / lengths[-1] if lengths[-1] else float("nan")

    def rows(self) -> list[tuple[str, int, int, Optional[float], float]]:
        """Per language: name, measured bytes, merges made for it, bytes per token without
        parity (None if not measured) and with it."""
        made = [sum(1 for c in self.chosen if c == i) for i in range(len(self.languages))]
        out = []
        for i, name in enumerate(self.languages):
            plain = self.bytes_per_token(self.plain_lengths[i]) if self.plain_lengths else None
            out.append((name, self.bytes[i], made[i], plain, self.bytes_per_token(self.parity_lengths[i])))
        return out

    def table(self) -> str:
        """The rows as aligned text (what ``bpeforge train --parity`` prints)."""
        where = "dev text" if self.on_dev else "training text"
        header = ("language", "bytes", "merges", "bytes/token plain", "parity", "change")
        lines = [header]
        for name, n, made, plain, parity in self.rows():
            change = f"{(parity / plain - 1) * 100:+.1f}%" if plain else ""
            lines.append((name, f"{n:,}", f"{made:,}", f"{plain:.3f}" if plain else "n/a", f"{parity:.3f}", change))
        widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
        text = "\n".join("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)) for row in lines)
        return f"{text}\n(measured on each language's {where})"

    def spread(self) -> tuple[Optional[float], float]:
        """The ratio of the best to the worst bytes per token across languages, without and with
        parity: how unequal the compression is (1 is equal)."""
        rows = self.rows()
        parity = [r[4] for r in rows]
        plain = [r[3] for r in rows]
        ratio = lambda xs: max(xs) / min(xs) if min(xs) > 0 else float("inf")  # noqa: E731
        return (ratio(plain) if all(p is not None for p in plain) else None), ratio(parity)  # type: ignore[arg-type]

    def plot(self, path: Union[str, "os.PathLike[str]"], *, title: Optional[str] = None) -> None:
        """Draws each language's bytes per token against the vocabulary size into the PNG file
        ``path``: a line per language with parity, dashed without it (needs matplotlib:
        :class:`~bpeforge._plot.PlotUnavailable` otherwise)."""
        curves = {}
        for i, name in enumerate(self.languages):
            plain = self.plain_lengths[i] if self.plain_lengths else None
            curves[name] = (self.parity_lengths[i], plain)
        where = "dev text" if self.on_dev else "training text"
        plot_parity(curves, self.first_merge_size, path, title=title or f"Bytes per token of each language on its {where}, with parity (solid) and without (dashed)")


class ParityRun:
    """What :func:`train` gives: the tokenizer, the report, and the training itself."""

    def __init__(self, tokenizer: Tokenizer, report: ParityReport, trained: TrainedRanks) -> None:
        self.tokenizer = tokenizer
        self.report = report
        self.trained = trained


def counted(texts: Texts, recipe: Recipe, num_threads: Optional[int]) -> _core.SpanCounts:
    """``texts`` counted with the recipe's pattern and ``doc_cap`` (span counts kept as they are)."""
    if isinstance(texts, _core.SpanCounts):
        return texts
    options = {"doc_cap": recipe.doc_cap} if recipe.doc_cap is not None else None
    return count(texts, pattern=recipe.pattern, num_threads=num_threads, options=options)


def train_counts(
    recipe: Recipe,
    languages: Mapping[str, _core.SpanCounts],
    *,
    dev: Optional[Mapping[str, _core.SpanCounts]] = None,
    ratio: Optional[Mapping[str, float]] = None,
    compare: bool = True,
    num_threads: Optional[int] = None,
    progress: Union[bool, ProgressCallback, None] = None,
) -> tuple[TrainedRanks, ParityReport]:
    """The parity-aware training of ``recipe`` (which has ``parity``) on each language's span
    counts, and its report (with the plain training compared if ``compare``). ``dev`` and
    ``ratio`` name every language, or raise ValueError."""
    if recipe.parity is None:
        raise ValueError("the recipe has no parity (give parity='base' or 'window')")
    names = list(languages)
    for what, given in (("dev", dev), ("ratio", ratio)):
        if given is not None and set(given) != set(names):
            missing, extra = sorted(set(names) - set(given)), sorted(set(given) - set(names))
            detail = "; ".join(x for x in (f"none for {', '.join(missing)}" if missing else "", f"no language named {', '.join(extra)}" if extra else "") if x)
            raise ValueError(f"{what} must name every language ({', '.join(names)}): {detail}")
    train = [languages[n] for n in names]
    dev_list = [dev[n] for n in names] if dev is not None else None
    ratio_list = [float(ratio[n]) for n in names] if ratio is not None else None
    trained = Training(recipe, num_threads=num_threads).run(counts=train, dev=dev_list, ratio=ratio_list, progress=progress)
    plain = None
    if compare:
        plain_recipe = recipe.replace(parity="base", parity_window=None, parity_alpha=None, global_merges=ALL_GLOBAL)
        plain = Training(plain_recipe, num_threads=num_threads).run(counts=train, dev=dev_list).parity_trace
    first = len(trained.ranks) + len(recipe.special_tokens) + recipe.reserve_special_tokens - len(trained.parity_trace["chosen"])  # type: ignore[index]
    return trained, ParityReport(names, trained.parity_trace, plain, first)  # type: ignore[arg-type]


def train(
    languages: Mapping[str, Texts],
    vocab_size: int,
    *,
    dev: Optional[Mapping[str, Texts]] = None,
    ratio: Optional[Mapping[str, float]] = None,
    parity: str = "base",
    compare: bool = True,
    num_threads: Optional[int] = None,
    progress: Union[bool, ProgressCallback, None] = None,
    **options: Any,
) -> ParityRun:
    """Trains a tokenizer of ``vocab_size`` on ``languages`` (name -> texts, or span counts made
    with the recipe's pattern), each merge for the language compressed worst: measured on
    ``dev`` (name -> texts or counts) if given, else against ``ratio`` (name -> target
    compression rate, relative to each other) if given, else on the training texts.
    ``parity`` is "base" or "window"; ``options`` are the other fields of a
    :class:`~bpeforge._training.Recipe` (``pattern``, ``special_tokens``, ``parity_window``,
    ``parity_alpha``, ``global_merges``, ``min_frequency``, ...). ``compare``: also train
    without parity, for the report's "plain" figures."""
    recipe = Recipe(vocab_size, parity=parity, **options)
    if not languages:
        raise ValueError("no languages: give {name: texts} for each")
    counts = {name: counted(texts, recipe, num_threads) for name, texts in languages.items()}
    dev_counts = {name: counted(texts, recipe, num_threads) for name, texts in dev.items()} if dev is not None else None
    trained, report = train_counts(recipe, counts, dev=dev_counts, ratio=ratio, compare=compare, num_threads=num_threads, progress=progress)
    return ParityRun(trained.build(Tokenizer), report, trained)
