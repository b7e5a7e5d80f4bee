"""``bpeforge export``: writes a tokenizer in another format, HuggingFace's ``tokenizer.json``
(:meth:`bpeforge.Tokenizer.save_huggingface`) or a ``.tiktoken`` ranks file; the tokenizer is
read in any form ``bpeforge eval`` takes, or from a HuggingFace ``tokenizer.json``."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from ..eval import load_tokenizer
from ..huggingface import TOKENIZER_FILE
from ..io import ranks_to_tiktoken, write_atomic
from ..tokenizer import Tokenizer
from .arguments import PROG, CLIError, one_line, stderr_line

EXPORT_EPILOG = """\
tokenizers:
  DIR                   a folder written by bpeforge train -o DIR / Tokenizer.save(DIR)
  FILE.tiktoken[:PAT]   a ranks file, split with PAT or --pattern (GPT-4's by default)
  FILE.json             a HuggingFace tokenizer.json (or a folder holding one)
  NAME                  a tiktoken encoding (gpt2, cl100k_base, ...); downloaded on first use

formats:
  huggingface           -o DIR: DIR/tokenizer.json and DIR/tokenizer_config.json, for
                        tokenizers.Tokenizer.from_file and transformers' AutoTokenizer
  tiktoken              -o FILE: the ranks, for tiktoken.load.load_tiktoken_bpe (the split
                        pattern and the special tokens are not part of it: they are printed)

examples:
  bpeforge export out/tok --format huggingface -o out/tok-hf
  bpeforge export out/tok-hf/tokenizer.json --format tiktoken -o tok.tiktoken
"""


def add_export_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``export`` subcommand to ``subparsers``; its ``run`` default is :func:`run_export`."""
    p = subparsers.add_parser(
        "export",
        help="write a tokenizer as a HuggingFace tokenizer.json or a .tiktoken file",
        description="Writes a tokenizer in another format, with the same ids.",
        epilog=EXPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("tokenizer", metavar="TOKENIZER", help="the tokenizer to write (see below)")
    p.add_argument("--format", required=True, choices=["huggingface", "tiktoken"], help="the format to write")
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="the folder (huggingface) or file (tiktoken) to write")
    p.add_argument("--pattern", default=None, help="split pattern of a .tiktoken file given without :PATTERN (preset name or regex)")
    p.set_defaults(run=run_export)
    return p


def is_huggingface_file(spec: str) -> bool:
    """Whether ``spec`` names a HuggingFace ``tokenizer.json``, or a folder holding one that is
    not a bpeforge save (whose config has that name too)."""
    path = Path(spec)
    if path.is_dir():
        path = path / TOKENIZER_FILE
        if not path.is_file():
            return False
    elif not (path.suffix == ".json" and path.is_file()):
        return False
    try:
        with open(path, encoding="utf-8") as f:
            head = json.load(f)
    except (OSError, ValueError, RecursionError):
        return True  # from_huggingface says what is wrong with it
    return isinstance(head, dict) and head.get("format") != "bpeforge"


def read_tokenizer(spec: str, pattern: Any) -> Tokenizer:
    """The tokenizer ``spec`` names, or a CLIError saying why it cannot be read."""
    try:
        if is_huggingface_file(spec):
            return Tokenizer.from_huggingface(spec)
        return load_tokenizer(spec, pattern)
    except (OSError, ValueError, KeyError) as e:
        message = " ".join(str(e.args[0] if isinstance(e, KeyError) and e.args else e).split())
        raise CLIError(message if message.startswith(spec) else f"tokenizer {spec}: {message}") from None


def run_export(args: argparse.Namespace) -> int:
    """Runs ``bpeforge export`` with parsed ``args``; returns the exit code."""
    tokenizer = read_tokenizer(args.tokenizer, args.pattern)
    output = Path(args.output)
    try:
        if args.format == "huggingface":
            tokenizer.save_huggingface(output)
            stderr_line(f"{PROG}: wrote {output / TOKENIZER_FILE} ({tokenizer.n_vocab:,} ids)")
        else:
            if output.is_dir():
                raise ValueError(f"{os.fspath(output)!r} is a folder; --format tiktoken writes one file")
            write_atomic(output, ranks_to_tiktoken(tokenizer.mergeable_ranks))
            stderr_line(f"{PROG}: wrote {output} ({len(tokenizer.mergeable_ranks):,} ranks); split pattern: {tokenizer.pattern}")
            if tokenizer.special_tokens:
                stderr_line(f"{PROG}: special tokens (not in the file): {json.dumps(tokenizer.special_tokens, ensure_ascii=False)}")
    except OSError as e:
        raise CLIError(f"cannot write {e.filename or output}: {e.strerror or one_line(e)}") from None
    except ValueError as e:
        raise CLIError(" ".join(str(e).split())) from None
    return 0
