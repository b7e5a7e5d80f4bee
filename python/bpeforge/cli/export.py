"""``bpeforge export``: writes a tokenizer in another format, HuggingFace's ``tokenizer.json``
(:meth:`bpeforge.Tokenizer.save_huggingface`) or a ``.tiktoken`` ranks file; the tokenizer is
read in any form ``bpeforge eval`` takes, or from a HuggingFace ``tokenizer.json``."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from .._eval import load_tokenizer
from .. import huggingface, _io as io
from ..huggingface import TOKENIZER_FILE
from .._io import ranks_to_tiktoken, write_atomic
from .._tokenizer import Tokenizer
from .arguments import PROG, CLIError, one_line, stderr_line
from .outputs import check_free, check_parent

EXPORT_EPILOG = """\
tokenizers:
  DIR                   a folder written by bpeforge train -o DIR / Tokenizer.save(DIR)
  FILE.tiktoken[:PAT]   a ranks file, split with PAT or --pattern (GPT-4's by default)
  FILE.json             a HuggingFace tokenizer.json (or a folder holding one)
  NAME                  a tiktoken encoding (gpt2, cl100k_base, ...); downloaded on first use

formats:
  huggingface           -o DIR: the folder Tokenizer.save writes, its tokenizer.json and
                        tokenizer_config.json required (tokenizers.Tokenizer.from_file,
                        transformers' AutoTokenizer), tokenizer.tiktoken, token_bytes.npy
                        and bpeforge.json (Tokenizer.load)
  tiktoken              -o FILE: the ranks, for tiktoken.load.load_tiktoken_bpe (the split
                        pattern and the special tokens are not part of it: they are printed)

An existing output is refused unless --force; even then a folder is replaced only if it holds
nothing but files bpeforge writes there (an empty folder is written without --force).

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
    p.add_argument("--force", action="store_true", help="replace an existing output (a folder only if it holds nothing but bpeforge's files)")
    p.add_argument("--pattern", default=None, help="split pattern of a .tiktoken file given without :PATTERN (preset name or regex)")
    p.set_defaults(run=run_export)
    return p


def is_huggingface_file(spec: str) -> bool:
    """Whether ``spec`` names a HuggingFace ``tokenizer.json``, or a folder holding one that is
    not a bpeforge save (whose config has that name too)."""
    path = Path(spec)
    if path.is_dir():
        if os.path.lexists(path / io.META_FILE):
            return False  # a bpeforge save (its tokenizer.json is HuggingFace's, read through bpeforge.json)
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
    output = Path(args.output)
    # The output is checked before the tokenizer is read (and again just before writing).
    check_export_output(output, args.format, args.force)
    tokenizer = read_tokenizer(args.tokenizer, args.pattern)
    try:
        if args.format == "huggingface":
            contents = huggingface.saved_files(tokenizer, require_huggingface=True)
            check_export_output(output, args.format, args.force)
            io.write_saved(output, contents)
            io.forget_tiktoken_cache(output / io.RANKS_FILE)
            stderr_line(f"{PROG}: wrote {output}/ ({', '.join(n for n in io.SAVED_FILES if n in contents)}; {tokenizer.n_vocab:,} ids)")
        else:
            check_export_output(output, args.format, args.force)
            output.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(output, ranks_to_tiktoken(tokenizer.mergeable_ranks))
            io.forget_tiktoken_cache(output)
            stderr_line(f"{PROG}: wrote {output} ({len(tokenizer.mergeable_ranks):,} ranks); split pattern: {tokenizer.pattern}")
            if tokenizer.special_tokens:
                stderr_line(f"{PROG}: special tokens (not in the file): {json.dumps(tokenizer.special_tokens, ensure_ascii=False)}")
    except OSError as e:
        raise CLIError(f"cannot write {e.filename or output}: {e.strerror or one_line(e)}") from None
    except ValueError as e:
        raise CLIError(" ".join(str(e).split())) from None
    return 0


def check_export_output(output: Path, format: str, force: bool) -> None:
    """The rule of every command's outputs (:func:`~bpeforge.cli.outputs.check_free`): a folder
    for huggingface, a file for tiktoken."""
    check_parent(output)
    if format == "huggingface" and io.named_like_ranks_file(output):
        raise CLIError(f"-o {output}: --format huggingface writes a folder, and this names a .tiktoken file")
    check_free(output, force, folder=format == "huggingface", what="a tokenizer bpeforge saved")
