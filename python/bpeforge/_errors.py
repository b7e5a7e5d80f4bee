"""The exceptions bpeforge raises for bad files, texts and options, in one place.

Each is a ``ValueError`` (``InputError``, for input data, a plain ``Exception``;
``EncodingUnavailable`` also a ``ConnectionError``) whose message is one line that
names the file, text or option at fault. The modules that raise them re-export them, so
``bpeforge._io.TokenizerFileError`` and ``bpeforge._eval.EvalError`` name the same classes.
"""

SPLIT_FAILED = "the split pattern failed on a text"
"""How the compiled core's RuntimeError begins when a custom split pattern's regex engine gives
up on a text (its backtracking limit); the preset patterns never do."""


class TokenizerFileError(ValueError):
    """A saved tokenizer file is truncated, corrupt or not ours; the message names the file
    (and the line, where there is one)."""


class EvalError(ValueError):
    """A tokenizer or text that :func:`bpeforge.evaluate` cannot use; the message says which and why."""


class EncodingUnavailable(EvalError, ConnectionError):
    """tiktoken could not fetch a named encoding's ranks (it downloads them on first use): also
    a ``ConnectionError``, so ``except OSError`` around ``Tokenizer.from_pretrained`` catches
    being offline as it would any other failed download."""


# A problem with the input data: a missing or unreadable file, a bad line, a missing column.
# The message is one line and names the file (and line, where there is one). A plain
# ``Exception``, defined in the compiled core, whose text and JSONL readers raise it too.
from ._core import InputError  # noqa: E402


class NoTextError(ValueError):
    """Training was given no text at all: no texts, or only empty ones. No tokenizer is made of
    that (it would be the 256 single bytes and nothing learned); the message says which it was."""


class UnknownTokenIdError(ValueError, KeyError):
    """A token id that is not in the vocabulary (or not an id at all: a negative number, one too
    large). Also a ``KeyError``, the error tiktoken's decode gives for an id it does not know, so
    ``except KeyError`` catches it too."""

    def __str__(self) -> str:  # a ValueError's message, not a KeyError's quoted key
        return str(self.args[0]) if self.args else ""


class OptionError(ValueError):
    """A training option that cannot be used. ``option`` names it as the API spells it
    (``vocab_size``, ``pattern``, ``special_tokens``, ``num_threads``, ``min_frequency``,
    ``max_token_length``), so
    that the command line can name its own flag for it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


class NotUtf8Error(UnicodeDecodeError, TypeError):
    """Decoded bytes that are not UTF-8, from :meth:`bpeforge.rustbpe.Tokenizer.decode`: a
    ``UnicodeDecodeError`` (so a ``ValueError``), and a ``TypeError`` too, the error rustbpe's
    ``decode`` gives for them (its attempt to raise UnicodeDecodeError fails as a TypeError)."""
