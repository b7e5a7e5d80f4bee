"""Mixing sources (bpeforge.mix): the integer weighting rule, exact weighted sums, equal weights
giving the plain sum's ranks, min_frequency read in occurrences of the mixed corpus, refusals;
against counts multiplied in Python and the reference trainer."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpeforge
import reference as R
import strategies as S
from bpeforge import SpanCounts
from bpeforge._mixing import WEIGHT_SCALE, MixRecord, integer_weights, min_count

pytestmark = pytest.mark.filterwarnings("ignore:training stopped")
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

names = st.text(alphabet="abcdefghij", min_size=1, max_size=4)
sizes = st.dictionaries(names, st.integers(1, 10**15), min_size=1, max_size=6)
alphas = st.floats(0.0, 1.0)


def ranks(counts, vocab_size=300, min_frequency=1):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = bpeforge.Tokenizer.train_from_counts(counts, vocab_size, special_tokens=[], min_frequency=min_frequency)
    return tok.mergeable_ranks


def reordered(d, order):
    return {k: d[k] for k in order}


# ------------------------------------------------------------------------------ the rule


@settings(max_examples=S.examples(200), **SETTINGS)
@given(sizes, alphas, st.randoms())
def test_weights_do_not_depend_on_the_order_of_the_sources(sizes, alpha, rng):
    order = list(sizes)
    rng.shuffle(order)
    assert integer_weights(sizes, alpha=alpha) == integer_weights(reordered(sizes, order), alpha=alpha)


@settings(max_examples=S.examples(200), **SETTINGS)
@given(sizes, alphas)
def test_weights_follow_the_documented_rule(sizes, alpha):
    """Scaled so the largest is 2^16, rounded half up, at least 1, divided by their gcd; so the
    weighted shares are the temperature's p_i to within the rounding."""
    got = integer_weights(sizes, alpha=alpha)
    real = {k: (n / min(sizes.values())) ** (alpha - 1) for k, n in sizes.items()}
    top = max(real.values())
    rounded = {k: max(1, math.floor(WEIGHT_SCALE * r / top + 0.5)) for k, r in real.items()}
    g = math.gcd(*rounded.values())
    assert got == {k: w // g for k, w in rounded.items()}
    assert math.gcd(*got.values()) == 1
    assert max(rounded.values()) == WEIGHT_SCALE
    # Weighted shares are p_i ∝ n_i^alpha, up to the rounding (no weight was raised to 1).
    if min(rounded.values()) > 1:
        p_total = sum(n**alpha for n in sizes.values())
        w_total = sum(n * got[k] for k, n in sizes.items())
        for k, n in sizes.items():
            assert n * got[k] / w_total == pytest.approx(n**alpha / p_total, rel=2 / min(rounded.values()) + 1e-9)


@given(sizes)
def test_alpha_1_and_equal_weights_give_weight_1(sizes):
    ones = {k: 1 for k in sizes}
    assert integer_weights(sizes, alpha=1) == ones
    assert integer_weights(sizes, weights={k: 7 for k in sizes}) == ones
    assert integer_weights(sizes, weights={k: 0.25 for k in sizes}) == ones


def test_alpha_0_gives_equal_shares_and_int_weights_are_exact():
    w = integer_weights({"big": 4000, "small": 1000}, alpha=0)
    assert w == {"big": 1, "small": 4}  # 2^14 and 2^16 divided by 2^14
    assert integer_weights({"a": 10, "b": 10}, weights={"a": 3, "b": 1}) == {"a": 3, "b": 1}
    assert integer_weights({"a": 10, "b": 10}, weights={"a": 3 * 2**70, "b": 2**70}) == {"a": 3, "b": 1}
    # A real weight goes through the 2^16 scale: 1/3 of it is 21845.33 -> 21845.
    assert integer_weights({"a": 10, "b": 10}, weights={"a": 1.0, "b": 1 / 3}) == {"a": 65536, "b": 21845}
    # Rounding: half up, and never below 1.
    assert integer_weights({"a": 1, "b": 1}, weights={"a": 1.0, "b": 2.5 / 65536}) == {"a": 65536, "b": 3}  # not 2 (half to even)
    assert integer_weights({"a": 1, "b": 1}, weights={"a": 1.0, "b": 1e-12}) == {"a": 65536, "b": 1}


# ------------------------------------------------------------------------------ mixing counts


mappings = st.dictionaries(st.binary(min_size=1, max_size=5), st.integers(1, 2**40), min_size=1, max_size=10)


@settings(max_examples=S.examples(100), **SETTINGS)
@given(st.dictionaries(names, mappings, min_size=1, max_size=4), st.data())
def test_a_mix_is_the_counts_multiplied_in_python(parts, data):
    counts = {k: SpanCounts.from_mapping(m, pattern="gpt4") for k, m in parts.items()}
    weights = data.draw(st.fixed_dictionaries({k: st.integers(1, 2**20) for k in parts}))
    mixed = bpeforge.mix(counts, weights=weights)
    chosen = integer_weights({k: c.total_bytes for k, c in counts.items()}, weights=weights)
    expected: dict = {}
    for k, m in parts.items():
        for span, n in m.items():
            expected[span] = expected.get(span, 0) + n * chosen[k]
    assert dict(mixed.items()) == expected
    assert mixed.total_bytes == sum(len(s) * n for s, n in expected.items())
    order = data.draw(st.permutations(list(parts)))
    assert bpeforge.mix(reordered(counts, order), weights=weights) == mixed
    assert MixRecord.of(mixed).weights == chosen


@settings(max_examples=S.examples(40), **SETTINGS)
@given(st.lists(S.corpora(max_distinct=5), min_size=1, max_size=3), st.integers(1, 3))
def test_equal_weights_train_the_plain_sums_ranks(corpora, min_frequency):
    """alpha = 1 (or equal weights) is the plain sum, exactly: same counts, same ranks, same
    min_frequency stop."""
    counts = {f"s{i}": bpeforge.count(texts) for i, texts in enumerate(corpora) if any(texts)}
    counts = {k: c for k, c in counts.items() if len(c)}
    if not counts:
        return
    plain = SpanCounts.merge(counts.values())
    for mixed in (bpeforge.mix(counts, alpha=1), bpeforge.mix(counts, weights={k: 5 for k in counts})):
        assert mixed.items() == plain.items()
        assert min_count(mixed, min_frequency) == min_frequency
        assert ranks(mixed, 280, min_frequency) == ranks(plain, 280, min_frequency)


def test_alpha_1_is_exact_on_real_shaped_text():
    en = bpeforge.count(["the cat sat on the mat"] * 50 + ["a dog"] * 7)
    fi = bpeforge.count(["kissa istui matolla"] * 3)
    mixed = bpeforge.mix({"en": en, "fi": fi}, alpha=1.0)
    assert mixed.items() == (en + fi).items()
    assert ranks(mixed) == ranks(en + fi)


@settings(max_examples=S.examples(50), **SETTINGS)
@given(st.lists(S.corpora(max_distinct=4, max_pieces=6), min_size=2, max_size=3), alphas, st.integers(1, 4))
def test_mixed_training_matches_the_reference_on_counts_multiplied_in_python(corpora, alpha, min_frequency):
    counts = {f"s{i}": bpeforge.count(texts) for i, texts in enumerate(corpora)}
    counts = {k: c for k, c in counts.items() if len(c)}
    if not counts:
        return
    mixed = bpeforge.mix(counts, alpha=alpha)
    weights = integer_weights({k: c.total_bytes for k, c in counts.items()}, alpha=alpha)
    multiplied: dict = {}
    for k, c in counts.items():
        for span, n in c.items():
            multiplied[span] = multiplied.get(span, 0) + n * weights[k]
    threshold = min_count(mixed, min_frequency)
    expected, _ = R.train_from_counts(multiplied, 300, threshold)
    assert sorted(ranks(mixed, 300, min_frequency).items(), key=lambda x: x[1]) == expected


# ------------------------------------------------------------------------------ min_frequency


def test_min_frequency_counts_occurrences_of_the_mixed_corpus():
    """A pair occurring twice in a source weighted 3 among equal bytes of weight 1: the mix is
    2 bytes of weighted bytes per byte (scale 2), so the pair has 2 * 3 / 2 = 3 occurrences in
    the mixed corpus at the plain sum's size: it passes min_frequency 3, not 4."""
    a = SpanCounts.from_mapping({"xy": 2, "pq": 1, "zz": 1}, pattern="gpt4")  # 8 bytes
    b = SpanCounts.from_mapping({"uv": 4}, pattern="gpt4")  # 8 bytes
    mixed = bpeforge.mix({"a": a, "b": b}, weights={"a": 3, "b": 1})
    assert MixRecord.of(mixed).scale == 2
    assert mixed["xy"] == 6 and mixed["uv"] == 4
    assert min_count(mixed, 3) == 6 and min_count(mixed, 4) == 8
    assert b"xy" in ranks(mixed, 260, min_frequency=3)
    learned = [t for t in ranks(mixed, 260, min_frequency=2) if len(t) > 1]
    assert learned == [b"xy", b"uv"]  # 6, then 4 >= 2 * 2; pq (3) and zz (3) are below 4
    assert [t for t in ranks(mixed, 260, min_frequency=4) if len(t) > 1] == []  # 6 < 8
    # The low-level Trainer reads min_frequency the same way: every training path does.
    t = bpeforge.Trainer("gpt4")
    t.train_from_counts(mixed, 300, min_frequency=4)
    assert len(t.get_mergeable_ranks()) == 256
    t.train_from_counts(mixed, 300, min_frequency=3)
    assert bytes(b"xy") in dict(t.get_mergeable_ranks())


def test_the_record_survives_saving_and_pickling(tmp_path):
    import pickle

    mixed = bpeforge.mix({"a": bpeforge.count(["abc abc"]), "b": bpeforge.count(["de"] * 10)}, alpha=0.3)
    mixed.save(tmp_path / "m.parquet")
    for again in (SpanCounts.load(tmp_path / "m.parquet"), pickle.loads(pickle.dumps(mixed))):
        assert again == mixed
        assert MixRecord.of(again).sources == MixRecord.of(mixed).sources
        assert MixRecord.of(again).alpha == 0.3
        assert min_count(again, 5) == min_count(mixed, 5)


# ------------------------------------------------------------------------------ refusals


def test_bad_mixes_are_refused_clearly():
    en, fi = bpeforge.count(["hello"]), bpeforge.count(["moi"])
    with pytest.raises(ValueError, match="no sources"):
        bpeforge.mix({}, alpha=0.3)
    with pytest.raises(TypeError, match="not both"):
        bpeforge.mix({"en": en}, alpha=0.3, weights={"en": 1})
    with pytest.raises(TypeError, match="not neither"):
        bpeforge.mix({"en": en})
    with pytest.raises(ValueError, match=r"weights name 'sv', not a source \(the sources: 'en', 'fi'\)"):
        bpeforge.mix({"en": en, "fi": fi}, weights={"en": 1, "fi": 1, "sv": 1})
    with pytest.raises(ValueError, match="no weight for source 'fi'"):
        bpeforge.mix({"en": en, "fi": fi}, weights={"en": 1})
    for bad in (0, -1, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="weight of source 'fi' must be a positive number"):
            bpeforge.mix({"en": en, "fi": fi}, weights={"en": 1, "fi": bad})
    for bad in (True, "2", None):
        with pytest.raises(TypeError, match="weight of source 'fi' must be a number"):
            bpeforge.mix({"en": en, "fi": fi}, weights={"en": 1, "fi": bad})
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="alpha must be from 0"):
            bpeforge.mix({"en": en}, alpha=bad)
    with pytest.raises(TypeError, match="alpha must be a number"):
        bpeforge.mix({"en": en}, alpha="0.3")
    with pytest.raises(TypeError, match="source 'fi': expected SpanCounts, got list"):
        bpeforge.mix({"en": en, "fi": ["moi"]}, alpha=1)
    with pytest.raises(ValueError, match="different split patterns"):
        bpeforge.mix({"en": en, "fi": bpeforge.count(["moi"], "gpt2")}, alpha=1)
    with pytest.raises(ValueError, match="source 'x' is empty"):
        bpeforge.mix({"en": en, "x": SpanCounts.from_mapping({}, pattern="gpt4")}, alpha=1)
    with pytest.raises(ValueError, match="source 'm' is a mix already"):
        bpeforge.mix({"en": en, "m": bpeforge.mix({"fi": fi}, alpha=1)}, alpha=1)


def test_overflow_is_refused_naming_the_source():
    big = SpanCounts.from_mapping({"x": 2**63}, pattern="gpt4")
    small = SpanCounts.from_mapping({"x": 1, "y": 1}, pattern="gpt4")
    with pytest.raises(OverflowError, match=r"source 'big': the count of the span \"x\" \(9223372036854775808\) times the weight 2"):
        bpeforge.mix({"small": small, "big": big}, weights={"small": 1, "big": 2})
    with pytest.raises(OverflowError, match="the sum of the weighted sources: the count of the span \"x\" would pass 2\\^64-1"):
        bpeforge.mix({"small": SpanCounts.from_mapping({"x": 2**63}, pattern="gpt4"), "big": big}, weights={"small": 1, "big": 1})
    with pytest.raises(ValueError, match="a weight is an int from 1 to 2\\^64-1"):
        SpanCounts.weighted_sum([("a", small, 2**64)])
    with pytest.raises(ValueError, match="at least one part"):
        SpanCounts.weighted_sum([])
    with pytest.raises(TypeError, match="part 0 of weighted_sum"):
        SpanCounts.weighted_sum([small])
