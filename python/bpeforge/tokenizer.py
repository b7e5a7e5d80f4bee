"""The Tokenizer: trained ranks + split pattern + special tokens, encoding through tiktoken."""

from __future__ import annotations

import contextlib
import operator
import os
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union, overload

from . import _core

if TYPE_CHECKING:
    # tiktoken is imported where it is used, so that training (which never encodes) does not
    # load it: a lighter import, and a lower peak memory for the merge loop.
    import tiktoken

    from .progress import ConsoleProgress

NANOCHAT_SPECIAL_TOKENS: tuple[str, ...] = (
    "<|bos|>",
    "<|user_start|>",
    "<|user_end|>",
    "<|assistant_start|>",
    "<|assistant_end|>",
    "<|python_start|>",
    "<|python_end|>",
    "<|output_start|>",
    "<|output_end|>",
)
"""nanochat's nine special tokens, the default for :meth:`Tokenizer.train_from_iterator`."""


def resolve_pattern(pattern: Optional[str]) -> str:
    """The split pattern for ``pattern``: ``None`` is GPT-4's, a preset name is that preset's,
    anything else is taken as a regex. A string without any regex syntax (which would split
    out only copies of itself) is taken for a misspelt preset name: a ValueError.

    >>> resolve_pattern("nanochat") == resolve_pattern(None).replace("{1,3}", "{1,2}")
    True
    >>> resolve_pattern("gtp4")
    Traceback (most recent call last):
    ValueError: 'gtp4': no such preset (choose from gpt4, cl100k_base, nanochat, gpt2, r50k_base, p50k_base, o200k_base); a regex needs at least one of \\ [ ] ( ) { } | ? * + ^ $ .
    """
    if pattern is None:
        return _core.DEFAULT_PATTERN
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str or None, got {type(pattern).__name__}")
    return _core.resolve_pattern(pattern)  # the same check as Trainer's


def _as_int(value: Any, name: str) -> int:
    """``value`` as an int: an int or another integer type (NumPy's), not a bool; else TypeError."""
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{name} must be an int, got {type(value).__name__}")


def early_stop_reason(min_frequency: int) -> str:
    """Why training made fewer ranks than asked, given its ``min_frequency``.

    >>> early_stop_reason(1), early_stop_reason(5)
    ('no pair is left', 'no pair occurs 5 times or more')
    """
    return "no pair is left" if min_frequency <= 1 else f"no pair occurs {min_frequency} times or more"


MAX_TOKEN_ID = 1 << 31
"""Token ids (ranks and special ids) are below this: tiktoken's are 32-bit, and bpeforge
trains at most this many ranks."""


def _special_ids(special_tokens: Union[Mapping[str, int], Sequence[str]], n_ranks: int) -> dict:
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a list of str or a dict of str to id, not a str")
    if isinstance(special_tokens, Mapping):
        ids = dict(special_tokens)
    else:
        names = list(special_tokens)
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"special token {dup!r} is given twice")
        ids = {name: n_ranks + i for i, name in enumerate(names)}
    for name, i in ids.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"special tokens must be non-empty str, got {name!r}")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"special token {name!r} holds a lone surrogate (not valid Unicode)") from None
        if not isinstance(i, int) or isinstance(i, bool) or not n_ranks <= i < MAX_TOKEN_ID:
            raise ValueError(
                f"special token {name!r} has id {i!r}; special ids must be ints from {n_ranks} "
                f"(the number of ranks) up to {MAX_TOKEN_ID - 1}"
            )
    if len(set(ids.values())) != len(ids):
        raise ValueError("two special tokens share an id")
    return ids


def _tiktoken_failure(e: BaseException) -> BaseException:
    """What to raise for exception ``e`` from tiktoken: itself, or for a panic in tiktoken's Rust
    code (pyo3's PanicException, which derives from BaseException) a RuntimeError saying so."""
    if type(e).__name__ != "PanicException":
        return e
    return RuntimeError(
        f"tiktoken failed while encoding ({e}); with a custom split pattern this is usually the regex "
        "engine's backtracking limit: simplify the pattern"
    )


