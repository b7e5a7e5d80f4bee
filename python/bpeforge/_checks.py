"""Checks of arguments shared by several modules: integers, special tokens, token ids.

Rules the compiled core already enforces (a split pattern that compiles and never matches an
empty string, thread counts, the ranks' own range) are not repeated here: the core's
``ValueError`` says what is wrong. (The vocabulary's size counts the special tokens, which the
core does not know of: ``training`` checks it.)
"""

from __future__ import annotations

import operator
from typing import Any, Collection, Mapping, Optional, Sequence, Union

MAX_TOKEN_ID = 1 << 31
"""Token ids (ranks and special ids) are below this: tiktoken's are 32-bit, and bpeforge
trains at most this many ranks."""


def as_int(value: Any, name: str) -> int:
    """``value`` as an int: an int or another integer type (NumPy's), not a bool; else TypeError.

    >>> as_int(3, "n")
    3
    >>> as_int(True, "n")
    Traceback (most recent call last):
    TypeError: n must be an int, got bool
    """
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{name} must be an int, got {type(value).__name__}")


def optional_int(value: Any, name: str, minimum: int, expected: str) -> Optional[int]:
    """``value`` as an int (any integer type) of at least ``minimum``, or None; else TypeError
    (not an integer) or ValueError (too small), saying ``name`` must be ``expected``."""
    if value is None:
        return None
    try:
        number = as_int(value, name)
    except TypeError:
        raise TypeError(f"{name} must be {expected}, got {value!r}") from None
    if number < minimum:
        raise ValueError(f"{name} must be {expected}, got {number!r}")
    return number


def special_token_ids(
    special_tokens: Union[Mapping[str, int], Sequence[str]], ranks: Union[int, Collection[int]]
) -> dict[str, int]:
    """The ids of ``special_tokens`` beside ``ranks``, the ids the ranks use: a count ``n``
    (ids 0..n-1) or the ids themselves (tiktoken's model allows gaps). A list of names is
    numbered on from the largest rank; a mapping of name to id is checked: each id an int from
    0 below :data:`MAX_TOKEN_ID` that no rank uses, below, among or above the ranks. ValueError
    (TypeError for a lone str) names the token at fault.

    >>> special_token_ids(["<|bos|>", "<|eos|>"], 256)
    {'<|bos|>': 256, '<|eos|>': 257}
    >>> special_token_ids({"<|pad|>": 0}, range(1, 257))
    {'<|pad|>': 0}
    """
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a list of str or a dict of str to id, not a str")
    taken: Collection[int] = range(ranks) if isinstance(ranks, int) else ranks
    if isinstance(special_tokens, Mapping):
        ids = dict(special_tokens)
    else:
        names = list(special_tokens)
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"special token {dup!r} is given twice")
        if isinstance(taken, range):  # the largest without walking up to 2^31 ids
            first = max(taken[0], taken[-1]) + 1 if taken else 0
        else:
            first = max(taken, default=-1) + 1
        ids = {name: first + i for i, name in enumerate(names)}
    for name, i in ids.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"special tokens must be non-empty str, got {name!r}")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"special token {name!r} is not valid UTF-8 text (it holds a lone surrogate)") from None
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < MAX_TOKEN_ID:
            raise ValueError(f"special token {name!r} has id {i!r}; special ids must be ints from 0 up to {MAX_TOKEN_ID - 1}")
        if i in taken:
            raise ValueError(f"special token {name!r} has id {i}, which a rank uses (special ids must be ids no rank has)")
    if len(set(ids.values())) != len(ids):
        raise ValueError("two special tokens share an id")
    return ids


def missing_single_bytes(ranks: Mapping[bytes, int]) -> list[int]:
    """The bytes 0..255 that are not tokens of ``ranks`` (tiktoken panics without all of them).

    >>> missing_single_bytes({bytes([i]): i for i in range(255)})
    [255]
    """
    return [b for b in range(256) if bytes([b]) not in ranks]
