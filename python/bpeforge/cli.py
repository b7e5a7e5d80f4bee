"""The ``bpeforge`` command line: ``bpeforge train ...`` (and ``python -m bpeforge train ...``).

Errors are one line on stderr (``bpeforge: error: ...``) and a non-zero exit: 2 for a bad
option, 1 for a problem with the data or the output, 130 for Ctrl-C. Set ``BPEFORGE_DEBUG=1``
to get the traceback of an unexpected error instead.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

PROG = "bpeforge"
DEFAULT_VOCAB_SIZE = 8192
HOLDOUT_EVERY = 100
HOLDOUT_MAX_BYTES = 1_000_000
# Text gathered before each parallel counting pass, and its bounds in documents. Small enough
# that the three batches in flight (being read, queued, being counted) stay small; a batch
# does not change the result, only memory and speed.
BUFFER_BYTES = 8_000_000
MIN_BUFFER, MAX_BUFFER = 64, 8192
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
# How the core's error for a text the split pattern's regex engine gave up on begins.
SPLIT_FAILED = "the split pattern failed on a text"

TRAIN_EPILOG = """\
inputs:
  Files, folders (searched recursively for known extensions, sorted), globs, and - for
  standard input (text unless --input-format says otherwise). The format comes from the
  extension: .txt/.text = text, .jsonl/.ndjson = JSONL, .parquet/.pq = Parquet; text and
  JSONL may be compressed (.gz, .zst). With no input at all, bpeforge trains on the .py
  sources of this Python's standard library, one document per file. A file reached twice
  (named twice, through a link, overlapping folders or globs) is read once, where it first
  comes, with a note.

documents:
  text     one document per line; --doc-separator SEP splits on the exact string SEP
           instead, after decoding backslash escapes: '\\n\\n' splits blank-line-separated
           paragraphs ('\\r\\n\\r\\n' in a file with CRLF line ends: text is read as it is),
           '<|endoftext|>' a custom marker, '' makes each file one document.
  jsonl    the --text-column field of each line's object (null: skipped).
  parquet  the --text-column column, read page by page (bounded memory; with
           --parquet-reader pyarrow, by record batches through pyarrow).
  Empty documents are skipped. Every 100th document (up to 1 MB) is held out of training
  to measure compression on; --holdout 0 trains on everything.

output:
  -o DIR writes DIR/ (tokenizer.tiktoken + tokenizer.json + token_bytes.npy, for bpeforge.Tokenizer.load)
  and DIR.tiktoken beside it (the ranks alone, for tiktoken.load.load_tiktoken_bpe). An -o
  ending in .tiktoken names that file, and the folder is the same name without it. Both
  appear only once training succeeded (written to a temporary folder, then renamed).

progress and errors:
  Progress (reading: documents, MB, MB/s; merging: a bar and a line per 1% of the merges)
  goes to stderr when it is a terminal, or always with -v; the report goes to stdout; -q
  prints errors only. An error is one line on stderr; exit codes: 1 data or output
  problem, 2 bad option, 130 interrupted (Ctrl-C writes nothing).

