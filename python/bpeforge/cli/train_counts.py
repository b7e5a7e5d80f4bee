"""``bpeforge train --from-counts PATH`` and ``bpeforge train --ray``: training on span counts,
loaded from a file or counted on a Ray cluster, with compression measured on ``--eval-text``
(counts hold no text to measure on). Reading, options and outputs are ``bpeforge train``'s
(:mod:`.train`)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import List, Optional, Tuple

from .._core import SpanCounts
from .._patterns import resolve_pattern
from .arguments import EXIT_USAGE, PROG, CLIError, one_line, stderr_line
from .outputs import check_output, output_paths
from .ray import check_ray_options, count_on_ray, on_ray
from .report import Timings, counts_rows, format_report, measure_on_file
from .signals import ctrl_c_ends_the_process
from .train import (
    HOLDOUT_EVERY,
    HOLDOUT_MAX_BYTES,
    build_tokenizer,
    huggingface_outputs,
    save_huggingface_only,
    describe_pattern,
    find_inputs,
    save_then_report,
    set_up_training,
    set_up_training_on,
    start_progress,
    training_progress,
    stopped_early_warnings,
    train_on_counts,
)


def run_train_from_counts(args: argparse.Namespace) -> int:
    """``bpeforge train --from-counts PATH``: trains on saved span counts (a file, or a folder
    loaded as their sum), with the counts' pattern unless ``--pattern`` names it, and measures
    compression on ``--eval-text FILE`` if given (counts hold no text to measure on). With
    ``--ray``/``--ray-address``, the counts are those of the INPUTs, counted on Ray."""
    check_counts_options(args)
    t_start = time.perf_counter()
    counting_pattern = args.pattern
    if on_ray(args):
        early = set_up_training(args)  # its options checked before the cluster is started
        counting_pattern = early.pattern  # the recipe's (the base's, when extending)
    folder, tiktoken_file = output_paths(args.output)
    check_output(folder, tiktoken_file, args.force)
    progress, show = training_progress(args)
    t_load = time.perf_counter()
    superword_counts = None
    if on_ray(args):
        counts, source, made = count_inputs_on_ray(args, counting_pattern)
    else:
        if show:
            progress.write(f"Loading span counts from {args.from_counts}")
        try:
            counts = SpanCounts.load(args.from_counts)
            superword_counts = None if args.superword_counts is None else SpanCounts.load(args.superword_counts)
        except (OSError, ValueError) as e:
            raise CLIError(one_line(e)) from None
        source, made = args.from_counts, "loaded"
    t_load = time.perf_counter() - t_load
    training = set_up_training_on(args, counts)
    with ctrl_c_ends_the_process(args, lambda: progress.bars):
        trained = train_on_counts(training, counts, progress, args.from_counts, superword_counts)
        hf_json, no_tiktoken = huggingface_outputs(trained)
        if no_tiktoken is not None:
            return save_huggingface_only(args, trained, hf_json, no_tiktoken)
        tokenizer, t_build = build_tokenizer(trained)

    def report(t_save: float) -> int:
        warnings: List[str] = stopped_early_warnings(trained, tokenizer)
        t_eval = time.perf_counter()
        compression = measure_on_file(trained.ranks, trained.pattern, args.eval_text, HOLDOUT_MAX_BYTES)
        t_eval = time.perf_counter() - t_eval
        for w in warnings:
            stderr_line(f"{PROG}: warning: {w}")
        stats = dict(trained.stats, load_seconds=t_load)
        sys.stdout.write(
            format_report(
                trained_on=counts_rows(source, made, counts, stats),
                nbytes=0,
                stats=stats,
                merges=trained.merges(),
                ranks=trained.ranks,
                tokenizer=tokenizer,
                pattern_label=describe_pattern(args.pattern, tokenizer.pattern),
                compression=compression,
                timings=Timings(t_build, t_eval, t_save, time.perf_counter() - t_start),
                folder=folder,
                tiktoken_file=tiktoken_file,
            )
        )
        sys.stdout.flush()
        return 0

    return save_then_report(args, tokenizer, hf_json, report)


def check_counts_options(args: argparse.Namespace) -> None:
    """Refuses, as a usage error naming the flags, what does not go with training on counts:
    loaded (``--from-counts``: no INPUT, nothing about reading text) or counted on Ray (every
    document of the INPUTs: no hold-out, no budget)."""
    if args.from_counts is None and not on_ray(args):
        raise CLIError("--eval-text goes with --from-counts or --ray (training on INPUTs measures compression on held-out documents)", EXIT_USAGE)
    if on_ray(args):
        refused = [flag for flag, given in [("--from-counts", args.from_counts is not None), ("--max-chars", args.max_chars),
                                            ("--superword-transition", args.superword_transition is not None),
                                            ("--holdout", args.holdout != HOLDOUT_EVERY)] if given]
        if refused:
            raise CLIError(f"--ray counts every document of the INPUTs: {', '.join(refused)} cannot go with it", EXIT_USAGE)
        check_ray_options(args)
        return
    refused = [flag for flag, given in [("INPUT", args.inputs), ("--doc-cap", args.doc_cap), ("--max-chars", args.max_chars),
                                        ("--holdout", args.holdout != HOLDOUT_EVERY)] if given]
    if refused:
        raise CLIError(f"--from-counts trains on counts, not on text: {', '.join(refused)} cannot go with it", EXIT_USAGE)


def count_inputs_on_ray(args: argparse.Namespace, pattern_asked: Optional[str]) -> Tuple[SpanCounts, str, str]:
    """The counts of the INPUTs, counted on Ray with ``pattern_asked`` (a preset or regex, None
    for the default), what they are and how they were made (for the report); progress of their
    own (the merge loop's is another)."""
    found = find_inputs(args, check_columns=False)
    progress, show = start_progress(args, found, "Counting on Ray")
    try:
        pattern = resolve_pattern(pattern_asked)
    except ValueError as e:
        raise CLIError(f"--pattern: {one_line(e)}", EXIT_USAGE) from None
    counted = count_on_ray(args, found.sources, found.separator, pattern, progress)
    note = counted.bad_lines_note()
    if note is not None and not args.quiet:
        stderr_line(f"{PROG}: warning: skipped {note}")
    if not counted.figures.texts:
        raise CLIError("no documents to train on: the inputs hold no text")
    f = counted.figures
    label = f"{found.label}: {f.texts:,} documents, {f.bytes:,} bytes ({f.bytes / 1e6:,.1f} MB)"
    return counted.counts, label, f"counted on {counted.where}, {counted.cluster},"
