"""Mixing sources with a temperature: span counts of several sources (languages, domains) added
with a weight each, exactly, as if each source had been sampled with probability
``p_i ∝ n_i ** alpha`` (``n_i`` its bytes), but without sampling (docs/mixing.md).

    {"en": SpanCounts, "fi": SpanCounts} ──integer_weights──▶ {"en": 1, "fi": 7}
                                         ──SpanCounts.weighted_sum──▶ SpanCounts (the mix recorded)

The weight of source ``i`` is ``p_i / (n_i / N)`` (``N`` the bytes of all sources): what its
share of the bytes is multiplied by. Counts are integers, so the weights become integers by one
rule (:func:`integer_weights`), and the mixed counts record the sources' bytes and weights in
their ``options["mix"]``, from which :func:`min_count` reads ``min_frequency`` in occurrences of
the mixed corpus brought to the plain sum's size.
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, Mapping, Optional

from . import _core

#: Real weights are scaled so that the largest becomes this integer, then rounded.
WEIGHT_SCALE = 1 << 16
#: Where span counts record their mix: ``counts.options[MIX_KEY]``.
MIX_KEY = "mix"


def integer_weights(
    sizes: Mapping[str, int],
    *,
    alpha: Optional[float] = None,
    weights: Optional[Mapping[str, Any]] = None,
) -> dict[str, int]:
    """The integer weight of each source, from its size in bytes (``sizes``) and either
    ``alpha`` or ``weights`` (one of them, not both). The rule:

    - ``alpha`` (a number from 0 to 1): the real weight of source i is ``p_i / (n_i / N)``
      with ``p_i ∝ n_i ** alpha``, that is ``n_i ** (alpha - 1)`` up to a common factor. 1 keeps
      the sources' shares as they are (the plain sum), 0 gives every source the same share,
      0.3 is the usual flattening.
    - ``weights`` of ints (at least 1): used as they are.
    - ``weights`` with a float (or another real, above 0): taken as real weights.

    Real weights are scaled so that the largest is 2^16 and each is rounded to the nearest
    integer, a half up (``floor(x + 0.5)``, in double precision), at least 1 (no source is ever
    left out: a source weighted below 2^-16 of the largest keeps 2^-16). Then every integer
    weight is divided by their greatest common divisor, which changes no rank and no
    ``min_frequency`` stop, and gives the plain sum (weights 1) for equal weights. Each weight
    depends only on its source's size and the sizes' minimum and maximum, never on the order
    of the sources.

    >>> integer_weights({"en": 1000, "fi": 10}, alpha=0.5)  # 2^16 * 0.1 = 6553.6 -> 6554, then / 2
    {'en': 3277, 'fi': 32768}
    >>> integer_weights({"en": 1000, "fi": 10}, alpha=1), integer_weights({"en": 1000, "fi": 10}, weights={"en": 4, "fi": 2})
    ({'en': 1, 'fi': 1}, {'en': 2, 'fi': 1})
    """
    if not sizes:
        raise ValueError("nothing to mix: no sources were given")
    for name, size in sizes.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"a source's name is a non-empty str, got {name!r}")
        if size <= 0:
            raise ValueError(f"source {name!r} is empty (no spans): it cannot be weighted by its size")
    if (alpha is None) == (weights is None):
        raise TypeError("give either alpha (a temperature from 0 to 1) or weights ({name: weight}), not " + ("both" if alpha is not None else "neither"))
    if weights is not None:
        real = checked_weights(sizes, weights)
        if all(isinstance(w, int) for w in real.values()):
            return divided_by_gcd(real)  # type: ignore[arg-type]
    else:
        a = checked_alpha(alpha)
        smallest = min(sizes.values())
        # n_i ** (alpha - 1), relative to the smallest source's (the largest weight when alpha <= 1).
        real = {name: (size / smallest) ** (a - 1.0) for name, size in sizes.items()}
    largest = max(float(w) for w in real.values())
    scaled = {name: max(1, math.floor(WEIGHT_SCALE * (float(w) / largest) + 0.5)) for name, w in real.items()}
    return divided_by_gcd(scaled)


def checked_alpha(alpha: Any) -> float:
    """``alpha`` as a float, checked to be a number from 0 to 1."""
    if isinstance(alpha, bool) or not isinstance(alpha, Real):
        raise TypeError(f"alpha must be a number from 0 to 1, got {type(alpha).__name__}")
    a = float(alpha)
    if not 0.0 <= a <= 1.0:  # NaN fails too
        raise ValueError(
            f"alpha must be from 0 (every source the same share) to 1 (the shares as they are), got {alpha}; "
            "for other balances give weights"
        )
    return a


def checked_weights(sizes: Mapping[str, int], weights: Mapping[str, Any]) -> dict[str, Any]:
    """``weights`` checked against the sources: one for each source and no other, each a
    positive int or finite real number. Returns them in the sources' order, ints as ints."""
    if not isinstance(weights, Mapping):
        raise TypeError(f"weights must be a mapping of source name to weight, got {type(weights).__name__}")
    unknown = [name for name in weights if name not in sizes]
    if unknown:
        raise ValueError(f"weights name {', '.join(map(repr, unknown))}, not a source (the sources: {', '.join(map(repr, sizes))})")
    missing = [name for name in sizes if name not in weights]
    if missing:
        raise ValueError(f"no weight for source {', '.join(map(repr, missing))}: give every source a weight")
    checked: dict[str, Any] = {}
    for name in sizes:
        w = weights[name]
        if isinstance(w, bool) or not isinstance(w, Real):
            raise TypeError(f"the weight of source {name!r} must be a number, got {type(w).__name__}")
        value = int(w) if isinstance(w, Integral) else float(w)
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"the weight of source {name!r} must be a positive number, got {w}")
        checked[name] = value
    return checked


