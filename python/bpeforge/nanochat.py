"""nanochat's tokenizer, by one import: ``from bpeforge.nanochat import RustBPETokenizer,
SPECIAL_TOKENS, SPLIT_PATTERN``.

These mirror ``nanochat/tokenizer.py``: :data:`SPECIAL_TOKENS` (nanochat's nine),
:data:`SPLIT_PATTERN` (GPT-4's with digits taken one or two at a time) and
:class:`RustBPETokenizer`, which trains with that pattern and those special tokens by default
and has every method of nanochat's class, with its names and arguments. It is
:class:`bpeforge.Tokenizer` with nanochat's defaults and constructor: everything else (encoding,
chat rendering, files) is the Tokenizer's. The rest of bpeforge keeps GPT-4's pattern as its one
default.

>>> from bpeforge.nanochat import RustBPETokenizer, SPECIAL_TOKENS
>>> tok = RustBPETokenizer.train_from_iterator(["hello 12345 world"] * 20, vocab_size=256 + len(SPECIAL_TOKENS) + 5)
>>> tok.pattern == SPLIT_PATTERN, tok.get_vocab_size(), tok.decode(tok.encode("hello 12345"))
(True, 270, 'hello 12345')

What differs from nanochat: ``save`` writes bpeforge's files (which ``from_directory`` reads)
and, for nanochat's own ``from_directory``, its ``tokenizer.pkl``, which bpeforge never reads
(loading a pickle runs code); bad input raises a ``TypeError``/``ValueError`` naming the problem
where nanochat asserts; ``train_from_iterator`` takes bpeforge's training options as keywords.
"""

from __future__ import annotations

import os
import pickle
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence, Union

from ._base import BOS, NANOCHAT_SPECIAL_TOKENS
from . import huggingface, _io as io
from ._patterns import PATTERNS
from ._tokenizer import Tokenizer

if TYPE_CHECKING:
    import tiktoken

__all__ = ["RustBPETokenizer", "SPECIAL_TOKENS", "SPLIT_PATTERN"]

SPECIAL_TOKENS: list[str] = list(NANOCHAT_SPECIAL_TOKENS)
"""nanochat's special tokens: ``<|bos|>``, then the chat markers, numbered after the ranks."""

SPLIT_PATTERN: str = PATTERNS["nanochat"]
"""nanochat's split pattern: GPT-4's, except that digits go one or two at a time (``\\p{N}{1,2}``)."""

PICKLE_FILE = io.PICKLE_FILE
"""The file nanochat's own ``RustBPETokenizer.from_directory`` reads: the pickled encoding."""


