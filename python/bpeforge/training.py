"""Training a tokenizer: the one path both ``Tokenizer.train_from_iterator`` and
``bpeforge train`` take.

A :class:`Training` is set up first, every option checked before any text is read (so that a
bad option fails at once, not after reading a corpus), then :meth:`Training.run` feeds it an
iterable of texts and gives a :class:`TrainedRanks`, from which
:meth:`TrainedRanks.build` makes the tokenizer.

The vocabulary size asked for counts the special tokens, which are numbered after the trained
ranks: the rule on it is checked here, and the rules on the ranks alone (at least the 256 single
bytes, at most 2^31, a split pattern that compiles and never matches an empty string, the
number of threads) by the compiled trainer, whose messages are passed on as they are.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, TypeVar, Union

from . import _core
from .base import NANOCHAT_SPECIAL_TOKENS, BaseTokenizer
from .checks import MAX_TOKEN_ID, as_int, special_token_ids
from .errors import NoTextError, OptionError
from .mixing import min_count
from .patterns import pattern_label, resolve_pattern
from .progress import ConsoleProgress

T = TypeVar("T", bound=BaseTokenizer)

ProgressCallback = Callable[[str, dict[str, Any]], None]


def early_stop_reason(min_frequency: int, max_token_length: Optional[int] = None) -> str:
    """Why training made fewer ranks than asked, given its ``min_frequency`` and
    ``max_token_length``.

    >>> early_stop_reason(1), early_stop_reason(5)
    ('no pair is left', 'no pair occurs 5 times or more')
    >>> early_stop_reason(1, 3)
    'no pair making a token of at most 3 bytes is left'
    """
    pairs = "no pair" if max_token_length is None else f"no pair making a token of at most {max_token_length} bytes"
    return f"{pairs} is left" if min_frequency <= 1 else f"{pairs} occurs {min_frequency} times or more"


def progress_callback(
    progress: Union[bool, ProgressCallback, ConsoleProgress, None],
) -> tuple[Optional[ProgressCallback], Optional[ConsoleProgress]]:
    """The trainer's callback for a ``progress`` argument (``True``: progress on stderr, a
    callable, a :class:`~bpeforge.progress.ConsoleProgress`, or none), and the console to close
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
    """The compiled trainer splitting by the regex ``pattern`` on ``num_threads`` threads (None:
    all cores). The trainer checks both; its messages name them, and each is raised as an
    :class:`~bpeforge.errors.OptionError` naming its option."""
    try:
        return _core.Trainer(pattern, num_threads=num_threads)
    except ValueError as e:
        option = "num_threads" if str(e).startswith("num_threads") else "pattern"
        raise OptionError(option, str(e)) from None


