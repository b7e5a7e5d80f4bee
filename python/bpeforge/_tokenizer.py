"""The public :class:`Tokenizer`: the encoding core (:class:`~bpeforge._base.BaseTokenizer`) with
training, saving and loading, chat rendering and nanochat's names on top.

Each method here delegates to the module that holds its subject: :mod:`bpeforge._training`,
:mod:`bpeforge._io`, :mod:`bpeforge._chat`, :mod:`bpeforge._pretrained`.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence, TypeVar, Union

from . import _core, _chat as chat, huggingface, _io as io
from ._base import NANOCHAT_SPECIAL_TOKENS, BaseTokenizer
from ._extending import extension_recipe
from ._patterns import resolve_pattern
from ._prefix import first_ranks
from ._pretrained import load_tiktoken_encoding
from ._training import Recipe, TrainedRanks, Training

if TYPE_CHECKING:
    import tiktoken

__all__ = ["NANOCHAT_SPECIAL_TOKENS", "Tokenizer", "resolve_pattern"]

T = TypeVar("T", bound="Tokenizer")

#: The name of a reserved special token, free to be named (Llama 3's convention).
RESERVED = re.compile(r"<\|reserved_special_token_\d+\|>")


def built(trained: TrainedRanks, cls: type[T]) -> T:
    """The tokenizer of ``trained`` (see :meth:`TrainedRanks.build`), with a warning when it
    made fewer ranks than asked."""
    tokenizer = trained.build(cls)
    if trained.stopped_early:
        doing = "training" if trained.base is None else "extending"
        warnings.warn(
            f"{doing} stopped at {len(trained.ranks)} ranks of the {trained.ranks_asked} asked for: {trained.stop_reason}",
            stacklevel=3,
        )
    return tokenizer


class Tokenizer(BaseTokenizer):
    """A byte-level BPE tokenizer: mergeable ranks, a split pattern and special tokens.

    Encoding and decoding go through :attr:`encoding`, a ``tiktoken.Encoding``. The ids follow
    tiktoken's model (see :class:`~bpeforge._base.BaseTokenizer`): distinct ranks with gaps
    allowed, the 256 single bytes at any ranks, every other token the concatenation of two
    tokens of lower rank, special tokens at ids no rank uses.

    >>> tok = Tokenizer.train_from_iterator(["low lower lowest"] * 5, vocab_size=270)
    >>> tok.n_vocab
    270
    >>> tok.decode(tok.encode("lowest <|bos|>"))
    'lowest <|bos|>'
    >>> tok.encode_special("<|bos|>")
    261
    """

    @classmethod
    def train(
        cls,
        recipe: Recipe,
        texts: Optional[Iterable[Any]] = None,
        *,
        counts: Optional[_core.SpanCounts] = None,
        num_threads: Optional[int] = None,
        progress: Union[bool, Callable[[str, dict[str, Any]], None]] = False,
    ) -> "Tokenizer":
        """Trains as ``recipe`` (a :class:`bpeforge.Recipe`: every option of a training, checked
        once) says, from ``texts`` or from span ``counts`` (one of them), as
        :meth:`train_from_iterator` and :meth:`train_from_counts` do with the same options.

        >>> from bpeforge import Recipe
        >>> recipe = Recipe(262, special_tokens=[], max_token_length=4)
        >>> Tokenizer.train(recipe, ["hello world, hello there"] * 4).n_vocab
        262
        """
        if (texts is None) == (counts is None):
            raise TypeError("give texts or counts (one of them)")
        return built(Training(recipe, num_threads=num_threads).run(texts, progress=progress, counts=counts), cls)

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
        max_token_length: Optional[int] = None,
        doc_cap: Optional[int] = None,
        max_token_words: Optional[int] = None,
        superword_transition: Optional[int] = None,
        superword_pattern: Optional[str] = None,
        reserve_special_tokens: int = 0,
        pad_vocab_to_multiple_of: Optional[int] = None,
        max_token_chars: Optional[int] = None,
        tie_break: str = "bpeforge",
        initial_alphabet: Optional[Union[bytes, Iterable[int]]] = None,
        limit_alphabet: Optional[int] = None,
    ) -> "Tokenizer":
        """Trains a tokenizer on an iterable of str (consumed once, in batches). Items may also be
        lists of str or Arrow string arrays (see ``bpeforge.Trainer.train_from_iterator``).

        ``vocab_size`` is the final vocabulary *including* special tokens: it trains
        ``vocab_size - len(special_tokens)`` ranks and numbers the special tokens after them.
        ``special_tokens=None`` means nanochat's nine; ``[]`` means none. ``pattern`` is a preset
        name (see ``bpeforge.PATTERNS``), a regex, or ``None`` for GPT-4's. Training stops early
        (with a warning) when no pair is left or the best pair occurs fewer than
        ``min_frequency`` times; ``n_vocab`` is then smaller than ``vocab_size``.
        ``max_token_length`` (bytes) skips every merge whose token would be longer than that, as
        for DNA, code or CJK corpora, where long tokens would take the vocabulary;
        ``max_token_chars`` caps tokens in characters instead (UTF-8 characters, a CJK one being
        three bytes; a token's first byte that continues a character counts as one). ``doc_cap``
        crops each text to its first ``doc_cap`` characters (nanochat uses 10000).
        ``max_token_words`` skips every merge whose token would hold more words (runs of bytes
        other than the space). ``superword_transition=t`` trains superword tokens (SuperBPE,
        docs/superword.md): ordinary training to ``t`` ids, then merging goes on over spans split
        by ``superword_pattern`` (the ``"superword"`` pattern by default; the tokenizer then
        splits by it), tokens of at most ``max_token_words`` words (4 unless given).
        ``reserve_special_tokens=N`` adds N unused special tokens after the others
        (``<|reserved_special_token_0|>``, ..., counted in ``vocab_size``), to name later
        (:meth:`name_reserved_token`) without moving any id; ``pad_vocab_to_multiple_of=M``
        rounds the vocabulary up to a multiple of M with more of them. No text at all
        (no items, only empty texts, an iterator already used up) raises
        :class:`~bpeforge._errors.NoTextError`, a ``ValueError`` saying which.

        ``progress=True`` shows progress on stderr (bars on a terminal, and log lines, one per
        1% of the merges); a callable is called as
        ``progress(phase, info)`` (see ``bpeforge.Trainer.train_from_iterator``). The figures of
        the run (texts, bytes, distinct spans, seconds per phase) are kept in
        :attr:`training_stats`.

        ``tie_break="huggingface"`` trains what HuggingFace ``tokenizers``' ``BpeTrainer`` trains
        on byte-level text (see docs/huggingface.md): ties between pairs of equal counts broken
        by HuggingFace's ids, which the tokenizer then has (the special tokens first, then the
        single bytes in the order of their byte-level characters, then the merged tokens).
        HuggingFace's alphabet holds only the bytes seen, those of ``initial_alphabet`` (bytes,
        or ints 0..255) and at most ``limit_alphabet`` of them; tiktoken needs all 256, so a
        byte left out is an :class:`~bpeforge._errors.OptionError` here (``bpeforge.huggingface``
        gives HuggingFace's tokenizer itself).

        >>> tok = Tokenizer.train_from_iterator(["aaab"] * 3, vocab_size=259, special_tokens=[])
        >>> [t for t, r in sorted(tok.mergeable_ranks.items(), key=lambda x: x[1])][256:]
        [b'aa', b'ab', b'aaab']
        """
        recipe = Recipe(
            vocab_size,
            pattern=pattern,
            special_tokens=special_tokens,
            min_frequency=min_frequency,
            max_token_length=max_token_length,
            doc_cap=doc_cap,
            max_token_words=max_token_words,
            superword_transition=superword_transition,
            superword_pattern=superword_pattern,
            reserve_special_tokens=reserve_special_tokens,
            pad_vocab_to_multiple_of=pad_vocab_to_multiple_of,
            max_token_chars=max_token_chars,
            tie_break=tie_break,
            initial_alphabet=initial_alphabet,
            limit_alphabet=limit_alphabet,
        )
        trained = Training(recipe, num_threads=num_threads).run(iterator, buffer_size, progress)
        return built(trained, cls)  # NoTextError (a ValueError) for no text at all

    def name_reserved_token(self, name: str, slot: Optional[str] = None) -> "Tokenizer":
        """A new tokenizer in which the reserved special token ``slot`` (by default the free one
        with the smallest id: ``<|reserved_special_token_K|>``, as ``reserve_special_tokens``
        and ``pad_vocab_to_multiple_of`` make them) is the special token ``name``, at the same
        id: no id moves, so a model's embedding table needs no change. ValueError if ``name`` is
        a special token already, or there is no such free slot.

        >>> tok = Tokenizer.train_from_iterator(["ab ab"] * 3, 260, special_tokens=["<|bos|>"], reserve_special_tokens=2)
        >>> tok.name_reserved_token("<|tool_start|>").special_tokens
        {'<|bos|>': 257, '<|tool_start|>': 258, '<|reserved_special_token_1|>': 259}
        """
        specials = self.special_tokens
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str, got {name!r}")
        if name in specials:
            raise ValueError(f"{name!r} is a special token already, at id {specials[name]}")
        free = sorted((i, n) for n, i in specials.items() if RESERVED.fullmatch(n))
        if slot is None:
            if not free:
                raise ValueError("no reserved special token is free (train with reserve_special_tokens=N to keep some)")
            slot = free[0][1]
        elif slot not in specials or not RESERVED.fullmatch(slot):
            raise ValueError(f"{slot!r} is not a free reserved special token of this tokenizer")
        renamed = {(name if n == slot else n): i for n, i in specials.items()}
        tokenizer = type(self)(self.mergeable_ranks, self.pattern, renamed, name=self.name)
        return tokenizer

    def truncate(self, vocab_size: int) -> "Tokenizer":
        """A new tokenizer of this one's first ranks: ``vocab_size`` ids in all, special tokens
        included, numbered right after the ranks kept (in the order of their ids), as training
        numbers them. BPE merges are greedy, so for a tokenizer bpeforge trained this *is* the
        training to ``vocab_size`` on the same text: one training to the largest size gives every
        smaller one (see :mod:`bpeforge._sweep`). ``vocab_size`` must be at least 256 + the special
        tokens and at most :attr:`n_vocab`; ValueError otherwise.

        >>> tok = Tokenizer.train_from_iterator(["aaab"] * 3, vocab_size=259, special_tokens=["<|bos|>"])
        >>> small = tok.truncate(258)
        >>> small.n_vocab, small.encode("aaab"), small.special_tokens
        (258, [256, 97, 98], {'<|bos|>': 257})
        """
        ranks, special_tokens = first_ranks(self.mergeable_ranks, self.special_tokens, vocab_size)
        return type(self)(ranks, self.pattern, special_tokens, name=self.name)
    def extend(
        self,
        texts: Iterable[Any],
        vocab_size: int,
        *,
        min_frequency: int = 1,
        buffer_size: int = 8192,
        num_threads: Optional[int] = None,
        max_token_length: Optional[int] = None,
        progress: Union[bool, Callable[[str, dict[str, Any]], None]] = False,
        doc_cap: Optional[int] = None,
        pattern: Optional[str] = None,
        max_token_words: Optional[int] = None,
        max_token_chars: Optional[int] = None,
    ) -> "Tokenizer":
        """A new tokenizer: this one's ranks and special tokens with their ids, and new tokens
        learned from ``texts`` (an iterable as for :meth:`train_from_iterator`, or a mapping of
        spans, split with this tokenizer's pattern, to counts) numbered from ``n_vocab`` on, up
        to ``vocab_size`` ids in all. Continued BPE: each distinct span of
        the texts starts as this tokenizer encodes it, and merging goes on by training's rule,
        so a text that needs no new token encodes exactly as before. ``max_token_length`` skips
        every merge whose token would be longer, as in training (this tokenizer's longer tokens
        are kept); ``doc_cap`` and ``max_token_words`` as in training. ``pattern`` (a preset's name or a
        regex) splits the new texts, and the new tokenizer's, instead of this one's: each span
        starts as this tokenizer encodes it, whole, so new tokens may cross this pattern's
        boundaries (superword tokens are learned so; see docs/superword.md). A text then no
        longer encodes exactly as before. Ranks not made by BPE
        training (a token that merging its bytes does not make) are refused with a ValueError;
        see docs/extend.md. Stops early, with a warning, as training does.

        >>> base = Tokenizer.train_from_iterator(["low lower"] * 5, vocab_size=260, special_tokens=[])
        >>> tok = base.extend(["lowest newest"] * 5, vocab_size=262)
        >>> tok.n_vocab, tok.encode("low lower") == base.encode("low lower")
        (262, True)
        """
        recipe = extension_recipe(
            self,
            vocab_size,
            pattern=pattern,
            min_frequency=min_frequency,
            max_token_length=max_token_length,
            doc_cap=doc_cap,
            max_token_words=max_token_words,
            max_token_chars=max_token_chars,
        )
        training = Training(recipe, base=self, num_threads=num_threads)
        if isinstance(texts, (Mapping, _core.SpanCounts)):
            extended = training.run(counts=texts, progress=progress)
        else:
            extended = training.run(texts, buffer_size, progress)
        return built(extended, type(self))

    @classmethod
    def train_from_counts(
        cls,
        counts: _core.SpanCounts,
        vocab_size: int,
        *,
        pattern: Optional[str] = None,
        special_tokens: Optional[Sequence[str]] = None,
        min_frequency: int = 1,
        num_threads: Optional[int] = None,
        max_token_length: Optional[int] = None,
        progress: Union[bool, Callable[[str, dict[str, Any]], None]] = False,
        doc_cap: Optional[int] = None,
        max_token_words: Optional[int] = None,
        superword_transition: Optional[int] = None,
        superword_pattern: Optional[str] = None,
        reserve_special_tokens: int = 0,
        pad_vocab_to_multiple_of: Optional[int] = None,
        max_token_chars: Optional[int] = None,
        tie_break: str = "bpeforge",
        initial_alphabet: Optional[Union[bytes, Iterable[int]]] = None,
        limit_alphabet: Optional[int] = None,
        superword_counts: Optional[_core.SpanCounts] = None,
    ) -> "Tokenizer":
        """Trains a tokenizer on span counts (:func:`bpeforge.count`, ``SpanCounts.load``, ...):
        the same ranks as :meth:`train_from_iterator` on the texts they were counted from. The
        options are :meth:`train_from_iterator`'s; ``pattern=None`` and ``doc_cap=None`` take
        the counts' own, and another than theirs is an :class:`~bpeforge._errors.OptionError`
        naming both. Mixed counts (:func:`bpeforge.mix`) read ``min_frequency`` in occurrences
        of the mixed corpus. The counts are borrowed, not copied. A superword stage
        (``superword_transition``) needs the same texts counted with its pattern as well, as
        ``superword_counts`` (``bpeforge.count(texts, pattern="superword")``).

        >>> import bpeforge
        >>> counts = bpeforge.count(["aaab"] * 3)
        >>> tok = Tokenizer.train_from_counts(counts, vocab_size=259, special_tokens=[])
        >>> [t for t, r in sorted(tok.mergeable_ranks.items(), key=lambda x: x[1])][256:]
        [b'aa', b'ab', b'aaab']
        """
        if not isinstance(counts, _core.SpanCounts):
            raise TypeError(f"counts must be a SpanCounts, got {type(counts).__name__}")
        recipe = Recipe(
            vocab_size,
            pattern=counts.pattern if pattern is None else pattern,
            special_tokens=special_tokens,
            min_frequency=min_frequency,
            max_token_length=max_token_length,
            doc_cap=counts.options.get("doc_cap") if doc_cap is None else doc_cap,
            max_token_words=max_token_words,
            superword_transition=superword_transition,
            superword_pattern=superword_pattern,
            reserve_special_tokens=reserve_special_tokens,
            pad_vocab_to_multiple_of=pad_vocab_to_multiple_of,
            max_token_chars=max_token_chars,
            tie_break=tie_break,
            initial_alphabet=initial_alphabet,
            limit_alphabet=limit_alphabet,
        )
        trained = Training(recipe, num_threads=num_threads).run(counts=counts, progress=progress, superword_counts=superword_counts)
        return built(trained, cls)

    # --------------------------------------------------------------------------- files

    def save(self, directory: Union[str, os.PathLike]) -> None:
        """Writes the folder ``directory``, which every library loads with the same ids:
        ``tokenizer.tiktoken`` (the ranks, for ``tiktoken.load.load_tiktoken_bpe``),
        ``tokenizer.json`` and ``tokenizer_config.json`` (for ``tokenizers`` and
        ``transformers.AutoTokenizer``; left out when HuggingFace cannot encode as tiktoken does,
        e.g. a custom split pattern), ``token_bytes.npy`` (bytes per token id, for nanochat) and
        ``bpeforge.json`` (pattern, special tokens and every file's checksum, for :meth:`load`).
        The folder is switched whole, in one step: readers and a crash see the old one or the
        new one (see ``docs/tokenizer.md``). A ``directory`` ending in ``.tiktoken`` (without a
        trailing slash) that is not a folder already is refused with a ValueError: it names a
        ranks file, not the folder this writes."""
        huggingface.save_folder(self, directory)

    @classmethod
    def load(cls, directory: Union[str, os.PathLike]) -> "Tokenizer":
        """Reads a tokenizer written by :meth:`save` (by this version or an earlier one). A
        missing folder raises FileNotFoundError; a truncated, edited, mixed or symlinked file
        raises :class:`bpeforge.TokenizerFileError` naming the file (never its contents)."""
        return io.load(directory, cls)

    # --------------------------------------------------------------------------- HuggingFace

    def save_huggingface(self, directory: Union[str, os.PathLike]) -> None:
        """Writes the folder ``directory`` as :meth:`save` does, requiring its ``tokenizer.json``
        and ``tokenizer_config.json``: a ByteLevel BPE that ``tokenizers.Tokenizer.from_file`` and
        ``transformers.AutoTokenizer`` load, giving the ids this tokenizer gives. Raises
        ValueError, before writing anything, for what HuggingFace would
        encode otherwise (a custom split pattern using a construct off the list of
        ``docs/huggingface.md``, or a special token HF would read otherwise). HF splits
        special tokens out of text, where :meth:`encode` keeps them as text.

        >>> import tempfile, tokenizers
        >>> tok = Tokenizer.train_from_iterator(["low lower lowest"] * 5, vocab_size=264, special_tokens=["<|bos|>"])
        >>> with tempfile.TemporaryDirectory() as d:
        ...     tok.save_huggingface(d)
        ...     hf = tokenizers.Tokenizer.from_file(f"{d}/tokenizer.json")
        >>> hf.encode("lowest low").ids == tok.encode("lowest low")
        True
        """
        huggingface.save_huggingface(self, directory)

    @classmethod
    def from_huggingface(cls, path: Union[str, os.PathLike]) -> "Tokenizer":
        """Reads a HuggingFace ByteLevel BPE ``tokenizer.json`` (or a folder holding one): GPT-2
        style or as :meth:`save_huggingface` writes it, with or without ``ignore_merges``,
        special tokens at any ids. The ids are HuggingFace's. Raises ValueError naming what it
        cannot reproduce exactly (a normalizer, another model, a missing byte, merges whose
        order does not follow the ids they make, a non-special added token, ...)."""
        return huggingface.from_huggingface(path, cls)

    # --------------------------------------------------------------------------- tiktoken's encodings

    @classmethod
    def from_pretrained(cls, tiktoken_name: str) -> "Tokenizer":
        """A tiktoken encoding by name (``"gpt2"``, ``"cl100k_base"``, ...), as nanochat's
        ``from_pretrained``; its ``<|endoftext|>`` serves as the bos token. tiktoken downloads the
        ranks on first use: offline, this raises :class:`bpeforge._eval.EncodingUnavailable` saying
        so (a ``ConnectionError``, and an :class:`bpeforge.EvalError`)."""
        return cls.from_encoding(load_tiktoken_encoding(tiktoken_name))

    def decode_single_token_bytes(self, token_id: int) -> bytes:
        """The bytes of token ``token_id`` (a special token's name, UTF-8 encoded), as nanochat's
        and tiktoken's; an id that is no token raises
        :class:`~bpeforge._errors.UnknownTokenIdError`, as :meth:`decode` does."""
        return self.encoding.decode_single_token_bytes(self.checked_ids([token_id])[0])

    # --------------------------------------------------------------------------- chat

    def render_conversation(self, conversation: object, max_tokens: Optional[int] = 2048) -> tuple[list[int], list[int]]:
        """``(ids, mask)`` of a chat conversation, both cut to ``max_tokens``; see
        :func:`bpeforge._chat.render_conversation` for the rules."""
        return chat.render_conversation(self, conversation, max_tokens)

    def render_for_completion(self, conversation: object, max_tokens: Optional[int] = 2048) -> list[int]:
        """The ids of ``conversation`` minus its last (assistant) message, ending with
        ``<|assistant_start|>``; see :func:`bpeforge._chat.render_for_completion`."""
        return chat.render_for_completion(self, conversation, max_tokens)

    def visualize_tokenization(self, ids: Sequence[int], mask: Sequence[int], with_token_id: bool = False) -> str:
        """Tokens joined by ``|``, green where ``mask`` is 1, red where it is 0 (ANSI colours)."""
        return chat.visualize_tokenization(self, ids, mask, with_token_id)
