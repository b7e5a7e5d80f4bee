"""Choosing the vocabulary size from a curve: compression at several sizes from one training.

BPE merges are greedy, so the first ``k`` merges of a training to the largest size are the
training to ``k`` merges (:mod:`bpeforge._prefix`; ``tests/test_sweep.py`` checks it). One
training to the largest size therefore gives the tokenizer of every smaller size
(:meth:`bpeforge.Tokenizer.truncate`), and a sweep costs one training plus one encoding of the
evaluation text per size.

:func:`sweep_vocab_sizes` trains and measures; :meth:`Sweep.from_tokenizer` measures a
tokenizer already trained (by any means: from text, from span counts) on named evaluation texts,
one per source; :func:`measure_sizes` measures tokenizers already cut. A :class:`Sweep` holds the tokenizers and a :class:`SweepRow` per (source,
size), and writes them (:meth:`Sweep.save`): ``sweep.csv``, ``sweep.json``, ``sweep.png`` (with
matplotlib, ``pip install 'bpeforge[plot]'``), and for each size a tokenizer folder ``N/`` and
its ranks ``N.tiktoken``. ``bpeforge sweep`` (:mod:`bpeforge.cli.sweep`) is the command line.

An evaluation text is a str or a :class:`bpeforge._eval.TextFile` (counted as
:func:`bpeforge.evaluate` counts it, in pieces whose spans are those of the whole text), or a
list of documents (each encoded on its own, as the held-out documents of ``bpeforge train``
are). Tokens are counted by the compiled core's encoder, which gives tiktoken's
``encode_ordinary`` counts. A custom split pattern that leaves text unmatched drops it, as
tiktoken does; a list of documents then counts only the bytes its tokens cover.

>>> import bpeforge
>>> texts = ["the cat sat on the mat; the rat ate the hat, and that was that"] * 20
>>> sweep = sweep_vocab_sizes(texts, [260, 270, 280], {"sample": texts[0]}, special_tokens=[])
>>> [(r.vocab_size, r.tokens, round(r.bytes_per_token, 2)) for r in sweep.rows]
[(260, 40, 1.55), (270, 29, 2.14), (280, 19, 3.26)]
>>> print(sweep.table())
Source  Vocab size  Bytes/token  Tokens  Tokens/char   Saved
------------------------------------------------------------
sample         260        1.550      40        0.645
               270        2.138      29        0.468  +27.5%
               280        3.263      19        0.306  +34.5%
Saved: fewer tokens than at the size before (positive: this size compresses better)
>>> sweep.tokenizers[270].mergeable_ranks == sweep.tokenizers[280].truncate(270).mergeable_ranks
True
"""

from __future__ import annotations

import csv
import io as textio
import json
import os
import warnings
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from . import _core, _io as io
from ._base import NANOCHAT_SPECIAL_TOKENS
from ._checks import MAX_TOKEN_ID, as_int
from ._errors import EvalError
from ._eval import TextFile, evaluate
from ._plot import PlotUnavailable, import_matplotlib, plot_sweep
from ._tokenizer import Tokenizer
from ._training import Recipe, TrainedRanks, Training

__all__ = [
    "CSV_FILE",
    "FORMAT",
    "JSON_FILE",
    "PLOT_FILE",
    "Sweep",
    "SweepRow",
    "check_vocab_sizes",
    "evaluate_vocab_sizes",
    "measure_sizes",
    "sweep_vocab_sizes",
    "truncations",
]

CSV_FILE = "sweep.csv"
JSON_FILE = "sweep.json"
PLOT_FILE = "sweep.png"
FORMAT = "bpeforge-sweep"
"""The ``format`` of ``sweep.json``: how a folder a sweep wrote is recognized."""

# An evaluation text: a str, a TextFile, or a list of documents encoded one by one.
SweepText = Union[str, TextFile, Sequence[str]]


class SweepRow(NamedTuple):
    """The compression of one source's evaluation text at one vocabulary size."""

    source: str
    """The evaluation text's name (``held-out``, a file's path, a source's name)."""
    vocab_size: int
    """The vocabulary size, special tokens included."""
    bytes: int
    """UTF-8 bytes of the text (those its tokens cover)."""
    chars: int
    """Characters (code points) of the text."""
    tokens: int
    """Tokens of the text, encoded as ordinary text."""
    bytes_per_token: float
    """``bytes / tokens``: higher is better compression."""
    tokens_per_char: float
    """``tokens / chars``."""
    tokens_saved: Optional[float]
    """``(previous - tokens) / previous * 100``, where ``previous`` is the tokens at the next
    smaller size of the sweep: what this size gains (None at the smallest size)."""


