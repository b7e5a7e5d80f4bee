"""Type stubs for the compiled core (`bpeforge._core`). The docstrings are the runtime's (a test
checks they match), so that editors show them."""

import os
import pathlib
from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence, Tuple, Union, final

from typing_extensions import disjoint_base

__all__ = ["Trainer", "Recipe", "NANOCHAT_SPECIAL_TOKENS", "SUPERWORD_PATTERN", "ParquetReader", "Encoder", "DocumentReader", "TextReader", "JsonlReader", "arrow_documents", "parquet_documents", "InputError", "check_ranks", "ranks_to_tiktoken", "split", "check_pattern", "first_merge_disagreement", "huggingface_merges", "read_tokenizer_json", "HuggingfaceModel", "resolve_pattern", "DEFAULT_PATTERN", "PRESETS", "SpanCounts", "count_texts"]

DEFAULT_PATTERN: str
PRESETS: list[tuple[str, str]]

_ProgressCallback = Callable[[str, dict[str, Any]], None]
_Span = Union[str, bytes]

class _ArrowArrayExportable(Protocol):
    """An Arrow array exported through the Arrow PyCapsule interface (a pyarrow ``Array``, the
    chunks of a ``ChunkedArray``, ...). ``train_from_iterator`` takes those of type utf8
    (``string``), large_utf8 (``large_string``) or utf8_view (``string_view``); it reads them
    without a Python str per text and skips their null entries."""

    def __arrow_c_array__(self, requested_schema: Optional[object] = None) -> tuple[object, object]: ...

