"""What every ``bpeforge`` subcommand shares: the exit codes, the one-line error, an argparse
parser that reports a bad option in one line, and integer options.

Errors are one line on stderr (``bpeforge: error: ...``) and a non-zero exit: 2 for a bad
option, 1 for a problem with the data or the output, 130 for Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

PROG = "bpeforge"
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
MAX_INT64 = (1 << 63) - 1
"""The largest count or character budget an option takes (what fits in a signed 64-bit integer)."""


class CLIError(Exception):
    """A user-facing error: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse, but a bad option is one line on stderr (no usage block)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CLIError(f"{message} (see '{self.prog} --help')", EXIT_USAGE)


def int_at_least(low: int, what: str, high: int = MAX_INT64) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` to ``high`` (``_`` allowed between digits).

    >>> int_at_least(1, "--n")("1_000")
    1000
    """

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


def one_line(e: BaseException) -> str:
    """``e``'s message on one line (its type's name if it has none)."""
    return " ".join(str(e).split()) or type(e).__name__


def stderr_line(message: str) -> None:
    """Prints ``message`` on stderr, if there is one to print on."""
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
