"""``bpeforge count``: counts the spans of every document of the inputs (the inputs and their
options as ``bpeforge train`` reads them; no hold-out, no sampling) and saves the span counts
as Parquet, for ``bpeforge train --from-counts`` or ``SpanCounts.load``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, List, Optional, Tuple

from .. import _files as files
from .._core import SpanCounts
from .._counts import Counted, count_with_figures
from .._errors import SPLIT_FAILED, InputError
from .._inputs import Corpus
from .._patterns import resolve_pattern
from .._progress import ConsoleProgress
from .arguments import CLIError, EXIT_USAGE, PROG, int_at_least, one_line, stderr_line
from .outputs import check_free, check_parent
from .report import Row, aligned, peak_memory, seconds
from .ray import RAY_HELP, add_ray_options, check_ray_options, count_on_ray, on_ray
from .signals import ctrl_c_ends_the_process
from .train import add_input_options, describe_pattern, find_inputs, open_corpus, sized_stream, start_progress

COUNT_EPILOG = """\
Counts every document of the inputs (read as `bpeforge train` reads them: see its --help) and
writes the span counts to OUTPUT, a Parquet file (span bytes and counts, sorted, with the split
pattern and a checksum in its metadata), atomically. Counts of several runs (other shards, other
machines) add up: a folder of such files loads as their sum.

examples:
  bpeforge count data/shard-0*.parquet -o counts/part-0.parquet
  bpeforge count data/shard-1*.parquet -o counts/part-1.parquet
  bpeforge train --from-counts counts/ --vocab-size 65536 -o out/tok --eval-text sample.txt
