"""``bpeforge sweep``: trains once at the largest of several vocabulary sizes, measures every
size on held-out text (:mod:`bpeforge._sweep`), and writes the table, the tokenizers and a plot.

The inputs are read and trained on exactly as ``bpeforge train`` reads them (its options and
functions, :mod:`bpeforge.cli.train`). The output folder is written under a temporary name
beside it and renamed at the end, so it appears whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Union

from .. import _files as files
from .._core import SpanCounts
from .._errors import EvalError, InputError
from .._eval import TextFile
from .._plot import INSTALL_HINT
from .._progress import ConsoleProgress, is_terminal
from .._sweep import CSV_FILE, FORMAT, JSON_FILE, PLOT_FILE, Sweep, SweepText, check_vocab_sizes, sizes_reached, stopped_note
from .._superword_sweep import PLAIN, TransitionSweep, check_transitions, sweep_superword_transitions
from .._training import TrainedRanks
from .arguments import EXIT_USAGE, PROG, CLIError, one_line, stderr_line
from .count import count_corpus
from .outputs import check_free, check_parent, holds_only_a_saved_tokenizer
from .mix import add_source_options, count_and_mix, find_source, heldout_texts, loaded_pattern, parse_sources, parse_weights
from .signals import ctrl_c_ends_the_process, ctrl_c_held_back
from .train import (
    HOLDOUT_EVERY,
    Inputs,
    add_reading_and_training_arguments,
    check_trained_on_something,
    find_inputs,
    open_corpus,
    parse_special_tokens,
    set_up_training,
    set_up_training_on,
    start_progress,
    train_on,
    train_on_counts,
)

EXAMPLE_SIZES = "4096,8192,16384,32768,65536"

SWEEP_EPILOG = f"""\
BPE merges are greedy: the first k merges of a training to the largest size are the training
to k merges. So one training gives the tokenizer of every smaller size, and the sweep costs one
training and an encoding of the evaluation text per size.

evaluation text:
  By default every 100th document is held out of training (within 1 MB), as train does, and
  each size is measured on those (the line "held-out"). --eval-text FILE... measures on those
  files instead (one line each), and trains on every document unless --holdout N is given too.
  With --from-counts (span counts hold no text), --eval-text is required. With --source
  NAME=PATH (mixed as train mixes them, --alpha or --weight), each source's held-out
  documents are a line of their own.

output (-o DIR):
  DIR/sweep.csv, DIR/sweep.json   one row per (text, size): bytes, tokens, bytes per token,
                                  tokens per character, tokens saved against the size before
  DIR/sweep.png                   bytes per token against vocabulary size (needs matplotlib:
                                  {INSTALL_HINT}); without it, the table only
  DIR/N/, DIR/N.tiktoken          the tokenizer of each size N (bpeforge.Tokenizer.load reads
                                  DIR/N; its ranks are the first ranks of the largest)
  An empty or missing DIR is written; one that holds anything else is refused, and --force
  replaces only a folder an earlier sweep wrote.