@final
class Trainer:
    """Trains byte-level BPE ranks from text, as rustbpe does, exactly and deterministically."""

    def __new__(cls, pattern: Optional[str] = None, *, num_threads: Optional[int] = None) -> Trainer: ...
    def learn(
        self,
        recipe: Recipe,
        *,
        texts: Optional[Iterable[Union[str, list[str], _ArrowArrayExportable, "DocumentReader"]]] = None,
        counts: Union[SpanCounts, Mapping[str, int], Mapping[bytes, int], Mapping[_Span, int], Iterable[tuple[_Span, int]], None] = None,
        base: Optional[Any] = None,
        buffer_size: int = 8192,
        progress: Optional[_ProgressCallback] = None,
        superword_counts: Optional[SpanCounts] = None,
        dev: Optional[Sequence[SpanCounts]] = None,
        ratio: Optional[Sequence[float]] = None,
    ) -> int:
        """Trains as `recipe` says (a `Recipe`: every option of the training), from `texts` or from
        `counts` (one of them), extending `base` if given, and replaces any earlier training.

        `texts` is an iterable whose items are str, lists of str, Arrow string arrays (any object
        with `__arrow_c_array__` of type utf8, large_utf8 or utf8_view, such as a pyarrow
        `StringArray` or the chunks of a `ChunkedArray`) or bpeforge's readers. Lists and arrays
        are cheap ways to hand over batches; an array's strings are copied straight from its
        buffers, without a Python str per text, and its null entries are skipped (each non-null
        entry, empty or not, is one text). Texts are pulled in batches of `buffer_size` (more
        while a batch holds under 1 MiB of text, fewer once it holds 2 MiB, even in the middle of
        a list or array, so that memory stays bounded whatever an item holds) and split and
        counted without the GIL while the next batches are pulled: on all threads but one while
        Python pulls (it keeps a core; the calling thread counts a batch itself when four wait),
        on all of them once it is done. The iterable is consumed once and never held whole.

        `counts` is a `SpanCounts` (made with the recipe's pattern and `doc_cap`, else an
        `OptionError` naming the option; borrowed, not copied; mixed counts read `min_frequency`
        in occurrences of the mixed corpus), or maps each span (str or bytes, taken as one span,
        not split) to how often it occurs (a non-negative int below 2^64): a mapping, or an
        iterable of (span, count) pairs. Counts of repeated spans add up (an OverflowError past
        2^64-1).

        `base` is a tokenizer to extend (a `bpeforge.Tokenizer`): its split pattern and special
        tokens must be the recipe's, and its ids are all kept; each distinct span starts as the
        base's encoding of it (as tiktoken would make it), merging goes on by the same rule, and
        the new tokens are numbered from the base's `n_vocab` on, up to the recipe's `vocab_size`.
        A base with a token that merging its bytes does not make (ranks not made by BPE
        training) is refused with a ValueError naming it.

        Training stops earlier if no pair is left or the best pair occurs fewer than
        `min_frequency` times. `progress`, if given, is called as `progress(phase, info)`: phase
        "count" after each item that filled a batch, and at the end (info: texts and bytes so
        far, and spans, a lower bound of the distinct spans so far: the exact number is in
        `stats` at the end) and phase "merge" about every 0.1% of the merges (info: done, total,
        pair, token, count). An exception raised by the callback or the iterator stops training
        and propagates; the trainer keeps its old state. Returns the number of ranks asked for
        (the base's or the 256 single bytes, and the new ones).

        A recipe with `parity` learns from one `SpanCounts` per language: `counts` is their list,
        `dev` (optional) a list of each language's dev counts (the same order), which the
        selection measures, and `ratio` (optional, not with `dev`) each language's target
        compression rate; `parity_trace` tells afterwards how each language fared.
        """
    def train_from_iterator(
        self,
        iterator: Iterable[Union[str, list[str], _ArrowArrayExportable, "DocumentReader"]],
        vocab_size: int,
        buffer_size: int = 8192,
        pattern: Optional[str] = None,
        *,
        min_frequency: int = 1,
        progress: Optional[_ProgressCallback] = None,
        max_token_length: Optional[int] = None,
    ) -> None:
        """Trains on an iterable of texts (as `learn` reads them), replacing any earlier training:
        rustbpe's method. `vocab_size` counts the 256 byte tokens (there are no special tokens
        here); `pattern`, if given (as for the constructor), replaces the trainer's split
        pattern. `min_frequency`, `max_token_length` and `progress` as a `Recipe` and `learn`
        take them.
        """
    def train_from_counts(
        self,
        counts: Union[SpanCounts, Mapping[str, int], Mapping[bytes, int], Mapping[_Span, int], Iterable[tuple[_Span, int]]],
        vocab_size: int,
        *,
        min_frequency: int = 1,
        progress: Optional[_ProgressCallback] = None,
        max_token_length: Optional[int] = None,
    ) -> None:
        """Trains from already counted spans (as `learn` reads them), with the trainer's split
        pattern (`SpanCounts` made with another raise a ValueError naming both) and the
        counts' `doc_cap`. Same options as `train_from_iterator`; pair counts are 64-bit, so
        counts in the billions are exact.
        """
    def get_pattern(self) -> str:
        """The split pattern."""
    def get_mergeable_ranks(self) -> list[tuple[bytes, int]]:
        """The ranks as `[(token_bytes, rank)]`: the 256 single bytes, then learned tokens in order
        (after extending a base: the base's ranks with their ids, then the new tokens; with
        HuggingFace's tie-break, its ids: the alphabet's bytes after the special tokens, then the
        learned tokens).
        """
    def get_merges(self) -> list[tuple[int, int, int, int]]:
        """Every merge in order as `(left_id, right_id, token_id, count)`; merge `k` makes token
        `256 + k` (after extending a base: the base's `n_vocab + k`).
        """
    @property
    def vocab_size(self) -> int:
        """Number of ranks: 256 byte tokens + learned tokens."""
    @property
    def stats(self) -> dict[str, Any]:
        """Figures of the last training: texts, bytes, distinct_spans, count_seconds, merge_seconds."""
    @property
    def parity_trace(self) -> Optional[dict[str, Any]]:
        """How each language fared in the last training, if it was parity-aware (else None): a
        dict of `chosen` (the language of each merge, in the order of `counts`; None for a
        global merge), `lengths` (each language's length in tokens of its measured text, a list
        per language: before the first merge, then after each), `on_dev` (whether that text
        was the dev counts, else the training counts) and `exhausted` (for each language, the
        merges made when it ran out of pairs counted `min_frequency` times, or None)."""