class TrainedRanks:
    """What a training run gives: the ranks, the merges that made them, and the figures.

    (Plain classes here rather than dataclasses: importing ``dataclasses`` pulls in ``inspect``
    and more, and ``import bpeforge`` is kept light for training scripts.)"""

    def __init__(
        self,
        trainer: _core.Trainer,
        pattern: str,
        special_tokens: list[str],
        ranks_asked: int,
        min_frequency: int,
        max_token_length: Optional[int] = None,
    ) -> None:
        self.trainer = trainer
        #: Token bytes -> rank: the 256 single bytes, then the learned tokens in order.
        self.ranks: dict[bytes, int] = dict(trainer.get_mergeable_ranks())
        #: Texts, bytes, distinct spans, seconds per phase (the trainer's ``stats``).
        self.stats: dict[str, Any] = dict(trainer.stats)
        self.pattern = pattern
        self.special_tokens = special_tokens
        #: How many ranks were asked for: ``vocab_size`` minus the special tokens.
        self.ranks_asked = ranks_asked
        self.min_frequency = min_frequency
        self.max_token_length = max_token_length

    def merges(self) -> list[tuple[int, int, int, int]]:
        """Every merge in order as ``(left_id, right_id, token_id, count)`` (asked of the
        trainer when needed: the command line's report lists some, the API none)."""
        return list(self.trainer.get_merges())

    @property
    def stopped_early(self) -> bool:
        """Whether training made fewer ranks than asked."""
        return len(self.ranks) < self.ranks_asked

    @property
    def stop_reason(self) -> str:
        """Why training stopped early (see :attr:`stopped_early`)."""
        return early_stop_reason(self.min_frequency, self.max_token_length)

    @property
    def no_text(self) -> Optional[str]:
        """What was wrong when training was given no text at all (no texts, or only empty
        ones), else None. Such a run learned nothing, and :meth:`build` refuses it.

        >>> Training(300, special_tokens=[]).run(["", ""]).no_text
        'no text to train on: the iterable gave 2 texts, all empty'
        """
        if self.stats.get("bytes", 0) > 0:
            return None
        texts = self.stats.get("texts", 0)
        if texts == 0:
            return (
                "no text to train on: the iterable gave no texts (an iterator or generator that was "
                "already used up? Arrow arrays whose entries are all null?)"
            )
        return f"no text to train on: the iterable gave {texts:,} text{'s' if texts != 1 else ''}, all empty"

    def build(self, tokenizer_class: type[T]) -> T:
        """The tokenizer of these ranks, pattern and special tokens (numbered after the ranks),
        with :attr:`stats` as its ``training_stats``. A run on no text at all (see
        :attr:`no_text`) raises :class:`~bpeforge.errors.NoTextError`, a ValueError: the
        command line, which reads its corpus itself, says what it found first."""
        if self.no_text is not None:
            raise NoTextError(self.no_text)
        tokenizer = tokenizer_class(self.ranks, self.pattern, self.special_tokens_to_build())
        tokenizer.training_stats = dict(self.stats)
        return tokenizer

    def special_tokens_to_build(self) -> Union[list[str], dict[str, int]]:
        """The special tokens as :meth:`build` gives them to the tokenizer: a list, numbered
        after the ranks."""
        return self.special_tokens


def max_token_length_option(value: Optional[int]) -> Optional[int]:
    """``max_token_length`` checked: None (no limit) or an int of at least 2 bytes, else an
    :class:`~bpeforge.errors.OptionError` (or TypeError).

    >>> max_token_length_option(1)
    Traceback (most recent call last):
    ...
    bpeforge.errors.OptionError: max_token_length must be at least 2 bytes (the shortest merged token), got 1
    """
    if value is None:
        return None
    length = as_int(value, "max_token_length")
    if length < 2:
        raise OptionError("max_token_length", f"max_token_length must be at least 2 bytes (the shortest merged token), got {length}")
    return length


