"""``bpeforge eval``: compares how tokenizers compress texts (:func:`bpeforge.eval.evaluate`),
printing a table or JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import EvalError
from ..eval import evaluate, format_table, load_tokenizer, named_tokenizers
from ..tokenizer import Tokenizer
from .arguments import CLIError, int_at_least

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


def _read_texts(paths: Sequence[str]) -> List[Tuple[str, str]]:
    texts = []
    for path in paths:
        if path == "-" and sys.stdin is None:
            raise CLIError("-: standard input is closed")
        try:
            data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        except OSError as e:
            raise CLIError(f"{path}: {e.strerror or e}") from None
        bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # a byte-order mark, not text
        try:
            text = data[bom:].decode("utf-8")
        except UnicodeDecodeError as e:
            at = bom + e.start
            raise CLIError(f"{path}: not UTF-8 text (byte {at}: {data[at:at + 1]!r})") from None
        if not text:
            raise CLIError(f"{path}: the file is empty")
        texts.append(("<stdin>" if path == "-" else path, text))
    return texts


def run_eval(args: argparse.Namespace) -> int:
    """Runs ``bpeforge eval`` with parsed ``args``; prints the table (or JSON) on standard
    output and returns the exit code. Problems raise the CLI's one-line error."""
    if not args.tokenizers:
        raise CLIError(
            "no TOKENIZER given (--text takes every argument after it up to the next option: "
            "give the tokenizers first, or end the texts with --)",
            2,
        )
    if sys.stdout is None:
        raise CLIError("standard output is closed: there is nowhere to print the comparison")
    texts = _read_texts(args.texts)
    tokenizers: Dict[str, Tokenizer] = {}
    for name, spec in named_tokenizers(args.tokenizers):
        try:
            tokenizers[name] = load_tokenizer(spec, args.pattern)
        except (OSError, ValueError, KeyError) as e:
            message = " ".join(str(e.args[0] if isinstance(e, KeyError) and e.args else e).split())
            raise CLIError(f"tokenizer {spec}: {message}") from None
    try:
        rows = evaluate(tokenizers, texts, num_threads=args.threads)
    except ValueError as e:
        raise CLIError(str(e)) from None
    if args.json:
        print(json.dumps([r._asdict() for r in rows], indent=2, ensure_ascii=False))
    else:
        color = args.color == "always" or (
            args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        )
        print(format_table(rows, color=color))
    return 0


def main_eval(argv: Optional[Sequence[str]] = None) -> int:
    """``bpeforge eval`` on its own: parses ``argv`` and runs :func:`run_eval`; an error is one
    line on standard error and exit code 1 (a bad option: argparse's usage and error, exit code
    2). From a shell: ``bpeforge eval ...`` or ``python -m bpeforge eval ...``."""
    parser = argparse.ArgumentParser(
        prog="bpeforge eval",
        description="Compare how tokenizers compress texts.",
        epilog=EVAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_eval(args)
    except (CLIError, EvalError, OSError, ValueError) as e:
        print(f"bpeforge eval: error: {e}", file=sys.stderr)
        return int(getattr(e, "code", 1))
