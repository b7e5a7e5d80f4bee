"""Compression of texts by tokenizers, compared: ``bpeforge eval`` and :func:`evaluate`.

For each text and tokenizer: the UTF-8 bytes, the tokens (the text encoded as ordinary text),
bytes per token (higher is better compression), tokens per character (the usual check of how
fairly a vocabulary covers a language: English is about 0.25-0.3 on a well-trained tokenizer), and
the relative difference in tokens against the *first* tokenizer, as nanochat's ``tok_eval`` reports
it: ``(first_tokens - tokens) / first_tokens * 100``, positive when this tokenizer needs fewer.

A tokenizer is given as

* a :class:`bpeforge.Tokenizer` or a ``tiktoken.Encoding``;
* the path of a folder written by :meth:`bpeforge.Tokenizer.save`;
* the path of a ``.tiktoken`` ranks file, optionally followed by ``:PATTERN``, where PATTERN is a
  preset name (``bpeforge.PATTERNS``) or a regex: ``out/tok.tiktoken:nanochat``. Without one the
  ``pattern`` argument (``--pattern``) is used, GPT-4's by default. The file has no special tokens;
* the name of a tiktoken encoding (``gpt2``, ``cl100k_base``, ``o200k_base``, ... ``gpt4`` is taken
  as ``cl100k_base`` as in nanochat, and model names such as ``gpt-4o`` work too). tiktoken
  downloads these on first use; offline and without a cached copy this fails with an
  :class:`EvalError` saying so.

A text is a str, or a :class:`TextFile`, read a few MB at a time. Tokens are counted by the
compiled core's ``Encoder``, which encodes exactly as tiktoken's ``encode_ordinary`` (special-token
text is ordinary text) in time that grows as n log n with a span's length where tiktoken's grows
as its square, and never gives up on the preset patterns (a custom pattern's regex engine may: an
:class:`EvalError` naming the tokenizer). Texts are counted in pieces of at most a million
characters, cut where no preset pattern's span crosses (see :func:`text_pieces`), so time and
memory stay bounded whatever a text's size, and the counts are those of the text whole.

``bpeforge eval`` (:mod:`bpeforge.cli.eval`) is the command line over :func:`evaluate`.

>>> import bpeforge
>>> byte_level = bpeforge.Tokenizer({bytes([i]): i for i in range(256)})
>>> tok = bpeforge.Tokenizer.train_from_iterator(["hello hello"] * 4, vocab_size=260, special_tokens=[])
>>> rows = evaluate({"bytes": byte_level, "trained": tok}, {"greeting": "hello hello"})
>>> [(r.tokenizer, r.bytes, r.tokens, round(r.bytes_per_token, 2), round(r.relative_diff, 1)) for r in rows]
[('bytes', 11, 11, 1.0, 0.0), ('trained', 11, 3, 3.67, 72.7)]
>>> print(format_table(rows))
Vocab sizes:
  bytes    256
  trained  260
<BLANKLINE>
Diff %: tokens saved against bytes (positive: fewer tokens than bytes)
====================================================================================
Text      Bytes  Chars  Tokenizer  Tokens  Bytes/token  Tokens/char  Diff %  Better
------------------------------------------------------------------------------------
greeting     11     11  bytes          11         1.00        1.000
                        trained         3         3.67        0.273  +72.7%  trained
"""

from __future__ import annotations

import codecs
import os
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from . import _core
from ._chat import GREEN, RED, RESET
from ._checks import missing_single_bytes
from ._errors import SPLIT_FAILED, EncodingUnavailable, EvalError
from ._io import read_tiktoken
from ._patterns import resolve_pattern
from ._pretrained import ALIASES, load_tiktoken_encoding
from ._tokenizer import Tokenizer

if TYPE_CHECKING:  # imported where used: training alone never loads tiktoken
    import tiktoken

__all__ = [
    "ALIASES",
    "EncodingUnavailable",
    "EvalError",
    "EvalRow",
    "TextFile",
    "evaluate",
    "format_table",
    "load_tiktoken_encoding",
    "load_tiktoken_file",
    "load_tokenizer",
    "split_tiktoken_spec",
]

TokenizerLike = Union[Tokenizer, "tiktoken.Encoding", str, "os.PathLike[str]"]