@final
class Recipe:
    """Everything one training is asked to do, checked: the final vocabulary size (special tokens
    included; with a base, its `n_vocab`), the split pattern, the special tokens (numbered after
    the trained ranks), `min_frequency`, `max_token_length` (bytes), `max_token_chars`
    (characters, as CJK corpora want), `doc_cap` (each document cropped to its first `doc_cap`
    characters), `max_token_words` (words, runs of bytes other than the space), the superword
    stage (from `superword_transition` ranks and special tokens on, merging goes on over spans
    split by `superword_pattern`: SuperBPE; 4 words a token unless `max_token_words` says
    otherwise), the layout of the vocabulary (`reserve_special_tokens` unused special tokens
    after the others, counted in `vocab_size`, and the whole padded with more to a multiple of
    `pad_vocab_to_multiple_of`), and the tie-break (`"bpeforge"` or `"huggingface"`, see
    `TieBreak`) with, for HuggingFace's, the bytes always in the alphabet (`initial_alphabet`)
    and the most it keeps (`limit_alphabet`), and parity-aware training (`parity`: "base" or
    "window", with `parity_window` and `parity_alpha`, and `global_merges`; it learns from one
    set of span counts per language, docs/parity.md). Immutable; `replace` makes a changed copy,
    checked again.
    """

    def __new__(
        cls,
        vocab_size: int,
        *,
        pattern: Optional[str] = None,
        special_tokens: Optional[Sequence[str]] = None,
        min_frequency: Optional[int] = None,
        max_token_length: Optional[int] = None,
        doc_cap: Optional[int] = None,
        max_token_words: Optional[int] = None,
        superword_transition: Optional[int] = None,
        superword_pattern: Optional[str] = None,
        reserve_special_tokens: Optional[int] = None,
        pad_vocab_to_multiple_of: Optional[int] = None,
        tie_break: Optional[str] = None,
        initial_alphabet: Optional[Union[bytes, Iterable[int]]] = None,
        limit_alphabet: Optional[int] = None,
        max_token_chars: Optional[int] = None,
        parity: Optional[str] = None,
        parity_window: Optional[int] = None,
        parity_alpha: Optional[float] = None,
        global_merges: Optional[int] = None,
        base: Optional[Any] = None,
    ) -> Recipe: ...
    @property
    def parity(self) -> Optional[str]:
        """Parity-aware training: "base" or "window" (see `Selection`), None for plain training."""
    @property
    def parity_window(self) -> Optional[int]:
        """The moving window of parity's "window" selection, in merges (None otherwise)."""
    @property
    def parity_alpha(self) -> Optional[float]:
        """The alpha of parity's "window" selection: a language chosen more than alpha / languages
        of the window's merges is passed over (None otherwise)."""
    @property
    def global_merges(self) -> Optional[int]:
        """With parity, the first merges made on all languages' counts summed (None: no parity)."""
    @property
    def max_token_chars(self) -> Optional[int]:
        """No token of more than this many characters is made (None: no limit): the UTF-8
        characters its bytes start, a first byte continuing a character counting as one."""
    @property
    def tie_break(self) -> str:
        """How ties between pairs of equal counts are broken: "bpeforge" or "huggingface"."""
    @property
    def initial_alphabet(self) -> Optional[bytes]:
        """The bytes always in the alphabet (HuggingFace's tie-break), sorted; None for none."""
    @property
    def limit_alphabet(self) -> Optional[int]:
        """The most single bytes the alphabet keeps (HuggingFace's tie-break; None: no limit)."""
    @property
    def vocab_size(self) -> int:
        """The final vocabulary size: ranks and special tokens (with a base, its `n_vocab`)."""
    @property
    def pattern(self) -> str:
        """The split pattern, as a regex (a preset's name is resolved)."""
    @property
    def special_tokens(self) -> list[str]:
        """The special tokens' names as given (the reserved ones are `special_token_names`')."""
    @property
    def min_frequency(self) -> int:
        """Training stops when the best pair occurs fewer times than this."""
    @property
    def max_token_length(self) -> Optional[int]:
        """No token longer than this many bytes is made (None: no limit)."""
    @property
    def doc_cap(self) -> Optional[int]:
        """Each document is cropped to its first this many characters (None: whole)."""
    @property
    def max_token_words(self) -> Optional[int]:
        """No token holds more than this many words (runs of bytes other than the space; None: no
        limit).
        """
    @property
    def superword_transition(self) -> Optional[int]:
        """The vocabulary size (special tokens included) the first stage trains to before the
        superword stage (None: no superword stage).
        """
    @property
    def superword_pattern(self) -> Optional[str]:
        """The split pattern of the superword stage, as a regex (None: no superword stage)."""
    @property
    def encoding_pattern(self) -> str:
        """The pattern the trained tokenizer splits by: the superword stage's, if there is one."""
    @property
    def reserve_special_tokens(self) -> int:
        """How many unused special tokens are reserved after the others."""
    @property
    def pad_vocab_to_multiple_of(self) -> Optional[int]:
        """The vocabulary is padded with reserved special tokens to a multiple of this (None: not)."""
    def special_token_names(self, ranks: int) -> list[str]:
        """The special tokens of a tokenizer with `ranks` ranks, numbered after them in this order:
        those given, those reserved (`<|reserved_special_token_0|>`, ...), and as many more
        reserved ones as make `ranks` and all of them a multiple of `pad_vocab_to_multiple_of`.
        """
    @staticmethod
    def fields() -> list[str]:
        """The names of a recipe's fields, in the order `as_dict` gives them."""
    def as_dict(self) -> dict[str, Any]:
        """Every field, by name: what makes `Recipe(**recipe.as_dict())` the same recipe."""
    def replace(self, **changes: Any) -> Recipe:
        """A copy with the fields given changed, checked as a new recipe is."""

