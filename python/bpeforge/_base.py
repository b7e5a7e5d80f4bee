"""The encoding core of a tokenizer: trained ranks, a split pattern and special tokens, encoding
and decoding through tiktoken.

:class:`BaseTokenizer` is what every other module works with (files, chat, evaluation); the
public :class:`bpeforge.Tokenizer` adds training, saving and loading, chat rendering and
nanochat's names on top of it.

tiktoken is imported where it is first used, so that training (which never encodes) does not
load it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence, TypeVar, Union, overload

from . import _core
from ._checks import MAX_TOKEN_ID, as_int, optional_int, special_token_ids
from ._errors import UnknownTokenIdError
from ._patterns import resolve_pattern

if TYPE_CHECKING:
    import tiktoken

NANOCHAT_SPECIAL_TOKENS: tuple[str, ...] = tuple(_core.NANOCHAT_SPECIAL_TOKENS)
"""nanochat's nine special tokens (``<|bos|>``, ``<|user_start|>``, ... ``<|output_end|>``), the
default of a training's recipe (:meth:`bpeforge.Tokenizer.train_from_iterator`)."""

BOS = "<|bos|>"
ENDOFTEXT = "<|endoftext|>"

SpecialToken = Union[str, bytes, int]

T = TypeVar("T", bound="BaseTokenizer")


def tiktoken_failure(e: BaseException) -> BaseException:
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
    """Raises a panic inside tiktoken as a RuntimeError (see :func:`tiktoken_failure`)."""
    try:
        yield
    except BaseException as e:
        raise tiktoken_failure(e) from None


def check_tiktoken_parts(ranks: Mapping[bytes, int], pattern: str, special_tokens: Mapping[str, int]) -> None:
    """Raises ValueError unless these parts fit tiktoken's model of ids (see
    :class:`BaseTokenizer`): the ranks by :func:`bpeforge._core.check_ranks`, the special ids
    beside them, a pattern that compiles and never matches empty text."""
    _core.check_ranks(ranks)
    special_token_ids(special_tokens, set(ranks.values()))
    _core.check_pattern(pattern)


