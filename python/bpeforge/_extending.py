"""Extending a tokenizer with new tokens, not one existing id changed: continued BPE.

It is a training (:mod:`bpeforge._training`) whose recipe keeps the base's split pattern and
special tokens and whose ``vocab_size`` is the final ``n_vocab``: the new texts are split with
the base's pattern (or another the recipe names); each distinct span starts as the base's encoding of it (as tiktoken would
make it), and merging goes on by training's rule (the pair with the highest count, the smallest
pair among equal counts), each new token numbered after the base's largest id, its special
tokens included. So the base's ids all stay, a text that needs no new token encodes exactly as
before, and extending a tokenizer bpeforge trained on a corpus, with that corpus again and the
same options, gives the ranks of training on it to the larger size. A base with a token that
merging its bytes does not make (ranks not made by BPE training) is refused: see
docs/extend.md for why.
"""

from __future__ import annotations

from typing import Optional

from ._base import BaseTokenizer
from ._errors import OptionError
from ._training import Recipe


def extension_recipe(
    base: BaseTokenizer,
    vocab_size: int,
    *,
    pattern: Optional[str] = None,
    min_frequency: int = 1,
    max_token_length: Optional[int] = None,
    doc_cap: Optional[int] = None,
    max_token_words: Optional[int] = None,
    max_token_chars: Optional[int] = None,
) -> Recipe:
    """The recipe extending ``base`` to ``vocab_size`` ids in all (at least the base's
    ``n_vocab``): the base's special tokens, its split pattern unless ``pattern`` names another
    (the new texts are then split by that one, each span starting as the base encodes it, and
    the extended tokenizer splits by it), and the options given, all checked as any recipe's (an
    :class:`~bpeforge._errors.OptionError` names the one at fault).

    >>> base = BaseTokenizer({bytes([i]): i for i in range(256)}, special_tokens=["<|bos|>"])
    >>> extension_recipe(base, 300).special_tokens
    ['<|bos|>']
    """
    if not isinstance(base, BaseTokenizer):
        raise TypeError(f"the base must be a bpeforge tokenizer, got {type(base).__name__} (load it first, e.g. Tokenizer.load)")
    names = sorted(base.special_tokens, key=base.special_tokens.__getitem__)
    if isinstance(vocab_size, int) and not isinstance(vocab_size, bool) and vocab_size < base.n_vocab:
        # Before the recipe's own bound (256 + the special tokens), which says less here.
        raise OptionError(
            "vocab_size",
            f"vocab_size must be at least the base's {base.n_vocab} ids (new tokens are numbered after them, "
            f"special tokens included), got {vocab_size}",
        )
    return Recipe(
        vocab_size,
        pattern=base.pattern if pattern is None else pattern,
        special_tokens=names,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        doc_cap=doc_cap,
        max_token_words=max_token_words,
        max_token_chars=max_token_chars,
        base=base,
    )