"""


def check_count_output(output: str, force: bool) -> Path:
    """The output path, checked before any input is read: a ``.parquet`` file in a folder this
    process can write, not there yet unless ``--force`` (the rule of every command,
    :func:`~bpeforge.cli.outputs.check_free`); its folder is made if need be."""
    path = Path(output)
    if path.suffix != ".parquet":
        raise CLIError(f"-o {output}: span counts are written to a .parquet file (a folder of them loads as their sum)", EXIT_USAGE)
    check_parent(path)  # before any input is read: an unwritable folder is found now, not after counting
    check_free(path, force, folder=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CLIError(f"-o {output}: cannot make its folder ({one_line(e)})") from None
    return path


def run_count(args: argparse.Namespace) -> int:
    """Runs ``bpeforge count`` with parsed ``args``; returns the exit code. Raises
    :class:`CLIError`."""
    t_start = time.perf_counter()
    try:
        pattern = resolve_pattern(args.pattern)
    except ValueError as e:
        raise CLIError(f"--pattern: {one_line(e)}", EXIT_USAGE) from None
    output = check_count_output(args.output, args.force)
    if on_ray(args):
        return count_and_save_on_ray(args, pattern, output, t_start)
    found = find_inputs(args)
    progress, show = start_progress(args, found, "Counting")
    args.holdout, args.max_chars = 0, None  # every document is counted
    corpus = open_corpus(args, found, progress, show)
    with ctrl_c_ends_the_process(args, lambda: progress.bars):
        try:
            counted = count_corpus(args, corpus, pattern, progress)
        except InputError as e:
            raise CLIError(str(e)) from None
        except RuntimeError as e:
            if str(e).startswith(SPLIT_FAILED):
                raise CLIError(f"{one_line(e)}; simplify --pattern (fewer nested repetitions, lookarounds)") from None
            raise
        if not corpus.documents:
            raise CLIError("no documents to count: the inputs hold no text")
        t_count = time.perf_counter() - t_start
        t_save = save_counts(counted.counts, output)
    if args.quiet:
        return 0
    if corpus.bad_lines.count and found.stdlib_root is None:
        stderr_line(f"{PROG}: warning: skipped {corpus.bad_lines.describe()}, e.g. {corpus.bad_lines.examples[0]}")
    skipped = f" (skipped: {corpus.bad_lines.describe()})" if corpus.bad_lines.count else ""
    sys.stdout.write(count_report(args, found.label, pattern, output, counted.counts, f"{corpus.documents:,}{skipped}", counted.bytes, (t_count, t_save)))
    sys.stdout.flush()
    return 0


def count_and_save_on_ray(args: argparse.Namespace, pattern: str, output: Path, t_start: float) -> int:
    """``bpeforge count --ray``: the inputs counted on Ray, the counts saved and reported here."""
    check_ray_options(args)
    found = find_inputs(args, check_columns=False)
    progress, _ = start_progress(args, found, "Counting on Ray")
    counted = count_on_ray(args, found.sources, found.separator, pattern, progress)
    figures = counted.figures
    if not figures.texts:
        raise CLIError("no documents to count: the inputs hold no text")
    t_count = time.perf_counter() - t_start
    t_save = save_counts(counted.counts, output)
    if args.quiet:
        return 0
    note = counted.bad_lines_note()
    if note is not None:
        stderr_line(f"{PROG}: warning: skipped {note}")
    skipped = f" (skipped: {note.split(', e.g.')[0]})" if note else ""
    documents = f"{figures.texts:,}{skipped}"
    where = f"{counted.where} ({counted.cluster})"
    sys.stdout.write(count_report(args, found.label, pattern, output, counted.counts, documents, figures.bytes, (t_count, t_save), where))
    sys.stdout.flush()
    return 0


def count_corpus(args: argparse.Namespace, corpus: Corpus, pattern: str, progress: ConsoleProgress) -> Counted:
    """The span counts of the corpus's documents, with the texts and bytes read: counted with
    ``--threads`` and cropped to ``--doc-cap`` (recorded in the counts). Raises what counting
    raises; the caller says which input it was."""
    batches, buffer_size = sized_stream(corpus)
    return count_with_figures(
        batches,
        pattern,
        num_threads=args.threads,
        buffer_size=buffer_size,
        progress=progress,
        options={"doc_cap": args.doc_cap} if args.doc_cap is not None else None,
    )


def save_counts(counts: SpanCounts, output: Path) -> float:
    """Saves the span counts to ``output`` (``-o``); returns the seconds it took."""
    t_save = time.perf_counter()
    try:
        files.remove_leftovers(output.parent, output.name)  # of an earlier count cut off
        counts.save(output)
    except OSError as e:
        raise CLIError(f"-o {output}: {one_line(e)}") from None
    return time.perf_counter() - t_save


def count_report(
    args: argparse.Namespace,
    corpus_label: str,
    pattern: str,
    output: Path,
    counts: SpanCounts,
    documents: str,
    nbytes: int,
    times: Tuple[float, float],
    counted_on: Optional[str] = None,
) -> str:
    """The report of ``bpeforge count``, names aligned: the ``documents`` counted (with those
    skipped), the ``nbytes`` read, the counts and their file; ``times``, seconds reading and
    counting, and saving. ``counted_on``: the Ray cluster that counted (its start is in the
    time, and the peak memory is only this process's), None when this process counted."""
    t_count, t_save = times
    size, peak = os.path.getsize(output), peak_memory()
    on_ray = counted_on is not None
    rows: List[Row] = [
        ("corpus", corpus_label),
        ("documents", documents),
        ("bytes", f"{nbytes:,} ({nbytes / 1e6:,.1f} MB)"),
        ("pattern", describe_pattern(args.pattern, pattern) + (f"; documents cropped to {args.doc_cap:,} characters" if args.doc_cap else "")),
        ("distinct spans", f"{len(counts):,}"),
        ("span occurrences", f"{counts.total:,}"),
    ]
    if counted_on is not None:
        rows.append(("counted on", counted_on))
    rows += [
        ("time", f"{'starting + ' if on_ray else ''}reading + counting {seconds(t_count)}, {nbytes / 1e6 / max(t_count, 1e-9):,.1f} MB/s; saving {seconds(t_save)}"),
        ("peak memory", f"{peak / 1e6:,.0f} MB (max RSS{' of this process' if on_ray else ''})" if peak is not None else "n/a"),
        ("saved", f"{output} ({size:,} bytes, {size / max(len(counts), 1):.1f} bytes per distinct span)"),
    ]
    return aligned(rows)


def add_count_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``count`` subcommand and its options to ``subparsers``; returns its parser."""
    p = subparsers.add_parser(
        "count",
        help="count the spans of text, JSONL or Parquet files into a span counts file",
        description="Count the spans of every document and save them (Parquet), to train from later or elsewhere.",
        epilog=COUNT_EPILOG + "\n" + RAY_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="files, folders or globs (default: this Python's standard library)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.parquet", help="the span counts file to write")
    add_input_options(p)
    p.add_argument("--pattern", metavar="PRESET|REGEX", help="split pattern: a preset (gpt4, cl100k_base, nanochat, gpt2, r50k_base, p50k_base, o200k_base) or a regex (default gpt4)")
    p.add_argument("--doc-cap", type=int_at_least(1, "--doc-cap"), metavar="N", help="crop each document to its first N characters (recorded in the counts)")
    p.add_argument("--threads", type=int_at_least(1, "--threads"), metavar="N", help="threads for counting (default: all cores)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    add_ray_options(p)
    verbosity = p.add_mutually_exclusive_group()
    verbosity.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    verbosity.add_argument("-v", "--verbose", action="store_true", help="show progress even when stderr is not a terminal, and list the inputs")
    p.set_defaults(run=run_count)
    return p