def divided_by_gcd(weights: Mapping[str, int]) -> dict[str, int]:
    """The weights divided by their greatest common divisor.

    >>> divided_by_gcd({"a": 65536, "b": 65536}), divided_by_gcd({"a": 6, "b": 4})
    ({'a': 1, 'b': 1}, {'a': 3, 'b': 2})
    """
    g = math.gcd(*weights.values())
    return {name: w // g for name, w in weights.items()}


def mix(
    counts: Mapping[str, _core.SpanCounts],
    *,
    alpha: Optional[float] = None,
    weights: Optional[Mapping[str, Any]] = None,
) -> _core.SpanCounts:
    """The span counts of several sources mixed: each source's counts multiplied by its integer
    weight (:func:`integer_weights`, from ``alpha`` or ``weights``), exactly, and added. The
    sources must share their split pattern and counting options. The result records the mix
    (each source's bytes and weight, and ``alpha``) in ``options["mix"]``, so that training
    reads ``min_frequency`` in occurrences of the mixed corpus (:func:`min_count`); it trains
    like any counts (``Tokenizer.train_from_counts``), saves and loads with its record.

    A weighted count past 2^64-1 is an OverflowError naming the source; an unknown source name
    in ``weights``, a weight or ``alpha`` out of range, or no source at all, a ValueError.

    >>> import bpeforge
    >>> en, fi = bpeforge.count(["the cat"] * 9), bpeforge.count(["kissa"])
    >>> mixed = mix({"en": en, "fi": fi}, weights={"en": 1, "fi": 3})
    >>> mixed["kissa"], mixed[" cat"], MixRecord.of(mixed).weights
    (3, 9, {'en': 1, 'fi': 3})
    """
    if not isinstance(counts, Mapping):
        raise TypeError(f"counts must be a mapping of source name to SpanCounts, got {type(counts).__name__}")
    for name, c in counts.items():
        if not isinstance(c, _core.SpanCounts):
            raise TypeError(f"source {name!r}: expected SpanCounts, got {type(c).__name__}")
        if MIX_KEY in c.options:
            raise ValueError(f"source {name!r} is a mix already: mix its sources in the same call instead")
    sizes = {name: c.total_bytes for name, c in counts.items()}
    chosen = integer_weights(sizes, alpha=alpha, weights=weights)
    first = next(iter(counts.values()))
    record = {
        "alpha": None if alpha is None else float(alpha),
        "sources": {name: {"bytes": sizes[name], "weight": chosen[name]} for name in counts},
    }
    options = dict(first.options, **{MIX_KEY: record})
    return _core.SpanCounts.weighted_sum([(name, c, chosen[name]) for name, c in counts.items()], options=options)


class MixRecord:
    """What mixed span counts record of their mix: each source's bytes and integer weight, and
    ``alpha`` (None when the weights were given)."""

    def __init__(self, sources: Mapping[str, tuple[int, int]], alpha: Optional[float]) -> None:
        #: Source name -> (bytes, integer weight), in the mix's order.
        self.sources = dict(sources)
        self.alpha = alpha

    @classmethod
    def of(cls, counts: _core.SpanCounts) -> Optional["MixRecord"]:
        """The record of ``counts``, or None if they are not a mix."""
        record = counts.options.get(MIX_KEY)
        if record is None:
            return None
        try:
            sources = {name: (int(s["bytes"]), int(s["weight"])) for name, s in record["sources"].items()}
            alpha = record.get("alpha")
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"the span counts' options[{MIX_KEY!r}] is not a mix record ({e!r})") from None
        if not sources or any(n < 0 or w < 1 for n, w in sources.values()):
            raise ValueError(f"the span counts' options[{MIX_KEY!r}] is not a mix record: {record!r}")
        return cls(sources, None if alpha is None else float(alpha))

    @property
    def weights(self) -> dict[str, int]:
        return {name: w for name, (_, w) in self.sources.items()}

    @property
    def scale(self) -> Fraction:
        """Weighted counts per occurrence of the mixed corpus brought to the plain sum's size:
        ``sum(w_i * n_i) / sum(n_i)`` (1 for the plain sum)."""
        plain = sum(n for n, _ in self.sources.values())
        return Fraction(sum(n * w for n, w in self.sources.values()), max(plain, 1))

    def shares_before(self) -> dict[str, float]:
        """Each source's share of the bytes as counted."""
        total = sum(n for n, _ in self.sources.values()) or 1
        return {name: n / total for name, (n, _) in self.sources.items()}

    def shares_after(self) -> dict[str, float]:
        """Each source's share of the bytes once weighted."""
        total = sum(n * w for n, w in self.sources.values()) or 1
        return {name: n * w / total for name, (n, w) in self.sources.items()}


def min_count(counts: _core.SpanCounts, min_frequency: int) -> int:
    """The weighted pair count that ``min_frequency`` asks for in ``counts``: ``min_frequency``
    itself for counts that are not a mix; for a mix, ``min_frequency`` occurrences of the
    mixed corpus brought to the plain sum's size, ``ceil(min_frequency * scale)``
    (:attr:`MixRecord.scale`). So equal weights stop where the plain sum stops, and a pair
    must occur ``min_frequency`` times in the balanced corpus of N bytes.

    >>> import bpeforge
    >>> c = mix({"a": bpeforge.count(["xy"] * 3), "b": bpeforge.count(["zz"])}, weights={"a": 1, "b": 3})
    >>> min_count(c, 2)  # scale (6 * 1 + 2 * 3) / 8 = 1.5
    3
    """
    record = MixRecord.of(counts)
    if record is None:
        return min_frequency
    return min(-(-min_frequency * record.scale.numerator // record.scale.denominator), (1 << 63) - 1)