class BaseTokenizer:
    """A byte-level BPE tokenizer: mergeable ranks, a split pattern and special tokens.

    Encoding and decoding go through :attr:`encoding`, a ``tiktoken.Encoding``. The ids follow
    tiktoken's model, checked first (tiktoken checks almost none of it itself): the ranks are
    distinct non-negative ids, gaps allowed; the 256 single bytes are tokens, at any ranks; every
    other token is the concatenation of two tokens of lower rank (the rank is the merge
    priority); special tokens sit at ids no rank uses, below, among or above the ranks. A list
    of special token names is numbered on from the largest rank. (The trainer's layout is one
    such: bytes 0..255, merges from 256, special tokens after.)

    >>> tok = BaseTokenizer({bytes([i]): i for i in range(256)}, special_tokens=["<|bos|>"])
    >>> tok.n_vocab, tok.encode("hi", prepend="<|bos|>"), tok.decode([104, 105])
    (257, [256, 104, 105], 'hi')
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
        as_ints = {}  # ranks of other integer types, as int (not written while the dict is read)
        for token, rank in ranks.items():  # (no list of the items: millions of tuples for a large vocabulary)
            if not isinstance(token, bytes):
                raise TypeError(f"mergeable_ranks must map bytes to int ranks; a token is {type(token).__name__}: {token!r}")
            if not isinstance(rank, int) or isinstance(rank, bool):
                try:  # any integer type (NumPy's too), but not bool
                    as_ints[token] = rank = as_int(rank, "a rank")
                except TypeError:
                    raise TypeError(f"mergeable_ranks must map bytes to int ranks; the rank of {token!r} is {rank!r}") from None
            if not 0 <= rank < MAX_TOKEN_ID:
                raise ValueError(
                    f"invalid mergeable ranks: rank {rank} of {token!r} is out of range: ranks are ints from 0 up to {MAX_TOKEN_ID - 1}"
                )
        ranks.update(as_ints)
        _core.check_ranks(ranks)
        self._take_parts(ranks, pattern, special_tokens, name)

    def _take_parts(
        self, ranks: dict[bytes, int], pattern: Optional[str], special_tokens: Union[Mapping[str, int], Sequence[str]], name: str
    ) -> None:
        """Keeps ``ranks`` (checked: :func:`bpeforge._core.check_ranks`) as they are, and checks
        the pattern and the special tokens beside them."""
        self._pattern = resolve_pattern(pattern)
        _core.check_pattern(self._pattern)  # a clear ValueError, before tiktoken fails or panics
        if isinstance(special_tokens, Mapping):  # only the ranks at those ids matter: no set of millions
            wanted = set(special_tokens.values())
            taken: Any = {rank for rank in ranks.values() if rank in wanted}
        else:  # names, numbered on from the largest rank
            taken = set(ranks.values())
        self._special_tokens = special_token_ids(special_tokens, taken)
        #: Figures of the training run that made this tokenizer (empty if it was loaded).
        self.training_stats: dict = {}
        self._ranks = ranks
        self._name = name
        self._built: Optional[tiktoken.Encoding] = None


    @classmethod
    def from_encoding(cls: type[T], encoding: tiktoken.Encoding) -> T:
        """Wraps an existing ``tiktoken.Encoding`` as it is (its ranks are not re-checked), e.g.
        to render conversations or evaluate with a tokenizer from elsewhere.

        >>> import tiktoken
        >>> enc = tiktoken.Encoding("tiny", pat_str=r"\\S+|\\s+", mergeable_ranks={bytes([i]): i for i in range(256)},
        ...                         special_tokens={"<|endoftext|>": 256})
        >>> tok = BaseTokenizer.from_encoding(enc)
        >>> tok.encode("hi", prepend=tok.bos_token_id)
        [256, 104, 105]
        """
        import tiktoken

        if not isinstance(encoding, tiktoken.Encoding):
            raise TypeError(f"expected a tiktoken.Encoding, got {type(encoding).__name__}")
        tok = cls.__new__(cls)
        tok._pattern = encoding._pat_str
        tok._special_tokens = dict(encoding._special_tokens)
        tok._ranks = encoding._mergeable_ranks
        tok._name = encoding.name
        tok._built = encoding
        tok.training_stats = {}
        return tok

    @property
    def _encoding(self) -> tiktoken.Encoding:
        """The ``tiktoken.Encoding``, made at its first use: it holds two more copies of every
        token's bytes (tiktoken's maps each way), which saving a tokenizer, or reporting on it,
        does not need; a tokenizer of long tokens (a run of one character makes tokens of
        megabytes) would otherwise hold three copies of them from the start."""
        if self._built is None:
            import tiktoken

            self._built = tiktoken.Encoding(
                name=self._name,
                pat_str=self._pattern,
                mergeable_ranks=self._ranks,
                special_tokens=self._special_tokens,
            )
        return self._built

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The ``tiktoken.Encoding`` with these ranks, pattern and special tokens."""
        return self._encoding

    @property
    def name(self) -> str:
        """The name of :attr:`encoding` (tiktoken's ``Encoding.name``)."""
        return self._name

    @property
    def pattern(self) -> str:
        """The split pattern (a regex string)."""
        return self._pattern

    @property
    def mergeable_ranks(self) -> dict[bytes, int]:
        """A copy of the ranks: token bytes -> rank."""
        return dict(self._ranks)

    @property
    def special_tokens(self) -> dict[str, int]:
        """A copy of the special tokens: name -> id."""
        return dict(self._special_tokens)

    @property
    def n_vocab(self) -> int:
        """Number of token ids: ranks plus special tokens."""
        if self._built is not None:
            return self._built.n_vocab
        return max(max(self._ranks.values(), default=-1), max(self._special_tokens.values(), default=-1)) + 1

    def __repr__(self) -> str:
        return f"<bpeforge.{type(self).__name__} n_vocab={self.n_vocab} special_tokens={len(self._special_tokens)}>"

    # --------------------------------------------------------------------------- encoding

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of ``text`` encoded as ordinary text (special-token text too)."""
        try:
            return self._encoding.encode_ordinary(text)
        except BaseException as e:
            raise tiktoken_failure(e) from None

    @overload
    def encode(  # type: ignore[overload-overlap]  # a str is a Sequence[str] too: it matches first
        self, text: str, prepend: Optional[SpecialToken] = None, append: Optional[SpecialToken] = None,
        num_threads: Optional[int] = 8,
    ) -> list[int]: ...

    @overload
    def encode(
        self, text: Sequence[str], prepend: Optional[SpecialToken] = None,
        append: Optional[SpecialToken] = None, num_threads: Optional[int] = 8,
    ) -> list[list[int]]: ...

    def encode(
        self,
        text: Union[str, Sequence[str]],
        prepend: Optional[SpecialToken] = None,
        append: Optional[SpecialToken] = None,
        num_threads: Optional[int] = 8,
    ) -> Union[list[int], list[list[int]]]:
        """Encodes ordinary text: special-token text such as ``<|bos|>`` is encoded as text.
        Lone surrogates are replaced by U+FFFD, as tiktoken does.

        As nanochat's ``RustBPETokenizer.encode``: ``text`` may be a list of str, encoded in
        parallel on ``num_threads`` threads into a list of lists; ``prepend``/``append`` (a
        special token name or id) is added to each sequence.

        >>> tok = BaseTokenizer({bytes([i]): i for i in range(256)}, special_tokens=["<|bos|>"])
        >>> tok.encode("<|bos|>") == [tok.encode_special("<|bos|>")]
        False
        >>> tok.encode(["ab", "b"], prepend="<|bos|>", append=0)
        [[256, 97, 98, 0], [256, 98, 0]]
        """
        if prepend is None and append is None and isinstance(text, str):
            return self.encode_ordinary(text)
        prepend_id = None if prepend is None else self.special_id(prepend)
        append_id = None if append is None else self.special_id(append)
        if isinstance(text, str):
            ids = self.encode_ordinary(text)
            if prepend_id is not None:
                ids.insert(0, prepend_id)
            if append_id is not None:
                ids.append(append_id)
            return ids
        if not isinstance(text, (list, tuple)):
            raise TypeError(f"text must be a str or a list of str, got {type(text).__name__}")
        for i, t in enumerate(text):
            if not isinstance(t, str):
                raise TypeError(f"text[{i}] must be a str, got {type(t).__name__}")
        num_threads = optional_int(num_threads, "num_threads", 1, "a positive int or None (tiktoken's default)")
        if not text:
            return []
        threads = {} if num_threads is None else {"num_threads": num_threads}
        with tiktoken_errors():
            batch = self._encoding.encode_ordinary_batch(list(text), **threads)
        head = [] if prepend_id is None else [prepend_id]
        tail = [] if append_id is None else [append_id]
        if head or tail:
            batch = [head + ids + tail for ids in batch]
        return batch

    __call__ = encode  # as nanochat's tokenizer: tok(text) is tok.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        """Decodes ids to text (invalid UTF-8 from partial sequences becomes U+FFFD). An id that
        is no token (unknown, negative, too large) raises
        :class:`~bpeforge._errors.UnknownTokenIdError`, a ValueError (and a KeyError) naming it
        and the vocabulary's size; one that is not an integer, TypeError.

        >>> tok = BaseTokenizer({bytes([i]): i for i in range(256)})
        >>> tok.decode([104, 105])
        'hi'
        >>> tok.decode([104, 256])
        Traceback (most recent call last):
        ...
        bpeforge._errors.UnknownTokenIdError: Unknown token id 256: the vocabulary has 256 ids, 0 to 255
        """
        if isinstance(ids, (str, bytes)):
            raise TypeError(f"decode takes a sequence of token ids, not {type(ids).__name__}")
        ids = list(ids)
        try:
            return self._encoding.decode(ids)
        except (KeyError, OverflowError, TypeError, ValueError):
            # Only once tiktoken refused (the fast path checks nothing): the ids are checked one
            # by one to say which is bad and why, or made plain ints if they were all good.
            return self._encoding.decode(self.checked_ids(ids))

    def checked_ids(self, ids: Sequence[Any]) -> list[int]:
        """``ids`` as plain ints, each a token of this vocabulary. Raises
        :class:`~bpeforge._errors.UnknownTokenIdError` for the first that is no token, TypeError
        for one that is not an integer (any integer type is one: a NumPy integer, a 0-d tensor,
        whatever has ``__index__``)."""
        n = self.n_vocab
        checked = []
        for i, value in enumerate(ids):
            try:
                token_id = as_int(value, "a token id")
            except TypeError:
                raise TypeError(f"token ids must be integers; ids[{i}] is a {type(value).__name__}: {value!r}") from None
            if not 0 <= token_id < n:
                raise UnknownTokenIdError(f"Unknown token id {token_id}: the vocabulary has {n:,} ids, 0 to {n - 1:,}")
            try:
                self._encoding.decode_single_token_bytes(token_id)
            except KeyError:  # an id between the ranks and the special tokens that none has
                raise UnknownTokenIdError(
                    f"Unknown token id {token_id}: no token has it (the vocabulary's {n:,} ids run from 0 to {n - 1:,}, with gaps)"
                ) from None
            checked.append(token_id)
        return checked

    # --------------------------------------------------------------------------- token ids

    def encode_special(self, name: Union[str, bytes]) -> int:
        """The id of special token ``name``. As nanochat's (tiktoken's ``encode_single_token``),
        the text (or bytes) of any single token gives its id too. KeyError names the special
        tokens if ``name`` is no token."""
        try:
            return self._special_tokens[name]  # type: ignore[index]
        except (KeyError, TypeError):
            pass
        try:
            return self._encoding.encode_single_token(name)
        except (KeyError, TypeError):
            raise KeyError(f"{name!r} is not a special token (nor a single token); special tokens: {sorted(self._special_tokens)}") from None

    def special_id(self, token: SpecialToken) -> int:
        """The id of ``token``: a special token name, or an id (checked to be in the vocabulary).

        >>> tok = BaseTokenizer({bytes([i]): i for i in range(256)}, special_tokens=["<|bos|>"])
        >>> tok.special_id("<|bos|>"), tok.special_id(7)
        (256, 7)
        """
        if isinstance(token, (str, bytes)):
            return self.encode_special(token)
        try:
            token = as_int(token, "a special token")
        except TypeError:
            raise TypeError(f"a special token must be a name (str) or an id (int), got {type(token).__name__}") from None
        if not 0 <= token < self.n_vocab:
            raise ValueError(f"token id {token} is out of range: ids run from 0 to {self.n_vocab - 1}")
        return token

    @property
    def bos_token_id(self) -> int:
        """The id of ``<|bos|>``, or of ``<|endoftext|>`` when there is no ``<|bos|>`` (tiktoken's
        encodings call their document delimiter that, as nanochat's ``from_pretrained`` knows)."""
        for name in (BOS, ENDOFTEXT):
            if name in self._special_tokens:
                return self._special_tokens[name]
        raise KeyError(f"the tokenizer has neither {BOS!r} nor {ENDOFTEXT!r}; its special tokens: {sorted(self._special_tokens)}")

    def id_to_token(self, id: int) -> str:
        """The text of token ``id`` (U+FFFD where its bytes are not whole UTF-8 characters). The
        id may be any integer type (a NumPy integer, a 0-d tensor: whatever has ``__index__``);
        one that is no token raises :class:`~bpeforge._errors.UnknownTokenIdError` (a ValueError
        and a KeyError), as :meth:`decode` does."""
        return self.decode([as_int(id, "a token id")])  # decode says why a bad id is bad

    def token_bytes(self, as_numpy: bool = False) -> Any:
        """For every id ``0 .. n_vocab - 1``, the number of bytes the token stands for: the length
        of its bytes for a rank, 0 for a special token (or an unused id). A list, or an int32
        NumPy array with ``as_numpy=True``.

        Unlike nanochat's ``tok_train.py``, which measures ``decode([id])`` and so counts a token
        that is part of a UTF-8 character as the 3 bytes of U+FFFD, this counts the token's own
        bytes: the sum over the ids of any encoded text is that text's UTF-8 length, as
        bits-per-byte needs.

        >>> tok = BaseTokenizer({bytes([i]): i for i in range(256)}, special_tokens=["<|bos|>"])
        >>> tb = tok.token_bytes()
        >>> len(tb) == tok.n_vocab, tb[:2], tb[-1]
        (True, [1, 1], 0)
        """
        values = [0] * self.n_vocab
        for token, rank in self._ranks.items():
            values[rank] = len(token)
        if as_numpy:
            np = import_numpy("as_numpy=True")
            return np.asarray(values, dtype=np.int32)
        return values


def import_numpy(what: str) -> Any:
    """NumPy, or a ModuleNotFoundError saying that ``what`` needs it and how to install it."""
    try:
        import numpy
    except ModuleNotFoundError as e:
        if e.name != "numpy":
            raise
        raise ModuleNotFoundError(f"{what} needs NumPy (pip install 'bpeforge[numpy]')", name="numpy") from None
    return numpy


def of_checked_ranks(cls: type[T], ranks: dict[bytes, int], pattern: Optional[str], special_tokens: Mapping[str, int], name: str) -> T:
    """A ``cls`` (a :class:`BaseTokenizer`) of ``ranks``, a dict of bytes to int ranks that
    :func:`bpeforge._core.check_ranks` passed and that the caller hands over (an import's): kept
    as it is, without the constructor's copy and second check, which for millions of tokens cost
    as much memory as the ranks themselves."""
    tok = cls.__new__(cls)
    tok._take_parts(ranks, pattern, special_tokens, name)
    return tok
