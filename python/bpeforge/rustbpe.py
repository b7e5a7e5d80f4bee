"""rustbpe's Python API, by one import: ``from bpeforge.rustbpe import Tokenizer``.

:class:`Tokenizer` has the names, arguments, defaults and behaviour of rustbpe 0.1.0's
``rustbpe.Tokenizer`` (nanochat's trainer), with bpeforge's trainer and encoder underneath, so
that code and tests written for rustbpe run unchanged and learn the same ranks, faster:

>>> from bpeforge.rustbpe import Tokenizer
>>> tok = Tokenizer()
>>> tok.vocab_size, tok.get_pattern(), tok.encode("hi")   # before training: no pattern, no tokens
(256, '', [])
>>> tok.train_from_iterator(["hello world"] * 10, vocab_size=260)
>>> ids = tok.encode("hello world"); tok.decode(ids)
'hello world'
>>> tok.batch_encode(["hello", "world"]) == [tok.encode("hello"), tok.encode("world")]
True

Where rustbpe panics or goes on with bad input, this raises a clear exception instead:
``vocab_size`` below 256 is a ``ValueError`` (rustbpe: a ``PanicException``, after reading the
whole iterator), a pattern that can match an empty string is a ``ValueError`` (rustbpe counts
empty spans), a failed training leaves the tokenizer as it was (rustbpe keeps the new pattern).
Beyond rustbpe: ``pattern`` may also be a preset's name (``"gpt2"``, ``"nanochat"``, see
``bpeforge.PATTERNS``), items of the iterator may be lists of str or Arrow string arrays, and
counts are 64-bit (rustbpe's are 32-bit). Decoding bytes that are not UTF-8 raises
:class:`~bpeforge._errors.NotUtf8Error`, which is the ``TypeError`` rustbpe raises and a
``UnicodeDecodeError``.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from . import _core
from ._errors import NotUtf8Error, UnknownTokenIdError

__all__ = ["Tokenizer"]

MAX_ID = (1 << 32) - 1
"""rustbpe takes token ids as u32: a larger or negative one is an OverflowError there."""


class Tokenizer:
    """A byte-level BPE tokenizer as rustbpe 0.1.0's: train, then encode and decode.

    Before the first training it has the 256 single bytes and no split pattern (``get_pattern()``
    is ``""``), so ``encode`` gives ``[]`` for any text, as rustbpe's does.
    """

    def __init__(self) -> None:
        self._trainer = _core.Trainer()
        self._trained = False
        # Built when first needed after a training: the encoder, and the bytes of every token.
        self._encoder: Optional[_core.Encoder] = None
        self._tokens: Optional[list[bytes]] = None

    def train_from_iterator(
        self, iterator: Iterable[Any], vocab_size: int, buffer_size: int = 8192, pattern: Optional[str] = None
    ) -> None:
        """Trains on an iterable of str (consumed once, ``buffer_size`` texts at a time),
        replacing any earlier training: ``vocab_size`` ranks, the 256 single bytes included
        (fewer if no pair is left). ``pattern=None`` is GPT-4's split pattern, whatever an
        earlier training used."""
        self._trainer.train_from_iterator(iterator, vocab_size, buffer_size, _core.DEFAULT_PATTERN if pattern is None else pattern)
        self._trained = True
        self._encoder = None
        self._tokens = None

    def get_pattern(self) -> str:
        """The split pattern of the last training (``""`` before any)."""
        return self._trainer.get_pattern() if self._trained else ""

    @property
    def vocab_size(self) -> int:
        """The number of tokens: 256 single bytes + learned tokens."""
        return self._trainer.vocab_size

    def get_mergeable_ranks(self) -> list[tuple[bytes, int]]:
        """The ranks as ``[(token_bytes, rank)]``: the 256 single bytes, then learned tokens in order."""
        return self._trainer.get_mergeable_ranks()

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text`` (tiktoken's ``encode_ordinary`` with these ranks and pattern)."""
        if not isinstance(text, str):
            raise TypeError(f"argument 'text': '{type(text).__name__}' object cannot be cast as 'str'")
        if not self._trained:
            text.encode("utf-8")  # a lone surrogate is an error here too, as in rustbpe
            return []
        return self._encoding().encode(text)

    def batch_encode(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text, encoded in parallel on all cores without the GIL; the same
        as ``encode`` one by one."""
        if isinstance(texts, str):
            raise TypeError("argument 'texts': Can't extract `str` to `Vec`")
        if not self._trained:
            return [self.encode(text) for text in texts]
        return self._encoding().batch_encode(texts)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``. An id that is no token raises a ValueError, "Unknown token id: N"
        (:class:`~bpeforge._errors.UnknownTokenIdError`); a negative one or one past 2^32-1, an
        OverflowError, as in rustbpe; bytes that are not UTF-8, :class:`~bpeforge._errors.NotUtf8Error`."""
        if isinstance(ids, (str, bytes)):
            raise TypeError(f"argument 'ids': Can't extract `{type(ids).__name__}` to `Vec`")
        ids = list(ids)
        tokens = self._token_bytes()
        try:
            if ids and min(ids) < 0:
                raise IndexError
            data = b"".join([tokens[i] for i in ids])
        except (IndexError, TypeError):
            data = b"".join([tokens[checked_id(i, len(tokens))] for i in ids])  # says which id and why
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise NotUtf8Error(e.encoding, e.object, e.start, e.end, e.reason) from None

    def _encoding(self) -> _core.Encoder:
        if self._encoder is None:
            self._encoder = _core.Encoder(self._trainer.get_mergeable_ranks(), self._trainer.get_pattern())
        return self._encoder

    def _token_bytes(self) -> list[bytes]:
        if self._tokens is None:
            self._tokens = [token for token, _ in self._trainer.get_mergeable_ranks()]
        return self._tokens

    def __repr__(self) -> str:
        return f"<bpeforge.rustbpe.Tokenizer vocab_size={self.vocab_size}>"


def checked_id(value: Any, vocab_size: int) -> int:
    """``value`` as a token id below ``vocab_size``, or the error rustbpe gives for it."""
    if isinstance(value, float) or not hasattr(value, "__index__"):
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer")
    token_id = value.__index__()
    if not 0 <= token_id <= MAX_ID:
        raise OverflowError(f"token id {token_id} is out of range: ids are 0 to 2^32-1")
    if token_id >= vocab_size:
        raise UnknownTokenIdError(f"Unknown token id: {token_id} (the vocabulary has {vocab_size:,} ids)")
    return token_id