class RustBPETokenizer(Tokenizer):
    """nanochat's ``RustBPETokenizer``: a ``tiktoken.Encoding`` (:attr:`enc`) and its bos token,
    trained by bpeforge with nanochat's split pattern and special tokens.

    ``RustBPETokenizer(enc, bos_token)`` wraps a ``tiktoken.Encoding`` as it is, as nanochat's
    constructor does; ``bos_token`` (``"<|bos|>"``, or ``"<|endoftext|>"`` for OpenAI's
    encodings) must be one of its special tokens. ``None`` takes ``<|bos|>``, else
    ``<|endoftext|>``.
    """

    _bos_token_id: Optional[int] = None

    def __init__(self, enc: tiktoken.Encoding, bos_token: Optional[str] = BOS) -> None:
        import tiktoken

        if not isinstance(enc, tiktoken.Encoding):
            raise TypeError(
                f"RustBPETokenizer(enc, bos_token) wraps a tiktoken.Encoding, as nanochat's does; got "
                f"{type(enc).__name__} (for ranks, use bpeforge.Tokenizer(mergeable_ranks, pattern, special_tokens))"
            )
        vars(self).update(vars(Tokenizer.from_encoding(enc)))
        if bos_token is not None:
            if bos_token not in enc.special_tokens_set:
                raise ValueError(f"bos_token {bos_token!r} is not a special token of the encoding: {sorted(enc.special_tokens_set)}")
            self._bos_token_id = self.encode_special(bos_token)

    @classmethod
    def train_from_iterator(  # type: ignore[override]  # nanochat's argument name
        cls,
        text_iterator: Iterable[Any],
        vocab_size: int,
        *,
        pattern: Optional[str] = SPLIT_PATTERN,
        special_tokens: Optional[Sequence[str]] = SPECIAL_TOKENS,
        min_frequency: int = 1,
        buffer_size: int = 8192,
        num_threads: Optional[int] = None,
        progress: Union[bool, Callable[[str, dict[str, Any]], None]] = False,
        max_token_length: Optional[int] = None,
        **options: Any,
    ) -> "RustBPETokenizer":
        """Trains on an iterable of str, as nanochat's: ``vocab_size`` counts the special tokens,
        which are numbered after ``vocab_size - len(SPECIAL_TOKENS)`` ranks, and the split pattern
        is :data:`SPLIT_PATTERN`. The keywords are :meth:`bpeforge.Tokenizer.train_from_iterator`'s
        (``pattern=None`` there means GPT-4's), the recipe's other options
        (``reserve_special_tokens``, ``pad_vocab_to_multiple_of``, ``doc_cap``, ...) included."""
        trained = Tokenizer.train_from_iterator(
            text_iterator,
            vocab_size,
            pattern=pattern,
            special_tokens=special_tokens,
            min_frequency=min_frequency,
            buffer_size=buffer_size,
            num_threads=num_threads,
            progress=progress,
            max_token_length=max_token_length,
            **options,
        )
        tokenizer = cls(trained.encoding, None)
        tokenizer.training_stats = trained.training_stats
        return tokenizer

    @classmethod
    def load(cls, directory: Union[str, os.PathLike]) -> "RustBPETokenizer":
        """Reads a tokenizer written by :meth:`save` (bpeforge's files; ``tokenizer.pkl`` is not read)."""
        return cls(Tokenizer.load(directory).encoding, None)

    @property
    def bos_token_id(self) -> int:
        """The id of the bos token given to the constructor; by default that of ``<|bos|>``, or of
        ``<|endoftext|>`` when there is no ``<|bos|>`` (as ``from_pretrained`` takes it)."""
        return super().bos_token_id if self._bos_token_id is None else self._bos_token_id

    # nanochat's spellings of what bpeforge.Tokenizer names once (tiktoken's names where it has one).

    def get_bos_token_id(self) -> int:
        """nanochat's name for :attr:`bos_token_id`."""
        return self.bos_token_id

    @classmethod
    def from_directory(cls, tokenizer_dir: Union[str, os.PathLike]) -> "RustBPETokenizer":
        """nanochat's name for :meth:`load`: reads a tokenizer written by :meth:`save`."""
        return cls.load(tokenizer_dir)

    def get_vocab_size(self) -> int:
        """nanochat's name for :attr:`n_vocab`: ranks plus special tokens."""
        return self.n_vocab

    def get_special_tokens(self) -> set[str]:
        """The names of the special tokens, as a set (nanochat's; :attr:`special_tokens` maps them
        to their ids)."""
        return set(self.special_tokens)

    @property
    def enc(self) -> tiktoken.Encoding:
        """nanochat's name for :attr:`encoding`."""
        return self.encoding

    def save(self, tokenizer_dir: Union[str, os.PathLike]) -> None:
        """Writes bpeforge's files (see :meth:`bpeforge.Tokenizer.save`) and ``tokenizer.pkl``,
        the pickled encoding nanochat's own ``from_directory`` reads, so that the rest of
        nanochat's pipeline finds the tokenizer where it looks: one folder, switched in one
        step, whose ``bpeforge.json`` has the pickle's checksum too."""
        huggingface.save_folder(self, tokenizer_dir, extra_files={PICKLE_FILE: pickle.dumps(self.encoding)})
