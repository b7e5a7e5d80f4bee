"""``bpeforge train --source NAME=PATH ... [--alpha A | --weight NAME=W ...]``: training on a mix
of named sources. Each source is read with train's input options and its own hold-out, and
counted; the counts are mixed (:func:`bpeforge.mix`: each multiplied by its integer weight, from
``--alpha`` or the ``--weight``\\ s) and trained on; the report shows each source's share of the
bytes before and after weighting and its compression on its own held-out documents.

The options are added to ``train``'s parser by :func:`add_mix_options` (``bpeforge.cli`` calls
it), so that ``train`` without ``--source`` runs as it always did.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .._core import SpanCounts
from .._errors import SPLIT_FAILED, InputError
from .._inputs import Corpus
from .._training import TrainedRanks
from .._mixing import MixRecord, checked_alpha, mix
from .._progress import ConsoleProgress
from .arguments import EXIT_USAGE, PROG, CLIError, one_line, stderr_line
from .outputs import check_output, output_paths
from .report import Compression, Row, Timings, aligned, measure_compression, merge_rows, saved_as, time_rows, vocabulary_rows
from . import train, train_counts
from .count import count_corpus
from .ray import on_ray
from .signals import ctrl_c_ends_the_process
from .train import (
    build_tokenizer,
    huggingface_outputs,
    save_huggingface_only,
    Inputs,
    describe_pattern,
    find_inputs,
    open_corpus,
    save_then_report,
    set_up_training,
    set_up_training_on,
    stopped_early_warnings,
    train_on_counts,
    start_progress,
    training_progress,
)

# How SpanCounts.load begins its message for a Parquet file that is not span counts (text, then).
NOT_COUNTS = "not a bpeforge span counts file"

MIX_EPILOG = """
sources (mixing):
  --source NAME=PATH names a source (PATH a file, folder or glob; repeat a NAME to add more
  paths to it). Each source is read with the options above, with its own hold-out (and its
  own --max-chars), and counted; the counts are added with a weight per source, exactly (no
  sampling): --alpha A weights source i so that its share of the bytes becomes
  p_i = n_i^A / sum_j n_j^A (n_i its bytes): 1 keeps the shares (the default), 0 makes
  them equal, 0.3 is the usual flattening; or --weight NAME=W for every source (W > 0,
  integers used exactly). --min-frequency counts occurrences of the mixed corpus brought to
  the plain sum's size. The report gives each source's share of the bytes before and after
  weighting and its bytes per token on its own held-out documents. A PATH that is a span
  counts file (`bpeforge count` wrote it) is mixed as it is (no text: no compression
  measured; without --pattern, its pattern is used). See docs/mixing.md.

  bpeforge train --source en=data/en/ --source fi=data/fi/ --alpha 0.3 -o out/mix
  bpeforge train --source en=data/en/ --source fi=data/fi/ --weight en=2 --weight fi=1 -o out/mix
"""


def add_mix_options(p: argparse.ArgumentParser) -> None:
    """Adds ``--source``, ``--alpha`` and ``--weight`` to ``train``'s parser ``p``, and has it run
    :func:`run_train_or_mix`."""
    add_source_options(p)
    p.epilog = (p.epilog or "") + MIX_EPILOG
    p.set_defaults(run=run_train_or_mix)


def add_source_options(p: argparse.ArgumentParser) -> None:
    """Adds ``--source``, ``--alpha`` and ``--weight`` to ``p`` (train's and sweep's parsers)."""
    group = p.add_argument_group("sources (mixing; see the end of this help)")
    group.add_argument("--source", action="append", dest="mix_sources", metavar="NAME=PATH", help="a named source of text (repeatable)")
    group.add_argument("--alpha", dest="mix_alpha", metavar="A", help="weight the sources so that source i gets p_i ∝ n_i^A of the bytes, A from 0 to 1 (default 1: as they are)")
    group.add_argument("--weight", action="append", dest="mix_weights", metavar="NAME=W", help="the weight of source NAME (give one for every source; not with --alpha)")


def run_train_or_mix(args: argparse.Namespace) -> int:
    """``bpeforge train``: on a mix of sources if any of ``--source``, ``--alpha``, ``--weight``
    is given, on span counts with ``--from-counts``, ``--eval-text`` or Ray, else on INPUTs."""
    if args.mix_sources or args.mix_alpha is not None or args.mix_weights:
        return run_mixed(args)
    if args.from_counts is not None or args.eval_text is not None or on_ray(args):
        return train_counts.run_train_from_counts(args)
    return train.run_train(args)  # looked up when run, as the train parser's own entry point is


@dataclass
class MixedSource:
    """One ``--source``: its name, paths, the files found, the corpus read (its held-out
    documents stay in ``corpus.heldout``), and its counts."""

    name: str
    paths: List[str]
    found: Optional[Inputs] = None
    corpus: Optional[Corpus] = None
    counts: Optional[SpanCounts] = None
    bytes_read: int = 0


def heldout_texts(sources: List[MixedSource]) -> Dict[str, List[str]]:
    """Each source's held-out documents by name (what a per-source evaluation measures on)."""
    return {s.name: list(s.corpus.heldout) if s.corpus is not None else [] for s in sources}


