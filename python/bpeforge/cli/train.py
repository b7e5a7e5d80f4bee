"""``bpeforge train``: options, inputs, training (through :mod:`bpeforge._training`, as the API
trains), the compression measured on held-out documents, the outputs and the report."""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, List, Optional, Tuple

from .. import huggingface, _inputs as inputs, _io as io
from .._core import DocumentReader
from .._base import NANOCHAT_SPECIAL_TOKENS
from .._core import SpanCounts
from .._errors import SPLIT_FAILED, InputError, NoTextError, OptionError
from .._extending import extension_recipe
from ..huggingface import huggingface_tokenizer_json, split_step
from .._inputs import Corpus, Source
from .._patterns import PATTERNS, pattern_label
from .._progress import ConsoleProgress, is_terminal
from .._tokenizer import Tokenizer
from .._training import Recipe, TrainedRanks, Training
from .arguments import EXIT_USAGE, MAX_INT64, PROG, CLIError, int_at_least, one_line, stderr_line
from .outputs import check_output, output_paths, save_outputs
from .ray import RAY_HELP, add_ray_options
from .report import Timings, corpus_rows, format_report, measure_compression
from .signals import after_saving, ctrl_c_ends_the_process

DEFAULT_VOCAB_SIZE = 8192
HOLDOUT_EVERY = 100
HOLDOUT_MAX_BYTES = 1_000_000
# Text gathered before each parallel counting pass, and its bounds in documents. Small enough
# that the three batches in flight (being read, queued, being counted) stay small; a batch
# does not change the result, only memory and speed.
BUFFER_BYTES = 8_000_000
MIN_BUFFER, MAX_BUFFER = 64, 8192
# On a terminal without -v, the merge loop's per-percent lines (beside its bar) start only once
# it has run this many seconds.
MERGE_LINES_AFTER = 3.0
# The command line's flag for each option of a training (bpeforge._training.Recipe, and threads).
FLAGS = {
    "vocab_size": "--vocab-size",
    "pattern": "--pattern",
    "special_tokens": "--special-tokens",
    "num_threads": "--threads",
    "min_frequency": "--min-frequency",
    "max_token_length": "--max-token-length",
    "max_token_chars": "--max-token-chars",
    "doc_cap": "--doc-cap",
    "max_token_words": "--max-token-words",
    "superword_transition": "--superword-transition",
    "superword_pattern": "--superword-pattern",
    "reserve_special_tokens": "--reserve-special-tokens",
    "pad_vocab_to_multiple_of": "--pad-vocab-to-multiple-of",
    "tie_break": "--tie-break",
    "initial_alphabet": "--initial-alphabet",
    "limit_alphabet": "--limit-alphabet",
    "parity": "--parity",
    "parity_window": "--parity-window",
    "parity_alpha": "--parity-alpha",
    "global_merges": "--global-merges",
}

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
  Empty documents are skipped. Every 100th document is held out of training to measure
  compression on, if it fits in what is left of a 1 MB budget (a larger one is trained on,
  and the next 100th tried): training sees all of the input but 1 MB at most, so 99% or
  more of a corpus of 100 MB or more. --holdout 0 trains on everything, and compression is
  measured on the start of the training text (1 MB at most).

output:
  -o DIR writes the folder DIR/ that bpeforge, tiktoken, tokenizers, transformers and nanochat
  load (tokenizer.tiktoken, tokenizer.json, tokenizer_config.json, token_bytes.npy, bpeforge.json)
  and DIR.tiktoken beside it, a link to DIR/tokenizer.tiktoken (for load_tiktoken_bpe). An -o
  ending in .tiktoken names that link, and the folder is the same name without it. Both appear
  only once training succeeded (built in a temporary folder, then switched in one step); an
  existing output is replaced only with --force, and a folder only if it holds nothing else.
  With --tie-break huggingface, DIR/ holds the tokenizer.json HuggingFace's BpeTrainer writes
  for the same training, and DIR.tiktoken is written only if every byte is in its alphabet
  (--initial-alphabet all).

progress and errors:
  Progress (reading: documents, MB, MB/s; merging: a bar, and a line per 1% of the merges
  with -v or once merging has run 3 s) goes to stderr when it is a terminal, or always with
  -v; the report goes to stdout; -q prints errors only. The tokenizer is saved before the
  report is made: a compression that cannot be measured is a line of the report. An error
  is one line on stderr; exit codes: 1 data or output problem, 2 bad option, 130
  interrupted, nothing written (once the tokenizer is saved, Ctrl-C skips the rest of the
  report, says so, and exits 0).