PIECE_CHARS = 1 << 20
"""Texts are counted in pieces of at most this many characters (see :func:`text_pieces`)."""
BATCH_BYTES = 4 << 20
"""Pieces are counted in batches of at most this many UTF-8 bytes (or one piece), at most
``num_threads`` pieces, one per thread: the memory of counting is bounded by these two."""
READ_BYTES = 4 << 20
"""A :class:`TextFile` is read this many bytes at a time."""


class EvalRow(NamedTuple):
    """One text encoded by one tokenizer (``relative_diff`` is a percentage)."""

    text: str
    """The text's name."""
    tokenizer: str
    """The tokenizer's name."""
    bytes: int
    """UTF-8 bytes of the text."""
    tokens: int
    """Tokens of the text (encoded as ordinary text)."""
    bytes_per_token: float
    """``bytes / tokens``: higher is better compression."""
    tokens_per_char: float
    """``tokens / chars``."""
    relative_diff: float
    """``(first - tokens) / first * 100`` where ``first`` is the first tokenizer's token count:
    positive when this tokenizer needs fewer tokens than the first (0 for the first itself)."""
    chars: int
    """Characters (code points) of the text."""
    vocab_size: int
    """The tokenizer's ``n_vocab``."""


# ------------------------------------------------------------------------------ loading


def split_tiktoken_spec(spec: str) -> Optional[Tuple[str, Optional[str]]]:
    """``(path, pattern or None)`` when ``spec`` names a ``.tiktoken`` file, else None.

    >>> split_tiktoken_spec("out/tok.tiktoken:nanochat")
    ('out/tok.tiktoken', 'nanochat')
    >>> split_tiktoken_spec("ranks.tiktoken"), split_tiktoken_spec("out/tok")
    (('ranks.tiktoken', None), None)
    """
    if spec.endswith(".tiktoken"):
        return spec, None
    marker = ".tiktoken:"
    at = spec.find(marker)
    if at < 0:
        return None
    return spec[: at + len(".tiktoken")], spec[at + len(marker) :]


def load_tiktoken_file(path: Union[str, "os.PathLike[str]"], pattern: Optional[str] = None) -> Tokenizer:
    """A tokenizer from a ``.tiktoken`` ranks file (read strictly, no special tokens) and
    ``pattern`` (a preset name, a regex, or None for GPT-4's)."""
    try:
        regex = resolve_pattern(pattern)
    except ValueError as e:
        raise EvalError(f"{path}: bad pattern {pattern!r}: {e}") from None
    ranks = read_tiktoken(path)  # distinct tokens at distinct ranks
    missing = missing_single_bytes(ranks)
    if missing:
        raise EvalError(f"{path}: {len(missing)} single bytes are not tokens (e.g. {bytes([missing[0]])!r}); tiktoken needs all 256")
    try:
        _core.check_ranks(ranks)
    except ValueError as e:
        raise EvalError(f"{path}: {e}") from None
    try:
        return Tokenizer(ranks, regex, {}, name=Path(path).stem)
    except ValueError as e:  # all that is left to check is the pattern
        raise EvalError(f"{path}: bad pattern {pattern!r}: {e}") from None


def load_tokenizer(spec: TokenizerLike, pattern: Optional[str] = None) -> Tokenizer:
    """The :class:`~bpeforge.Tokenizer` for ``spec`` (see the module docstring for the forms);
    ``pattern`` is the split pattern of a ``.tiktoken`` file given without ``:PATTERN``."""
    import tiktoken

    if isinstance(spec, Tokenizer):
        return spec
    if isinstance(spec, tiktoken.Encoding):
        return Tokenizer.from_encoding(spec)
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(
            f"a tokenizer must be a bpeforge.Tokenizer, a tiktoken.Encoding or a str/path, got {type(spec).__name__}"
        )
    text = os.fspath(spec)
    path = Path(text)
    if path.is_dir():
        return Tokenizer.load(path)
    tiktoken_spec = split_tiktoken_spec(text)
    if tiktoken_spec is not None:
        file, file_pattern = tiktoken_spec
        if not Path(file).is_file():
            raise EvalError(f"{file}: no such .tiktoken file")
        return load_tiktoken_file(file, file_pattern if file_pattern is not None else pattern)
    if path.is_file():
        raise EvalError(
            f"{text}: a file, but not a .tiktoken ranks file; give the folder of a saved bpeforge tokenizer, "
            f"a .tiktoken file (PATH.tiktoken or PATH.tiktoken:PATTERN) or a tiktoken encoding name"
        )
    if os.sep in text or (os.altsep and os.altsep in text):
        raise EvalError(f"{text}: no such file or folder")
    try:
        encoding = load_tiktoken_encoding(text)
    except EncodingUnavailable:
        raise
    except EvalError as e:  # neither a file nor a name tiktoken knows: say both
        raise EvalError(f"{text}: no such file or folder, and {e}") from None
    return Tokenizer.from_encoding(encoding)


