"""``bpeforge train --source NAME=PATH ... --parity [base|window]``: parity-aware training, one
language per source (:mod:`bpeforge.parity`). Each source is read and counted as a mix's is
(train's input options, its own hold-out); each merge is made for the language compressed worst
so far, measured on its ``--dev`` text if given, else against its ``--ratio``, else on its
training text. The report shows each language's bytes per token without parity (plain BPE of
the sources summed, at the same size) and with it, and ``DIR/parity.png`` plots them against
the vocabulary size.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

from .._errors import OptionError
from ..parity import ParityReport, train_counts
from .._plot import INSTALL_HINT, PlotUnavailable
from .._progress import ConsoleProgress
from .arguments import EXIT_USAGE, PROG, CLIError, one_line, stderr_line
from .mix import (
    MixedSource,
    compression_cell,
    count_source,
    find_source,
    heldout_compressions,
    loaded_pattern,
    parse_sources,
    run_train_or_mix,
    source_rows,
)
from .outputs import check_output, output_paths
from .report import Compression, Row, Timings, aligned, saved_as, time_rows, vocabulary_rows
from .signals import ctrl_c_ends_the_process
from .train import (
    build_tokenizer,
    describe_pattern,
    huggingface_outputs,
    name_the_flag,
    save_huggingface_only,
    save_then_report,
    set_up_training,
    stopped_early_warnings,
    training_progress,
)

PLOT_FILE = "parity.png"

PARITY_EPILOG = """
parity-aware training (one language per source; docs/parity.md):
  --parity [base|window] makes each merge for the language compressed worst so far (the paper's
  and HuggingFace's ParityBpeTrainer's rule), measured on --dev NAME=PATH texts (parallel ones
  ideally; give one for every source), or against --ratio NAME=R target compression rates
  (relative: 2.5 for a script that takes 2.5x the bytes), or else on the training texts.
  window: a language chosen more than --parity-alpha / languages of the last --parity-window
  merges is passed over. --global-merges N: the first N merges are plain BPE. The report gives
  each language's bytes per token without and with parity; DIR/parity.png plots them.

  bpeforge train --source en=data/en/ --source hi=data/hi/ --parity --dev en=dev.en --dev hi=dev.hi -o out/fair
"""


def add_parity_options(p: argparse.ArgumentParser) -> None:
    """Adds the parity-aware training options to ``train``'s parser ``p`` (after the mix's,
    :func:`bpeforge.cli.mix.add_mix_options`), and has it run :func:`run_train`."""
    group = p.add_argument_group("parity-aware training (with --source; see the end of this help)")
    group.add_argument("--parity", nargs="?", const="base", choices=["base", "window"], help="each merge for the language compressed worst (default variant: base)")
    group.add_argument("--dev", action="append", dest="parity_dev", metavar="NAME=PATH", help="a language's dev text, on which its compression is measured (repeatable)")
    group.add_argument("--ratio", action="append", dest="parity_ratio", metavar="NAME=R", help="a language's target compression rate (give one for every source; not with --dev)")
    group.add_argument("--parity-window", type=int, metavar="N", help="window variant: the merges the window holds (default 100)")
    group.add_argument("--parity-alpha", type=float, metavar="A", help="window variant: pass over a language chosen more than A / languages of the window (default 2)")
    group.add_argument("--global-merges", type=int, metavar="N", help="with --parity: the first N merges are plain BPE on the sources summed")
    p.epilog = (p.epilog or "") + PARITY_EPILOG
    p.set_defaults(run=run_train)


def run_train(args: argparse.Namespace) -> int:
    """``bpeforge train``: parity-aware with ``--parity``, else as the mix's entry point runs it."""
    check_parity_flags(args)
    if args.parity is not None:
        return run_parity(args)
    for flag, value in (("--parity-window", args.parity_window), ("--parity-alpha", args.parity_alpha), ("--global-merges", args.global_merges)):
        if value is not None:
            raise CLIError(f"{flag} goes with --parity (parity-aware training)", EXIT_USAGE)
    return run_train_or_mix(args)