examples:
  bpeforge train --vocab-size 32768 -o out/tok data/*.parquet
  bpeforge train --vocab-size 8192 -o out/tok corpus.txt --pattern nanochat --special-tokens none
  bpeforge train -o out/demo
"""


class CLIError(Exception):
    """A user-facing error: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad option is one line on stderr (no usage block)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CLIError(f"{message} (see '{self.prog} --help')", EXIT_USAGE)


# ------------------------------------------------------------------------------ option types


# Upper bounds of the numeric options: the trainer's own limits (vocabulary size, threads) and
# what fits in a signed 64-bit integer (counts and character budgets).
MAX_VOCAB_SIZE = 1 << 31
MAX_THREADS = 1024
MAX_INT64 = (1 << 63) - 1


def _int_at_least(low: int, what: str, high: int = MAX_INT64) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` to ``high`` (``_`` allowed between digits)."""

    def parse(text: str) -> int:
        digits = text.strip().replace("_", "")
        try:
            value = int(digits)
        except ValueError:
            body = digits[1:] if digits[:1] in ("+", "-") else digits
            if body.isdecimal():  # an integer with more digits than int() accepts
                bound = f"at least {low}" if digits.startswith("-") else f"at most {high}"
                raise argparse.ArgumentTypeError(f"must be {bound}, got a {len(body):,}-digit number") from None
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {value}")
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def decode_separator(text: str) -> str:
    r"""Decodes backslash escapes in a ``--doc-separator``: ``\n``, ``\t``, ``\r``, ``\\``,
    ``\xNN``, ``\uNNNN``; other characters stand for themselves.

    >>> decode_separator(r"\n\n"), decode_separator("<|endoftext|>"), decode_separator("é\\t")
    ('\n\n', '<|endoftext|>', 'é\t')
    """
    try:
        separator = text.encode("latin-1", "backslashreplace").decode("unicode_escape")
        separator.encode("utf-8")
    except UnicodeDecodeError as e:
        raise CLIError(f"--doc-separator {text!r}: bad backslash escape ({e.reason})", EXIT_USAGE) from None
    except UnicodeEncodeError:  # bytes that are not UTF-8 in the argument, or a \udXXX escape
        raise CLIError(f"--doc-separator {text!r}: not valid UTF-8 text (it could never match)", EXIT_USAGE) from None
    return separator


def parse_special_tokens(text: Optional[str]) -> List[str]:
    """``None``/``nanochat``: nanochat's nine; ``none`` or empty: none; else a comma-separated list."""
    from .tokenizer import NANOCHAT_SPECIAL_TOKENS

    if text is None or text.strip().lower() == "nanochat":
        return list(NANOCHAT_SPECIAL_TOKENS)
    if text.strip().lower() in ("none", ""):
        return []
    names = [n.strip() for n in text.split(",")]
    if any(not n for n in names):
        raise CLIError(f"--special-tokens {text!r}: an empty name (a stray comma?)", EXIT_USAGE)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise CLIError(f"--special-tokens: {dup[0]!r} is given twice", EXIT_USAGE)
    for n in names:
        try:
            n.encode("utf-8")
        except UnicodeEncodeError:  # bytes the shell gave that are not UTF-8 (a lone surrogate here)
            raise CLIError(f"--special-tokens: {n!r} is not valid UTF-8 text", EXIT_USAGE) from None
    return names


def parse_pattern(text: Optional[str]) -> Tuple[str, str]:
    """(regex, label) for a ``--pattern``: a preset name or a regex. A word that is not a preset
    is taken for a misspelt preset rather than a regex (which would match only itself)."""
    from . import _core

    from .tokenizer import resolve_pattern

    presets = dict(_core.PRESETS)
    if text is None:
        return _core.DEFAULT_PATTERN, "gpt4 (the default)"
    if text in presets:
        return presets[text], text
    try:
        resolve_pattern(text)  # refuses a word that is neither a preset nor a regex
    except ValueError as e:
        raise CLIError(f"--pattern {e}", EXIT_USAGE) from None
    try:
        _core.check_pattern(text)  # compiles, and never matches an empty string
    except ValueError as e:
        raise CLIError(f"--pattern: {' '.join(str(e).split())}", EXIT_USAGE) from None
    label = next((name for name, rx in presets.items() if rx == text), "custom regex")
    return text, label


def output_paths(output: str) -> Tuple[Path, Path]:
    """(folder, .tiktoken file) for ``-o``: ``out/tok`` -> ``out/tok/`` and ``out/tok.tiktoken``;
    ``out/tok.tiktoken`` -> the same two. The suffix is taken in any case, as ``save`` and
    ``load`` take it, and the file keeps the case typed.

    >>> [str(p) for p in output_paths("out/tok")], [str(p) for p in output_paths("out/tok.tiktoken")]
    (['out/tok', 'out/tok.tiktoken'], ['out/tok', 'out/tok.tiktoken'])
    >>> [str(p) for p in output_paths("out/tok.TikToken")]
    ['out/tok', 'out/tok.TikToken']
    """
    from .io import named_like_ranks_file

    path = Path(output)
    suffix = ".tiktoken"
    if named_like_ranks_file(path):
        suffix = path.suffix
        path = path.with_suffix("")
    if not path.name or path.name in (".", ".."):
        raise CLIError(f"-o {output!r}: give a folder name, e.g. -o out/tok", EXIT_USAGE)
    if named_like_ranks_file(path):
        # `x.tiktoken.tiktoken`: the folder would be named like a ranks file.
        raise CLIError(f"-o {output!r}: the folder would be named like a .tiktoken ranks file; give e.g. -o out/tok", EXIT_USAGE)
    if ".." in path.parts:
        # Where the system takes it (through links): making `a/../b`'s parents would create `a`.
        path = path.parent.resolve() / path.name
    return path, path.with_name(path.name + suffix)


def _looks_like_tokenizer_folder(folder: Path) -> bool:
    """Whether ``folder`` is empty or holds a tokenizer bpeforge saved and nothing else: only
    the files ``save`` writes, and its ``tokenizer.json`` (if there) says it is bpeforge's. A
    HuggingFace model folder also has a ``tokenizer.json``, beside weights that ``--force``
    must never delete."""
    import json

    from .io import CONFIG_FILE, FORMAT, RANKS_FILE, TOKEN_BYTES_FILE

    try:
        names = {p.name for p in folder.iterdir()}
    except OSError:
        return False
    # A save cut off leaves ".NAME.PID.THREAD.tmp" files behind (see io._write_atomic; saves
    # before the thread was in the name left ".NAME.PID.tmp"). ASCII digits only.
    ours = (CONFIG_FILE, RANKS_FILE, TOKEN_BYTES_FILE)
    leftover = re.compile(r"\.(?:%s)\.[0-9]+(?:\.[0-9]+)?\.tmp" % "|".join(map(re.escape, ours)))
    names = {n for n in names if not (leftover.fullmatch(n) and (folder / n).is_file() and not (folder / n).is_symlink())}
    if not names <= set(ours):
        return False
    if CONFIG_FILE in names:
        try:
            config = json.loads((folder / CONFIG_FILE).read_bytes())
        except (OSError, ValueError):
            return False
        return isinstance(config, dict) and config.get("format") == FORMAT
    return True


def _check_parent(folder: Path) -> None:
    """Refuses an output whose parent cannot be made or written: found before training, not
    after it. The closest existing ancestor must be a folder this process may write in."""
    parent = folder.absolute().parent
    while not (parent.exists() or parent.is_symlink()) and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise CLIError(f"cannot write the output {folder}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CLIError(f"cannot write the output {folder}: no permission to write in {parent}")


def check_output(folder: Path, tiktoken_file: Path, force: bool) -> None:
    """Refuses an existing output unless ``force``; even then only replaces a folder that is empty
    or holds a saved tokenizer (so that ``-o ~ --force`` cannot wipe a home folder). Also refuses
    an output whose parent cannot be written."""
    _check_parent(folder)
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir():
            raise CLIError(f"output {folder} exists and is not a folder")
        if not force:
            raise CLIError(f"output folder {folder} already exists (use --force to replace it)")
        if not _looks_like_tokenizer_folder(folder):
            raise CLIError(
                f"output folder {folder} exists and holds something other than a tokenizer bpeforge saved; not replacing it, even with --force"
            )
    if tiktoken_file.exists():
        if tiktoken_file.is_dir():
            raise CLIError(f"output file {tiktoken_file} exists and is a folder")
        if not force:
            raise CLIError(f"output file {tiktoken_file} already exists (use --force to replace it)")


# ------------------------------------------------------------------------------ the parser


def add_train_parser(subparsers) -> argparse.ArgumentParser:
    """Adds the ``train`` subcommand and its options to ``subparsers``; returns its parser."""
    p = subparsers.add_parser(
        "train",
        help="train a tokenizer on text, JSONL or Parquet files",
        description="Train a byte-level BPE tokenizer and save it (bpeforge folder + .tiktoken file).",
        epilog=TRAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="files, folders or globs (default: this Python's standard library)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder (DIR.tiktoken is written beside it)")
    p.add_argument(
        "--vocab-size",
        type=_int_at_least(1, "--vocab-size", MAX_VOCAB_SIZE),
        default=DEFAULT_VOCAB_SIZE,
        metavar="N",
        help=f"final vocabulary size, 256 bytes + merges + special tokens (default {DEFAULT_VOCAB_SIZE})",
    )
    p.add_argument("--input-format", choices=["text", "jsonl", "parquet"], help="format of every input file named (default: from the extension); in folders, only the files "
                   "whose extension is of that format are read, hidden ones skipped")
    p.add_argument("--text-column", default="text", metavar="NAME", help="JSONL field / Parquet column holding the text (default: text)")
    p.add_argument("--parquet-reader", choices=["bpeforge", "pyarrow"], default="bpeforge",
                   help="what reads Parquet files: bpeforge's own reader (default; page by page, lists of str, no pyarrow "
                        "needed) or pyarrow (record batches, handed to Rust as Arrow arrays; needs pyarrow)")
    p.add_argument("--doc-separator", metavar="SEP", help=r"split text files on SEP (escapes decoded) instead of lines; '' = one document per file")
    p.add_argument("--pattern", metavar="PRESET|REGEX", help="split pattern: a preset (gpt4, cl100k_base, nanochat, gpt2, r50k_base, p50k_base, o200k_base) or a regex (default gpt4)")
    p.add_argument("--special-tokens", metavar="none|A,B,...", help="special tokens after the ranks: nanochat (default, 9 tokens), none, or a comma-separated list")
    p.add_argument("--min-frequency", type=_int_at_least(1, "--min-frequency"), default=1, metavar="N", help="stop when the best pair occurs fewer than N times (default 1)")
    p.add_argument("--doc-cap", type=_int_at_least(1, "--doc-cap"), metavar="N", help="crop each document to its first N characters (nanochat uses 10000)")
    p.add_argument("--max-chars", type=_int_at_least(1, "--max-chars"), metavar="N", help="stop reading after N characters in all")
    p.add_argument("--holdout", type=_int_at_least(0, "--holdout"), default=HOLDOUT_EVERY, metavar="N", help=f"hold out every Nth document (up to 1 MB) to measure compression; 0 = none (default {HOLDOUT_EVERY})")
    p.add_argument("--threads", type=_int_at_least(1, "--threads", MAX_THREADS), metavar="N", help="threads for training: counting, and merging (default: all cores)")
    p.add_argument("--force", action="store_true", help="replace an existing output folder / .tiktoken file")
    p.add_argument("--skip-bad-lines", action="store_true", help="skip malformed JSONL lines, and text documents that are not UTF-8 (counted and reported), instead of stopping")
    verbosity = p.add_mutually_exclusive_group()
    verbosity.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    verbosity.add_argument("-v", "--verbose", action="store_true", help="show progress even when stderr is not a terminal, and list the inputs")
    p.set_defaults(run=run_train)
    return p


# Subcommands contributed by other modules: (module, add_parser function, run function). Each is
# imported when the parser is built and skipped if it is missing, so a half-built module never
# breaks `bpeforge train`.
EXTRA_SUBCOMMANDS: List[Tuple[str, str, str]] = [
    ("bpeforge.eval", "add_eval_parser", "run_eval"),
]


def _add_extra_subcommands(subparsers) -> None:
    import importlib

    for module_name, add_name, run_name in EXTRA_SUBCOMMANDS:
        try:
            module = importlib.import_module(module_name)
            add, run = getattr(module, add_name), getattr(module, run_name)
        except ImportError as e:
            if getattr(e, "name", None) == module_name:
                continue  # not written (yet): no such subcommand
            _add_broken_subcommand(subparsers, module_name, e)
            continue
        except Exception as e:  # noqa: BLE001 - a broken module must not break `bpeforge train`
            _add_broken_subcommand(subparsers, module_name, e)
            continue
        before = set(subparsers.choices)
        add(subparsers)
        for name in set(subparsers.choices) - before:
            parser = subparsers.choices[name]
            if parser.get_default("run") is None:
                parser.set_defaults(run=run)


def _add_broken_subcommand(subparsers, module_name: str, error: BaseException) -> None:
    """Keeps ``bpeforge NAME`` known when its module fails to import, and says why when run."""
    name = module_name.rsplit(".", 1)[-1]
    if name in subparsers.choices:
        return
    message = f"the {name!r} command is unavailable: {module_name} failed to load ({type(error).__name__}: {_one_line(error)})"

    def run(args: argparse.Namespace) -> int:
        raise CLIError(message)

    parser = subparsers.add_parser(name, help="(unavailable)", add_help=False)
    parser.set_defaults(run=run, accepts_any_arguments=True)


def build_parser() -> argparse.ArgumentParser:
    """The ``bpeforge`` argument parser: ``--version``, ``train`` and the contributed subcommands."""
    from . import __version__ as version

    parser = _Parser(prog=PROG, description="bpeforge: exact, fast byte-level BPE tokenizer training.")
    parser.add_argument("--version", action="version", version=f"{PROG} {version}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add_train_parser(subparsers)
    _add_extra_subcommands(subparsers)
    return parser


# ------------------------------------------------------------------------------ main


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line; returns the exit code (``[project.scripts]`` entry point).

    With ``argv=None`` (the arguments of the program) Ctrl-C during training ends the process
    at once with exit code 130; with ``argv`` given (called from Python) it raises
    KeyboardInterrupt as usual, once the running Rust call lets it through."""
    debug = bool(os.environ.get("BPEFORGE_DEBUG"))
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(args, "accepts_any_arguments", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        # Run as the program (not called with arguments from Python): Ctrl-C may end the process.
        args.exit_on_ctrl_c = argv is None
        if getattr(args, "run", None) is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        _stderr_line(f"{PROG}: interrupted")
        return EXIT_INTERRUPTED
    except CLIError as e:
        _stderr_line(f"{PROG}: error: {e}")
        return e.code
    except BrokenPipeError:
        # stdout was closed early (e.g. piped into `head`): nothing more to say.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_ERROR
    except Exception as e:  # noqa: BLE001 - the promise is "never a traceback"
        if debug:
            raise
        _stderr_line(f"{PROG}: error: {_one_line(e)} ({type(e).__name__}; set BPEFORGE_DEBUG=1 for the traceback)")
        return EXIT_ERROR


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _stderr_line(message: str) -> None:
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


# ------------------------------------------------------------------------------ train


def run_train(args: argparse.Namespace) -> int:
    """Runs ``bpeforge train`` with parsed ``args``: checks the options, reads the inputs, trains,
    saves the tokenizer and prints the report; returns the exit code. Raises :class:`CLIError`."""
    from . import _core
    from .inputs import Corpus, InputError, check_parquet, expand_inputs, stdlib_sources, unique_sources
    from .progress import ConsoleProgress, is_terminal
    from .tokenizer import Tokenizer, early_stop_reason

    t_start = time.perf_counter()
    quiet, verbose = args.quiet, args.verbose

    # Everything that can be checked before reading a byte is checked here.
    pattern, pattern_label = parse_pattern(args.pattern)
    specials = parse_special_tokens(args.special_tokens)
    if args.vocab_size < 256 + len(specials):
        raise CLIError(
            f"--vocab-size {args.vocab_size} is too small: it must be at least 256 (bytes) + {len(specials)} "
            f"(special tokens) = {256 + len(specials)}",
            EXIT_USAGE,
        )
    n_ranks = args.vocab_size - len(specials)
    folder, tiktoken_file = output_paths(args.output)
    check_output(folder, tiktoken_file, args.force)

    stdlib_root = None
    left_out: list = []
    try:
        if args.inputs:
            sources, left_out = unique_sources(expand_inputs(args.inputs, args.input_format))
            separator = "\n" if args.doc_separator is None else decode_separator(args.doc_separator)
        else:
            stdlib_root, sources = stdlib_sources()
            if not sources:
                raise CLIError(f"no input given, and no standard library .py files were found under {stdlib_root}")
            separator = "" if args.doc_separator is None else decode_separator(args.doc_separator)
        arrow = args.parquet_reader == "pyarrow"
        if arrow and any(source.format == "parquet" for source in sources):
            _lean_arrow_memory()
        for source in sources:
            if source.format == "parquet":
                check_parquet(source, args.text_column, arrow=arrow)  # fail before training, not hours into it
    except InputError as e:
        raise CLIError(str(e)) from None

    if stdlib_root is not None:
        corpus_label = (
            f"the Python {sys.version.split()[0]} standard library ({len(sources):,} .py files under "
            f"{stdlib_root}, one document per file, empty ones skipped; no input was given)"
        )
    else:
        formats = sorted({s.format for s in sources})
        corpus_label = f"{len(sources):,} file{'s' if len(sources) != 1 else ''} ({', '.join(formats)})"

    if left_out and not quiet:
        again, first = left_out[0]
        more = f" (and {len(left_out) - 1:,} more)" if len(left_out) > 1 else ""
        _stderr_line(f"{PROG}: note: {again.path} is the file {first.path}, read once{more}")

    show_progress = not quiet and (verbose or is_terminal(sys.stderr))
    progress = ConsoleProgress(file=sys.stderr, bars=None if show_progress else False, log=show_progress)
    if show_progress:
        progress.write(f"Training on {corpus_label}")
        if verbose:
            for i, source in enumerate(sources[:1000]):
                progress.write(f"  {i}: {source}")
            if len(sources) > 1000:
                progress.write(f"  ... and {len(sources) - 1000:,} more")
    elif stdlib_root is not None and not quiet:
        _stderr_line(f"{PROG}: no input given, training on {corpus_label.split(' (')[0]}")

    def on_read(corpus: Corpus, source) -> None:
        note = f"file {corpus.files_started}/{len(sources)}" if len(sources) > 1 else None
        progress.reading(corpus.documents + len(corpus.heldout), corpus.total_bytes, note)

    corpus = Corpus(
        sources,
        text_column=args.text_column,
        doc_separator=separator,
        doc_cap=args.doc_cap,
        max_chars=args.max_chars,
        holdout_every=args.holdout,
        holdout_max_bytes=HOLDOUT_MAX_BYTES,
        # The standard library's test suite holds a few source files that are deliberately not
        # UTF-8: the default corpus skips them.
        skip_bad_lines=args.skip_bad_lines or stdlib_root is not None,
        on_read=on_read if show_progress else None,
        arrow=arrow,  # with pyarrow, Parquet batches reach Rust as Arrow arrays, without a str per document
    )

    # Until the outputs are written there is nothing to clean up, so Ctrl-C may end the process
    # at once, even while the counting threads are busy with a large batch.
    exit_on_ctrl_c = _ExitOnCtrlC(lambda: progress.bars)
    if getattr(args, "exit_on_ctrl_c", False):
        exit_on_ctrl_c.start()
    try:
        trainer = _core.Trainer(pattern, num_threads=args.threads)
        try:
            batches, buffer_size = _sized_stream(corpus)
            if verbose and show_progress:
                progress.write(f"Counting in batches of {buffer_size:,} documents")
            trainer.train_from_iterator(batches, n_ranks, buffer_size, min_frequency=args.min_frequency, progress=progress)
        except InputError as e:
            progress.abort()
            raise CLIError(str(e)) from None
        except RuntimeError as e:
            progress.abort()
            if str(e).startswith(SPLIT_FAILED):  # a custom pattern the regex engine gives up on
                raise CLIError(f"{_one_line(e)}; simplify --pattern (fewer nested repetitions, lookarounds)") from None
            raise
        except BaseException:
            progress.abort()
            raise
        progress.close()
        if corpus.documents == 0:
            if corpus.heldout:
                raise CLIError(
                    f"no documents to train on: all {len(corpus.heldout):,} were held out to measure compression "
                    f"(--holdout {args.holdout}); use a larger --holdout, or --holdout 0"
                )
            raise CLIError("no documents to train on: the inputs hold no text" + _bad_lines_note(corpus))

        stats = dict(trainer.stats)
        merges = list(trainer.get_merges())
        ranks = dict(trainer.get_mergeable_ranks())
        t_build = time.perf_counter()
        tokenizer = Tokenizer(ranks, pattern, specials)
        t_build = time.perf_counter() - t_build

        warnings: List[str] = []
        if len(ranks) < n_ranks:
            reason = early_stop_reason(args.min_frequency)
            warnings.append(f"training stopped at {len(ranks):,} ranks of the {n_ranks:,} asked for ({reason}); the vocabulary has {tokenizer.n_vocab:,} tokens")
        if corpus.bad_lines.count and stdlib_root is None:
            warnings.append(f"skipped {corpus.bad_lines.describe()}, e.g. {corpus.bad_lines.examples[0]}")

        t_eval = time.perf_counter()
        heldout = corpus.heldout
        if heldout:
            eval_docs, eval_label, eval_note = heldout, "held-out documents", ""
        else:
            why = "--holdout 0" if not args.holdout else f"fewer than {args.holdout} documents"
            eval_docs, eval_label, eval_note = corpus.sample, "training documents", f"(not held out: {why})"
        from .tokenizer import tiktoken_errors

        eval_bytes = sum(len(d.encode("utf-8")) for d in eval_docs)
        with tiktoken_errors():
            encoded = tokenizer.encoding.encode_ordinary_batch(eval_docs) if eval_docs else []
        eval_tokens = sum(len(ids) for ids in encoded)
        # A custom pattern may leave text unmatched: that text is never tokenized (nor trained
        # on), so compression counts only the bytes the tokens cover, and the user is told.
        covered = sum(len(tokenizer.encoding.decode_bytes(ids)) for ids in encoded)
        if covered != eval_bytes:
            warnings.append(
                f"the split pattern skips text: the tokens of the {eval_label} cover {covered:,} of their "
                f"{eval_bytes:,} bytes; the rest is dropped when encoding (and was not trained on). "
                r"End the pattern with an alternative such as |\s+|\S to keep every character"
            )
            eval_bytes = covered
        t_eval = time.perf_counter() - t_eval
    finally:
        exit_on_ctrl_c.stop()

    t_save = time.perf_counter()
    save_outputs(tokenizer, folder, tiktoken_file, args.force, output=args.output)
    t_save = time.perf_counter() - t_save

    if not quiet:
        for w in warnings:
            _stderr_line(f"{PROG}: warning: {w}")
    if not quiet and sys.stdout is not None:  # None: started with standard output closed
        report = format_report(
            corpus_label=corpus_label,
            corpus=corpus,
            stats=stats,
            merges=merges,
            ranks=ranks,
            tokenizer=tokenizer,
            pattern_label=pattern_label,
            eval_label=eval_label,
            eval_note=eval_note,
            eval_docs=len(eval_docs),
            eval_bytes=eval_bytes,
            eval_tokens=eval_tokens,
            t_build=t_build,
            t_eval=t_eval,
            t_save=t_save,
            t_total=time.perf_counter() - t_start,
            folder=folder,
            tiktoken_file=tiktoken_file,
        )
        sys.stdout.write(report)
        sys.stdout.flush()
    return 0


def _lean_arrow_memory() -> None:
    """Has pyarrow allocate with the system allocator rather than its default (mimalloc), unless
    ``ARROW_DEFAULT_MEMORY_POOL`` already chooses one. mimalloc keeps freed blocks for reuse, so
    reading a Parquet file record batch by record batch peaks higher: ``bpeforge train`` on
    kernel-code.parquet (300 MB) peaked at 461-469 MB with it and 367-398 MB with the system
    allocator, no slower (measured by hand, four runs each). pyarrow picks its allocator once, from
    that variable, when it is first needed (``set_memory_pool`` later leaves the Parquet reader's
    own allocations on the first one), so this sets the variable just for that moment, and does
    nothing if pyarrow is already in use in this process."""
    previous = os.environ.get("ARROW_DEFAULT_MEMORY_POOL")
    if "pyarrow" in sys.modules or previous:
        return
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    try:
        import pyarrow

        pyarrow.default_memory_pool()  # chosen now, for the rest of the process
    except ImportError:
        pass  # check_parquet says what to install
    finally:
        if previous is None:
            del os.environ["ARROW_DEFAULT_MEMORY_POOL"]
        else:
            os.environ["ARROW_DEFAULT_MEMORY_POOL"] = previous  # set but empty: left as it was


def _sized_stream(corpus) -> Tuple[Iterable, int]:
    """The corpus's batches, and how many documents the trainer should gather before counting
    them: 8192 (as rustbpe does) for short documents, fewer for long ones so that a gathered
    batch stays near BUFFER_BYTES whatever the documents' size. The first batch is read ahead
    to measure them. (The batch size does not change the result, only memory and speed.)"""
    stream = iter(corpus)
    first = next(stream, None)
    seen = corpus.documents + len(corpus.heldout)
    average = corpus.total_bytes / seen if seen else 1
    buffer_size = max(MIN_BUFFER, min(MAX_BUFFER, int(BUFFER_BYTES / max(average, 1.0))))
    return (itertools.chain([first], stream) if first is not None else stream), buffer_size


def _bad_lines_note(corpus) -> str:
    if not corpus.bad_lines.count:
        return ""
    return f" ({corpus.bad_lines.describe()} skipped, e.g. {corpus.bad_lines.examples[0]})"


def save_outputs(tokenizer, folder: Path, tiktoken_file: Path, force: bool, output: Optional[str] = None) -> None:
    """Writes the tokenizer folder and the ``.tiktoken`` file, each complete or not at all:
    the folder is written under a temporary name beside it and renamed at the end. ``output``:
    the ``-o`` as typed, whose spelling of the two paths tiktoken's cache may hold."""
    from .io import RANKS_FILE, forget_tiktoken_cache, named_like_ranks_file, ranks_to_tiktoken

    parent = folder.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CLIError(f"cannot create the output folder's parent {parent}: {e.strerror or e}") from None
    tag = f"{os.getpid()}"
    tmp = parent / f".{folder.name}.tmp-{tag}"
    old = parent / f".{folder.name}.old-{tag}"
    tmp_file = parent / f".{tiktoken_file.name}.tmp-{tag}"
    try:
        tokenizer.save(tmp)
        tmp_file.write_bytes(ranks_to_tiktoken(tokenizer.mergeable_ranks))
        with _sigint_deferred():  # the two renames happen together, or (on an error) not at all
            check_output(folder, tiktoken_file, force)  # again: it may have appeared while we trained
            if folder.exists():
                os.rename(folder, old)
            os.rename(tmp, folder)
            try:
                os.replace(tmp_file, tiktoken_file)
            except OSError:
                os.rename(folder, tmp)  # take the new folder back out, so that nothing is half-done
                raise
        replaced = [str(tiktoken_file), str(folder / RANKS_FILE)]
        if output:  # as typed (`./out/tok`, `a/../b`): tiktoken keys its cache by the string
            typed = output.rstrip("/") or output
            stem = typed[: -len(tiktoken_file.suffix)] if named_like_ranks_file(Path(typed)) else typed
            replaced += [stem + tiktoken_file.suffix, os.path.join(stem, RANKS_FILE)]
        for path in replaced:
            forget_tiktoken_cache(path)  # tiktoken would serve its copy of the old file
    except OSError as e:
        raise CLIError(f"cannot write the output {folder}: {e.strerror or e}") from None
    finally:
        if old.exists() or old.is_symlink():
            if folder.exists():
                if old.is_symlink():
                    old.unlink()  # a link to the replaced tokenizer: the link goes, not its target
                else:
                    shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(old, folder)  # put the replaced tokenizer back
        shutil.rmtree(tmp, ignore_errors=True)
        if tmp_file.exists():
            tmp_file.unlink()


class _ExitOnCtrlC:
    """While started, Ctrl-C ends the process at once with exit code 130 (after one line on
    stderr), even while the GIL is released in a long Rust call, which Python's own
    KeyboardInterrupt would only interrupt once the call returns. It works through
    ``signal.set_wakeup_fd`` and a thread watching that pipe; POSIX main thread only, a no-op
    elsewhere. :meth:`stop` before writing anything, so that nothing is cut half-written."""

    def __init__(self, bars_active: Callable[[], bool]) -> None:
        self._bars_active = bars_active
        self._lock = threading.Lock()
        self._active = False
        self._old_fd = -1
        self._write_fd = -1

    def start(self) -> None:
        if os.name != "posix" or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return  # someone else handles Ctrl-C (e.g. an embedding program): leave it alone
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        try:
            self._old_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(read_fd)
            os.close(write_fd)
            return
        self._write_fd = write_fd
        self._active = True
        threading.Thread(target=self._watch, args=(read_fd,), name="bpeforge-ctrl-c", daemon=True).start()

    def _watch(self, read_fd: int) -> None:
        try:
            while True:
                data = os.read(read_fd, 64)
                if not data:
                    return  # stop() closed the pipe
                if signal.SIGINT in data:
                    with self._lock:
                        if not self._active:
                            return
                        message = f"{PROG}: interrupted\n"
                        if self._bars_active():
                            message = "\n" + message  # below the bar
                        try:
                            os.write(2, message.encode())
                        finally:
                            os._exit(EXIT_INTERRUPTED)
        finally:
            os.close(read_fd)

    def stop(self) -> None:
        with self._lock:  # waits for a watcher that is already exiting
            if not self._active:
                return
            self._active = False
            signal.set_wakeup_fd(self._old_fd)
            os.close(self._write_fd)


class _sigint_deferred:
    """Holds back Ctrl-C for the duration of a few renames; raises KeyboardInterrupt after them
    if it was pressed meanwhile."""

    def __enter__(self):
        self._signal = signal
        self._pressed = False
        self._old = None
        if threading.current_thread() is threading.main_thread():
            def handler(signum, frame):
                self._pressed = True

            self._old = signal.signal(signal.SIGINT, handler)
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            self._signal.signal(self._signal.SIGINT, self._old)
        if self._pressed and exc[0] is None:
            raise KeyboardInterrupt


# ------------------------------------------------------------------------------ the report


def _token_text(token: bytes) -> str:
    r"""A token's bytes for display: as a str literal when they are UTF-8, else as a bytes
    literal (so that a lone byte never looks like a character).

    >>> print(_token_text(b"hi"), _token_text("é".encode()[:1]), _token_text(b"\xc2\xa0"))
    'hi' b'\xc3' '\xa0'
    """
    try:
        return repr(token.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(token)


def _peak_memory() -> Optional[int]:
    """Peak resident memory of this process in bytes, or None where it cannot be had."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _seconds(s: float) -> str:
    return f"{s:.2f} s" if s < 60 else f"{int(s // 60)} min {s % 60:.0f} s"


def format_report(
    *,
    corpus_label: str,
    corpus,
    stats: Dict,
    merges: List,
    ranks: Dict[bytes, int],
    tokenizer,
    pattern_label: str,
    eval_label: str,
    eval_note: str,
    eval_docs: int,
    eval_bytes: int,
    eval_tokens: int,
    t_build: float,
    t_eval: float,
    t_save: float,
    t_total: float,
    folder: Path,
    tiktoken_file: Path,
    show: int = 5,
) -> str:
    """The training report printed on stdout: one aligned ``name  value`` row per line (corpus,
    counts, pattern, timings, memory, the first and last ``show`` merges, compression, outputs)."""
    by_id = {rank: token for token, rank in ranks.items()}
    nbytes = stats.get("bytes", corpus.bytes)
    count_s = stats.get("count_seconds", 0.0)
    merge_s = stats.get("merge_seconds", 0.0)
    rows: List[Tuple[str, str]] = []
    rows.append(("corpus", corpus_label + (" (stopped at --max-chars)" if corpus.stopped_early else "")))
    held = f" (+ {len(corpus.heldout):,} held out)" if corpus.heldout else ""
    skipped = f" (skipped: {corpus.bad_lines.describe()})" if corpus.bad_lines.count else ""
    rows.append(("documents", f"{corpus.documents:,}{held}{skipped}"))
    rows.append(("characters", f"{corpus.chars:,}"))
    rows.append(("bytes", f"{nbytes:,} ({nbytes / 1e6:,.1f} MB)"))
    rows.append(("distinct spans", f"{stats.get('distinct_spans', 0):,}"))
    n_special = len(tokenizer.special_tokens)
    rows.append(("pattern", pattern_label))
    rows.append(
        (
            "merges",
            f"{len(merges):,} -> vocabulary {tokenizer.n_vocab:,} = 256 bytes + {len(ranks) - 256:,} merged tokens"
            + f" + {n_special} special token{'s' if n_special != 1 else ''}",
        )
    )
    mbps = f", {nbytes / 1e6 / count_s:,.1f} MB/s" if count_s > 0 else ""
    mps = f", {len(merges) / merge_s:,.0f} merges/s" if merge_s > 0 and merges else ""
    rows.append(("time", f"reading + counting {_seconds(count_s)}{mbps}; merging {_seconds(merge_s)}{mps}"))
    rows.append(
        ("", f"building the tokenizer {_seconds(t_build)}; evaluating {_seconds(t_eval)}; saving {_seconds(t_save)}; total {_seconds(t_total)}")
    )
    peak = _peak_memory()
    rows.append(("peak memory", f"{peak / 1e6:,.0f} MB (max RSS)" if peak is not None else "n/a"))

    def merge_row(m) -> str:
        left, right, token, count = m
        return f"({left}, {right}) -> {token} {_token_text(by_id.get(token, b''))} ({count:,})"

    if merges:
        first = merges[:show]
        last = merges[max(show, len(merges) - show) :]  # none listed twice
        rows.append(("first merges", merge_row(first[0])))
        rows.extend(("", merge_row(m)) for m in first[1:])
        if last:
            if len(merges) > 2 * show:
                rows.append(("", "..."))
            rows.append(("last merges", merge_row(last[0])))
            rows.extend(("", merge_row(m)) for m in last[1:])
    if eval_tokens:
        rows.append(
            (
                "compression",
                f"{eval_bytes / eval_tokens:.2f} bytes/token on {eval_docs:,} {eval_label} "
                f"({eval_bytes:,} bytes -> {eval_tokens:,} tokens)",
            )
        )
        if eval_note:
            rows.append(("", eval_note))
    else:
        rows.append(("compression", "n/a (no text to measure it on)"))
    rows.append(("saved", f"{folder}/ (bpeforge.Tokenizer.load) and {tiktoken_file}"))
    width = max(len(name) for name, _ in rows)
    return "".join(f"{name:<{width}}  {value}\n" for name, value in rows)