def parse_sources(args: argparse.Namespace) -> List[MixedSource]:
    """The ``--source NAME=PATH`` options, a repeated name adding its path to that source, in
    the order the names first come; the other options checked to go with them."""
    if not args.mix_sources:
        flag = "--alpha" if args.mix_alpha is not None else "--weight"
        raise CLIError(f"{flag} weights sources: name them with --source NAME=PATH", EXIT_USAGE)
    refused = [flag for flag, given in [("INPUT", args.inputs), ("--from-counts", args.from_counts),
                                        ("--eval-text", getattr(args, "eval_text", None)), ("--extend", getattr(args, "extend", None))] if given]
    if refused:
        raise CLIError(f"--source names every input: {', '.join(refused)} cannot go with it", EXIT_USAGE)
    if args.superword_transition is not None:
        raise CLIError("--superword-transition cannot go with --source: a mix is trained from span counts of one pattern", EXIT_USAGE)
    sources: Dict[str, MixedSource] = {}
    for text in args.mix_sources:
        name, sep, path = text.partition("=")
        name = name.strip()
        if not sep or not name or not path:
            raise CLIError(f"--source {text!r}: expected NAME=PATH (e.g. --source en=data/en/)", EXIT_USAGE)
        sources.setdefault(name, MixedSource(name, [])).paths.append(path)
    return list(sources.values())


def parse_weights(args: argparse.Namespace, names: List[str]) -> Tuple[Optional[float], Optional[Dict[str, Any]]]:
    """``(alpha, weights)`` for :func:`bpeforge.mix`: ``--alpha`` (default 1) or the
    ``--weight NAME=W`` options, checked."""
    if args.mix_alpha is not None and args.mix_weights:
        raise CLIError("--alpha and --weight both set the weights: give one of them", EXIT_USAGE)
    if not args.mix_weights:
        text = args.mix_alpha if args.mix_alpha is not None else "1"
        try:
            return checked_alpha(float(text)), None
        except (TypeError, ValueError) as e:
            detail = one_line(e) if not isinstance(e, ValueError) or "alpha" in str(e) else f"not a number: {text!r}"
            raise CLIError(f"--alpha: {detail}", EXIT_USAGE) from None
    weights: Dict[str, Any] = {}
    for text in args.mix_weights:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise CLIError(f"--weight {text!r}: expected NAME=W (e.g. --weight en=2)", EXIT_USAGE)
        if name not in names:
            raise CLIError(f"--weight {text}: no --source is named {name!r} (the sources: {', '.join(names)})", EXIT_USAGE)
        if name in weights:
            raise CLIError(f"--weight {name}: given twice", EXIT_USAGE)
        try:
            w: Any = int(value.replace("_", "")) if value.strip().replace("_", "").isdecimal() else float(value)
        except ValueError:
            raise CLIError(f"--weight {text}: the weight is not a number", EXIT_USAGE) from None
        if not (w > 0 and math.isfinite(w)):
            raise CLIError(f"--weight {text}: a weight must be a positive number", EXIT_USAGE)
        weights[name] = w
    missing = [n for n in names if n not in weights]
    if missing:
        raise CLIError(f"--weight: no weight for the source{'s' if len(missing) > 1 else ''} {', '.join(missing)} (give every source one)", EXIT_USAGE)
    return None, weights