NANOCHAT_SPECIAL_TOKENS: list[str]
SUPERWORD_PATTERN: str

@final
class ParquetReader(DocumentReader):
    """Reads the documents of one column of strings of a Parquet file, batch by batch, with little
    memory.

    `ParquetReader(path, column="text", *, batch_rows=1024, batch_bytes=1 << 20, doc_cap=None,
    max_chars=None, holdout_every=0, holdout_max_bytes=1_000_000, documents_before=0,
    sample_max_bytes=0)` opens `path` (reading only its footer) and checks that its top-level
    column `column` holds strings. Iterating gives lists of str in file order, null rows and empty
    strings left out: the documents of `batch_rows` rows each, or fewer once their strings reach
    `batch_bytes` bytes, so that a batch of long documents stays small. Hand it to
    `Trainer.train_from_iterator` as it is (it is read in Rust, without a Python str per
    document), or chain the lists for one str per document. Only the pages of the batch being
    read are held in memory (and the row group's dictionary), whatever the file's size. The
    documents are selected on the way as `TextReader`'s keyword arguments say (crop, budget of
    characters, hold-out, sample; by default every document whole), with its counts.

    Raises OSError (FileNotFoundError, ...) for a file that cannot be opened or read, and
    ValueError for one that is not Parquet, has no such column of strings, is damaged, or
    holds strings that are not UTF-8 (when their batch is read; the message names the row);
    RuntimeError says bpeforge itself failed (a bug: please report it). The codecs are those
    pyarrow writes: snappy, gzip, zstd, lz4 and brotli.
    """

    def __new__(
        cls,
        path: Union[str, os.PathLike[str]],
        column: str = "text",
        *,
        batch_rows: Optional[int] = None,
        batch_bytes: Optional[int] = None,
        doc_cap: Optional[int] = None,
        max_chars: Optional[int] = None,
        holdout_every: Optional[int] = None,
        holdout_max_bytes: Optional[int] = None,
        documents_before: Optional[int] = None,
        sample_max_bytes: Optional[int] = None,
    ) -> ParquetReader: ...
    @property
    def num_rows(self) -> int:
        """The number of rows the file declares, null ones included."""
    @property
    def rows_read(self) -> int:
        """Rows read so far, null ones included."""
    @property
    def bytes_read(self) -> int:
        """UTF-8 bytes of the strings read so far (those of a batch count once it is read), held-out
        and cropped ones whole.
        """
    @property
    def column(self) -> str:
        """The column read."""