examples:
  bpeforge train --vocab-size 32768 -o out/tok data/*.parquet
  bpeforge train --vocab-size 8192 -o out/tok corpus.txt --pattern nanochat --special-tokens none
  bpeforge train -o out/demo
  bpeforge train --extend out/tok --vocab-size 40000 -o out/tok+code src/
"""


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
    """``None``/``nanochat``: nanochat's nine; ``none`` or empty: none; else a comma-separated
    list (the names themselves are checked by training, as the API's are).

    >>> parse_special_tokens("none"), parse_special_tokens("<|a|>, <|b|>")
    ([], ['<|a|>', '<|b|>'])
    """
    if text is None or text.strip().lower() == "nanochat":
        return list(NANOCHAT_SPECIAL_TOKENS)
    if text.strip().lower() in ("none", ""):
        return []
    names = [n.strip() for n in text.split(",")]
    if any(not n for n in names):
        raise CLIError(f"--special-tokens {text!r}: an empty name (a stray comma?)", EXIT_USAGE)
    return names


def parse_initial_alphabet(text: Optional[str]) -> Optional[bytes]:
    """``--initial-alphabet``: ``all`` for every byte, else the bytes of the text (UTF-8).

    >>> len(parse_initial_alphabet("all")), parse_initial_alphabet("ab")
    (256, b'ab')
    """
    if text is None:
        return None
    return bytes(range(256)) if text == "all" else text.encode("utf-8", "surrogateescape")


def describe_pattern(text: Optional[str], regex: str) -> str:
    """How the report names the split pattern of ``--pattern text`` (whose regex is ``regex``)."""
    if text is None:
        return "gpt4 (the default)"
    return text if text in PATTERNS else pattern_label(regex)


def set_up_training(args: argparse.Namespace) -> Training:
    """The training of ``args``, its recipe checked before any input is looked at; a bad option
    is a usage error naming its flag. With ``--extend BASE`` (train's own: other commands that
    train as it does, such as ``sweep``, have no such option) the base is read first; its
    special tokens are kept, so ``--special-tokens`` is refused, and its split pattern unless
    ``--pattern`` names another. (For span counts, see :func:`set_up_training_on`.)"""
    base = None
    if getattr(args, "extend", None) is not None:
        if getattr(args, "tie_break", None) == "huggingface":
            raise CLIError(
                "--tie-break huggingface cannot be used with --extend: an extension keeps the base's ids and goes on with "
                "bpeforge's tie-break (HuggingFace's trains from the single bytes only, and numbers them its own way)",
                EXIT_USAGE,
            )
        given = (("--special-tokens", args.special_tokens), ("--tie-break", getattr(args, "tie_break", None)),
                 ("--initial-alphabet", getattr(args, "initial_alphabet", None)), ("--limit-alphabet", getattr(args, "limit_alphabet", None)))
        for flag, value in given:
            if value is not None:
                raise CLIError(f"{flag} cannot be used with --extend: the base's is kept", EXIT_USAGE)
        base = load_base(args.extend)
    try:
        if base is not None:
            for flag, value in (("--superword-transition", args.superword_transition), ("--superword-pattern", args.superword_pattern)):
                if value is not None:
                    raise CLIError(f"{flag} cannot be used with --extend: extend with --pattern superword instead", EXIT_USAGE)
            for flag, value in (("--reserve-special-tokens", args.reserve_special_tokens), ("--pad-vocab-to-multiple-of", args.pad_vocab_to_multiple_of)):
                if value:
                    raise CLIError(f"{flag} cannot be used with --extend: the base's special tokens (and reserved ones) are kept", EXIT_USAGE)
            recipe = extension_recipe(
                base, args.vocab_size, pattern=args.pattern, min_frequency=args.min_frequency,
                max_token_length=args.max_token_length, doc_cap=args.doc_cap, max_token_words=args.max_token_words, max_token_chars=args.max_token_chars,
            )
        else:
            recipe = Recipe(
                args.vocab_size,
                pattern=args.pattern,
                special_tokens=parse_special_tokens(args.special_tokens),
                min_frequency=args.min_frequency,
                max_token_length=args.max_token_length,
                max_token_chars=args.max_token_chars,
                doc_cap=args.doc_cap,
                max_token_words=args.max_token_words,
                superword_transition=args.superword_transition,
                superword_pattern=args.superword_pattern,
                reserve_special_tokens=args.reserve_special_tokens,
                pad_vocab_to_multiple_of=args.pad_vocab_to_multiple_of,
                tie_break=getattr(args, "tie_break", None),
                initial_alphabet=parse_initial_alphabet(getattr(args, "initial_alphabet", None)),
                limit_alphabet=getattr(args, "limit_alphabet", None),
                parity=getattr(args, "parity", None),
                parity_window=getattr(args, "parity_window", None),
                parity_alpha=getattr(args, "parity_alpha", None),
                global_merges=getattr(args, "global_merges", None),
            )
            if recipe.tie_break == "huggingface":
                try:
                    split_step(recipe.pattern)  # the tokenizer.json's Split, refused before training rather than after
                except ValueError as e:
                    raise CLIError(f"--tie-break huggingface: --pattern: {one_line(e)}", EXIT_USAGE) from None
        return Training(recipe, base=base, num_threads=args.threads)
    except OptionError as e:
        raise CLIError(name_the_flag(e), EXIT_USAGE) from None


def load_base(path: str) -> Tokenizer:
    """The tokenizer ``--extend PATH`` extends: a folder :meth:`Tokenizer.save` wrote, or one
    ``train --tie-break huggingface`` wrote (HuggingFace's ``tokenizer.json``, no ``bpeforge.json``:
    read as :meth:`Tokenizer.from_huggingface` reads it, HuggingFace's ids kept), or HuggingFace's
    own. A :class:`CLIError` says why one cannot be read."""
    folder = Path(path)
    if folder.is_dir() and not (folder / io.META_FILE).exists() and (folder / huggingface.TOKENIZER_FILE).is_file():
        try:
            return Tokenizer.from_huggingface(folder)  # (its vocabulary never a Python object per entry)
        except (OSError, ValueError) as e:
            refusal = e
        try:  # why not, read whole: only now, and only to say it
            _, config = huggingface.read_json(folder)
        except (OSError, ValueError):
            config = None  # not HuggingFace's (a version-1 bpeforge folder, say): Tokenizer.load says what it is
        if config is not None:
            vocab = (config.get("model") or {}).get("vocab")
            bytes_seen = {huggingface.from_byte_level(t) for t in vocab} if isinstance(vocab, dict) else set()
            missing = sum(bytes([b]) not in bytes_seen for b in range(256))
            if missing:
                raise CLIError(
                    f"--extend {path}: HuggingFace's tokenizer.json there lacks {missing} of the 256 single bytes "
                    "(as --tie-break huggingface trains without --initial-alphabet all), and an extension, as "
                    "tiktoken, needs every one"
                ) from None
            raise CLIError(f"--extend {path}: cannot extend HuggingFace's tokenizer.json there: {one_line(refusal)}") from None
    try:
        return Tokenizer.load(path)
    except (OSError, ValueError) as e:
        raise CLIError(f"--extend {path}: cannot read the base tokenizer: {one_line(e)}") from None


def set_up_training_on(args: argparse.Namespace, counts: SpanCounts) -> Training:
    """:func:`set_up_training` for training on ``counts``: the pattern and ``doc_cap`` they were
    made with, where the flags name none (another than theirs is refused when training starts,
    naming the flag)."""
    if args.pattern is None and getattr(args, "extend", None) is None:
        args.pattern = counts.pattern
    if args.doc_cap is None:
        args.doc_cap = counts.options.get("doc_cap")
    return set_up_training(args)


def name_the_flag(e: OptionError) -> str:
    """``e``'s message on one line, naming the command line's flag for its option: ``vocab_size
    must be ...`` becomes ``--vocab-size must be ...``; another message is put after ``FLAG: ``.

    >>> name_the_flag(OptionError("num_threads", "num_threads must be between 1 and 1024, got 0"))
    '--threads must be between 1 and 1024, got 0'
    >>> name_the_flag(OptionError("pattern", "'gtp4': no such preset"))
    "--pattern: 'gtp4': no such preset"
    """
    message = " ".join(str(e).split())
    flag = FLAGS.get(e.option, e.option)
    if message.startswith(e.option + " "):
        return flag + message[len(e.option) :]
    return f"{flag}: {message}"


@dataclass
class Inputs:
    """The files ``bpeforge train`` reads, and how."""

    sources: List[Source]
    left_out: List[Tuple[Source, Source]]
    """(a file named again, the one it is the same file as): read once."""
    separator: str
    stdlib_root: Optional[Path]
    """Where the standard library is, when no input was given and it is the corpus."""
    arrow: bool
    """Parquet files are read with pyarrow (as Arrow arrays)."""

    @property
    def label(self) -> str:
        """The corpus as the report and the progress name it."""
        if self.stdlib_root is not None:
            return (
                f"the Python {sys.version.split()[0]} standard library ({len(self.sources):,} .py files under "
                f"{self.stdlib_root}, one document per file, empty ones skipped; no input was given)"
            )
        formats = sorted({s.format for s in self.sources})
        return f"{len(self.sources):,} file{'s' if len(self.sources) != 1 else ''} ({', '.join(formats)})"


def find_inputs(args: argparse.Namespace, check_columns: bool = True) -> Inputs:
    """The input files of ``args`` (or the standard library's), each Parquet file's column
    checked before training rather than hours into it (unless not ``check_columns``: on Ray,
    the workers read the files, and check them)."""
    stdlib_root = None
    left_out: List[Tuple[Source, Source]] = []
    try:
        if args.inputs:
            sources, left_out = inputs.unique_sources(inputs.expand_inputs(args.inputs, args.input_format))
            separator = "\n" if args.doc_separator is None else decode_separator(args.doc_separator)
        else:
            stdlib_root, sources = inputs.stdlib_sources()
            if not sources:
                raise CLIError(f"no input given, and no standard library .py files were found under {stdlib_root}")
            separator = "" if args.doc_separator is None else decode_separator(args.doc_separator)
        arrow = args.parquet_reader == "pyarrow"
        if arrow and any(source.format == "parquet" for source in sources):
            lean_arrow_memory()
        for source in sources if check_columns else []:
            if source.format == "parquet":
                inputs.check_parquet(source, args.text_column, arrow=arrow)
    except InputError as e:
        raise CLIError(str(e)) from None
    return Inputs(sources, left_out, separator, stdlib_root, arrow)


def training_progress(args: argparse.Namespace) -> Tuple[ConsoleProgress, bool]:
    """The progress display on stderr, and whether it shows anything: not with ``-q``; bars on
    a terminal, log lines there or with ``-v`` (a line per 1% of the merges with ``-v``)."""
    show = not args.quiet and (args.verbose or is_terminal(sys.stderr))
    progress = ConsoleProgress(
        file=sys.stderr, bars=None if show else False, log=show, merge_lines_after=0.0 if args.verbose else MERGE_LINES_AFTER
    )
    return progress, show


def start_progress(args: argparse.Namespace, found: Inputs, doing: str = "Training on") -> Tuple[ConsoleProgress, bool]:
    """The progress display (and whether it shows anything), with the notes said before
    reading: a file read once though named twice, the corpus (after ``doing``), with ``-v``
    the files."""
    quiet, verbose = args.quiet, args.verbose
    if found.left_out and not quiet:
        again, first = found.left_out[0]
        more = f" (and {len(found.left_out) - 1:,} more)" if len(found.left_out) > 1 else ""
        stderr_line(f"{PROG}: note: {again.path} is the file {first.path}, read once{more}")
    progress, show = training_progress(args)
    if show:
        progress.write(f"{doing} {found.label}")
        if verbose:
            for i, source in enumerate(found.sources[:1000]):
                progress.write(f"  {i}: {source}")
            if len(found.sources) > 1000:
                progress.write(f"  ... and {len(found.sources) - 1000:,} more")
    elif found.stdlib_root is not None and not quiet:
        stderr_line(f"{PROG}: no input given, {doing.lower()} {found.label.split(' (')[0]}")
    return progress, show


def open_corpus(args: argparse.Namespace, found: Inputs, progress: ConsoleProgress, show: bool) -> Corpus:
    """The documents of the inputs, with held-out documents set aside as they are read."""
    n_sources = len(found.sources)

    def on_read(corpus: Corpus, source: Source) -> None:
        note = f"file {corpus.files_started}/{n_sources}" if n_sources > 1 else None
        progress.reading(corpus.documents + len(corpus.heldout), corpus.total_bytes, note)

    return Corpus(
        found.sources,
        text_column=args.text_column,
        doc_separator=found.separator,
        doc_cap=args.doc_cap,
        max_chars=args.max_chars,
        holdout_every=args.holdout,
        holdout_max_bytes=HOLDOUT_MAX_BYTES,
        # The standard library's test suite holds a few source files that are deliberately not
        # UTF-8: the default corpus skips them.
        skip_bad_lines=args.skip_bad_lines or found.stdlib_root is not None,
        on_read=on_read if show else None,
        arrow=found.arrow,  # with pyarrow, Parquet batches reach Rust as Arrow arrays, without a str per document
        readers=True,  # text and JSONL files reach Rust as readers, read there without a str per document
    )


def train_on(corpus: Corpus, training: Training, progress: ConsoleProgress, say_batches: bool) -> TrainedRanks:
    """Trains on the corpus's documents; a problem with the data is a :class:`CLIError`."""
    try:
        batches, buffer_size = sized_stream(corpus)
        if say_batches:
            progress.write(f"Counting in batches of {buffer_size:,} documents")
        return training.run(batches, buffer_size, progress)
    except InputError as e:
        raise CLIError(str(e)) from None
    except OptionError as e:  # the recipe does not go with the base (a --vocab-size below its n_vocab)
        raise CLIError(name_the_flag(e), EXIT_USAGE) from None
    except ValueError as e:
        if training.base is not None:  # a base that cannot be extended (see docs/extend.md)
            raise CLIError(f"--extend: {one_line(e)}") from None
        raise
    except RuntimeError as e:
        if str(e).startswith(SPLIT_FAILED):  # a custom pattern the regex engine gives up on
            raise CLIError(f"{one_line(e)}; simplify --pattern (fewer nested repetitions, lookarounds)") from None
        raise


def check_trained_on_something(corpus: Corpus, holdout: int) -> None:
    """Refuses a run that had no document to train on."""
    if corpus.documents:
        return
    if corpus.heldout:
        raise CLIError(
            f"no documents to train on: all {len(corpus.heldout):,} were held out to measure compression "
            f"(--holdout {holdout}); use a larger --holdout, or --holdout 0"
        )
    note = f" ({corpus.bad_lines.describe()} skipped, e.g. {corpus.bad_lines.examples[0]})" if corpus.bad_lines.count else ""
    raise CLIError("no documents to train on: the inputs hold no text" + note)


def train_on_counts(
    training: Training, counts: SpanCounts, progress: ConsoleProgress, where: Optional[str] = None, superword_counts: Optional[SpanCounts] = None
) -> TrainedRanks:
    """``training`` run on span counts, its errors as one line: a bad option (or one the counts
    were not made with) names its flag, and counts with nothing to train on name ``where`` (the
    counts' path), if given."""
    try:
        return training.run(counts=counts, progress=progress, superword_counts=superword_counts)
    except OptionError as e:
        raise CLIError(name_the_flag(e), EXIT_USAGE) from None
    except NoTextError as e:
        raise CLIError(f"{where}: {e}" if where else str(e)) from None
    except ValueError as e:  # a base that cannot be extended (see docs/extend.md)
        if training.base is None:
            raise
        raise CLIError(f"--extend: {one_line(e)}") from None


def build_tokenizer(trained: TrainedRanks) -> Tuple[Tokenizer, float]:
    """The tokenizer of the trained ranks, and the seconds building it took (for the report);
    extended ranks whose id layout a Tokenizer does not take are a :class:`CLIError`."""
    t_build = time.perf_counter()
    try:
        tokenizer = trained.build(Tokenizer)
    except ValueError as e:
        raise CLIError(f"the extended ranks make no tokenizer: {one_line(e)}") from None
    return tokenizer, time.perf_counter() - t_build


def huggingface_outputs(trained: TrainedRanks) -> Tuple[Optional[dict], Optional[str]]:
    """For a training with HuggingFace's tie-break: the ``tokenizer.json`` HuggingFace's
    training writes, and why there is no ``.tiktoken`` (None if tiktoken can express the
    ranks). ``(None, None)`` for bpeforge's tie-break."""
    if trained.tie_break != "huggingface":
        return None, None
    try:
        config = huggingface_tokenizer_json(trained)
    except ValueError as e:
        raise CLIError(f"--tie-break huggingface: {one_line(e)}") from None
    missing = trained.missing_bytes
    if missing:
        return config, (
            f"no .tiktoken written: {len(missing)} single bytes are not in HuggingFace's alphabet (never seen, or cut by "
            "--limit-alphabet), and tiktoken needs all 256 (--initial-alphabet all keeps them)"
        )
    return config, None


def save_huggingface_only(args: argparse.Namespace, trained: TrainedRanks, config: Optional[dict], why: str) -> int:
    """Saves and reports a training whose tokenizer only HuggingFace's format holds (``config``,
    :func:`huggingface_outputs`' ``tokenizer.json``, is given whenever there is a ``why``)."""
    assert config is not None
    folder, tiktoken_file = output_paths(args.output)
    save_outputs(None, folder, tiktoken_file, args.force, output=args.output, huggingface_json=config)
    if not args.quiet:
        print(f"Trained {len(trained.ranks):,} ranks and {len(trained.special_tokens)} special tokens (HuggingFace's tie-break and ids)")
        print(f"Saved {folder / 'tokenizer.json'} (tokenizers.Tokenizer.from_file)")
        print(why)
    return 0


def stopped_early_warnings(trained: TrainedRanks, tokenizer: Tokenizer) -> List[str]:
    """The report's warning when training made fewer ranks than asked (none otherwise)."""
    if not trained.stopped_early:
        return []
    return [
        f"training stopped at {len(trained.ranks):,} ranks of the {trained.ranks_asked:,} asked for "
        f"({trained.stop_reason}); the vocabulary has {tokenizer.n_vocab:,} tokens"
    ]


def run_train(args: argparse.Namespace) -> int:
    """Runs ``bpeforge train`` on INPUTs with parsed ``args``: checks the options, reads the inputs,
    trains, saves the tokenizer and prints the report; returns the exit code. Raises
    :class:`CLIError`. (Training on span counts is :mod:`.train_counts`, on a mix :mod:`.mix`.)"""
    t_start = time.perf_counter()
    if args.superword_counts is not None:
        raise CLIError("--superword-counts goes with --from-counts (training on INPUTs counts both stages itself)", EXIT_USAGE)
    training = set_up_training(args)  # everything that can be checked before reading a byte
    folder, tiktoken_file = output_paths(args.output)
    check_output(folder, tiktoken_file, args.force)
    found = find_inputs(args)
    progress, show = start_progress(args, found)
    corpus = open_corpus(args, found, progress, show)

    # Until the outputs are written there is nothing to clean up, so Ctrl-C may end the process
    # at once, even while the counting threads are busy with a large batch.
    with ctrl_c_ends_the_process(args, lambda: progress.bars):
        trained = train_on(corpus, training, progress, args.verbose and show)
        check_trained_on_something(corpus, args.holdout)
        hf_json, no_tiktoken = huggingface_outputs(trained)
        if no_tiktoken is not None:
            return save_huggingface_only(args, trained, hf_json, no_tiktoken)
        tokenizer, t_build = build_tokenizer(trained)  # no NoTextError: the check above ruled it out
        warnings: List[str] = stopped_early_warnings(trained, tokenizer)
        if corpus.bad_lines.count and found.stdlib_root is None:
            warnings.append(f"skipped {corpus.bad_lines.describe()}, e.g. {corpus.bad_lines.examples[0]}")

    return save_then_report(
        args, tokenizer, hf_json,
        lambda t_save: print_report(args, found, corpus, trained, tokenizer, warnings, folder, tiktoken_file, (t_start, t_build, t_save)),
    )


def save_then_report(
    args: argparse.Namespace,
    tokenizer: Tokenizer,
    hf_json: Optional[dict],
    report: Callable[[float], int],
    extra_outputs: Optional[Callable[[], None]] = None,
) -> int:
    """The end of a training (on INPUTs, on span counts, on a mix, parity-aware): saves
    ``tokenizer`` (with HuggingFace's ``tokenizer.json`` if ``hf_json``) as ``-o`` says, then
    writes ``extra_outputs`` (``--quiet`` or not: parity's plot) and runs ``report`` (given the
    seconds saving took; it prints the warnings and the report, returns the exit code) unless
    ``--quiet``. The tokenizer is saved: from there on everything is only the extras and the
    report, which Ctrl-C skips (:func:`after_saving`)."""
    folder, tiktoken_file = output_paths(args.output)
    t_save = save_outputs(tokenizer, folder, tiktoken_file, args.force, output=args.output, huggingface_json=hf_json)

    def rest() -> int:
        if extra_outputs is not None:
            extra_outputs()
        return 0 if args.quiet else report(t_save)

    return after_saving(saved_message(folder, tiktoken_file), rest)


def saved_message(folder: Path, tiktoken_file: Path) -> str:
    """What is saved, for the lines that follow the save (a report that fails, Ctrl-C)."""
    return f"the tokenizer is saved in {folder}/ and {tiktoken_file}"


def print_report(
    args: argparse.Namespace,
    found: Inputs,
    corpus: Corpus,
    trained: TrainedRanks,
    tokenizer: Tokenizer,
    warnings: List[str],
    folder: Path,
    tiktoken_file: Path,
    times: Tuple[float, float, float],
) -> int:
    """Measures the compression, prints the warnings and the report; returns the exit code.
    Runs once the tokenizer is saved, and cannot cost it: a compression that cannot be measured
    is a line of the report, a report that fails a warning (Ctrl-C: :func:`after_saving`).
    ``times``: when the run started, seconds building the tokenizer, seconds saving it."""
    t_start, t_build, t_save = times
    saved = saved_message(folder, tiktoken_file)
    t_eval = time.perf_counter()
    compression = measure_compression(trained.ranks, trained.pattern, corpus, args.holdout, warnings)
    t_eval = time.perf_counter() - t_eval
    for w in warnings:
        stderr_line(f"{PROG}: warning: {w}")
    if sys.stdout is None:  # started with standard output closed
        return 0
    try:
        report = format_report(
            trained_on=corpus_rows(found.label, corpus, trained.stats),
            nbytes=trained.stats.get("bytes", corpus.bytes),
            stats=trained.stats,
            merges=trained.merges(),
            ranks=trained.ranks,
            tokenizer=tokenizer,
            pattern_label=describe_pattern(args.pattern, tokenizer.pattern) if getattr(args, "extend", None) is None else f"the base's, {pattern_label(tokenizer.pattern)}",
            compression=compression,
            timings=Timings(t_build, t_eval, t_save, time.perf_counter() - t_start),
            folder=folder,
            tiktoken_file=tiktoken_file,
        )
    except Exception as e:  # noqa: BLE001 - a bug in the report must not hide a saved tokenizer
        stderr_line(f"{PROG}: warning: {saved}, but the report failed: {one_line(e)} ({type(e).__name__})")
        return 0
    sys.stdout.write(report)
    sys.stdout.flush()
    return 0


def lean_arrow_memory() -> None:
    """Has pyarrow allocate with the system allocator rather than its default (mimalloc), unless
    ``ARROW_DEFAULT_MEMORY_POOL`` already chooses one. mimalloc keeps freed blocks for reuse, so
    reading a Parquet file record batch by record batch peaks higher than with the system
    allocator, which is no slower. pyarrow picks its allocator once, from
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


def sized_stream(corpus: Corpus) -> Tuple[Iterable[Any], int]:
    """The corpus's batches, and how many documents the trainer should gather before counting
    them: 8192 (as rustbpe does) for short documents, fewer for long ones so that a gathered
    batch stays near BUFFER_BYTES whatever the documents' size. The first batch is read ahead
    to measure them. (The batch size does not change the result, only memory and speed.)"""
    stream = iter(corpus)
    first = next(stream, None)
    if isinstance(first, DocumentReader):  # not read yet: the counter's batches end at 2 MiB anyway
        return itertools.chain([first], stream), MAX_BUFFER
    seen = corpus.documents + len(corpus.heldout)
    average = corpus.total_bytes / seen if seen else 1
    buffer_size = max(MIN_BUFFER, min(MAX_BUFFER, int(BUFFER_BYTES / max(average, 1.0))))
    return (itertools.chain([first], stream) if first is not None else stream), buffer_size


# ------------------------------------------------------------------------------ the parser


def add_train_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``train`` subcommand and its options to ``subparsers``; returns its parser."""
    p = subparsers.add_parser(
        "train",
        help="train a tokenizer on text, JSONL or Parquet files",
        description="Train a byte-level BPE tokenizer and save it (bpeforge folder + .tiktoken file).",
        epilog=TRAIN_EPILOG + "\n" + RAY_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="files, folders or globs (default: this Python's standard library)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder (DIR.tiktoken is written beside it)")
    p.add_argument(
        "--vocab-size",
        type=int_at_least(-MAX_INT64, "--vocab-size"),  # the range is training's to check and say
        default=DEFAULT_VOCAB_SIZE,
        metavar="N",
        help=f"final vocabulary size, 256 bytes + merges + special tokens (default {DEFAULT_VOCAB_SIZE})",
    )
    add_reading_and_training_arguments(p)
    p.add_argument("--extend", metavar="BASE", help="extend the tokenizer saved in folder BASE with new tokens, every id of it kept (continued BPE; "
                   "its split pattern and special tokens are kept); --vocab-size is then the final n_vocab")
    p.add_argument("--from-counts", metavar="PATH", help="train on span counts (a file or folder `bpeforge count` wrote) instead of INPUTs")
    p.add_argument("--superword-counts", metavar="PATH", help="with --from-counts and --superword-transition: the same texts' span counts made with the superword pattern (bpeforge count --pattern superword)")
    p.add_argument("--eval-text", metavar="FILE", help="with --from-counts or --ray: a text file to measure compression on (its first 1 MB)")
    add_ray_options(p)
    p.set_defaults(run=run_train)
    return p


def add_reading_and_training_arguments(p: argparse.ArgumentParser) -> None:
    """Adds the options of how the inputs are read and trained on, the output's --force and the
    verbosity: what ``train`` shares with the commands that train as it does (``sweep``)."""
    add_input_options(p)
    p.add_argument("--pattern", metavar="PRESET|REGEX", help="split pattern: a preset (gpt4, cl100k_base, nanochat, gpt2, r50k_base, p50k_base, o200k_base) or a regex (default gpt4)")
    p.add_argument("--special-tokens", metavar="none|A,B,...", help="special tokens after the ranks: nanochat (default, 9 tokens), none, or a comma-separated list")
    p.add_argument("--reserve-special-tokens", type=int_at_least(0, "--reserve-special-tokens"), default=0, metavar="N", help="N unused special tokens after the others, <|reserved_special_token_0|>... (counted in --vocab-size; default 0)")
    p.add_argument("--pad-vocab-to-multiple-of", type=int_at_least(1, "--pad-vocab-to-multiple-of"), metavar="M", help="round the vocabulary up to a multiple of M with more reserved special tokens")
    p.add_argument("--min-frequency", type=int_at_least(1, "--min-frequency"), default=1, metavar="N", help="stop when the best pair occurs fewer than N times (default 1)")
    p.add_argument("--max-token-length", type=int_at_least(2, "--max-token-length"), metavar="N", help="never make a token longer than N bytes: skip such merges (default: no limit)")
    p.add_argument("--max-token-words", type=int_at_least(1, "--max-token-words"), metavar="N", help="never make a token of more than N words (runs of non-space bytes; default: no limit, 4 with --superword-transition)")
    p.add_argument("--superword-transition", type=int_at_least(1, "--superword-transition"), metavar="T", help="superword tokens (SuperBPE): train to T ids, then go on over spans that may hold several words (docs/superword.md)")
    p.add_argument("--superword-pattern", metavar="PRESET|REGEX", help="split pattern of the superword stage (default: superword)")
    p.add_argument("--max-token-chars", type=int_at_least(2, "--max-token-chars"), metavar="N", help="never make a token of more than N characters (UTF-8; as CJK text wants): skip such merges (default: no limit)")
    p.add_argument("--doc-cap", type=int_at_least(1, "--doc-cap"), metavar="N", help="crop each document to its first N characters (nanochat uses 10000)")
    p.add_argument("--tie-break", choices=["bpeforge", "huggingface"], help="break ties between pairs of equal counts by bpeforge's ids (default) or as HuggingFace's BpeTrainer does, "
                   "with its ids (special tokens first, then the bytes seen, then the merges), writing its tokenizer.json")
    p.add_argument("--initial-alphabet", metavar="all|TEXT", help="with --tie-break huggingface: bytes always in the alphabet, every one (all) or those of TEXT")
    p.add_argument("--limit-alphabet", type=int_at_least(0, "--limit-alphabet"), metavar="N", help="with --tie-break huggingface: keep the N most frequent bytes of the alphabet")
    p.add_argument("--max-chars", type=int_at_least(1, "--max-chars"), metavar="N", help="stop reading after N characters in all")
    p.add_argument("--holdout", type=int_at_least(0, "--holdout"), default=HOLDOUT_EVERY, metavar="N", help=f"hold out every Nth document to measure compression, if it fits in what is left of 1 MB (a larger one is trained on); 0 = none (default {HOLDOUT_EVERY})")
    p.add_argument("--threads", type=int_at_least(1, "--threads"), metavar="N", help="threads for training: counting, and merging (default: all cores)")
    p.add_argument("--force", action="store_true", help="replace an existing output folder / .tiktoken file")
    verbosity = p.add_mutually_exclusive_group()
    verbosity.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    verbosity.add_argument("-v", "--verbose", action="store_true", help="show progress even when stderr is not a terminal, with a line per 1%% of the merges, and list the inputs")


def add_input_options(p: argparse.ArgumentParser) -> None:
    """The options saying how to read the inputs (``train``, ``sweep`` and ``count`` share them)."""
    p.add_argument("--input-format", choices=["text", "jsonl", "parquet"], help="format of every input file named (default: from the extension); in folders, only the files "
                   "whose extension is of that format are read, hidden ones skipped")
    p.add_argument("--text-column", default="text", metavar="NAME", help="JSONL field / Parquet column holding the text (default: text)")
    p.add_argument("--parquet-reader", choices=["bpeforge", "pyarrow"], default="bpeforge",
                   help="what reads Parquet files: bpeforge's own reader (default; page by page, lists of str, no pyarrow "
                        "needed) or pyarrow (record batches, handed to Rust as Arrow arrays; needs pyarrow)")
    p.add_argument("--doc-separator", metavar="SEP", help=r"split text files on SEP (escapes decoded) instead of lines; '' = one document per file")
    p.add_argument("--skip-bad-lines", action="store_true", help="skip malformed JSONL lines, and text documents that are not UTF-8 (counted and reported), instead of stopping")