def parse_named(values: Optional[List[str]], flag: str, names: List[str]) -> Dict[str, List[str]]:
    """``NAME=VALUE`` options (``flag``), a repeated name adding a value, each name a source's."""
    named: Dict[str, List[str]] = {}
    for text in values or []:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name or not value:
            raise CLIError(f"{flag} {text!r}: expected NAME=VALUE (e.g. {flag} {names[0]}=...)", EXIT_USAGE)
        if name not in names:
            raise CLIError(f"{flag} {text}: no --source is named {name!r} (the sources: {', '.join(names)})", EXIT_USAGE)
        named.setdefault(name, []).append(value)
    missing = [n for n in names if n not in named]
    if named and missing:
        raise CLIError(f"{flag}: none for the source{'s' if len(missing) > 1 else ''} {', '.join(missing)} (give every source one)", EXIT_USAGE)
    return named


def parse_ratios(values: Optional[List[str]], names: List[str]) -> Optional[Dict[str, float]]:
    """The ``--ratio NAME=R`` options, one per source, each a positive number; None if none."""
    named = parse_named(values, "--ratio", names)
    if not named:
        return None
    ratios: Dict[str, float] = {}
    for name, given in named.items():
        if len(given) > 1:
            raise CLIError(f"--ratio {name}: given twice", EXIT_USAGE)
        try:
            r = float(given[0])
        except ValueError:
            raise CLIError(f"--ratio {name}={given[0]}: not a number", EXIT_USAGE) from None
        if not (r > 0 and math.isfinite(r)):
            raise CLIError(f"--ratio {name}={given[0]}: a ratio must be a positive number", EXIT_USAGE)
        ratios[name] = r
    return ratios


def check_parity_flags(args: argparse.Namespace) -> None:
    """Refuses the parity flags without ``--parity`` or ``--source``, and the mix's weights with it."""
    given = [flag for flag, value in (("--dev", args.parity_dev), ("--ratio", args.parity_ratio)) if value]
    if args.parity is None:
        if given:
            raise CLIError(f"{given[0]} goes with --parity (parity-aware training)", EXIT_USAGE)
        return
    if not args.mix_sources:
        raise CLIError("--parity trains on named sources, one per language: give them with --source NAME=PATH", EXIT_USAGE)
    if args.mix_alpha is not None or args.mix_weights:
        raise CLIError("--parity chooses each merge's language itself: --alpha and --weight do not go with it", EXIT_USAGE)
    if len(given) == 2:
        raise CLIError("--dev and --ratio both measure the languages: give one of them", EXIT_USAGE)