# ------------------------------------------------------------------------------ evaluation


def _unique(names: List[str]) -> List[str]:
    seen: Dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def named_tokenizers(tokenizers: Any) -> List[Tuple[str, Any]]:
    """``(name, tokenizer)`` pairs for the ``tokenizers`` argument of :func:`evaluate`, names
    made unique (see there for how each is named)."""
    import tiktoken

    if isinstance(tokenizers, Mapping):
        items = [(str(k), v) for k, v in tokenizers.items()]
    elif isinstance(tokenizers, (str, os.PathLike, Tokenizer, tiktoken.Encoding)):
        items = [(_default_name(tokenizers, 0), tokenizers)]
    else:
        items = [(_default_name(t, i), t) for i, t in enumerate(tokenizers)]
    if not items:
        raise EvalError("no tokenizers to evaluate")
    return list(zip(_unique([n for n, _ in items]), [t for _, t in items]))


def _default_name(spec: Any, i: int) -> str:
    import tiktoken

    if isinstance(spec, (str, os.PathLike)):
        return os.fspath(spec).rstrip("/\\") or os.fspath(spec)
    if isinstance(spec, tiktoken.Encoding):
        return spec.name
    return f"tokenizer{i + 1}"


class TextFile:
    """A UTF-8 text file to evaluate, read :data:`READ_BYTES` at a time rather than whole, so
    that memory stays bounded whatever its size; a byte-order mark at its start is not text.
    ``name`` is how messages call it (its path by default).

    >>> import bpeforge, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> _ = path.write_text("hello hello", encoding="utf-8")
    >>> byte_level = bpeforge.Tokenizer({bytes([i]): i for i in range(256)})
    >>> [(r.bytes, r.tokens) for r in evaluate([byte_level], {"t": TextFile(path)})]
    [(11, 11)]
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], name: Optional[str] = None) -> None:
        self.path = path
        self.name = os.fspath(path) if name is None else name

    def __repr__(self) -> str:
        return f"TextFile({os.fspath(self.path)!r})"

    def chunks(self) -> Iterator[str]:
        """The text in consecutive parts. Raises :class:`EvalError` naming the file for one that
        cannot be read, is empty, or holds bytes that are not UTF-8 (and the first one's offset)."""
        try:
            file = open(self.path, "rb")
        except OSError as e:
            raise EvalError(f"{self.name}: {e.strerror or e}") from None
        with file:
            offset = 0  # of data[0] in the file
            data = b""
            first, any_text = True, False
            while True:
                try:
                    read = file.read(max(READ_BYTES, 3) if first else READ_BYTES)
                except OSError as e:
                    raise EvalError(f"{self.name}: {e.strerror or e}") from None
                data += read
                if first and data.startswith(b"\xef\xbb\xbf"):
                    data, offset = data[3:], 3
                first = False
                try:
                    # Up to the last whole character; the bytes of one cut by the read wait.
                    text, used = codecs.utf_8_decode(data, "strict", not read)
                except UnicodeDecodeError as e:
                    raise EvalError(
                        f"{self.name}: not UTF-8 text (byte {offset + e.start}: {data[e.start:e.start + 1]!r})"
                    ) from None
                if text:
                    any_text = True
                    yield text
                data, offset = data[used:], offset + used
                if not read:
                    break
        if not any_text:
            raise EvalError(f"{self.name}: the file is empty")

    def check(self) -> None:
        """Reads the file through, raising what :meth:`chunks` raises: to find a bad text before
        any time is spent counting."""
        for _ in self.chunks():
            pass


TextLike = Union[str, TextFile]


def _named_texts(texts: Any) -> List[Tuple[str, TextLike]]:
    if isinstance(texts, (str, TextFile)):
        items = [("text", texts)]
    elif isinstance(texts, Mapping):
        items = [(str(k), v) for k, v in texts.items()]
    else:
        items = []
        for i, item in enumerate(texts):
            if isinstance(item, (str, TextFile)):
                items.append((f"text{i + 1}", item))
            elif isinstance(item, (tuple, list)) and len(item) == 2:
                items.append((str(item[0]), item[1]))
            else:
                raise EvalError(f"texts[{i}] must be a str, a TextFile or a (name, text) pair, got {type(item).__name__}")
    if not items:
        raise EvalError("no texts to evaluate")
    for name, text in items:
        if not isinstance(text, (str, TextFile)):
            raise EvalError(f"text {name!r} must be a str or a TextFile, got {type(text).__name__}")
        if not text:
            raise EvalError(f"text {name!r} is empty")
    return list(zip(_unique([n for n, _ in items]), [t if isinstance(t, TextFile) else _as_tiktoken_reads(t) for _, t in items]))


def _as_tiktoken_reads(text: str) -> str:
    """``text`` as tiktoken encodes it: a str that is not valid Unicode (surrogates) is read
    through UTF-16, so a surrogate pair becomes its character and a lone surrogate U+FFFD. Its
    bytes and characters are then counted on what was encoded."""
    if SURROGATE.search(text) is None:  # (searched rather than encoded: no copy of a huge text)
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


SURROGATE = re.compile("[\ud800-\udfff]")


# ------------------------------------------------------------------------------ pieces

# The places where a text may be cut without changing the spans any preset pattern (GPT-2's,
# cl100k's, GPT-4's, nanochat's, o200k's) splits it into: the end of a match of
#   [^\W_]\n(?=\S)     a line end between a letter or digit and a character that is no space;
#   \S(?= )           a non-space before a space;
#   [A-Za-z](?=[0-9])  an ASCII letter before an ASCII digit.
# No span of those patterns holds a letter or digit then a line end, a non-space then a space,
# nor a letter then a digit, so a span ends at each of these places; a line end followed by a
# non-space is a span of its own; and the spans from there on are the same whether the text
# starts there or not (no preset pattern looks behind), while those before it never look past
# it. Counting the pieces one by one thus gives the tokens of the whole text
# (tests/test_eval.py checks it against tiktoken on every preset). A custom pattern may split a
# text differently across a cut.
SAFE_CUT = re.compile(r"[^\W_]\n(?=\S)|\S(?= )|[A-Za-z](?=[0-9])")


def _last_safe_cut(text: str, start: int, end: int) -> Optional[int]:
    """The last place of :data:`SAFE_CUT` after ``start`` in ``text[:end]`` (as if the text
    ended at ``end``), or None. Searched backwards from ``end`` in growing windows: the matches
    of :data:`SAFE_CUT` never overlap, so the last one found from any start is the last one."""
    width = 256
    while True:
        lo = max(start, end - width)
        last = None
        for last in SAFE_CUT.finditer(text, lo, end):
            pass
        if last is not None:
            return last.end()
        if lo == start:
            return None
        width *= 4


def text_pieces(chunks: Iterable[str], size: int = PIECE_CHARS) -> Iterator[Tuple[str, bool]]:
    """The text made of ``chunks`` (consecutive parts of it, of any sizes) as ``(piece, forced)``
    pieces of at most ``size`` characters. Each piece but the last ends at the last place of
    :data:`SAFE_CUT` within ``size`` characters of its start, so that the preset patterns split
    the pieces into the spans of the whole text. Where ``size`` characters hold no such place (a
    run of one letter, of spaces, of punctuation), the piece is cut at ``size`` characters
    anyway and ``forced`` is true: a span is then cut in two, which may change its tokens by a
    few. Where pieces end depends on the text alone, not on how ``chunks`` part it.

    >>> list(text_pieces(["hello wor", "ld 42"], size=8))
    [('hello', False), (' world', False), (' 42', False)]
    >>> list(text_pieces(["aaaaa"], size=2))
    [('aa', True), ('aa', True), ('a', False)]
    """
    buffer, start = "", 0
    parts = iter(chunks)
    more = True
    while True:
        while more and len(buffer) - start <= size:
            chunk = next(parts, None)
            if chunk is None:
                more = False
            elif chunk:
                buffer, start = (buffer[start:] + chunk if start < len(buffer) else chunk), 0
        if len(buffer) - start <= size:  # the whole rest of the text
            if start < len(buffer):
                yield buffer[start:], False
            return
        cut = _last_safe_cut(buffer, start, start + size)
        forced = cut is None
        if cut is None:
            cut = start + size
        yield buffer[start:cut], forced
        start = cut


def piece_batches(pieces: Iterable[Tuple[str, bool]], max_pieces: int) -> Iterator[Tuple[List[str], int, int]]:
    """``(pieces, UTF-8 bytes, forced cuts)`` in batches of at most ``max_pieces`` pieces and
    :data:`BATCH_BYTES` bytes (or one piece)."""
    batch: List[str] = []
    n_bytes = forced = 0
    for piece, was_forced in pieces:
        size = len(piece.encode("utf-8"))
        if batch and (len(batch) >= max_pieces or n_bytes + size > BATCH_BYTES):
            yield batch, n_bytes, forced
            batch, n_bytes, forced = [], 0, 0
        batch.append(piece)
        n_bytes += size
        forced += was_forced
    if batch:
        yield batch, n_bytes, forced


class _Counter(NamedTuple):
    name: str
    tokenizer: Tokenizer
    encoder: _core.Encoder


def _counter(name: str, tokenizer: Tokenizer) -> _Counter:
    try:
        encoder = _core.Encoder(list(tokenizer.mergeable_ranks.items()), tokenizer.pattern)
    except ValueError as e:
        raise EvalError(f"tokenizer {name!r} cannot encode: {e}") from None
    return _Counter(name, tokenizer, encoder)


def _count_text(text_name: str, text: TextLike, counters: Sequence[_Counter], num_threads: int) -> Tuple[int, int, List[int]]:
    """``(bytes, characters, tokens of each tokenizer)`` of one text, counted in pieces."""
    chunks = text.chunks() if isinstance(text, TextFile) else [text]
    n_bytes = n_chars = forced = 0
    tokens = [0] * len(counters)
    covered = [0] * len(counters)
    for batch, batch_bytes, batch_forced in piece_batches(text_pieces(chunks, PIECE_CHARS), num_threads):
        n_bytes += batch_bytes
        n_chars += sum(len(piece) for piece in batch)
        forced += batch_forced
        for k, counter in enumerate(counters):
            try:
                batch_tokens, batch_covered = counter.encoder.count(batch)
            except RuntimeError as e:
                if not str(e).startswith(SPLIT_FAILED):
                    raise
                raise EvalError(
                    f"tokenizer {counter.name!r} cannot encode text {text_name!r}: {e} "
                    "(its split pattern is too costly for the regex engine on this text: simplify the pattern)"
                ) from None
            tokens[k] += batch_tokens
            covered[k] += batch_covered
    if n_chars == 0:
        raise EvalError(f"text {text_name!r} is empty")
    for counter, n_covered in zip(counters, covered):
        if n_covered != n_bytes:
            raise EvalError(
                f"tokenizer {counter.name!r} encodes only {n_covered:,} of the {n_bytes:,} bytes of text {text_name!r}: "
                "its split pattern skips the rest (a pattern must match every character to be compared fairly)"
            )
    if forced:
        warnings.warn(
            f"text {text_name!r}: {forced:,} stretch{'es' if forced != 1 else ''} of {PIECE_CHARS:,} characters "
            "without a space or line end between words (a run of one character, of spaces or of punctuation) "
            "had to be cut inside a span to keep memory bounded: its token counts may be off by a few tokens per cut",
            stacklevel=3,
        )
    return n_bytes, n_chars, tokens


def evaluate(
    tokenizers: Union[Mapping[str, TokenizerLike], Sequence[TokenizerLike], TokenizerLike],
    texts: Union[Mapping[str, TextLike], Sequence[Union[TextLike, Tuple[str, TextLike]]], TextLike],
    *,
    pattern: Optional[str] = None,
    num_threads: int = 8,
) -> List[EvalRow]:
    """Encodes every text with every tokenizer; one :class:`EvalRow` per (text, tokenizer),
    grouped by text in the order given, the tokenizers in the order given within each.

    ``tokenizers``: a dict of name to tokenizer, or a list (a str/path is named by itself, a
    ``tiktoken.Encoding`` by its name, others ``tokenizer1``, ``tokenizer2``, ...), of any of the
    forms in the module docstring; the first is the reference for ``relative_diff``. ``texts``: a
    dict of name to text, a list of ``(name, text)`` pairs or of texts (named ``text1``, ...), or
    one text; a text is a str or a :class:`TextFile`. Empty texts are refused. ``pattern`` is for
    ``.tiktoken`` files without ``:PATTERN``. ``num_threads``: at most that many pieces of a text
    are counted at once, one per thread.

    >>> import bpeforge
    >>> byte_level = bpeforge.Tokenizer({bytes([i]): i for i in range(256)})
    >>> [r.tokens_per_char for r in evaluate([byte_level], ["héllo"])]
    [1.2]
    """
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
    named_texts = _named_texts(texts)
    loaded = [(name, load_tokenizer(spec, pattern)) for name, spec in named_tokenizers(tokenizers)]
    counters = [_counter(name, tok) for name, tok in loaded]
    rows = []
    for text_name, text in named_texts:
        n_bytes, n_chars, counts = _count_text(text_name, text, counters, num_threads)
        first = counts[0]
        for counter, n_tokens in zip(counters, counts):
            rows.append(
                EvalRow(
                    text=text_name,
                    tokenizer=counter.name,
                    bytes=n_bytes,
                    tokens=n_tokens,
                    bytes_per_token=n_bytes / n_tokens,
                    tokens_per_char=n_tokens / n_chars,
                    relative_diff=(first - n_tokens) / first * 100,
                    chars=n_chars,
                    vocab_size=counter.tokenizer.n_vocab,
                )
            )
    return rows


def format_table(rows: Sequence[EvalRow], *, color: bool = False) -> str:
    """``rows`` of :func:`evaluate` as a text table in the manner of nanochat's ``tok_eval``: the
    vocabulary sizes, then one line per (text, tokenizer) with the relative difference to the first
    tokenizer of each text and which of the two compresses better. With ``color``, the better of the
    two is green and the worse red (ANSI colours)."""
    rows = list(rows)
    if not rows:
        return ""
    vocab: Dict[str, int] = {}
    for r in rows:
        vocab.setdefault(r.tokenizer, r.vocab_size)
    name_width = max(len(n) for n in vocab)
    lines = ["Vocab sizes:"]
    lines += [f"  {name:<{name_width}}  {size}" for name, size in vocab.items()]
    reference = rows[0].tokenizer
    lines += ["", f"Diff %: tokens saved against {reference} (positive: fewer tokens than {reference})"]

    headers = ["Text", "Bytes", "Chars", "Tokenizer", "Tokens", "Bytes/token", "Tokens/char", "Diff %", "Better"]
    right = [False, True, True, False, True, True, True, True, False]
    table: List[Tuple[List[str], List[str]]] = []  # (cells, colours)
    first_of_text: Dict[str, EvalRow] = {}
    for r in rows:
        ref = first_of_text.setdefault(r.text, r)
        new_text = ref is r
        cells = [r.text if new_text else "", str(r.bytes) if new_text else "", str(r.chars) if new_text else ""]
        cells += [r.tokenizer, str(r.tokens), f"{r.bytes_per_token:.2f}", f"{r.tokens_per_char:.3f}"]
        colours = [""] * len(headers)
        if new_text:
            cells += ["", ""]
        else:
            if r.tokens < ref.tokens:
                better, mine = r.tokenizer, GREEN
            elif r.tokens > ref.tokens:
                better, mine = ref.tokenizer, RED
            else:
                better, mine = "tie", ""
            cells += [f"{r.relative_diff:+.1f}%", better]
            colours[4] = colours[5] = colours[7] = mine
        table.append((cells, colours))
    widths = [max(len(h), *(len(c[k]) for c, _ in table)) for k, h in enumerate(headers)]

    def render(cells: Sequence[str], colours: Sequence[str]) -> str:
        out = []
        for k, cell in enumerate(cells):
            padded = cell.rjust(widths[k]) if right[k] else cell.ljust(widths[k])
            out.append(f"{colours[k]}{padded}{RESET}" if color and colours[k] and cell else padded)
        return "  ".join(out).rstrip()

    total = sum(widths) + 2 * (len(widths) - 1)
    lines += ["=" * total, render(headers, [""] * len(headers)), "-" * total]
    lines += [render(cells, colours) for cells, colours in table]
    return "\n".join(lines)