examples:
  bpeforge sweep --vocab-sizes {EXAMPLE_SIZES} -o out/sweep data/*.parquet
  bpeforge sweep --vocab-sizes 1024,2048,4096 -o out/sweep corpus.txt --eval-text dev.txt other.txt
  bpeforge sweep --vocab-sizes {EXAMPLE_SIZES} -o out/sweep --from-counts counts/ --eval-text dev.txt
  bpeforge sweep --vocab-sizes 32768 --superword-transitions 16384,24576,28672 -o out/t data/*.txt
"""


def parse_vocab_sizes(text: str) -> List[int]:
    """The sizes of ``--vocab-sizes`` (comma-separated integers, ``_`` allowed between digits),
    in the order given (their rules are checked once the special tokens are known).

    >>> parse_vocab_sizes("4096, 8_192,16384")
    [4096, 8192, 16384]
    """
    sizes = []
    for part in text.split(","):
        digits = part.strip().replace("_", "")
        if not digits:
            raise argparse.ArgumentTypeError(f"an empty size in {text!r} (a stray comma?)")
        if not digits.isdecimal() or not digits.isascii():
            raise argparse.ArgumentTypeError(f"{part.strip()!r} is not a vocabulary size (a whole number such as 8192)")
        sizes.append(int(digits))
    return sizes


def add_sweep_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``sweep`` subcommand to ``subparsers`` (of the ``bpeforge`` command); its
    ``run`` default is :func:`run_sweep`."""
    p = subparsers.add_parser(
        "sweep",
        help="train once, measure compression at several vocabulary sizes, plot it",
        description="Train once at the largest vocabulary size and measure bytes per token at every size asked "
        "for, to choose the size from the curve.",
        epilog=SWEEP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="files, folders or globs, as for train (default: this Python's standard library)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder: the table, the plot and a tokenizer per size")
    p.add_argument(
        "--vocab-sizes", required=True, type=parse_vocab_sizes, metavar="N,N,...",
        help=f"vocabulary sizes (special tokens included), increasing, e.g. {EXAMPLE_SIZES}",
    )
    p.add_argument(
        "--eval-text", dest="eval_texts", nargs="+", action="extend", metavar="FILE",
        help="UTF-8 text files to measure on instead of held-out documents, one line of the plot each "
        "(they take every argument up to the next option: give the inputs first, or end them with --)",
    )
    p.add_argument(
        "--from-counts", metavar="PATH",
        help="train on span counts (a file or folder `bpeforge count` wrote) instead of INPUTs; needs --eval-text",
    )
    p.add_argument(
        "--superword-transitions", type=parse_vocab_sizes, metavar="T,T,...",
        help="superword tokens at one --vocab-sizes size: train plain BPE and one superword tokenizer per transition T "
        "(docs/superword.md), measure each, plot bytes per token against T",
    )
    add_reading_and_training_arguments(p)
    add_source_options(p)
    # Held out unless --eval-text gives the text to measure on (see run_sweep).
    p.set_defaults(run=run_sweep, holdout=None)
    return p


def check_sizes(args: argparse.Namespace) -> List[int]:
    """The sizes of ``--vocab-sizes``, checked against the special tokens; a usage error else."""
    n_special = len(parse_special_tokens(args.special_tokens))
    try:
        return check_vocab_sizes(args.vocab_sizes, n_special)
    except ValueError as e:
        hint = " (--special-tokens none leaves room for 256)" if n_special and "too small" in str(e) else ""
        raise CLIError(f"--vocab-sizes: {e}{hint}", EXIT_USAGE) from None


def holds_only_a_sweep(folder: Path) -> bool:
    """Whether ``folder`` holds what a sweep writes and nothing else: its ``sweep.json`` (which
    must be there, and say it is a sweep's), table and plot, and tokenizers ``N/`` with their
    ``N.tiktoken``. Anything else (a model's weights, a user's files) is never replaced."""
    try:
        entries = list(folder.iterdir())
        config = json.loads((folder / JSON_FILE).read_bytes())
    except (OSError, ValueError):
        return False
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        return False
    for entry in entries:
        name = entry.name
        if files.is_leftover(name) and entry.is_file() and not entry.is_symlink():
            continue
        tokenizer = name.isdecimal() or name == PLAIN  # a size's, a transition's, or plain BPE's
        stem = name[: -len(".tiktoken")] if name.endswith(".tiktoken") else None
        if name in (CSV_FILE, JSON_FILE, PLOT_FILE) or (stem is not None and (stem == PLAIN or stem.isdecimal())):
            if entry.is_file() and not entry.is_symlink():
                continue
        elif tokenizer and entry.is_dir() and not entry.is_symlink() and holds_only_a_saved_tokenizer(entry):
            continue
        return False
    return True


def check_sweep_output(folder: Path, force: bool) -> None:
    """Refuses an output folder that holds something, unless ``force`` and it is an earlier
    sweep's (the rule of every command: :func:`~bpeforge.cli.outputs.check_free`); and one
    whose parent cannot be written."""
    check_parent(folder)
    check_free(folder, force, folder=True, ours=holds_only_a_sweep, what="an earlier sweep's outputs")


def save_sweep(sweep: Union[Sweep, TransitionSweep], folder: Path, force: bool) -> bool:
    """Writes the sweep as the folder ``folder``, switched whole in one step
    (:func:`bpeforge._files.new_folder`); returns whether the plot was drawn."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        # Checked again just before the switch: the output may have been filled while we trained.
        with files.new_folder(folder, guard=ctrl_c_held_back, before_switch=lambda: check_sweep_output(folder, force)) as tmp:
            drawn = sweep.save(tmp) is not None
    except OSError as e:
        raise CLIError(f"cannot write the output {folder}: {e.strerror or e}") from None
    return drawn


def corpus_title(found: Inputs, total_bytes: int) -> str:
    """The corpus as the plot's title names it: its file (or the first and how many more), and
    the megabytes read."""
    if found.stdlib_root is not None:
        name = f"the Python {sys.version.split()[0]} standard library"
    elif len(found.sources) == 1:
        name = Path(str(found.sources[0].path)).name
    else:
        name = f"{Path(str(found.sources[0].path)).name} and {len(found.sources) - 1:,} more files"
    return f"{name} ({total_bytes / 1e6:,.1f} MB)"


def evaluation_texts(args: argparse.Namespace) -> Dict[str, SweepText]:
    """The ``--eval-text`` files, each read through once now so that a bad one is found before
    training."""
    texts: Dict[str, SweepText] = {}
    for path in args.eval_texts or []:
        if path == "-":
            raise CLIError("--eval-text -: give a file (standard input may be an input of the training)", EXIT_USAGE)
        text = TextFile(path)
        try:
            text.check()
        except EvalError as e:
            raise CLIError(f"--eval-text {e}") from None
        texts[path] = text
    return texts


def sizes_kept(sizes: List[int], n_vocab: int, stop_reason: str, notes: List[str]) -> List[int]:
    """The sizes a training that stopped at ``n_vocab`` tokens reached; a note in ``notes`` for
    those it did not reach, and a :class:`CLIError` if it reached none."""
    kept, beyond = sizes_reached(sizes, n_vocab)
    if beyond:
        note = stopped_note(n_vocab, stop_reason, beyond)
        if not kept:
            raise CLIError(note)
        notes.append(note)
    return kept


def measure_sweep(
    args: argparse.Namespace, trained: TrainedRanks, sizes: List[int], texts: Dict[str, SweepText], title: str, notes: List[str]
) -> Sweep:
    """Every size of ``trained`` measured on ``texts``; a failure is a :class:`CLIError`."""
    try:
        return Sweep.from_training(trained, sizes, texts, corpus=title, notes=notes, num_threads=args.threads or 8)
    except (EvalError, ValueError) as e:
        raise CLIError(one_line(e)) from None
    except RuntimeError as e:
        raise CLIError(f"measuring compression failed: {one_line(e)}") from None


def run_sweep(args: argparse.Namespace) -> int:
    """Runs ``bpeforge sweep`` with parsed ``args``: checks the options, trains once at the
    largest size, measures every size, writes the outputs and prints the table; returns the exit
    code. Raises :class:`CLIError`."""
    if args.superword_transitions is not None:
        return run_transition_sweep(args)
    if args.from_counts is not None and not args.mix_sources:
        return run_sweep_from_counts(args)
    if args.mix_sources or args.mix_alpha is not None or args.mix_weights:
        return run_sweep_on_sources(args)
    t_start = time.perf_counter()
    sizes = check_sizes(args)
    eval_texts = evaluation_texts(args)
    if args.holdout is None:
        args.holdout = 0 if eval_texts else HOLDOUT_EVERY
    args.vocab_size = sizes[-1]
    training = set_up_training(args)
    folder = sweep_folder(args)
    found = find_inputs(args)
    progress, show = start_progress(args, found)
    corpus = open_corpus(args, found, progress, show)

    with ctrl_c_ends_the_process(args, lambda: progress.bars):
        trained = train_on(corpus, training, progress, args.verbose and show)
        check_trained_on_something(corpus, args.holdout)
        t_trained = time.perf_counter()
        notes: List[str] = []
        kept = sizes_kept(sizes, trained.reached, trained.stop_reason, notes)
        texts: Dict[str, SweepText] = {}
        if corpus.heldout:
            texts["held-out"] = corpus.heldout
        elif not eval_texts:
            texts["training text"] = corpus.sample
            notes.append(
                f"no document was held out (--holdout {args.holdout}, {corpus.documents:,} documents): measured on "
                f"the first {corpus.sample_bytes:,} bytes of the training text, which favours the larger sizes"
            )
        texts.update(eval_texts)
        sweep = measure_sweep(args, trained, kept, texts, corpus_title(found, corpus.total_bytes), notes)
    return finish_sweep(args, sweep, folder, notes, trained.reached, t_start, t_trained)


def run_transition_sweep(args: argparse.Namespace) -> int:
    """``bpeforge sweep INPUT... --vocab-sizes V --superword-transitions T,...``: counts the
    inputs with both patterns (reading them twice), trains plain BPE and one superword tokenizer
    per transition from those counts, measures each on the held-out documents (or
    ``--eval-text``), and writes the table, the tokenizers and the plot."""
    t_start = time.perf_counter()
    refused = [flag for flag, given in [("--from-counts", args.from_counts), ("--source", args.mix_sources),
                                        ("--superword-transition", args.superword_transition)] if given]
    if refused:
        raise CLIError(f"--superword-transitions counts INPUTs itself: {', '.join(refused)} cannot go with it", EXIT_USAGE)
    sizes = check_sizes(args)
    if len(sizes) != 1:
        raise CLIError("--superword-transitions measures one vocabulary size: give one with --vocab-sizes", EXIT_USAGE)
    eval_texts = evaluation_texts(args)
    if args.holdout is None:
        args.holdout = 0 if eval_texts else HOLDOUT_EVERY
    args.vocab_size = sizes[0]
    args.superword_transition = args.superword_transitions[0]  # the recipe's checks, for the first
    recipe = set_up_training(args).recipe
    # (a sweep has no parity: its fields are the recipe's only)
    options = {k: v for k, v in recipe.as_dict().items() if k not in ("vocab_size", "superword_transition", "doc_cap", "parity", "parity_window", "parity_alpha", "global_merges")}
    options["max_token_words"] = args.max_token_words  # as given: the superword stage's default is its own
    try:
        transitions = check_transitions(args.superword_transitions, sizes[0], len(recipe.special_tokens) + recipe.reserve_special_tokens)
    except ValueError as e:
        raise CLIError(f"--superword-transitions: {e}", EXIT_USAGE) from None
    folder = sweep_folder(args)
    found = find_inputs(args)
    if any(str(source.path) == "-" for source in found.sources):
        raise CLIError("--superword-transitions reads its inputs twice (once per pattern): standard input cannot be one", EXIT_USAGE)
    progress, show = start_progress(args, found, "Counting")
    with ctrl_c_ends_the_process(args, lambda: progress.bars):
        counted = {}
        for name, pattern in (("plain", recipe.pattern), ("superword", recipe.encoding_pattern)):
            corpus = open_corpus(args, found, progress, show)
            try:
                counted[name] = count_corpus(args, corpus, pattern, progress).counts
            except InputError as e:
                raise CLIError(str(e)) from None
        check_trained_on_something(corpus, args.holdout)
        texts: Dict[str, SweepText] = {"held-out": corpus.heldout} if corpus.heldout else {}
        texts.update(eval_texts)
        if not texts:
            raise CLIError("nothing to measure on: no document was held out (--holdout 0); give --eval-text FILE")
        try:
            sweep = sweep_superword_transitions(
                counted["plain"], counted["superword"], sizes[0], transitions, texts, num_threads=args.threads,
                progress=progress, corpus=corpus_title(found, corpus.total_bytes), **options,
            )
        except (EvalError, ValueError) as e:
            raise CLIError(one_line(e)) from None
    t_trained = time.perf_counter()
    drawn = save_sweep(sweep, folder, args.force)
    if args.quiet:
        return 0
    if not drawn:
        stderr_line(f"{PROG}: note: no plot ({PLOT_FILE}): matplotlib is not installed; {INSTALL_HINT} gives it")
    print(sweep.table())
    written = f"{CSV_FILE}, {JSON_FILE}" + (f", {PLOT_FILE}" if drawn else "")
    print(f"\nsaved in {folder}/: {written}; tokenizers {PLAIN}/ and {', '.join(f'{t}/' for t in transitions)} (and .tiktoken)")
    print(f"counted twice and trained {len(transitions) + 1} tokenizers in {t_trained - t_start:.1f} s")
    return 0


def sweep_folder(args: argparse.Namespace) -> Path:
    """The ``-o`` folder, checked (a usage error for a name that is no folder name)."""
    folder = Path(args.output.rstrip("/") or args.output)
    if not folder.name or folder.name in (".", ".."):
        raise CLIError(f"-o {args.output!r}: give a folder name, e.g. -o out/sweep", EXIT_USAGE)
    check_sweep_output(folder, args.force)
    return folder


def run_sweep_from_counts(args: argparse.Namespace) -> int:
    """``bpeforge sweep --from-counts PATH --eval-text FILE...``: trains once on saved span
    counts (with their pattern unless ``--pattern`` names it) and measures every size on the
    ``--eval-text`` files."""
    t_start = time.perf_counter()
    refused = [flag for flag, given in [("INPUT", args.inputs), ("--doc-cap", args.doc_cap), ("--max-chars", args.max_chars),
                                        ("--holdout", args.holdout is not None)] if given]
    if refused:
        raise CLIError(f"--from-counts trains on counts, not on text: {', '.join(refused)} cannot go with it", EXIT_USAGE)
    if not args.eval_texts:
        raise CLIError("--from-counts needs --eval-text FILE...: span counts hold no text to measure on", EXIT_USAGE)
    sizes = check_sizes(args)
    eval_texts = evaluation_texts(args)
    folder = sweep_folder(args)
    try:
        counts = SpanCounts.load(args.from_counts)
    except (OSError, ValueError) as e:
        raise CLIError(one_line(e)) from None
    args.vocab_size = sizes[-1]
    training = set_up_training_on(args, counts)
    show = not args.quiet and (args.verbose or is_terminal(sys.stderr))
    progress = ConsoleProgress(file=sys.stderr, bars=None if show else False, log=show)
    with ctrl_c_ends_the_process(args, lambda: progress.bars):
        trained = train_on_counts(training, counts, progress, args.from_counts)
        t_trained = time.perf_counter()
        notes: List[str] = []
        kept = sizes_kept(sizes, trained.reached, trained.stop_reason, notes)
        title = f"span counts {Path(args.from_counts).name} ({counts.total_bytes / 1e6:,.1f} MB)"
        sweep = measure_sweep(args, trained, kept, dict(eval_texts), title, notes)
    return finish_sweep(args, sweep, folder, notes, trained.reached, t_start, t_trained)


def run_sweep_on_sources(args: argparse.Namespace) -> int:
    """``bpeforge sweep --source NAME=PATH ... [--alpha A | --weight NAME=W ...]``: counts each
    source with its own hold-out, mixes them as ``train --source`` does, trains once, and
    measures every size on each source's held-out documents (a line each; and on
    ``--eval-text`` files, if given)."""
    t_start = time.perf_counter()
    sizes = check_sizes(args)
    eval_texts = evaluation_texts(args)
    if args.holdout is None:
        args.holdout = HOLDOUT_EVERY
    sources = parse_sources(args)
    alpha, weights = parse_weights(args, [s.name for s in sources])
    args.vocab_size = sizes[-1]
    training = set_up_training(args)  # every option checked before anything is read
    folder = sweep_folder(args)
    for source in sources:  # every path checked before any is read
        find_source(args, source)
    if args.pattern is None and loaded_pattern(sources) is not None:
        args.pattern = loaded_pattern(sources)
        training = set_up_training(args)
    shown: List[ConsoleProgress] = []
    with ctrl_c_ends_the_process(args, lambda: bool(shown) and bool(shown[-1].bars)):
        mixed = count_and_mix(args, sources, alpha, weights, training.pattern, shown)
        show = not args.quiet and (args.verbose or is_terminal(sys.stderr))
        progress = ConsoleProgress(file=sys.stderr, bars=None if show else False, log=show)
        shown.append(progress)
        trained = train_on_counts(set_up_training_on(args, mixed), mixed, progress)
        t_trained = time.perf_counter()
        notes: List[str] = []
        kept = sizes_kept(sizes, trained.reached, trained.stop_reason, notes)
        texts: Dict[str, SweepText] = {name: docs for name, docs in heldout_texts(sources).items() if docs}
        texts.update(eval_texts)
        if not texts:
            raise CLIError("nothing to measure on: no source has held-out documents (--holdout 0, or span counts files); give --eval-text FILE")
        title = f"a mix of {', '.join(s.name for s in sources)} ({sum(s.counts.total_bytes for s in sources if s.counts is not None) / 1e6:,.1f} MB)"
        sweep = measure_sweep(args, trained, kept, texts, title, notes)
    return finish_sweep(args, sweep, folder, notes, trained.reached, t_start, t_trained)


def finish_sweep(args: argparse.Namespace, sweep: Sweep, folder: Path, notes: List[str], n_vocab: int, t_start: float, t_trained: float) -> int:
    """Saves the sweep in ``folder`` and prints its table (unless ``--quiet``); returns the
    exit code."""
    t_measured = time.perf_counter()
    drawn = save_sweep(sweep, folder, args.force)
    if args.quiet:
        return 0
    for note in notes:
        stderr_line(f"{PROG}: warning: {note}")
    if not drawn:
        stderr_line(f"{PROG}: note: no plot ({PLOT_FILE}): matplotlib is not installed; {INSTALL_HINT} gives it")
    try:
        print(sweep.table())
        written = f"{CSV_FILE}, {JSON_FILE}" + (f", {PLOT_FILE}" if drawn else "")
        sizes_written = ", ".join(f"{s}/" for s in sweep.vocab_sizes)
        print(f"\nsaved in {folder}/: {written}; tokenizers {sizes_written} (and N.tiktoken)")
        print(
            f"trained once to {n_vocab:,} tokens in {t_trained - t_start:.1f} s; measured {len(sweep.vocab_sizes)} sizes "
            f"in {t_measured - t_trained:.1f} s; saved{' and plotted' if drawn else ''} in {time.perf_counter() - t_measured:.1f} s"
        )
    except KeyboardInterrupt:  # the sweep is saved: Ctrl-C skips the rest, as after_saving does
        stderr_line(f"{PROG}: interrupted: the rest of the table is skipped; the sweep is saved in {folder}/")
    return 0