class Training:
    """A training run, set up: every option checked, no text read yet.

    ``vocab_size`` is the final vocabulary *including* special tokens; ``special_tokens=None``
    means nanochat's nine, ``[]`` none; ``pattern`` is a preset name, a regex, or ``None`` for
    GPT-4's; ``max_token_length`` (bytes, 2 or more; ``None`` for no limit) skips every merge
    whose token would be longer. A bad value raises :class:`~bpeforge.errors.OptionError` (a ValueError naming the
    option) or TypeError.

    >>> run = Training(260, special_tokens=[]).run(["hello hello"] * 4)
    >>> sorted(run.ranks.values())[-1], run.stopped_early
    (259, False)
    """

    def __init__(
        self,
        vocab_size: int,
        *,
        pattern: Optional[str] = None,
        special_tokens: Optional[Sequence[str]] = None,
        min_frequency: int = 1,
        num_threads: Optional[int] = None,
        max_token_length: Optional[int] = None,
    ) -> None:
        if isinstance(special_tokens, (str, Mapping)):
            raise TypeError(
                f"special_tokens must be a list of str, not a {type(special_tokens).__name__}: training numbers "
                "them after the trained ranks, so no ids are taken here"
            )
        self.special_tokens: list[str] = list(NANOCHAT_SPECIAL_TOKENS if special_tokens is None else special_tokens)
        self.vocab_size = as_int(vocab_size, "vocab_size")  # an int for the sums below
        self.min_frequency = as_int(min_frequency, "min_frequency")  # ... and for the messages
        n_special = len(self.special_tokens)
        if not 256 + n_special <= self.vocab_size <= MAX_TOKEN_ID:
            raise OptionError(
                "vocab_size",
                f"vocab_size must be at least 256 + {n_special} special tokens = {256 + n_special} "
                f"and at most {MAX_TOKEN_ID}, got {self.vocab_size}",
            )
        self.max_token_length = max_token_length_option(max_token_length)
        #: The ranks to train: ``vocab_size`` minus the special tokens.
        self.ranks_asked = self.vocab_size - n_special
        try:
            special_token_ids(self.special_tokens, self.ranks_asked)
        except ValueError as e:
            raise OptionError("special_tokens", str(e)) from None
        try:
            self.pattern: str = resolve_pattern(pattern)
        except ValueError as e:  # not a preset's name, nor a regex
            raise OptionError("pattern", str(e)) from None
        self.trainer = new_trainer(self.pattern, num_threads)

    def run(
        self,
        texts: Iterable[Any],
        buffer_size: int = 8192,
        progress: Union[bool, ProgressCallback, ConsoleProgress, None] = None,
    ) -> TrainedRanks:
        """Trains on ``texts`` (str, lists of str or Arrow string arrays, consumed once, in
        batches of ``buffer_size`` texts). ``progress``: ``True`` for progress on stderr, a
        callable ``progress(phase, info)``, or a :class:`~bpeforge.progress.ConsoleProgress`,
        which is closed when training ends (aborted if it fails)."""
        if isinstance(texts, bytes):
            raise TypeError("texts must be an iterable of str, not bytes (decode them and wrap the text in a list)")
        if type(texts).__name__ == "DataFrame":  # pandas, polars...: iterating gives column names
            raise TypeError("iterator is a DataFrame, whose items are its column names; pass the text column, e.g. df['text']")
        with ProgressOfRun(progress) as callback:
            self.trainer.train_from_iterator(
                texts,
                self.ranks_asked,
                buffer_size,
                min_frequency=self.min_frequency,
                progress=callback,
                max_token_length=self.max_token_length,
            )
        return TrainedRanks(
            self.trainer, self.pattern, list(self.special_tokens), self.ranks_asked, self.min_frequency, self.max_token_length
        )

    def run_counts(
        self,
        counts: _core.SpanCounts,
        progress: Union[bool, ProgressCallback, ConsoleProgress, None] = None,
    ) -> TrainedRanks:
        """Trains on span counts (a :class:`~bpeforge.SpanCounts` made with this training's
        pattern, else a ValueError naming both; borrowed, not copied), with the same options
        and ``progress`` as :meth:`run`; for mixed counts (:func:`bpeforge.mix`),
        ``min_frequency`` counts occurrences of the mixed corpus (:func:`~bpeforge.mixing.min_count`). Counts with no span raise
        :class:`~bpeforge.errors.NoTextError`.

        >>> counts = _core.SpanCounts.from_mapping({"hello": 4}, pattern="gpt4")
        >>> sorted(Training(258, special_tokens=[]).run_counts(counts).ranks.values())[-1]
        257
        """
        if not isinstance(counts, _core.SpanCounts):
            raise TypeError(f"counts must be a SpanCounts, got {type(counts).__name__}")
        if counts.pattern != self.pattern:
            raise OptionError(
                "pattern",
                f"the span counts were split by {pattern_name(counts.pattern)}, the training asks for "
                f"{pattern_name(self.pattern)}: counts train only with the pattern they were made with",
            )
        if len(counts) == 0:
            raise NoTextError("no spans to train on: the span counts are empty")
        with ProgressOfRun(progress) as callback:
            # Mixed counts (bpeforge.mix) read min_frequency in occurrences of the mixed corpus.
            threshold = min_count(counts, self.min_frequency)
            self.trainer.train_from_counts(counts, self.ranks_asked, min_frequency=threshold, progress=callback)
        return TrainedRanks(
            self.trainer, self.pattern, list(self.special_tokens), self.ranks_asked, self.min_frequency, self.max_token_length
        )


def pattern_name(regex: str) -> str:
    """A split pattern for a message: the first preset's name whose regex it is, else the
    regex quoted.

    >>> pattern_name(resolve_pattern("gpt2")), pattern_name("[a-z]+")
    ("'gpt2'", "'[a-z]+'")
    """
    label = pattern_label(regex)
    return repr(regex if label == "custom regex" else label)