@contextlib.contextmanager
def tiktoken_errors() -> Iterator[None]:
    """Raises a panic inside tiktoken as a RuntimeError (see :func:`_tiktoken_failure`)."""
    try:
        yield
    except BaseException as e:
        raise _tiktoken_failure(e) from None


class Tokenizer:
    """A byte-level BPE tokenizer: mergeable ranks, a split pattern and special tokens.

    Encoding and decoding go through :attr:`encoding`, a ``tiktoken.Encoding``. The ranks are
    checked against tiktoken's invariants first (tiktoken checks almost none itself): ranks
    0..n-1, the 256 single bytes first, distinct bytes, every later token the concatenation of
    two lower-ranked tokens, special ids above the ranks.

    >>> tok = Tokenizer.train_from_iterator(["low lower lowest"] * 5, vocab_size=270)
    >>> tok.n_vocab
    270
    >>> tok.decode(tok.encode("lowest <|bos|>"))
    'lowest <|bos|>'
    >>> tok.encode_special("<|bos|>")
    261
    """

    def __init__(
        self,
        mergeable_ranks: Mapping[bytes, int],
        pattern: Optional[str] = None,
        special_tokens: Union[Mapping[str, int], Sequence[str]] = (),
        *,
        name: str = "bpeforge",
    ) -> None:
        ranks = dict(mergeable_ranks)
        for token, rank in list(ranks.items()):
            if not isinstance(token, bytes):
                raise TypeError(f"mergeable_ranks must map bytes to int ranks; a token is {type(token).__name__}: {token!r}")
            if not isinstance(rank, int) or isinstance(rank, bool):
                try:  # any integer type (NumPy's too), but not bool
                    ranks[token] = rank = _as_int(rank, "a rank")
                except TypeError:
                    raise TypeError(f"mergeable_ranks must map bytes to int ranks; the rank of {token!r} is {rank!r}") from None
            if not 0 <= rank < len(ranks):
                raise ValueError(f"invalid mergeable ranks: rank {rank} of {token!r} is out of range: {len(ranks)} ranks must be 0 to {len(ranks) - 1}")
        _core.check_ranks(list(ranks.items()))
        self._pattern = resolve_pattern(pattern)
        _core.check_pattern(self._pattern)  # a clear ValueError, before tiktoken fails or panics
        self._special_tokens = _special_ids(special_tokens, len(ranks))
        #: Figures of the training run that made this tokenizer (empty if it was loaded).
        self.training_stats: dict = {}
        import tiktoken

        self._encoding = tiktoken.Encoding(
            name=name,
            pat_str=self._pattern,
            mergeable_ranks=ranks,
            special_tokens=self._special_tokens,
        )

    @classmethod
    def train_from_iterator(
        cls,
        iterator: Iterable[Any],
        vocab_size: int,
        *,
        pattern: Optional[str] = None,
        special_tokens: Optional[Sequence[str]] = None,
        min_frequency: int = 1,
        buffer_size: int = 8192,
        num_threads: Optional[int] = None,
        progress: Union[bool, Callable[[str, dict[str, Any]], None]] = False,
    ) -> "Tokenizer":
        """Trains a tokenizer on an iterable of str (consumed once, in batches). Items may also be
        lists of str or Arrow string arrays (see ``bpeforge.Trainer.train_from_iterator``).

        ``vocab_size`` is the final vocabulary *including* special tokens: it trains
        ``vocab_size - len(special_tokens)`` ranks and numbers the special tokens after them.
        ``special_tokens=None`` means nanochat's nine; ``[]`` means none. ``pattern`` is a preset
        name (see ``bpeforge.PATTERNS``), a regex, or ``None`` for GPT-4's. Training stops early
        (with a warning) when no pair is left or the best pair occurs fewer than
        ``min_frequency`` times; ``n_vocab`` is then smaller than ``vocab_size``.

        ``progress=True`` shows progress on stderr (bars on a terminal, and log lines, one per
        1% of the merges); a callable is called as
        ``progress(phase, info)`` (see ``bpeforge.Trainer.train_from_iterator``). The figures of
        the run (texts, bytes, distinct spans, seconds per phase) are kept in
        :attr:`training_stats`.

        >>> tok = Tokenizer.train_from_iterator(["aaab"] * 3, vocab_size=259, special_tokens=[])
        >>> [t for t, r in sorted(tok.mergeable_ranks.items(), key=lambda x: x[1])][256:]
        [b'aa', b'ab', b'aaab']
        """
        if isinstance(iterator, (str, bytes)):
            raise TypeError("iterator must be an iterable of texts, not a single str (wrap it in a list)")
        if type(iterator).__name__ == "DataFrame":  # pandas, polars...: iterating gives column names
            raise TypeError("iterator is a DataFrame, whose items are its column names; pass the text column, e.g. df['text']")
        if isinstance(special_tokens, (str, Mapping)):
            raise TypeError(
                f"special_tokens must be a list of str, not a {type(special_tokens).__name__}: training numbers "
                "them after the trained ranks, so no ids are taken here"
            )
        specials = list(NANOCHAT_SPECIAL_TOKENS if special_tokens is None else special_tokens)
        vocab_size = _as_int(vocab_size, "vocab_size")
        min_frequency = _as_int(min_frequency, "min_frequency")
        if not 256 + len(specials) <= vocab_size <= MAX_TOKEN_ID:
            raise ValueError(
                f"vocab_size must be at least 256 + {len(specials)} special tokens = "
                f"{256 + len(specials)} and at most {MAX_TOKEN_ID}, got {vocab_size}"
            )
        pattern = resolve_pattern(pattern)
        n_ranks = vocab_size - len(specials)
        # Refuse what the Encoding could not use before reading any data.
        _core.check_pattern(pattern)
        _special_ids(specials, n_ranks)
        trainer = _core.Trainer(pattern, num_threads=num_threads)
        callback: Optional[Callable[[str, dict[str, Any]], None]] = None
        console: Optional["ConsoleProgress"] = None
        if progress is True:
            from .progress import ConsoleProgress

            callback = console = ConsoleProgress(log=True)
        elif callable(progress):
            callback = progress
        elif progress not in (False, None):
            raise TypeError(f"progress must be a bool or a callable(phase, info), got {type(progress).__name__}")
        try:
            trainer.train_from_iterator(iterator, n_ranks, buffer_size, min_frequency=min_frequency, progress=callback)
        except BaseException:
            if console is not None:
                console.abort()
            raise
        if console is not None:
            console.close()
        ranks = dict(trainer.get_mergeable_ranks())
        if len(ranks) < n_ranks:
            reason = early_stop_reason(min_frequency)
            if trainer.stats["bytes"] == 0:
                reason = "the iterable gave no text (an iterator or generator that was already used up?)"
            warnings.warn(
                f"training stopped at {len(ranks)} ranks of the {n_ranks} asked for: {reason}",
                stacklevel=2,
            )
        tok = cls(ranks, pattern, specials)
        tok.training_stats = dict(trainer.stats)
        return tok

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The ``tiktoken.Encoding`` with these ranks, pattern and special tokens."""
        return self._encoding

    @property
    def pattern(self) -> str:
        """The split pattern (a regex string)."""
        return self._pattern

    @property
    def mergeable_ranks(self) -> dict[bytes, int]:
        """A copy of the ranks: token bytes -> rank."""
        return dict(self._encoding._mergeable_ranks)

    @property
    def special_tokens(self) -> dict[str, int]:
        """A copy of the special tokens: name -> id."""
        return dict(self._special_tokens)

    @property
    def n_vocab(self) -> int:
        """Number of token ids: ranks plus special tokens."""
        return self._encoding.n_vocab

    @overload
    def encode(  # type: ignore[overload-overlap]  # a str is a Sequence[str] too: it matches first
        self, text: str, prepend: Optional[Union[str, bytes, int]] = None, append: Optional[Union[str, bytes, int]] = None,
        num_threads: Optional[int] = 8,
    ) -> list[int]: ...

    @overload
    def encode(
        self, text: Sequence[str], prepend: Optional[Union[str, bytes, int]] = None,
        append: Optional[Union[str, bytes, int]] = None, num_threads: Optional[int] = 8,
    ) -> list[list[int]]: ...

    def encode(
        self,
        text: Union[str, Sequence[str]],
        prepend: Optional[Union[str, bytes, int]] = None,
        append: Optional[Union[str, bytes, int]] = None,
        num_threads: Optional[int] = 8,
    ) -> Union[list[int], list[list[int]]]:
        """Encodes ordinary text: special-token text such as ``<|bos|>`` is encoded as text.
        Lone surrogates are replaced by U+FFFD, as tiktoken does.

        As nanochat's ``RustBPETokenizer.encode``: ``text`` may be a list of str, encoded in
        parallel on ``num_threads`` threads into a list of lists; ``prepend``/``append`` (a
        special token name or id) is added to each sequence.

        >>> tok = Tokenizer.train_from_iterator(["ab ab"], vocab_size=258, special_tokens=["<|bos|>"])
        >>> tok.encode("<|bos|>") == [tok.encode_special("<|bos|>")]
        False
        >>> tok.encode(["ab", "b"], prepend="<|bos|>", append=0)
        [[257, 256, 0], [257, 98, 0]]
        """
        if prepend is None and append is None and isinstance(text, str):
            return self._encode_ordinary(text)
        from .chat import encode

        return encode(self, text, prepend, append, num_threads)

    def _encode_ordinary(self, text: str) -> list[int]:
        try:
            return self._encoding.encode_ordinary(text)
        except BaseException as e:
            raise _tiktoken_failure(e) from None

    def encode_special(self, name: Union[str, bytes]) -> int:
        """The id of special token ``name``. As nanochat's (tiktoken's ``encode_single_token``),
        the text (or bytes) of any single token gives its id too. KeyError names the special
        tokens if ``name`` is no token."""
        try:
            return self._special_tokens[name]
        except (KeyError, TypeError):
            pass
        try:
            return self._encoding.encode_single_token(name)
        except (KeyError, TypeError):
            raise KeyError(f"{name!r} is not a special token (nor a single token); special tokens: {sorted(self._special_tokens)}") from None

    def decode(self, ids: Sequence[int]) -> str:
        """Decodes ids to text (invalid UTF-8 from partial sequences becomes U+FFFD)."""
        return self._encoding.decode(list(ids))

    def save(self, directory: Union[str, os.PathLike]) -> None:
        """Writes ``tokenizer.tiktoken`` (the ranks, loadable by
        ``tiktoken.load.load_tiktoken_bpe``), ``tokenizer.json`` (pattern, special tokens) and
        ``token_bytes.npy`` (bytes per token id) into ``directory``, each atomically. A
        ``directory`` ending in ``.tiktoken`` (without a trailing slash) that is not a folder
        already is refused with a ValueError: it names a ranks file, not the folder this writes."""
        from .io import save

        save(self, directory)

    @classmethod
    def load(cls, directory: Union[str, os.PathLike]) -> "Tokenizer":
        """Reads a tokenizer written by :meth:`save`. A missing file raises FileNotFoundError;
        a truncated or corrupt one raises :class:`bpeforge.TokenizerFileError` naming the file
        and line."""
        from .io import load

        return load(directory)

    def __repr__(self) -> str:
        return f"<bpeforge.Tokenizer n_vocab={self.n_vocab} special_tokens={len(self._special_tokens)}>"

    # --- nanochat-compatible API (chat.py, eval.py) ---

    @classmethod
    def from_directory(cls, tokenizer_dir: Union[str, os.PathLike]) -> "Tokenizer":
        """nanochat's name for :meth:`load`: reads a tokenizer written by :meth:`save`."""
        return cls.load(tokenizer_dir)

    @classmethod
    def from_encoding(cls, encoding: tiktoken.Encoding) -> "Tokenizer":
        """Wraps an existing ``tiktoken.Encoding`` as it is (its ranks are not re-checked), e.g.
        to render conversations or evaluate with a tokenizer from elsewhere.

        >>> import tiktoken
        >>> enc = tiktoken.Encoding("tiny", pat_str=r"\\S+|\\s+", mergeable_ranks={bytes([i]): i for i in range(256)},
        ...                         special_tokens={"<|endoftext|>": 256})
        >>> tok = Tokenizer.from_encoding(enc)
        >>> tok.encode("hi", prepend=tok.get_bos_token_id())
        [256, 104, 105]
        """
        import tiktoken

        if not isinstance(encoding, tiktoken.Encoding):
            raise TypeError(f"expected a tiktoken.Encoding, got {type(encoding).__name__}")
        tok = cls.__new__(cls)
        tok._pattern = encoding._pat_str
        tok._special_tokens = dict(encoding._special_tokens)
        tok._encoding = encoding
        tok.training_stats = {}
        return tok

    @classmethod
    def from_pretrained(cls, tiktoken_name: str) -> "Tokenizer":
        """A tiktoken encoding by name (``"gpt2"``, ``"cl100k_base"``, ...), as nanochat's
        ``from_pretrained``; its ``<|endoftext|>`` serves as the bos token. tiktoken downloads the
        ranks on first use: offline, this raises :class:`bpeforge.eval.EncodingUnavailable` saying
        so (a ``ConnectionError``, and an :class:`bpeforge.EvalError` as before)."""
        from .eval import load_tiktoken_encoding

        return cls.from_encoding(load_tiktoken_encoding(tiktoken_name))

    def get_vocab_size(self) -> int:
        """The number of token ids (``n_vocab``): ranks plus special tokens."""
        return self.n_vocab

    def get_special_tokens(self) -> set[str]:
        """The names of the special tokens, as a set (like tiktoken's ``special_tokens_set``)."""
        return set(self._special_tokens)

    def id_to_token(self, id: int) -> str:
        """The text of token ``id`` (U+FFFD for bytes that are not whole UTF-8 characters)."""
        from .chat import id_to_token

        return id_to_token(self, id)

    @property
    def enc(self) -> tiktoken.Encoding:
        """nanochat's name for :attr:`encoding`."""
        return self._encoding

    @property
    def bos_token_id(self) -> int:
        """nanochat's attribute for :meth:`get_bos_token_id`."""
        return self.get_bos_token_id()

    def get_bos_token_id(self) -> int:
        """The id of ``<|bos|>`` (or of ``<|endoftext|>`` for a tokenizer without ``<|bos|>``)."""
        from .chat import bos_token_id

        return bos_token_id(self)

    __call__ = encode  # as nanochat's tokenizer: tok(text) is tok.encode(text)

    def render_conversation(self, conversation: object, max_tokens: Optional[int] = 2048) -> tuple[list[int], list[int]]:
        """``(ids, mask)`` of a chat conversation, both cut to ``max_tokens``; see
        :func:`bpeforge.chat.render_conversation` for the rules."""
        from .chat import render_conversation

        return render_conversation(self, conversation, max_tokens)

    def render_for_completion(self, conversation: object, max_tokens: Optional[int] = 2048) -> list[int]:
        """The ids of ``conversation`` minus its last (assistant) message, ending with
        ``<|assistant_start|>``; see :func:`bpeforge.chat.render_for_completion`."""
        from .chat import render_for_completion

        return render_for_completion(self, conversation, max_tokens)

    def visualize_tokenization(self, ids: Sequence[int], mask: Sequence[int], with_token_id: bool = False) -> str:
        """Tokens joined by ``|``, green where ``mask`` is 1, red where it is 0 (ANSI colours)."""
        from .chat import visualize_tokenization

        return visualize_tokenization(self, ids, mask, with_token_id)

    def token_bytes(self, as_numpy: bool = False) -> Any:
        """For every id, the number of bytes it stands for (0 for special tokens): a list, or an
        int32 NumPy array with ``as_numpy=True``. See :func:`bpeforge.chat.token_bytes`."""
        from .chat import token_bytes

        return token_bytes(self, as_numpy)