@final
class Encoder:
    """Encodes as tiktoken's `encode_ordinary` does with the same ranks and pattern, in time that
    grows with the text (no regex engine's limits for the preset patterns, no quadratic merge on
    long spans): for measuring compression."""

    def __new__(cls, mergeable_ranks: Sequence[tuple[bytes, int]], pattern: str) -> Encoder: ...
    def encode(self, text: str) -> list[int]:
        """The token ids of `text` (special tokens in it are ordinary text)."""
    def batch_encode(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text, as `encode` gives them, the texts encoded in parallel on all
        cores without the GIL."""
    def count(self, texts: Sequence[str]) -> tuple[int, int]:
        """`(tokens, bytes)`: how many tokens `texts` become together, and how many of their UTF-8
        bytes those tokens cover (text the pattern does not match is dropped, as tiktoken drops it)."""

def check_pattern(pattern: str) -> None:
    """Raises ValueError unless `pattern` compiles and never matches an empty string (tiktoken
    panics on empty matches, so such a pattern cannot encode).
    """

def resolve_pattern(pattern: str) -> str:
    """The regex of a `pattern` argument: a preset's name (see `PRESETS`), `superword` (see
    `SUPERWORD_PATTERN`) or a regex. A string with
    no regex syntax at all (which would split out only copies of itself) is taken for a misspelt
    preset name: a ValueError. (The Python package's `resolve_pattern` calls this too.)
    """

def check_ranks(ranks: Union[Mapping[bytes, int], Iterable[tuple[bytes, int]]]) -> None:
    """Raises ValueError unless `ranks` (a dict of bytes to rank, or a list of `(bytes, rank)`)
    satisfies tiktoken's model of ids: distinct non-negative ranks, gaps allowed; every single
    byte a token, at any rank; distinct, non-empty bytes; every longer token the concatenation of
    two tokens of lower rank.
    """

def read_tokenizer_json(data: bytes) -> tuple[Optional[dict[str, Any]], Optional[HuggingfaceModel], Optional[tuple[str, str]]]:
    """Reads the text of a `tokenizer.json` (`data`, its bytes): `(the file as a dict of its small
    parts, or None if it is no JSON object; the model's vocabulary and merges, or None if it has
    no "model" object; None)`, or, for a file that is not JSON, `(None, None, (kind, detail))`
    with kind "nested" (nested deeper than 128) or "syntax" (serde_json's message as detail).
    """

@final
class HuggingfaceModel:
    """The vocabulary and merges of a `tokenizer.json`'s model, read by `read_tokenizer_json`; the
    Python side asks for their shape, then for the ranks (`ranks`), which are checked here.
    """

    @property
    def vocab_is_mapping(self) -> bool:
        """Whether the model's `"vocab"` is a mapping of token to integer id."""
    @property
    def merges_is_list(self) -> bool:
        """Whether the model's `"merges"` is a list."""
    def ranks(self, specials: Mapping[str, int], ignore_merges: bool) -> dict[bytes, int]:
        """The ranks (a dict of token bytes to id) of the vocabulary's entries other than the
        `specials` (a dict of name to id), once checked as `from_huggingface` documents: each
        entry spelled in the byte-level alphabet or a special token at its id; every single
        byte; tiktoken's model of ids (`check_ranks`); each merge two tokens making a token, in
        the order of the ids made; every longer token made by a merge; and unless
        `ignore_merges`, each token's bytes merged back into it by the merges. ValueError naming
        the first problem otherwise. The vocabulary and merges are let go of as they are used.
        """

def ranks_to_tiktoken(ranks: Union[Mapping[bytes, int], Iterable[tuple[bytes, int]]]) -> bytes:
    """The text of a `.tiktoken` file of `ranks` (as `check_ranks` takes them): one `base64(token)
    rank` line per token, by rank. Made in place in the `bytes` returned (the text is a third
    larger than the tokens: it is held once, and the tokens are not copied).
    """

def split(text: str, pattern: str, *, fast: bool = True) -> list[str]:
    """Splits `text` into spans with `pattern` (a preset's name or a regex), as training does (for
    tests and inspection). Preset patterns use the fast scanner unless `fast=False`, which forces
    fancy-regex.
    """

@final
class SpanCounts:
    """Span counts: the distinct spans of a corpus (as bytes), how often each occurred, the split
    pattern that made them and the counting options that change spans.

    Made by `bpeforge.count(texts)`, `SpanCounts.from_mapping`, `SpanCounts.load` or
    `SpanCounts.from_parquet`; added with `+` or `SpanCounts.merge`, exactly (64-bit counts, an
    OverflowError past 2^64-1) and in any order or grouping with the same result; trained from
    with `Tokenizer.train_from_counts`. Counts made with different patterns (or options) cannot
    be added: a ValueError naming both. Immutable; pickles as compact bytes (`to_bytes`).
    """

    def __len__(self) -> int: ...
    @property
    def total(self) -> int:
        """The sum of the counts: how many span occurrences were counted."""
    @property
    def total_bytes(self) -> int:
        """The sum of count × length in bytes: the bytes of text the spans cover."""
    def byte_set(self) -> bytes:
        """The distinct bytes the spans hold (those counted at least once), sorted: the alphabet
        HuggingFace's trainers would find."""
    @property
    def pattern(self) -> str:
        """The split pattern (a regex) the texts were split by."""
    @property
    def options(self) -> dict[str, Any]:
        """The counting options that change spans (e.g. `{"doc_cap": 10000}`), `{}` for none."""
    def most_common(self, n: Optional[int] = None) -> list[tuple[bytes, int]]:
        """The `n` most counted spans as `[(span_bytes, count)]`, most counted first (the smaller
        span first among equal counts); all of them for `n=None`.
        """
    def items(self) -> list[tuple[bytes, int]]:
        """Every span and its count as `[(span_bytes, count)]`, sorted by bytes."""
    def __getitem__(self, key: _Span, /) -> int: ...
    def __add__(self, value: SpanCounts, /) -> SpanCounts: ...
    def __radd__(self, value: int, /) -> SpanCounts: ...
    @staticmethod
    def merge(parts: Iterable[SpanCounts]) -> SpanCounts:
        """The sum of a list of SpanCounts, all made with the same pattern and options: one merge
        of sorted lists per pair, in a tree, without the GIL.
        """
    @staticmethod
    def weighted_sum(parts: Iterable[tuple[str, SpanCounts, int]], *, options: Optional[Mapping[str, Any]] = None) -> SpanCounts:
        """The sum of weighted span counts: `parts` is an iterable of `(name, counts, weight)`, the
        counts all made with the same pattern and options, each weight an int from 1 to 2^64-1,
        and every count of a part is multiplied by its weight, exactly, before the parts are
        added (without the GIL; the result does not depend on their order). A product or sum past
        2^64-1 is an OverflowError naming the part; `options` (a dict) replaces the parts'
        options in the result (`bpeforge.mix` records the mix there). `bpeforge.mix` computes
        the weights from the sources' sizes.
        """
    @staticmethod
    def from_mapping(
        mapping: Union[Mapping[str, int], Mapping[bytes, int], Mapping[_Span, int], Iterable[tuple[_Span, int]]],
        *,
        pattern: str,
        options: Optional[Mapping[str, Any]] = None,
    ) -> SpanCounts:
        """Span counts from a mapping `{span: count}` (or an iterable of `(span, count)` pairs):
        spans are str or bytes (each taken as one span, not split), counts ints from 0 to
        2^64-1; repeats add up (an OverflowError past 2^64-1), zero counts and empty spans are
        left out. `pattern` (a preset's name or a regex) is the one the spans were split by,
        `options` the counting options that changed them (a dict, recorded as it is).
        """
    def to_bytes(self) -> bytes:
        """The counts as compact bytes: pattern, options, spans and counts, and a checksum
        (`from_bytes` reads them back). About the spans' bytes plus 2-3 bytes per span.
        """
    @staticmethod
    def from_bytes(data: bytes) -> SpanCounts:
        """Counts from `to_bytes`'s bytes, checked (format, checksum, order): a ValueError says
        what is wrong.
        """
    def __reduce__(self) -> tuple[Any, tuple[bytes]]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def prune(self, min_count: int) -> tuple[SpanCounts, float]:
        """The counts of the spans counted at least `min_count` times, and the share of span
        occurrences left out (0.0 to 1.0): an approximation for corpora whose distinct spans do
        not fit in memory (rare spans barely change the merges that matter).
        """
    def save(self, path: Union[str, os.PathLike[str]]) -> None:
        """Writes the counts to `path` as Parquet (span bytes as `binary`, counts as `uint64`, sorted
        by span; pattern, options, format version, totals and a checksum in the metadata),
        atomically: a temporary file in the same folder (created if needed, exclusively under an
        unpredictable name, never through a symlink), flushed, renamed into place. See
        docs/span-counts.md.
        """
    @staticmethod
    def load(path: Union[str, os.PathLike[str]]) -> SpanCounts:
        """Reads counts written by `save`: a file, or a folder whose `.parquet` files (those not
        starting with a dot) load as their sum. Everything is checked (metadata, schema, order,
        totals, checksum, and that a folder's files share their pattern and options): a
        ValueError names the file and row of a problem, an OSError a file that cannot be read.
        """
    @staticmethod
    def from_parquet(
        path: Union[str, os.PathLike[str]],
        *,
        span: str = "span",
        count: str = "count",
        pattern: str,
        options: Optional[Mapping[str, Any]] = None,
    ) -> SpanCounts:
        """Counts made elsewhere (Spark, SQL...): any Parquet file with a column of spans (`span`:
        binary or string) and a column of counts (`count`: integers), in any order, repeats
        added up (an OverflowError past 2^64-1), zero counts left out; a null, a negative count
        or an empty span is a ValueError naming its row. `pattern` is the split pattern the
        spans were made with (a preset's name or a regex), which the file cannot say.
        """

def count_texts(
    texts: Iterable[Union[str, list[str], _ArrowArrayExportable, "DocumentReader"]],
    pattern: Optional[str] = None,
    *,
    num_threads: Optional[int] = None,
    buffer_size: Optional[int] = None,
    progress: Optional[_ProgressCallback] = None,
    options: Optional[Mapping[str, Any]] = None,
) -> tuple[SpanCounts, int, int]:
    """Counts the spans of an iterable of texts (the items `Trainer.train_from_iterator` takes: str,
    lists of str, Arrow string arrays, a ParquetReader's batches), splitting and counting
    without the GIL while the next texts are pulled, and gives their `SpanCounts`, sorted.
    `pattern`: a preset's name, a regex or None for GPT-4's. `options`: the counting options
    that changed the texts (recorded; `{"doc_cap": N}` crops each text to its first N characters). `progress(phase, info)` as
    in `Trainer.train_from_iterator`'s phase "count". Returns the counts and the number of texts
    and of bytes read.
    """

class InputError(Exception):
    """A problem with the input data: a missing or unreadable file, a bad line, a missing column. The message is one line and names the file (and line, where there is one)."""

@disjoint_base
class DocumentReader:
    """What `TextReader`, `JsonlReader` and `ParquetReader` share: iterating gives lists of str,
    and the counts, held-out documents and sample of what was read so far (see `TextReader`).
    """

    def __iter__(self) -> DocumentReader: ...
    def __next__(self) -> list[str]: ...
    @property
    def chars(self) -> int:
        """Characters of the training documents handed on so far."""
    @property
    def path(self) -> pathlib.Path:
        """The file read."""
    @property
    def heldout_chars(self) -> int:
        """Characters of the documents held out."""
    @property
    def bytes(self) -> int:
        """UTF-8 bytes of the training documents handed on so far."""
    @property
    def heldout_bytes(self) -> int:
        """UTF-8 bytes of the documents held out."""
    @property
    def sample(self) -> list[str]:
        """The start of the training text, up to `sample_max_bytes` bytes (the last document
        cropped to fit, at a character boundary).
        """
    @property
    def bad_lines(self) -> int:
        """Bad lines (JSONL) or documents that are not UTF-8 (text) skipped so far (none for
        Parquet, whose strings that are not UTF-8 are an error).
        """
    @property
    def bad_line_examples(self) -> list[str]:
        """The messages of the first few of them."""
    @property
    def sample_cropped(self) -> bool:
        """Whether the sample's last document is cropped (the sample takes no more)."""
    @property
    def documents(self) -> int:
        """Training documents handed on so far (held-out ones not included)."""
    @property
    def heldout(self) -> list[str]:
        """The documents held out (every `holdout_every`-th, within `holdout_max_bytes`)."""
    @property
    def sample_bytes(self) -> int:
        """UTF-8 bytes of the sample."""
    @property
    def stopped_early(self) -> bool:
        """Whether reading stopped at `max_chars`."""

@final
class TextReader(DocumentReader):
    """Reads the documents of a text file, in batches, with little memory.

    `TextReader(path, separator="\\n", *, compression=None, skip_bad_lines=False, doc_cap=None,
    max_chars=None, holdout_every=0, holdout_max_bytes=1_000_000, documents_before=0,
    sample_max_bytes=0, batch_docs=1024, batch_bytes=4 << 20)` opens `path` (`"-"`: standard
    input; `.gz`, `.zst` and `.zstd` are decompressed, or as `compression` says: "gzip", "zstd"
    or "none"). Documents are its lines (ending in `\\n` or `\\r\\n`), or the pieces between
    `separator`s, or (`""`) the whole file; empty ones are skipped, a UTF-8 byte-order mark
    opening the file is dropped. Bytes that are not UTF-8 raise `InputError` naming the file
    and line, or with `skip_bad_lines` the documents holding them are skipped and counted
    (`bad_lines`, `bad_line_examples`).

    On the way (as `bpeforge train` reads): each document is cropped to `doc_cap` characters;
    reading stops once `max_chars` characters were read (the last document cropped to fit);
    every `holdout_every`-th document (counting on from `documents_before`) is held out into
    `heldout` if it fits in what is left of `holdout_max_bytes` bytes; the start of the training
    text is kept in `sample`, up to `sample_max_bytes` bytes. By default every document is taken
    whole. Iterating gives lists of str: `batch_docs` documents, or fewer once they hold
    `batch_bytes` bytes. `Trainer.train_from_iterator` takes the reader itself, as the iterable
    or as one of its items, and reads it in Rust, without a Python str per document.

    `byte_range=(start, end)` reads only the documents that start in those bytes of an
    uncompressed file (beginning after the first separator that ends at or past `start`, and
    finishing the last document past `end`), so that ranges tiling a file read each document
    once; line numbers stay those of the whole file. The separator must be one no two of whose
    occurrences can overlap (`"\\n"`, `"<|endoftext|>"`; not `"\\n\\n"`): ValueError otherwise.
    """

    def __new__(
        cls,
        path: Union[str, os.PathLike[str]],
        separator: str = "\n",
        *,
        compression: Optional[str] = None,
        skip_bad_lines: bool = False,
        doc_cap: Optional[int] = None,
        max_chars: Optional[int] = None,
        holdout_every: Optional[int] = None,
        holdout_max_bytes: Optional[int] = None,
        documents_before: Optional[int] = None,
        sample_max_bytes: Optional[int] = None,
        batch_docs: Optional[int] = None,
        batch_bytes: Optional[int] = None,
        byte_range: Optional[Tuple[int, int]] = None,
    ) -> TextReader: ...

@final
class JsonlReader(DocumentReader):
    """Reads the texts of a JSONL file, in batches, with little memory.

    `JsonlReader(path, text_field="text", *, ...)` takes the same keyword arguments as
    `TextReader` (but `separator`). Each non-blank line must be a JSON object whose `text_field`
    is a string (null: skipped), as Python's `json` reads it; any other line is a bad line
    (`InputError` naming the file and line, or skipped and counted with `skip_bad_lines`), and
    so is a line that is not UTF-8, or whose text holds a lone surrogate (a `"\\ud800"` escape:
    such a str cannot be UTF-8 text). serde_json parses the lines; those it refuses and Python's
    `json` may take (`NaN`, numbers beyond a double, a lone surrogate elsewhere in the line,
    deep nesting) are read by Python's `json`, so that both agree on every line.
    `byte_range=(start, end)`: the lines that start in those bytes (see `TextReader`).
    """

    def __new__(
        cls,
        path: Union[str, os.PathLike[str]],
        text_field: str = "text",
        *,
        compression: Optional[str] = None,
        skip_bad_lines: bool = False,
        doc_cap: Optional[int] = None,
        max_chars: Optional[int] = None,
        holdout_every: Optional[int] = None,
        holdout_max_bytes: Optional[int] = None,
        documents_before: Optional[int] = None,
        sample_max_bytes: Optional[int] = None,
        batch_docs: Optional[int] = None,
        batch_bytes: Optional[int] = None,
        byte_range: Optional[Tuple[int, int]] = None,
    ) -> JsonlReader: ...

def arrow_documents(
    arrays: Iterable[Any],
    path: Union[str, os.PathLike[str]],
    *,
    doc_cap: Optional[int] = None,
    max_chars: Optional[int] = None,
    holdout_every: Optional[int] = None,
    holdout_max_bytes: Optional[int] = None,
    documents_before: Optional[int] = None,
    sample_max_bytes: Optional[int] = None,
    batch_docs: Optional[int] = None,
    batch_bytes: Optional[int] = None,
) -> DocumentReader:
    """The documents of the Arrow string arrays `arrays` yields (objects with `__arrow_c_array__`:
    the column of pyarrow's record batches of the Parquet file `path`), selected as `TextReader`'s
    keyword arguments say; a `DocumentReader`. Nulls and empty strings are skipped; strings that
    are not UTF-8 raise `InputError` naming `path`, and what the iterator raises goes through.
    For the command line's reading of Parquet with pyarrow (`bpeforge._inputs`).
    """

def parquet_documents(
    path: Union[str, os.PathLike[str]],
    column: str = "text",
    *,
    batch_rows: Optional[int] = None,
    doc_cap: Optional[int] = None,
    max_chars: Optional[int] = None,
    holdout_every: Optional[int] = None,
    holdout_max_bytes: Optional[int] = None,
    documents_before: Optional[int] = None,
    sample_max_bytes: Optional[int] = None,
) -> ParquetReader:
    """A `ParquetReader` for the command line's corpus (`bpeforge._inputs`): the same reader, which
    raises bpeforge's `InputError` naming the file for a file that cannot be opened or read,
    instead of OSError or ValueError (a bug is still a RuntimeError).
    """

def first_merge_disagreement(
    ranks: Sequence[tuple[bytes, int]], merges: Sequence[tuple[bytes, bytes]], contexts: Sequence[bytes]
) -> Optional[tuple[bytes, list[bytes], list[bytes]]]:
    """The first of `contexts` (in their order) that HuggingFace's merge loop, given `merges` (pairs
    of token bytes, the first place of a pair counting) with `ignore_merges` on, splits otherwise
    than tiktoken does with `ranks` (token bytes and rank), and both splits: `(context, HF's
    tokens, tiktoken's tokens)`. None when every context splits alike.
    """

def huggingface_merges(
    ranks: Sequence[tuple[bytes, int]],
) -> tuple[list[tuple[bytes, bytes]], Optional[tuple[bytes, list[bytes], list[bytes]]]]:
    """The merges HuggingFace's BPE needs to split as tiktoken does with `ranks` (token bytes and
    rank), as `bpeforge.huggingface.merges_of` lists them (every pair of tokens whose
    concatenation is a token, by the rank it makes, the longer left part first), and the first
    tie context (`huggingface.tie_contexts`, shortest first) HuggingFace's loop would split
    otherwise, as `first_merge_disagreement` gives it: the export's work on the merges, done
    without the GIL (in Python it cost most of a save).
    """
