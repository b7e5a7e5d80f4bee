"""Training a tokenizer: the one path every training takes, from the API and the command line,
from texts or span counts, from the single bytes or extending a tokenizer.

A training is one :class:`Recipe` (``bpeforge._core.Recipe``): every option (vocabulary size,
pattern, special tokens, ``min_frequency``, ``max_token_length``, ``doc_cap``, the tie-break and,
with HuggingFace's, ``initial_alphabet`` and ``limit_alphabet``), checked once
when it is made, so that a bad option fails at once, not after reading a corpus. A
:class:`Training` holds the recipe, the tokenizer it extends if any and the threads;
:meth:`Training.run` hands the recipe whole to the compiled trainer's one entry point
(``Trainer.learn``) with what to learn from, and gives a :class:`TrainedRanks`, from which
:meth:`TrainedRanks.build` makes the tokenizer. A new option is a field of the recipe, and no
path here needs to know of it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, TypeVar, Union

from . import _core
from ._base import BaseTokenizer
from ._errors import NoTextError, OptionError
from ._patterns import pattern_label, resolve_pattern
from ._progress import ConsoleProgress

T = TypeVar("T", bound=BaseTokenizer)

ProgressCallback = Callable[[str, dict[str, Any]], None]


def early_stop_reason(min_frequency: int, max_token_length: Optional[int] = None, max_token_words: Optional[int] = None) -> str:
    """Why training made fewer ranks than asked, given its ``min_frequency``,
    ``max_token_length`` and ``max_token_words``.

    >>> early_stop_reason(1), early_stop_reason(5)
    ('no pair is left', 'no pair occurs 5 times or more')
    >>> early_stop_reason(1, 3)
    'no pair making a token of at most 3 bytes is left'
    >>> early_stop_reason(2, 8, 4)
    'no pair making a token of at most 8 bytes and 4 words occurs 2 times or more'
    """
    limits = [f"{n} {unit}" for n, unit in ((max_token_length, "bytes"), (max_token_words, "words")) if n is not None]
    pairs = f"no pair making a token of at most {' and '.join(limits)}" if limits else "no pair"
    return f"{pairs} is left" if min_frequency <= 1 else f"{pairs} occurs {min_frequency} times or more"


def progress_callback(
    progress: Union[bool, ProgressCallback, ConsoleProgress, None],
) -> tuple[Optional[ProgressCallback], Optional[ConsoleProgress]]:
    """The trainer's callback for a ``progress`` argument (``True``: progress on stderr, a
    callable, a :class:`~bpeforge._progress.ConsoleProgress`, or none), and the console to close
    (or abort) when training ends, if it is one.

    >>> progress_callback(None)
    (None, None)
    """
    if progress is True:
        console = ConsoleProgress(log=True)
        return console, console
    if isinstance(progress, ConsoleProgress):
        return progress, progress
    if callable(progress):
        return progress, None
    if progress in (False, None):
        return None, None
    raise TypeError(f"progress must be a bool or a callable(phase, info), got {type(progress).__name__}")


class ProgressOfRun:
    """The trainer's callback for a ``progress`` argument (see :func:`progress_callback`), for
    the length of one run: a console it shows on is closed when the ``with`` block ends, or
    aborted if it raised (Ctrl-C included).

    >>> with ProgressOfRun(None) as callback:
    ...     callback is None
    True
    """

    def __init__(self, progress: Union[bool, ProgressCallback, ConsoleProgress, None]) -> None:
        self.callback, self.console = progress_callback(progress)

    def __enter__(self) -> Optional[ProgressCallback]:
        return self.callback

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.console is None:
            return
        if exc_type is None:
            self.console.close()
        else:
            self.console.abort()


def new_trainer(pattern: str, num_threads: Optional[int]) -> _core.Trainer:
    """The compiled trainer on ``num_threads`` threads (None: all cores), splitting by ``pattern``
    where it is not told otherwise. The trainer checks both; its messages name them, and each is
    raised as an :class:`~bpeforge._errors.OptionError` naming its option."""
    try:
        return _core.Trainer(pattern, num_threads=num_threads)
    except ValueError as e:
        option = "num_threads" if str(e).startswith("num_threads") else "pattern"
        raise OptionError(option, str(e)) from None


Recipe = _core.Recipe
"""Every option of one training, checked once when made (see ``bpeforge._core.Recipe``)."""


class TrainedRanks:
    """What a training run gives: the ranks, the merges that made them, and the figures.

    (Plain classes here rather than dataclasses: importing ``dataclasses`` pulls in ``inspect``
    and more, and ``import bpeforge`` is kept light for training scripts.)"""

    def __init__(
        self,
        trainer: _core.Trainer,
        recipe: Recipe,
        ranks_asked: int,
        base: Optional[BaseTokenizer] = None,
        from_counts: bool = False,
    ) -> None:
        self.trainer = trainer
        #: The recipe trained by.
        self.recipe = recipe
        #: Token bytes -> rank: the 256 single bytes (or the base's ranks), then the learned
        #: tokens in order.
        self.ranks: dict[bytes, int] = dict(trainer.get_mergeable_ranks())
        #: Texts, bytes, distinct spans, seconds per phase (the trainer's ``stats``).
        self.stats: dict[str, Any] = dict(trainer.stats)
        #: The pattern the tokenizer splits by (the superword stage's, if there was one).
        self.pattern: str = recipe.encoding_pattern
        #: The special tokens' names, numbered after the ranks: those given, those reserved, and
        #: those padding the vocabulary (the base's, when extending).
        self.special_tokens: list[str] = recipe.special_token_names(len(self.ranks)) if base is None else list(base.special_tokens)
        #: How many ranks were asked for: ``vocab_size`` minus the special tokens (with a base,
        #: its ranks and the new tokens).
        self.ranks_asked = ranks_asked
        self.min_frequency: int = recipe.min_frequency
        self.max_token_length: Optional[int] = recipe.max_token_length
        #: How ties were broken: "bpeforge", or "huggingface" (HuggingFace's ids: the special
        #: tokens first, then the alphabet, then the merged tokens; see :attr:`missing_bytes`).
        self.tie_break: str = recipe.tie_break
        #: The tokenizer extended, if any.
        self.base = base
        #: Whether the ranks were learned from span counts rather than texts.
        self.from_counts = from_counts
        #: With parity-aware training, how each language fared (the trainer's ``parity_trace``:
        #: ``chosen``, ``lengths``, ``on_dev``), else None.
        self.parity_trace: Optional[dict[str, Any]] = trainer.parity_trace

    def merges(self) -> list[tuple[int, int, int, int]]:
        """Every merge in order as ``(left_id, right_id, token_id, count)`` (asked of the
        trainer when needed: the command line's report lists some, the API none)."""
        return list(self.trainer.get_merges())

    @property
    def reached(self) -> int:
        """The vocabulary size the training reached, as ``vocab_size`` counts it: the ranks, and
        the special tokens given and reserved (not those padding it)."""
        if self.base is not None:
            return max(self.ranks.values(), default=-1) + 1
        return len(self.ranks) + len(self.recipe.special_tokens) + self.recipe.reserve_special_tokens

    @property
    def missing_bytes(self) -> list[int]:
        """The single bytes that are not tokens: none with bpeforge's tie-break; with
        HuggingFace's, those neither seen nor in ``initial_alphabet`` (or cut by
        ``limit_alphabet``). tiktoken needs every byte, so :meth:`build` refuses them.

        >>> Training(Recipe(10, special_tokens=[], tie_break="huggingface")).run(["ab"]).missing_bytes[:3]
        [0, 1, 2]
        """
        singles = {t[0] for t in self.ranks if len(t) == 1}
        return [b for b in range(256) if b not in singles]

    @property
    def stopped_early(self) -> bool:
        """Whether training made fewer ranks than asked."""
        return len(self.ranks) < self.ranks_asked

    @property
    def stop_reason(self) -> str:
        """Why training stopped early (see :attr:`stopped_early`)."""
        return early_stop_reason(self.min_frequency, self.max_token_length, self.recipe.max_token_words)

    @property
    def no_text(self) -> Optional[str]:
        """What was wrong when training was given no text at all (no texts, or only empty
        ones), else None. Such a run learned nothing, and :meth:`build` refuses it. Span
        counts, which hold no texts, are never refused here (empty counts are refused before
        training, when there is no base to keep).

        >>> Training(Recipe(300, special_tokens=[])).run(["", ""]).no_text
        'no text to train on: the iterable gave 2 texts, all empty'
        """
        if self.from_counts or self.stats.get("bytes", 0) > 0:
            return None
        texts = self.stats.get("texts", 0)
        if texts == 0:
            return (
                "no text to train on: the iterable gave no texts (an iterator or generator that was "
                "already used up? Arrow arrays whose entries are all null?)"
            )
        return f"no text to train on: the iterable gave {texts:,} text{'s' if texts != 1 else ''}, all empty"

    def build(self, tokenizer_class: type[T]) -> T:
        """The tokenizer of these ranks, pattern and special tokens (numbered after the ranks;
        with a base, at the base's ids), with :attr:`stats` as its ``training_stats``. A run on
        no text at all (see :attr:`no_text`) raises :class:`~bpeforge._errors.NoTextError`, a
        ValueError: the command line, which reads its corpus itself, says what it found first.
        Extended ranks above the base's special tokens need a tokenizer that takes ids with
        gaps; ranks that tiktoken cannot encode with raise ValueError."""
        if self.no_text is not None:
            raise NoTextError(self.no_text)
        missing = self.missing_bytes
        if missing:
            shown = ", ".join(f"0x{b:02x}" for b in missing[:8]) + (", ..." if len(missing) > 8 else "")
            raise OptionError(
                "tie_break",
                f"tie_break='huggingface' left {len(missing)} single bytes out of the alphabet ({shown}: never seen, "
                "or cut by limit_alphabet), and tiktoken needs all 256: give initial_alphabet=bytes(range(256)), "
                "or take HuggingFace's tokenizer (bpeforge.huggingface.train_from_iterator, or the command line's tokenizer.json)",
            )
        tokenizer = tokenizer_class(self.ranks, self.pattern, self.special_tokens_to_build())
        tokenizer.training_stats = dict(self.stats)
        return tokenizer

    def special_tokens_to_build(self) -> Union[list[str], dict[str, int]]:
        """The special tokens as :meth:`build` gives them to the tokenizer: a list, numbered
        after the ranks, or the base's with their ids, or with HuggingFace's tie-break at ids
        0, 1, ... before the ranks."""
        if self.base is not None:
            return dict(self.base.special_tokens)
        if self.tie_break == "huggingface":
            return {name: i for i, name in enumerate(self.special_tokens)}
        return self.special_tokens

    def at_size(self, vocab_size: int, tokenizer_class: type[T]) -> T:
        """The tokenizer this training would have made at ``vocab_size`` (at most the size it
        reached): its first ranks, and the recipe's special tokens after them (reserved and
        padding ones included), as training to that size numbers them. BPE merges are greedy,
        so this *is* that training (see :meth:`bpeforge.Tokenizer.truncate`)."""
        if self.base is not None:
            raise ValueError("an extension has no smaller sizes of its own")
        if self.recipe.tie_break == "huggingface":  # its special tokens come first: cut after them
            return self.build(tokenizer_class).truncate(vocab_size)  # type: ignore[attr-defined,no-any-return]
        n_ranks = vocab_size - len(self.recipe.special_tokens) - self.recipe.reserve_special_tokens
        if not 256 <= n_ranks <= len(self.ranks):
            raise ValueError(f"vocab size {vocab_size:,} is outside what this training reached (its ranks and special tokens)")
        ranks = {token: rank for token, rank in self.ranks.items() if rank < n_ranks}
        return tokenizer_class(ranks, self.pattern, self.recipe.special_token_names(n_ranks))


class Training:
    """A training set up: its :class:`Recipe` (every option, checked), the tokenizer it extends
    if any, and the threads it runs on. :meth:`run` trains from texts or from span counts, all
    through the one entry point of the compiled trainer (``Trainer.learn``), so every option is
    honoured the same way whatever is learned from.

    >>> run = Training(Recipe(260, special_tokens=[])).run(["hello hello"] * 4)
    >>> sorted(run.ranks.values())[-1], run.stopped_early
    (259, False)
    """

    def __init__(self, recipe: Recipe, *, base: Optional[BaseTokenizer] = None, num_threads: Optional[int] = None) -> None:
        if not isinstance(recipe, Recipe):
            raise TypeError(f"recipe must be a bpeforge Recipe, got {type(recipe).__name__}")
        if base is not None and not isinstance(base, BaseTokenizer):
            raise TypeError(f"the base must be a bpeforge tokenizer, got {type(base).__name__} (load it first, e.g. Tokenizer.load)")
        self.recipe = recipe
        self.base = base
        self.trainer = new_trainer(recipe.pattern, num_threads)

    @property
    def pattern(self) -> str:
        """The split pattern (a regex)."""
        return self.recipe.pattern

    def run(
        self,
        texts: Optional[Iterable[Any]] = None,
        buffer_size: int = 8192,
        progress: Union[bool, ProgressCallback, ConsoleProgress, None] = None,
        *,
        counts: Any = None,
        superword_counts: Optional[_core.SpanCounts] = None,
        dev: Optional[list[_core.SpanCounts]] = None,
        ratio: Optional[list[float]] = None,
    ) -> TrainedRanks:
        """Trains on ``texts`` (str, lists of str, Arrow string arrays or readers, consumed once,
        in batches of ``buffer_size`` texts) or on ``counts`` (a :class:`~bpeforge.SpanCounts`
        made with the recipe's pattern and ``doc_cap``, borrowed, not copied; or a mapping of
        spans to counts). ``progress``: ``True`` for progress on stderr, a callable
        ``progress(phase, info)``, or a :class:`~bpeforge._progress.ConsoleProgress`, which is
        closed when training ends (aborted if it fails). Span counts with no span, with no base
        to keep, raise :class:`~bpeforge._errors.NoTextError`. A recipe with a superword stage
        learning from counts needs ``superword_counts`` too: the same texts counted with its
        superword pattern. A recipe with ``parity`` learns from ``counts``, a list of one
        ``SpanCounts`` per language, measured on ``dev`` (their dev counts, in the same order)
        or against ``ratio`` (target compression rates) if given.

        >>> counts = _core.SpanCounts.from_mapping({"hello": 4}, pattern="gpt4")
        >>> sorted(Training(Recipe(258, special_tokens=[])).run(counts=counts).ranks.values())[-1]
        257
        """
        if texts is not None:
            check_texts(texts)
        elif isinstance(counts, _core.SpanCounts) and len(counts) == 0 and self.base is None:
            raise NoTextError("no spans to train on: the span counts are empty")
        with ProgressOfRun(progress) as callback:
            ranks_asked = self.trainer.learn(
                self.recipe,
                texts=texts,
                counts=counts,
                base=self.base,
                buffer_size=buffer_size,
                progress=callback,
                superword_counts=superword_counts,
                dev=dev,
                ratio=ratio,
            )
        return TrainedRanks(self.trainer, self.recipe, ranks_asked, self.base, from_counts=texts is None)


def check_texts(texts: Any) -> None:
    """Refuses what is not an iterable of texts though it iterates: bytes, a str, a DataFrame."""
    if isinstance(texts, str):
        raise TypeError("expected an iterable of texts, got a str (which would be read as one text per character); pass [text]")
    if isinstance(texts, bytes):
        raise TypeError("texts must be an iterable of str, not bytes (decode them and wrap the text in a list)")
    if type(texts).__name__ == "DataFrame":  # pandas, polars...: iterating gives column names
        raise TypeError("iterator is a DataFrame, whose items are its column names; pass the text column, e.g. df['text']")


def pattern_name(regex: str) -> str:
    """A split pattern for a message: the first preset's name whose regex it is, else the
    regex quoted.

    >>> pattern_name(resolve_pattern("gpt2")), pattern_name("[a-z]+")
    ("'gpt2'", "'[a-z]+'")
    """
    label = pattern_label(regex)
    return repr(regex if label == "custom regex" else label)

