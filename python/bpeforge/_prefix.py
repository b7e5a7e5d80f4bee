"""The first ranks of a tokenizer: the smaller vocabulary of the same training.

BPE training is greedy: each merge is chosen from the counts the earlier merges left, and
nothing later changes it. So the first ``k`` merges of a training to any larger size are the
training to ``k`` merges, and one training to the largest size gives every smaller one: its
ranks below ``n`` are the ranks of training to ``n`` (``tests/test_sweep.py`` checks it against
the trainer at both sizes and against the reference trainer). :func:`first_ranks` cuts the
ranks there and numbers the special tokens right after them, as training numbers them;
:meth:`bpeforge.Tokenizer.truncate` builds the tokenizer.

A prefix of valid ranks is valid (each token is made of two lower-ranked ones), but ranks laid
out by others (OpenAI's order the single bytes their own way) may leave a single byte out of a
short prefix, without which tiktoken cannot encode: such a size is refused.
"""

from __future__ import annotations

from typing import Mapping, Tuple

from ._checks import MAX_TOKEN_ID, as_int, missing_single_bytes

__all__ = ["first_ranks"]


def first_ranks(
    ranks: Mapping[bytes, int], special_tokens: Mapping[str, int], vocab_size: int
) -> Tuple[dict[bytes, int], dict[str, int]]:
    """``(ranks, special tokens)`` of a vocabulary of ``vocab_size`` ids in all: the ranks below
    ``vocab_size - len(special_tokens)``, then the special tokens in the order of their ids,
    numbered from there on (special tokens all below the ranks, HuggingFace's layout, keep their
    ids). ``vocab_size`` counts the special tokens, as training's does; it
    must leave room for the 256 single bytes and be no larger than the vocabulary (a
    ValueError says which rule it breaks; a TypeError for a value that is not an integer).

    >>> ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256, b"abc": 257}
    >>> small, special = first_ranks(ranks, {"<|bos|>": 258}, 258)
    >>> len(small), max(small.values()), special
    (257, 256, {'<|bos|>': 257})
    """
    size = as_int(vocab_size, "vocab_size")
    n_special = len(special_tokens)
    n_vocab = len(ranks) + n_special
    if size > n_vocab:
        raise ValueError(
            f"vocab_size {size:,} is larger than the tokenizer's {n_vocab:,} tokens: a prefix can only be smaller "
            "(train to the larger size instead)"
        )
    if not 256 + n_special <= size <= MAX_TOKEN_ID:
        raise ValueError(
            f"vocab_size must be at least 256 + {n_special} special tokens = {256 + n_special}, got {size:,}"
        )
    n_ranks = size - n_special
    # The n_ranks lowest ranks, ids kept (ranks may have gaps, as tiktoken's model allows).
    kept = dict(sorted(ranks.items(), key=lambda item: item[1])[:n_ranks])
    missing = missing_single_bytes(kept)
    if missing:
        raise ValueError(
            f"the first {n_ranks:,} ranks of this tokenizer leave out {len(missing)} single bytes "
            f"(e.g. {bytes([missing[0]])!r}), which every tokenizer needs: its ranks do not put the 256 single bytes first"
        )
    if special_tokens and max(special_tokens.values()) < min(ranks.values()):
        # HuggingFace's layout (the special tokens first, as its trainer puts them): they keep
        # their ids, and so the prefix is again the training to that size.
        return kept, dict(special_tokens)
    in_order = sorted(special_tokens, key=lambda name: special_tokens[name])
    first_special = max(kept.values()) + 1
    return kept, {name: first_special + i for i, name in enumerate(in_order)}