def check_vocab_sizes(vocab_sizes: Iterable[Any], n_special: int = 0) -> List[int]:
    """``vocab_sizes`` as a list of ints, checked: at least one, increasing, none given twice,
    the smallest at least 256 + ``n_special`` (the single bytes and the special tokens), the
    largest below 2^31. ValueError saying which rule is broken (TypeError for a size that is
    not an integer).

    >>> check_vocab_sizes([512, 1024], n_special=9)
    [512, 1024]
    >>> check_vocab_sizes([1024, 512])
    Traceback (most recent call last):
    ValueError: vocab sizes must be increasing: 512 comes after 1,024
    """
    if isinstance(vocab_sizes, (str, bytes)):
        raise TypeError("vocab_sizes must be a list of ints, not a str")
    sizes = [as_int(size, "a vocab size") for size in vocab_sizes]
    if not sizes:
        raise ValueError("no vocab sizes given")
    for before, size in zip(sizes, sizes[1:]):
        if size == before:
            raise ValueError(f"vocab size {size:,} is given twice")
        if size < before:
            raise ValueError(f"vocab sizes must be increasing: {size:,} comes after {before:,}")
    if sizes[0] < 256 + n_special:
        raise ValueError(
            f"vocab size {sizes[0]:,} is too small: at least 256 bytes + {n_special} special tokens = {256 + n_special}"
        )
    if sizes[-1] > MAX_TOKEN_ID:
        raise ValueError(f"vocab size {sizes[-1]:,} is too large: at most {MAX_TOKEN_ID:,}")
    return sizes


def _documents_counts(name: str, documents: Sequence[str], tokenizers: Mapping[int, Tokenizer]) -> List[Tuple[int, int, int]]:
    """``(bytes covered, chars, tokens)`` per size of a list of documents, each encoded alone."""
    docs = list(documents)
    if not docs or not any(docs):
        raise EvalError(f"text {name!r} is empty")
    if not all(isinstance(d, str) for d in docs):
        bad = next(d for d in docs if not isinstance(d, str))
        raise EvalError(f"text {name!r}: documents must be str, got {type(bad).__name__}")
    chars = sum(len(d) for d in docs)
    counts = []
    for tokenizer in tokenizers.values():
        encoder = _core.Encoder(list(tokenizer.mergeable_ranks.items()), tokenizer.pattern)
        tokens, covered = encoder.count(docs)
        if tokens == 0:
            raise EvalError(f"text {name!r}: the split pattern matches none of it")
        counts.append((covered, chars, tokens))
    return counts


def evaluate_vocab_sizes(
    tokenizer: Tokenizer,
    vocab_sizes: Iterable[int],
    texts: Mapping[str, SweepText],
    *,
    num_threads: int = 8,
) -> List[SweepRow]:
    """The compression of ``tokenizer`` cut to each of ``vocab_sizes``
    (:meth:`~bpeforge.Tokenizer.truncate`) on each text of ``texts`` (source name -> text; see
    the module docstring for what a text may be): one :class:`SweepRow` per (source, size),
    grouped by source in the order given, sizes increasing. The sizes must be valid for
    :func:`check_vocab_sizes` and at most ``tokenizer.n_vocab``."""
    return measure_sizes(truncations(tokenizer, vocab_sizes), texts, num_threads=num_threads)


def truncations(tokenizer: Tokenizer, vocab_sizes: Iterable[int]) -> Dict[int, Tokenizer]:
    """``tokenizer`` cut to each of ``vocab_sizes`` (checked by :func:`check_vocab_sizes`, and at
    most ``tokenizer.n_vocab``): size -> :meth:`~bpeforge.Tokenizer.truncate`."""
    sizes = check_vocab_sizes(vocab_sizes, len(tokenizer.special_tokens))
    if sizes[-1] > tokenizer.n_vocab:
        raise ValueError(f"vocab size {sizes[-1]:,} is larger than the tokenizer's {tokenizer.n_vocab:,} tokens")
    return {size: tokenizer.truncate(size) for size in sizes}