def find_source(args: argparse.Namespace, source: MixedSource, flag: str = "--source") -> None:
    """Finds the files of one source (as train finds its inputs), before anything is read; a
    source whose one path is a span counts file (``bpeforge count``'s, told by its metadata) is
    loaded instead, to be mixed as it is. Errors name the source as ``flag NAME``."""
    if len(source.paths) == 1 and source.paths[0].endswith(".parquet") and Path(source.paths[0]).is_file():
        try:
            source.counts = SpanCounts.load(source.paths[0])
            return
        except ValueError as e:
            if NOT_COUNTS not in str(e):  # span counts, damaged
                raise CLIError(f"{flag} {source.name}: {one_line(e)}") from None
        except OSError as e:
            raise CLIError(f"{flag} {source.name}: {one_line(e)}") from None
    own = copy.copy(args)
    own.inputs = source.paths
    try:
        source.found = find_inputs(own)
    except CLIError as e:
        raise CLIError(f"{flag} {source.name}: {e}", e.code) from None


def count_source(args: argparse.Namespace, source: MixedSource, pattern: str, shown: List[ConsoleProgress], flag: str = "--source") -> None:
    """Reads and counts one source (train's input options, its own hold-out), filling
    ``source``; its progress display is appended to ``shown``. A problem is a
    :class:`CLIError` naming the source (as ``flag NAME``)."""
    if source.found is None:  # a span counts file, loaded already
        return
    own = copy.copy(args)
    own.inputs = source.paths
    progress, show = start_progress(own, source.found, f"Counting {flag.lstrip('-')} {source.name!r}:")
    shown.append(progress)
    source.corpus = open_corpus(own, source.found, progress, show)
    try:
        counted = count_corpus(args, source.corpus, pattern, progress)
    except InputError as e:
        raise CLIError(f"{flag} {source.name}: {e}") from None
    except RuntimeError as e:
        if str(e).startswith(SPLIT_FAILED):
            raise CLIError(f"{flag} {source.name}: {one_line(e)}; simplify --pattern") from None
        raise
    if not source.corpus.documents:
        held = f" (all {len(source.corpus.heldout):,} were held out: use a larger --holdout, or --holdout 0)" if source.corpus.heldout else ""
        raise CLIError(f"{flag} {source.name}: no documents to train on{held or ': its inputs hold no text'}")
    source.counts, source.bytes_read = counted.counts, counted.bytes


def count_and_mix(
    args: argparse.Namespace,
    sources: List[MixedSource],
    alpha: Optional[float],
    weights: Optional[Dict[str, Any]],
    pattern: str,
    shown: List[ConsoleProgress],
) -> SpanCounts:
    """Counts every source (see :func:`count_source`) and mixes their counts; a problem is a
    :class:`CLIError`."""
    for source in sources:
        count_source(args, source, pattern, shown)
    try:
        return mix({s.name: s.counts for s in sources}, alpha=alpha, weights=weights)  # type: ignore[misc]
    except (ValueError, OverflowError) as e:
        raise CLIError(one_line(e)) from None


def loaded_pattern(sources: List[MixedSource]) -> Optional[str]:
    """The pattern of the first source given as a span counts file (what the mix must be
    trained with when ``--pattern`` is not given), or None."""
    loaded = [s.counts for s in sources if s.counts is not None]
    return loaded[0].pattern if loaded else None


