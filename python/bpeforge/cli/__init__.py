"""The ``bpeforge`` command line: ``bpeforge train ...``, ``bpeforge eval ...``, ``bpeforge
sweep ...`` (and ``python -m bpeforge ...``).

Errors are one line on stderr (``bpeforge: error: ...``) and a non-zero exit: 2 for a bad
option, 1 for a problem with the data or the output, 130 for Ctrl-C. Set ``BPEFORGE_DEBUG=1``
to get the traceback of an unexpected error instead.

One module per subcommand (:mod:`~bpeforge.cli.train`, :mod:`~bpeforge.cli.eval`,
:mod:`~bpeforge.cli.sweep`), over what
they share (:mod:`~bpeforge.cli.arguments`, :mod:`~bpeforge.cli.signals`) and what ``train``
writes and prints (:mod:`~bpeforge.cli.outputs`, :mod:`~bpeforge.cli.report`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, List, Optional, Sequence, Tuple

from .._version import __version__
from .arguments import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, PROG, CLIError, OneLineErrorParser, one_line, stderr_line
from .train import add_train_parser, run_train
from .mix import add_mix_options
from .parity import add_parity_options

__all__ = ["CLIError", "EXTRA_SUBCOMMANDS", "build_parser", "main", "run_train"]

# Subcommands other than train: (module, add_parser function, run function). Each is imported
# when the parser is built; one that fails to import is still listed, and says why when run, so
# that a broken subcommand never breaks `bpeforge train`.
EXTRA_SUBCOMMANDS: List[Tuple[str, str, str]] = [
    ("bpeforge.cli.eval", "add_eval_parser", "run_eval"),
    ("bpeforge.cli.count", "add_count_parser", "run_count"),
    ("bpeforge.cli.export", "add_export_parser", "run_export"),
    ("bpeforge.cli.sweep", "add_sweep_parser", "run_sweep"),
]


def add_extra_subcommands(subparsers: Any) -> None:
    """Adds the subcommands of :data:`EXTRA_SUBCOMMANDS` to ``subparsers``."""
    for module_name, add_name, run_name in EXTRA_SUBCOMMANDS:
        try:
            module = importlib.import_module(module_name)
            add, run = getattr(module, add_name), getattr(module, run_name)
        except ImportError as e:
            if getattr(e, "name", None) == module_name:
                continue  # no such module: no such subcommand
            add_broken_subcommand(subparsers, module_name, e)
            continue
        except Exception as e:  # noqa: BLE001 - a broken module must not break `bpeforge train`
            add_broken_subcommand(subparsers, module_name, e)
            continue
        before = set(subparsers.choices)
        add(subparsers)
        for name in set(subparsers.choices) - before:
            parser = subparsers.choices[name]
            if parser.get_default("run") is None:
                parser.set_defaults(run=run)


def add_broken_subcommand(subparsers: Any, module_name: str, error: BaseException) -> None:
    """Keeps ``bpeforge NAME`` known when its module fails to import, and says why when run."""
    name = module_name.rsplit(".", 1)[-1]
    if name in subparsers.choices:
        return
    message = f"the {name!r} command is unavailable: {module_name} failed to load ({type(error).__name__}: {one_line(error)})"

    def run(args: argparse.Namespace) -> int:
        raise CLIError(message)

    parser = subparsers.add_parser(name, help="(unavailable)", add_help=False)
    parser.set_defaults(run=run, accepts_any_arguments=True)


def build_parser() -> argparse.ArgumentParser:
    """The ``bpeforge`` argument parser: ``--version``, ``train`` and the other subcommands."""
    parser = OneLineErrorParser(prog=PROG, description="bpeforge: exact, fast byte-level BPE tokenizer training.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineErrorParser)
    train_parser = add_train_parser(subparsers)
    add_mix_options(train_parser)  # train --source NAME=PATH --alpha A: cli/mix.py
    add_parity_options(train_parser)  # train --source NAME=PATH --parity: cli/parity.py
    add_extra_subcommands(subparsers)
    return parser


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
        stderr_line(f"{PROG}: interrupted")
        return EXIT_INTERRUPTED
    except CLIError as e:
        stderr_line(f"{PROG}: error: {e}")
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
        stderr_line(f"{PROG}: error: {one_line(e)} ({type(e).__name__}; set BPEFORGE_DEBUG=1 for the traceback)")
        return EXIT_ERROR
