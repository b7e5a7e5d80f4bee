"""Extending a tokenizer with new tokens, not one existing id changed: continued BPE, the one
path both ``Tokenizer.extend`` and ``bpeforge train --extend`` take.

The new texts are split with the base's pattern; each distinct span starts as the base's
encoding of it (as tiktoken would make it), and merging goes on by training's rule (the pair
with the highest count, the smallest pair among equal counts), each new token numbered after
the base's largest id, its special tokens included. So the base's ids all stay, a text that
needs no new token encodes exactly as before, and extending a tokenizer bpeforge trained on a
corpus, with that corpus again, gives the ranks of training on it to the larger size. A base
with a token that merging its bytes does not make (ranks not made by BPE training) is refused:
see docs/extend.md for why.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Union

from . import _core
from .base import BaseTokenizer
from .checks import MAX_TOKEN_ID, as_int
from .errors import OptionError
from .patterns import pattern_label
from .progress import ConsoleProgress
from .training import ProgressCallback, ProgressOfRun, TrainedRanks, max_token_length_option, new_trainer


class ExtendedRanks(TrainedRanks):
    """What an extension gives: the base's ranks with their ids, then the new tokens, and the
    base's special tokens with their ids."""

    def __init__(
        self,
        trainer: _core.Trainer,
        base: BaseTokenizer,
        ranks_asked: int,
        min_frequency: int,
        from_counts: bool,
        max_token_length: Optional[int] = None,
    ) -> None:
        super().__init__(trainer, base.pattern, list(base.special_tokens), ranks_asked, min_frequency, max_token_length)
        #: The special tokens and their ids, as in the base.
        self.special_ids: dict[str, int] = dict(base.special_tokens)
        #: Whether the new tokens were learned from span counts rather than texts.
        self.from_counts = from_counts

    @property
    def no_text(self) -> Optional[str]:
        """As :attr:`TrainedRanks.no_text` for texts; span counts, which hold no texts, are never
        refused (no spans: no new token)."""
        return None if self.from_counts else super().no_text

    def special_tokens_to_build(self) -> Union[list[str], dict[str, int]]:
        """The special tokens with their ids, as in the base: :meth:`build` makes the extended
        tokenizer with them. New ranks above the base's special tokens need a tokenizer that
        takes ids with gaps, special tokens anywhere; ranks that tiktoken cannot encode with
        make :meth:`build` raise ValueError."""
        return self.special_ids


class Extension:
    """An extension of ``base`` set up: every option checked, no text read.

    ``vocab_size`` is the final vocabulary (``n_vocab``: the largest id plus one, special tokens
    included), at least the base's; new tokens are numbered from the base's ``n_vocab`` on.
    ``max_token_length`` (bytes, 2 or more; ``None`` for no limit) skips every merge whose token
    would be longer, as in training; the base's tokens are kept whatever their length. A bad
    value raises :class:`~bpeforge.errors.OptionError` (a ValueError naming the option) or
    TypeError; a base that cannot be extended raises ValueError when :meth:`run` starts.

    >>> base = BaseTokenizer({bytes([i]): i for i in range(256)})
    >>> run = Extension(base, 258).run(["hello hello"] * 4)
    >>> sorted(run.ranks.items(), key=lambda x: x[1])[256:]
    [(b'el', 256), (b'hel', 257)]
    """

    def __init__(
        self,
        base: BaseTokenizer,
        vocab_size: int,
        *,
        min_frequency: int = 1,
        num_threads: Optional[int] = None,
        max_token_length: Optional[int] = None,
    ) -> None:
        if not isinstance(base, BaseTokenizer):
            raise TypeError(f"the base must be a bpeforge tokenizer, got {type(base).__name__} (load it first, e.g. Tokenizer.load)")
        self.base = base
        self.vocab_size = as_int(vocab_size, "vocab_size")
        self.min_frequency = as_int(min_frequency, "min_frequency")
        self.max_token_length = max_token_length_option(max_token_length)
        #: The id of the first new token: the base's ``n_vocab``, above all its ids.
        self.first_id = base.n_vocab
        if not self.first_id <= self.vocab_size <= MAX_TOKEN_ID:
            raise OptionError(
                "vocab_size",
                f"vocab_size must be at least the base's {self.first_id} ids (new tokens are numbered after them, "
                f"special tokens included) and at most {MAX_TOKEN_ID}, got {self.vocab_size}",
            )
        #: How many new tokens to learn.
        self.new_tokens = self.vocab_size - self.first_id
        self.trainer = new_trainer(base.pattern, num_threads)

    def run(
        self,
        texts: Union[Iterable[Any], _core.SpanCounts],
        buffer_size: int = 8192,
        progress: Union[bool, ProgressCallback, ConsoleProgress, None] = None,
    ) -> ExtendedRanks:
        """Learns the new tokens from ``texts``: str, lists of str or Arrow string arrays
        (consumed once, in batches of ``buffer_size`` texts), or span counts split with the
        base's pattern: a :class:`~bpeforge.SpanCounts` (another pattern is a ValueError
        naming both) or a mapping of spans to counts (as ``Trainer.train_from_counts`` takes
        them). See :meth:`bpeforge.training.Training.run` for ``progress``."""
        if isinstance(texts, (str, bytes)):
            raise TypeError(f"texts must be an iterable of str, not {type(texts).__name__} (wrap the text in a list)")
        from_counts = isinstance(texts, (Mapping, _core.SpanCounts))
        if isinstance(texts, _core.SpanCounts) and texts.pattern != self.base.pattern:
            raise ValueError(
                f"the span counts were split by {pattern_label(texts.pattern)}, the base tokenizer splits by "
                f"{pattern_label(self.base.pattern)}: count the new text with the base's pattern"
            )
        base_ranks = list(self.base.mergeable_ranks.items())
        with ProgressOfRun(progress) as callback:
            if isinstance(texts, (Mapping, _core.SpanCounts)):
                self.trainer.extend_from_counts(
                    texts,
                    base_ranks,
                    self.first_id,
                    self.new_tokens,
                    min_frequency=self.min_frequency,
                    progress=callback,
                    max_token_length=self.max_token_length,
                )
            else:
                self.trainer.extend_from_iterator(
                    texts,
                    base_ranks,
                    self.first_id,
                    self.new_tokens,
                    buffer_size,
                    min_frequency=self.min_frequency,
                    progress=callback,
                    max_token_length=self.max_token_length,
                )
        ranks_asked = len(base_ranks) + self.new_tokens
        return ExtendedRanks(self.trainer, self.base, ranks_asked, self.min_frequency, from_counts, self.max_token_length)