def run_parity(args: argparse.Namespace) -> int:
    """Runs ``bpeforge train --source ... --parity``: checks the options, counts each source
    (and its dev text), trains with and without parity, saves, prints the report and draws the
    plot; returns the exit code. Raises :class:`CLIError`."""
    t_start = time.perf_counter()
    check_parity_flags(args)
    sources = parse_sources(args)
    names = [s.name for s in sources]
    dev_paths = parse_named(args.parity_dev, "--dev", names)
    ratio = parse_ratios(args.parity_ratio, names)
    training = set_up_training(args)  # every option checked before anything is read
    folder, tiktoken_file = output_paths(args.output)
    check_output(folder, tiktoken_file, args.force)
    dev_args = copy.copy(args)
    dev_args.holdout = 0  # a dev text is measured whole
    dev_sources = [MixedSource(name, dev_paths[name]) for name in names] if dev_paths else []
    for source in sources:  # every path checked before any is read
        find_source(args, source)
    for source in dev_sources:
        find_source(dev_args, source, "--dev")
    if args.pattern is None and loaded_pattern(sources + dev_sources) is not None:  # span counts train with their pattern
        args.pattern = loaded_pattern(sources + dev_sources)
        training = set_up_training(args)
    shown: List[ConsoleProgress] = []
    with ctrl_c_ends_the_process(args, lambda: bool(shown) and bool(shown[-1].bars)):
        for source in sources:
            count_source(args, source, training.pattern, shown)
        for source in dev_sources:
            count_source(dev_args, source, training.pattern, shown, "--dev")
        t_count = time.perf_counter() - t_start
        progress, _ = training_progress(args)
        shown.append(progress)
        try:
            trained, report = train_counts(
                training.recipe,
                {s.name: s.counts for s in sources},  # type: ignore[misc]
                dev={s.name: s.counts for s in dev_sources} if dev_sources else None,  # type: ignore[misc]
                ratio=ratio,
                num_threads=args.threads,
                progress=progress,
            )
        except OptionError as e:
            raise CLIError(name_the_flag(e), EXIT_USAGE) from None
        except (TypeError, ValueError) as e:
            raise CLIError(f"--parity: {one_line(e)}") from None
        hf_json, no_tiktoken = huggingface_outputs(trained)
        if no_tiktoken is not None:
            return save_huggingface_only(args, trained, hf_json, no_tiktoken)
        tokenizer, t_build = build_tokenizer(trained)
    plotted: List[bool] = []

    def plot() -> None:
        plotted.append(draw_plot(report, folder / PLOT_FILE))

    def print_report(t_save: float) -> int:
        warnings: List[str] = stopped_early_warnings(trained, tokenizer)
        t_eval = time.perf_counter()
        heldout = heldout_compressions(sources, trained, args.holdout, warnings)
        t_eval = time.perf_counter() - t_eval
        for w in warnings:
            stderr_line(f"{PROG}: warning: {w}")
        stats = dict(trained.stats, count_seconds=t_count, bytes=sum(s.bytes_read for s in sources))
        rows = parity_rows(sources, report, heldout, training.recipe.parity, ratio)
        rows += vocabulary_rows(describe_pattern(args.pattern, tokenizer.pattern), len(trained.merges()), len(trained.ranks), tokenizer)
        rows += time_rows(stats, stats["bytes"], len(trained.merges()), Timings(t_build, t_eval, t_save, time.perf_counter() - t_start))
        rows.append(("saved", saved_as(folder, tiktoken_file) + (f"; plot: {folder / PLOT_FILE}" if plotted[0] else "")))
        sys.stdout.write(aligned(rows))
        sys.stdout.flush()
        return 0

    return save_then_report(args, tokenizer, hf_json, print_report, extra_outputs=plot)


def draw_plot(report: ParityReport, path: Path) -> bool:
    """Draws the report's plot into ``path``; without matplotlib, says so on stderr. Returns
    whether it was drawn."""
    try:
        report.plot(path)
        return True
    except PlotUnavailable:
        stderr_line(f"{PROG}: note: no plot ({PLOT_FILE}): matplotlib is not installed; {INSTALL_HINT} gives it")
        return False


def parity_rows(
    sources: List[MixedSource], report: ParityReport, heldout: Dict[str, Compression], variant: Optional[str], ratio: Optional[Dict[str, float]]
) -> List[Row]:
    """The report's rows on the languages: what each source is, then the table of each one's
    bytes, merges made for it, bytes per token without and with parity, and on its held-out
    documents; then the spread of compression across languages."""
    measured = "its dev text" if report.on_dev else ("target ratios " + ", ".join(f"{n} {r:g}" for n, r in ratio.items()) if ratio else "its training text")
    rows: List[Row] = [("languages", f"{len(sources)}, parity-aware ({variant}): each merge for the language compressed worst, on {measured}")]
    rows += source_rows(sources)
    where = "dev" if report.on_dev else "training"
    table = [("language", f"{where} bytes", "merges for it", "bytes/token without parity", "with parity", "held out")]
    for (name, n, made, plain, parity), s in zip(report.rows(), sources):
        exhausted = report.exhausted[report.languages.index(name)]
        ran_out = f" (ran out at merge {exhausted:,})" if exhausted is not None else ""
        table.append((name, f"{n:,}", f"{made:,}{ran_out}", f"{plain:.3f}" if plain is not None else "n/a", f"{parity:.3f}", compression_cell(heldout[s.name])))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in table]
    rows.append(("balance", lines[0]))
    rows.extend(("", line) for line in lines[1:])
    plain_spread, parity_spread = report.spread()
    if plain_spread is not None:
        rows.append(("", f"best / worst bytes per token across languages: {plain_spread:.2f} without parity, {parity_spread:.2f} with it"))
    return rows