def run_mixed(args: argparse.Namespace) -> int:
    """Runs ``bpeforge train --source ...``: checks the options, counts each source, mixes,
    trains, saves and prints the report; returns the exit code. Raises :class:`CLIError`."""
    t_start = time.perf_counter()
    sources = parse_sources(args)
    alpha, weights = parse_weights(args, [s.name for s in sources])
    training = set_up_training(args)  # every option checked before anything is read
    folder, tiktoken_file = output_paths(args.output)
    check_output(folder, tiktoken_file, args.force)
    for source in sources:  # every path checked before any is read
        find_source(args, source)
    if args.pattern is None and loaded_pattern(sources) is not None:  # span counts train with the pattern they were made with
        args.pattern = loaded_pattern(sources)
        training = set_up_training(args)
    shown: List[ConsoleProgress] = []  # the progress displays, the last one showing
    with ctrl_c_ends_the_process(args, lambda: bool(shown) and bool(shown[-1].bars)):
        mixed = count_and_mix(args, sources, alpha, weights, training.pattern, shown)
        t_count = time.perf_counter() - t_start
        progress, _ = training_progress(args)
        shown.append(progress)
        trained = train_on_counts(set_up_training_on(args, mixed), mixed, progress)
        hf_json, no_tiktoken = huggingface_outputs(trained)
        if no_tiktoken is not None:
            return save_huggingface_only(args, trained, hf_json, no_tiktoken)
        tokenizer, t_build = build_tokenizer(trained)

    def report(t_save: float) -> int:
        warnings: List[str] = stopped_early_warnings(trained, tokenizer)
        t_eval = time.perf_counter()
        compressions = heldout_compressions(sources, trained, args.holdout, warnings)
        t_eval = time.perf_counter() - t_eval
        for w in warnings:
            stderr_line(f"{PROG}: warning: {w}")
        stats = dict(trained.stats, count_seconds=t_count, bytes=sum(s.bytes_read for s in sources))
        rows = mix_rows(sources, mixed, alpha, compressions)
        rows += vocabulary_rows(describe_pattern(args.pattern, tokenizer.pattern), len(trained.merges()), len(trained.ranks), tokenizer)
        rows += time_rows(stats, stats["bytes"], len(trained.merges()), Timings(t_build, t_eval, t_save, time.perf_counter() - t_start))
        rows += merge_rows(trained.merges(), trained.ranks, 5)
        rows.append(("saved", saved_as(folder, tiktoken_file)))
        sys.stdout.write(aligned(rows))
        sys.stdout.flush()
        return 0

    return save_then_report(args, tokenizer, hf_json, report)


def heldout_compressions(sources: List[MixedSource], trained: TrainedRanks, holdout: int, warnings: List[str]) -> Dict[str, Compression]:
    """Each source's compression on its held-out documents by the trained ranks (none for span
    counts given as a source: no text)."""
    return {
        s.name: measure_compression(trained.ranks, trained.pattern, s.corpus, holdout, warnings)
        if s.corpus is not None
        else Compression("texts", "", 0, 0, 0, failure="span counts: no text")
        for s in sources
    }


def source_rows(sources: List[MixedSource]) -> List[Row]:
    """A report row per source: its paths and documents (and held-out ones), or its span counts."""
    rows: List[Row] = []
    for s in sources:
        corpus = s.corpus
        held = f" (+ {len(corpus.heldout):,} held out)" if corpus is not None and corpus.heldout else ""
        if s.found is None:
            rows.append((f"source {s.name}", f"{s.paths[0]}: span counts, {len(s.counts or ()):,} distinct spans"))
        else:
            rows.append((f"source {s.name}", f"{', '.join(s.paths)}: {s.found.label}, {corpus.documents if corpus else 0:,} documents{held}"))
    return rows


def mix_rows(sources: List[MixedSource], mixed: SpanCounts, alpha: Optional[float], compressions: Dict[str, Compression]) -> List[Row]:
    """The report's rows on the sources: what each is, and a table of each one's bytes, share
    before and after weighting, weight, and bytes per token on its held-out documents."""
    record = MixRecord.of(mixed)
    assert record is not None  # mix() always records
    how = f"alpha {alpha:g}: source i weighted to p_i ∝ n_i^{alpha:g} of the bytes" if alpha is not None else "the weights given"
    rows: List[Row] = [("sources", f"{len(sources)}, mixed with {how} (integer weights, exact; docs/mixing.md)")]
    rows += source_rows(sources)
    before, after = record.shares_before(), record.shares_after()
    table = [("source", "bytes", "share", "weight", "weighted share", "bytes/token (held out)")]
    for s in sources:
        n, w = record.sources[s.name]
        table.append((s.name, f"{n / 1e6:,.1f} MB", f"{100 * before[s.name]:.1f}%", f"{w:,}", f"{100 * after[s.name]:.1f}%", compression_cell(compressions[s.name])))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in table]
    rows.append(("balance", lines[0]))
    rows.extend(("", line) for line in lines[1:])
    scale = float(record.scale)
    if scale != 1.0:
        rows.append(("", f"(merge counts below are weighted: {scale:,.1f} per occurrence of the mixed corpus at the plain sum's size)"))
    return rows


def compression_cell(c: Compression) -> str:
    """A source's bytes per token for the balance table: on held-out documents, or on training
    documents (said), or why it was not measured."""
    if c.failure:
        return f"n/a ({c.failure})"
    if not c.tokens:
        return "n/a"
    where = "" if c.label == "held-out documents" else f" (on {c.label})"
    return f"{c.bytes / c.tokens:.2f} on {c.bytes / 1e3:,.0f} kB{where}"
