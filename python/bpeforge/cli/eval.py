"""``bpeforge eval``: compares how tokenizers compress texts (:func:`bpeforge._eval.evaluate`),
printing a table or JSON. The text files are read a few MB at a time (as
:class:`bpeforge._eval.TextFile`), never whole, so that memory stays bounded whatever their size."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from .._errors import EvalError
from .._eval import READ_BYTES, TextFile, evaluate, format_table, load_tokenizer, named_tokenizers
from .._plot import PlotUnavailable, import_matplotlib, plot_eval
from .._tokenizer import Tokenizer
from .arguments import EXIT_USAGE, PROG, CLIError, int_at_least, stderr_line
from .outputs import check_free, check_parent

EVAL_EPILOG = """\
tokenizers:
  DIR                   a folder written by bpeforge train -o DIR / Tokenizer.save(DIR)
  FILE.tiktoken         a ranks file, split with --pattern (GPT-4's by default)
  FILE.tiktoken:PATTERN the same with its own pattern: a preset name or a regex
  NAME                  a tiktoken encoding (gpt2, cl100k_base, o200k_base, gpt4, ...);
                        tiktoken downloads it on first use, so it needs the network once
  The first tokenizer is the reference of the Diff % column: (its tokens - tokens) / its
  tokens, positive when a tokenizer needs fewer tokens.

examples:
  bpeforge eval out/tok gpt2 --text news.txt code.py
  bpeforge eval out/a out/b.tiktoken:nanochat --text sample.txt --json
  bpeforge eval out/sweep/4096 out/sweep/16384 --text news.txt code.py --plot eval.png
"""


def _add_arguments(p: argparse.ArgumentParser) -> None:
    # (nargs="*", checked in run_eval: argparse would say TOKENIZER is missing when --text, given
    # first, took it.)
    p.add_argument("tokenizers", nargs="*", metavar="TOKENIZER", help="tokenizers to compare (see below)")
    p.add_argument(
        "--text", dest="texts", nargs="+", action="extend", required=True, metavar="FILE",
        help="UTF-8 text files to encode, each as one text ('-' reads standard input); they take every "
        "argument up to the next option, so give them after the tokenizers (or end them with --)",
    )
    p.add_argument("--pattern", default=None, help="split pattern for .tiktoken files given without :PATTERN (preset name or regex)")
    p.add_argument("--threads", type=int_at_least(1, "--threads", 1024), default=8, help="threads to encode with (default 8)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    p.add_argument(
        "--plot", metavar="FILE.png",
        help="also draw bytes per token against vocabulary size, a line per text, into this PNG file "
        "(needs matplotlib: pip install 'bpeforge[plot]')",
    )
    p.add_argument("--force", action="store_true", help="replace an existing --plot file")
    p.add_argument(
        "--color", choices=["auto", "always", "never"], default="auto",
        help="colour the table (auto: when standard output is a terminal and NO_COLOR is unset)",
    )


def add_eval_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``eval`` subcommand to ``subparsers`` (of the ``bpeforge`` command); its
    ``run`` default is :func:`run_eval`."""
    p = subparsers.add_parser(
        "eval",
        help="compare how tokenizers compress texts",
        description="For each text and tokenizer: bytes, tokens, bytes per token, tokens per character, "
        "and the relative difference in tokens against the first tokenizer.",
        epilog=EVAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_arguments(p)
    p.set_defaults(run=run_eval)
    return p


def _text_files(paths: Sequence[str], spool: Path) -> List[Tuple[str, TextFile]]:
    """The texts of ``paths``, each read through once to check it (so that a bad one is found
    before any time is spent counting), a few MB at a time. Standard input, which can be read
    only once, is copied into the folder ``spool`` first."""
    texts: List[Tuple[str, TextFile]] = []
    for path in paths:
        if path == "-":
            if sys.stdin is None:
                raise CLIError("-: standard input is closed")
            copy = spool / f"stdin-{len(texts)}.txt"
            with open(copy, "wb") as out:
                shutil.copyfileobj(sys.stdin.buffer, out, READ_BYTES)
            text = TextFile(copy, name="-")
        else:
            text = TextFile(path)
        try:
            text.check()
        except EvalError as e:
            raise CLIError(str(e)) from None
        texts.append(("<stdin>" if path == "-" else path, text))
    return texts


def draw_plot(rows: Sequence[Any], path: str) -> None:
    """Draws ``rows`` into the PNG file ``path`` (:func:`bpeforge._plot.plot_eval`); a missing
    matplotlib or an unwritable file is the CLI's one-line error."""
    try:
        plot_eval(rows, path)
    except PlotUnavailable as e:
        raise CLIError(f"--plot: {e}") from None
    except OSError as e:
        raise CLIError(f"--plot {path}: {e.strerror or e}") from None


def run_eval(args: argparse.Namespace) -> int:
    """Runs ``bpeforge eval`` with parsed ``args``; prints the table (or JSON) on standard
    output and returns the exit code. Problems raise the CLI's one-line error."""
    if not args.tokenizers:
        raise CLIError(
            "no TOKENIZER given (--text takes every argument after it up to the next option: "
            "give the tokenizers first, or end the texts with --)",
            EXIT_USAGE,
        )
    if sys.stdout is None:
        raise CLIError("standard output is closed: there is nowhere to print the comparison")
    if args.plot:
        try:
            import_matplotlib()  # said now, not after the texts are encoded
        except PlotUnavailable as e:
            raise CLIError(f"--plot: {e}") from None
        check_parent(Path(args.plot))  # the rule of every command's outputs, checked before the work
        check_free(Path(args.plot), args.force, folder=False)
    with tempfile.TemporaryDirectory(prefix="bpeforge-eval-") as spool:
        texts = _text_files(args.texts, Path(spool))
        tokenizers: Dict[str, Tokenizer] = {}
        for name, spec in named_tokenizers(args.tokenizers):
            try:
                tokenizers[name] = load_tokenizer(spec, args.pattern)
            except (OSError, ValueError, KeyError) as e:
                message = " ".join(str(e.args[0] if isinstance(e, KeyError) and e.args else e).split())
                raise CLIError(f"tokenizer {spec}: {message}") from None
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                rows = evaluate(tokenizers, texts, num_threads=args.threads)
        except ValueError as e:
            raise CLIError(str(e)) from None
    for warning in caught:  # a text cut inside a span (see bpeforge._eval.text_pieces)
        stderr_line(f"{PROG}: warning: {warning.message}")
    if args.json:
        print(json.dumps([r._asdict() for r in rows], indent=2, ensure_ascii=False))
    else:
        color = args.color == "always" or (
            args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        )
        print(format_table(rows, color=color))
    if args.plot:
        draw_plot(rows, args.plot)
    return 0