def measure_sizes(tokenizers: Mapping[int, Tokenizer], texts: Mapping[str, SweepText], *, num_threads: int = 8) -> List[SweepRow]:
    """The rows of :func:`evaluate_vocab_sizes` for ``tokenizers`` already cut (size -> tokenizer,
    sizes increasing)."""
    if not texts:
        raise EvalError("no texts to evaluate on")
    tokenizers = dict(sorted(tokenizers.items()))
    sizes = list(tokenizers)
    rows: List[SweepRow] = []
    for source, text in texts.items():
        if isinstance(text, (str, TextFile)):
            named = {str(size): tok for size, tok in tokenizers.items()}
            counts = [(r.bytes, r.chars, r.tokens) for r in evaluate(named, {source: text}, num_threads=num_threads)]
        else:
            counts = _documents_counts(source, text, tokenizers)
        previous: Optional[int] = None
        for size, (n_bytes, n_chars, n_tokens) in zip(sizes, counts):
            saved = None if previous is None else (previous - n_tokens) / previous * 100
            rows.append(SweepRow(source, size, n_bytes, n_chars, n_tokens, n_bytes / n_tokens, n_tokens / n_chars, saved))
            previous = n_tokens
    return rows


class Sweep:
    """Tokenizers of several vocabulary sizes cut from one training, and their compression.

    ``tokenizers``: size -> :class:`~bpeforge.Tokenizer`, increasing; ``rows``: one
    :class:`SweepRow` per (source, size); ``corpus``: what was trained on, for the plot's title
    and the JSON; ``notes``: what the reader should know (a size training did not reach, text
    not held out)."""

    def __init__(self, tokenizers: Mapping[int, Tokenizer], rows: Sequence[SweepRow], corpus: str = "", notes: Sequence[str] = ()) -> None:
        self.tokenizers: Dict[int, Tokenizer] = dict(sorted(tokenizers.items()))
        self.rows: List[SweepRow] = list(rows)
        self.corpus = corpus
        self.notes: List[str] = list(notes)

    def __repr__(self) -> str:
        return f"<bpeforge._sweep.Sweep vocab_sizes={list(self.tokenizers)} sources={self.sources}>"

    @classmethod
    def from_tokenizer(
        cls,
        tokenizer: Tokenizer,
        vocab_sizes: Iterable[int],
        texts: Mapping[str, SweepText],
        *,
        corpus: str = "",
        notes: Sequence[str] = (),
        num_threads: int = 8,
    ) -> "Sweep":
        """The sweep of a tokenizer already trained to the largest size (or larger): cut to each
        of ``vocab_sizes`` and measured on each of ``texts`` (see :func:`evaluate_vocab_sizes`).

        >>> import bpeforge
        >>> tok = bpeforge.Tokenizer.train_from_iterator(["aaab"] * 3, vocab_size=259, special_tokens=[])
        >>> [r.tokens for r in Sweep.from_tokenizer(tok, [257, 259], {"t": "aaab"}).rows]
        [3, 1]
        """
        tokenizers = truncations(tokenizer, vocab_sizes)
        return cls(tokenizers, measure_sizes(tokenizers, texts, num_threads=num_threads), corpus, notes)

    @classmethod
    def from_training(
        cls,
        trained: TrainedRanks,
        vocab_sizes: Iterable[int],
        texts: Mapping[str, SweepText],
        *,
        corpus: str = "",
        notes: Sequence[str] = (),
        num_threads: int = 8,
    ) -> "Sweep":
        """The sweep of a training to the largest size (or larger): its tokenizer at each of
        ``vocab_sizes`` as training to that size makes it (:meth:`TrainedRanks.at_size`: the
        recipe's special tokens, reserved and padding ones included, after each size's ranks),
        measured on each of ``texts``."""
        sizes = check_vocab_sizes(vocab_sizes, len(trained.recipe.special_tokens) + trained.recipe.reserve_special_tokens)
        tokenizers = {size: trained.at_size(size, Tokenizer) for size in sizes}
        return cls(tokenizers, measure_sizes(tokenizers, texts, num_threads=num_threads), corpus, notes)

    @property
    def vocab_sizes(self) -> List[int]:
        """The sizes of the sweep, increasing."""
        return list(self.tokenizers)

    @property
    def sources(self) -> List[str]:
        """The names of the evaluation texts, in order."""
        return list(dict.fromkeys(r.source for r in self.rows))

    @property
    def title(self) -> str:
        """The plot's title."""
        return "Bytes per token by vocabulary size" + (f", trained on {self.corpus}" if self.corpus else "")

    def table(self) -> str:
        """The rows as an aligned text table, a block per source."""
        headers = ["Source", "Vocab size", "Bytes/token", "Tokens", "Tokens/char", "Saved"]
        lines: List[List[str]] = []
        for k, r in enumerate(self.rows):
            first = k == 0 or self.rows[k - 1].source != r.source
            lines.append([
                r.source if first else "",
                f"{r.vocab_size:,}",
                f"{r.bytes_per_token:.3f}",
                f"{r.tokens:,}",
                f"{r.tokens_per_char:.3f}",
                "" if r.tokens_saved is None else f"{r.tokens_saved:+.1f}%",
            ])
        widths = [max(len(h), *(len(line[k]) for line in lines)) if lines else len(h) for k, h in enumerate(headers)]

        def render(cells: Sequence[str]) -> str:
            return "  ".join(c.ljust(widths[0]) if k == 0 else c.rjust(widths[k]) for k, c in enumerate(cells)).rstrip()

        rule = "-" * (sum(widths) + 2 * (len(widths) - 1))
        out = [render(headers), rule] + [render(line) for line in lines]
        out.append("Saved: fewer tokens than at the size before (positive: this size compresses better)")
        return "\n".join(out)

    def to_csv(self) -> str:
        """The rows as CSV, with a header line (``tokens_saved`` empty at the smallest size)."""
        buffer = textio.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(SweepRow._fields)
        for r in self.rows:
            writer.writerow([*r[:-1], "" if r.tokens_saved is None else r.tokens_saved])
        return buffer.getvalue()

    def to_json(self) -> Dict[str, Any]:
        """The sweep as a JSON-ready dict: ``format`` (``bpeforge-sweep``), the corpus, the
        pattern, the special tokens, the sizes, where each size's tokenizer is saved, the notes and
        the rows."""
        any_tokenizer = next(iter(self.tokenizers.values()), None)
        return {
            "format": FORMAT,
            "version": 1,
            "corpus": self.corpus,
            "pattern": any_tokenizer.pattern if any_tokenizer is not None else None,
            "special_tokens": list(any_tokenizer.special_tokens) if any_tokenizer is not None else [],
            "vocab_sizes": self.vocab_sizes,
            "tokenizers": {str(size): f"{size}/" for size in self.tokenizers},
            "notes": self.notes,
            "rows": [r._asdict() for r in self.rows],
        }

    def plot(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Draws bytes per token against vocabulary size into the PNG file ``path``, one line per
        source (:func:`bpeforge._plot.plot_sweep`); :class:`~bpeforge._plot.PlotUnavailable`
        without matplotlib."""
        plot_sweep(self.rows, path, title=self.title)

    def save(self, directory: Union[str, "os.PathLike[str]"], *, plot: Optional[bool] = None) -> Optional[Path]:
        """Writes the sweep into ``directory`` (made if needed): ``sweep.csv``, ``sweep.json``,
        for each size the tokenizer folder ``N/`` (:meth:`bpeforge.Tokenizer.load` reads it) and
        its ranks ``N.tiktoken``, and ``sweep.png``. ``plot``: None draws the plot when
        matplotlib is installed, True requires it (:class:`~bpeforge._plot.PlotUnavailable`),
        False never draws. Returns the plot's path, or None when none was drawn. Files of these
        names are replaced, each atomically; nothing else in ``directory`` is touched (``bpeforge
        sweep`` builds a fresh folder and switches it whole)."""
        tokenizers = {str(size): tokenizer for size, tokenizer in self.tokenizers.items()}
        return save_sweep_files(directory, tokenizers, self.to_csv(), self.to_json(), self.plot, plot)


def save_sweep_files(
    directory: Union[str, "os.PathLike[str]"],
    tokenizers: Mapping[str, Tokenizer],
    csv_text: str,
    json_data: Dict[str, Any],
    draw: Any,
    plot: Optional[bool],
) -> Optional[Path]:
    """Writes a sweep's files into ``directory`` (made if needed), each atomically: each
    tokenizer as the folder ``NAME/`` and its ranks ``NAME.tiktoken``, ``sweep.csv``,
    ``sweep.json``, and ``sweep.png`` drawn by ``draw(path)`` as ``plot`` asks (see
    :meth:`Sweep.save`). Returns the plot's path, or None when none was drawn."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    for name, tokenizer in tokenizers.items():
        tokenizer.save(folder / name)
        io.write_atomic(folder / f"{name}.tiktoken", io.ranks_to_tiktoken(tokenizer.mergeable_ranks))
    io.write_atomic(folder / CSV_FILE, csv_text.encode("utf-8"))
    io.write_atomic(folder / JSON_FILE, (json.dumps(json_data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    if plot is False:
        return None
    if plot is None:
        try:
            import_matplotlib()
        except PlotUnavailable:
            return None
    draw(folder / PLOT_FILE)
    return folder / PLOT_FILE


def sizes_reached(vocab_sizes: Sequence[int], n_vocab: int) -> Tuple[List[int], List[int]]:
    """``(sizes at most n_vocab, sizes above it)``: what a training that stopped at ``n_vocab``
    tokens can give, and what it cannot.

    >>> sizes_reached([512, 1024, 2048], 1500)
    ([512, 1024], [2048])
    """
    return [s for s in vocab_sizes if s <= n_vocab], [s for s in vocab_sizes if s > n_vocab]


def sweep_vocab_sizes(
    texts: Iterable[Any],
    vocab_sizes: Iterable[int],
    eval_texts: Mapping[str, SweepText],
    *,
    num_threads: Optional[int] = None,
    buffer_size: int = 8192,
    progress: Any = False,
    corpus: str = "",
    **options: Any,
) -> Sweep:
    """Trains once on ``texts`` to the largest of ``vocab_sizes`` (``options``: those of a
    :class:`~bpeforge._training.Recipe` but its size, as :meth:`bpeforge.Tokenizer.train_from_iterator`
    takes them: ``pattern``, ``special_tokens``, ``min_frequency``, ``max_token_length``,
    ``doc_cap``, ...) and measures every size on each of
    ``eval_texts`` (source name -> text, kept out of ``texts``). Sizes training did not reach
    (it stops early when no pair is left or none occurs ``min_frequency`` times) are left out
    with a warning, and said in :attr:`Sweep.notes`; if it reached none of them, ValueError."""
    if "vocab_size" in options:
        raise TypeError("sweep_vocab_sizes takes vocab_sizes, not vocab_size")
    special_tokens = options.get("special_tokens")
    n_special = len(NANOCHAT_SPECIAL_TOKENS if special_tokens is None else special_tokens)
    sizes = check_vocab_sizes(vocab_sizes, n_special)
    training = Training(Recipe(sizes[-1], **options), num_threads=num_threads)
    trained = training.run(texts, buffer_size, progress)
    trained.build(Tokenizer)  # NoTextError for no text at all
    notes = []
    kept, beyond = sizes_reached(sizes, trained.reached)
    if beyond:
        note = stopped_note(trained.reached, trained.stop_reason, beyond)
        if not kept:
            raise ValueError(note)
        warnings.warn(note, stacklevel=2)
        notes.append(note)
    return Sweep.from_training(trained, kept, eval_texts, corpus=corpus, notes=notes, num_threads=num_threads or 8)


def stopped_note(n_vocab: int, reason: str, beyond: Sequence[int]) -> str:
    """What to say of sizes ``beyond`` a training that stopped at ``n_vocab`` tokens.

    >>> stopped_note(300, "no pair is left", [512, 1024])
    'training stopped at 300 tokens (no pair is left): the sizes 512 and 1,024 are beyond it and left out'
    """
    listed = [f"{s:,}" for s in beyond]
    which = f"the size {listed[0]} is" if len(listed) == 1 else f"the sizes {', '.join(listed[:-1])} and {listed[-1]} are"
    return f"training stopped at {n_vocab:,} tokens ({reason}): {which} beyond it and left out"
