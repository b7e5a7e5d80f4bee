"""bpeforge against the pure-Python reference trainer (tests/reference.py), byte for byte.

Every expected value here comes either from the reference (an independent, naive
implementation of the specification) or from a hand derivation written out in a comment;
nothing is copied from bpeforge's own output.
"""

from __future__ import annotations

import itertools
import warnings

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpeforge
import reference as R
import strategies as S

PATTERNS = {
    "default": None,  # bpeforge._core.DEFAULT_PATTERN; the reference uses its own copy, R.GPT4_PATTERN
    **{name: bpeforge.PATTERNS[name] for name in
       ["cl100k_base", "nanochat", "gpt2", "r50k_base", "p50k_base", "o200k_base"]},
    "nonspace_or_space": r"\S+|\s+",
    "words_punct_space": r"\w+|[^\w\s]+|\s+",
    "single_chars": r".",
}
ALL_PATTERN_STRINGS = [R.GPT4_PATTERN if p is None else p for p in PATTERNS.values()]
VOCAB_SIZES = [256, 260, 300, 400]

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def ref_pattern(pattern):
    return R.GPT4_PATTERN if pattern is None else pattern


def bpeforge_train(corpus, vocab_size, pattern=None, min_frequency=1, via_constructor=True, **kw):
    """(ranks, merges) from bpeforge; the pattern goes either to the constructor or to
    train_from_iterator (which must give the same result)."""
    if via_constructor:
        trainer = bpeforge.Trainer(pattern, **kw)
        trainer.train_from_iterator(corpus, vocab_size, min_frequency=min_frequency)
    else:
        trainer = bpeforge.Trainer(**kw)
        trainer.train_from_iterator(corpus, vocab_size, pattern=pattern, min_frequency=min_frequency)
    return trainer.get_mergeable_ranks(), trainer.get_merges()


def assert_same_as_reference(corpus, vocab_size, pattern=None, min_frequency=1, via_constructor=True):
    expected_ranks, expected_merges = R.train(corpus, vocab_size, ref_pattern(pattern), min_frequency)
    ranks, merges = bpeforge_train(corpus, vocab_size, pattern, min_frequency, via_constructor)
    assert ranks == expected_ranks
    assert merges == expected_merges
    return ranks, merges


def assert_well_formed(ranks, merges):
    """Invariants of any result of the specification when no id is reused (see
    test_reuse_never_happens): ids 0..n-1, single bytes first, distinct bytes, merge i makes
    token 256 + i out of two lower ids, and its bytes are their concatenation."""
    assert [i for _, i in ranks] == list(range(len(ranks)))
    assert [b for b, _ in ranks[:256]] == [bytes([i]) for i in range(256)]
    assert len({b for b, _ in ranks}) == len(ranks)
    assert len(merges) == len(ranks) - 256
    for k, (a, b, token, count) in enumerate(merges):
        assert token == 256 + k
        assert a < token and b < token
        assert ranks[token][0] == ranks[a][0] + ranks[b][0]
        assert count >= 1


# --------------------------------------------------------------------------------------------
# The reference's own building blocks, checked by hand


def test_reference_helpers():
    # "aaa" x2: (97,97) at two overlapping positions, each worth 2.
    assert R.count_pairs([([97, 97, 97], 2), ([97, 98], 1)]) == {(97, 97): 4, (97, 98): 1}
    # Left to right, non-overlapping.
    assert R.replace_pair([97, 97, 97], (97, 97), 256) == [256, 97]
    assert R.replace_pair([97, 97, 97, 97], (97, 97), 256) == [256, 256]
    assert R.replace_pair([98, 97, 98, 97], (97, 98), 256) == [98, 256, 97]
    assert R.split("ab  cd", r"\S+|\s+") == ["ab", "  ", "cd"]
    assert R.split("ab", r"x*") == []  # empty matches are dropped
    assert R.count_spans(["a a", "a"], r"\S+|\s+") == {"a": 3, " ": 1}


# --------------------------------------------------------------------------------------------
# The split


def test_reference_default_pattern_is_bpeforge_default():
    assert bpeforge._core.DEFAULT_PATTERN == R.GPT4_PATTERN
    assert bpeforge.PATTERNS["gpt4"] == R.GPT4_PATTERN


@settings(max_examples=S.examples(400), **SETTINGS)
@given(text=S.texts(max_pieces=14), pattern=st.sampled_from(ALL_PATTERN_STRINGS))
def test_split_matches_regex_findall(text, pattern):
    assert bpeforge.split(text, pattern) == [s for s in regex.findall(pattern, text) if s]


@pytest.mark.parametrize(
    "text, pattern, expected",
    [
        # GPT-4: the contraction alternative is case-insensitive, so "'LL" is one span; the
        # space before a word is glued to it; digits come in groups of at most three.
        ("I'LL don't 12345", None, ["I", "'LL", " don", "'t", " ", "123", "45"]),
        # GPT-2: the contraction alternative is case-sensitive, so "'LL" is "'" then "LL".
        ("I'LL don't", bpeforge.PATTERNS["gpt2"], ["I", "'", "LL", " don", "'t"]),
        # nanochat: digits in groups of at most two.
        ("12345", bpeforge.PATTERNS["nanochat"], ["12", "34", "5"]),
        # o200k_base: an upper-case letter run followed by lower case starts a new span.
        ("HelloWorld", bpeforge.PATTERNS["o200k_base"], ["Hello", "World"]),
        # \s+(?!\S) leaves the last space of a run for the following word.
        ("a   b", None, ["a", "  ", " b"]),
    ],
)
def test_split_hand_checked(text, pattern, expected):
    pattern = ref_pattern(pattern)
    assert R.split(text, pattern) == expected
    assert bpeforge.split(text, pattern) == expected


# --------------------------------------------------------------------------------------------
# Training: property tests against the reference


@pytest.mark.parametrize("vocab_size", VOCAB_SIZES)
@pytest.mark.parametrize("pattern", list(PATTERNS.values()), ids=list(PATTERNS))
@settings(max_examples=S.examples(25), **SETTINGS)
@given(corpus=S.corpora(), via_constructor=st.booleans())
def test_train_matches_reference(pattern, vocab_size, corpus, via_constructor):
    ranks, merges = assert_same_as_reference(corpus, vocab_size, pattern, via_constructor=via_constructor)
    assert_well_formed(ranks, merges)
    assert len(ranks) <= vocab_size


@pytest.mark.parametrize("vocab_size", [257, 260, 300])
@settings(max_examples=S.examples(80), **SETTINGS)
@given(corpus=st.one_of(S.repeated_words_corpus("ab"), S.repeated_words_corpus("abc", 9),
                        S.repeated_words_corpus("a", 12)))
def test_train_matches_reference_ties_and_overlaps(vocab_size, corpus):
    # Tiny alphabets: many pairs with equal counts (tie-break on the smallest (a, b)) and runs
    # like "aaaa" (overlapping pair positions, left-to-right replacement).
    assert_same_as_reference(corpus, vocab_size, r"\S+|\s+")
    assert_same_as_reference(corpus, vocab_size, None)


@settings(max_examples=S.examples(60), **SETTINGS)
@given(corpus=st.one_of(S.corpora(max_repeat=6), S.repeated_words_corpus("abc", 8)),
       min_frequency=st.integers(1, 7),
       vocab_size=st.sampled_from([260, 300, 400]),
       pattern=st.sampled_from([None, bpeforge.PATTERNS["o200k_base"], r"\S+|\s+"]))
def test_min_frequency_matches_reference(corpus, min_frequency, vocab_size, pattern):
    ranks, merges = assert_same_as_reference(corpus, vocab_size, pattern, min_frequency)
    assert all(m[3] >= min_frequency for m in merges)


@settings(max_examples=S.examples(15), **SETTINGS)
@given(corpus=S.corpora(max_distinct=30, max_repeat=8, max_pieces=25),
       pattern=st.sampled_from([None, bpeforge.PATTERNS["o200k_base"], bpeforge.PATTERNS["gpt2"]]))
def test_train_matches_reference_larger_corpora(corpus, pattern):
    assert_same_as_reference(corpus, 600, pattern)


@settings(max_examples=S.examples(10), **SETTINGS)
@given(corpus=S.corpora(max_distinct=30, max_repeat=8, max_pieces=25))
def test_train_matches_reference_either_side_of_two_byte_ids(corpus):
    # Up to 65536 tokens the merge loop keeps token ids in 16 bits, past that in 32. These
    # corpora run out of pairs long before either size, so both learn every merge there is.
    small, _ = assert_same_as_reference(corpus, 65536, None)
    big, _ = assert_same_as_reference(corpus, 65537, None)
    assert small == big


def test_train_matches_reference_exhaustive_small_domain():
    # Every corpus of one or two distinct words over {a, b} of length 1..5, each occurring once
    # or twice: 7,688 corpora, trained to completion.
    words = ["".join(p) for n in range(1, 6) for p in itertools.product("ab", repeat=n)]
    corpora = [[w] * c for w in words for c in (1, 2)]
    corpora += [[w1] * c1 + [w2] * c2 for w1, w2 in itertools.combinations(words, 2)
                for c1 in (1, 2) for c2 in (1, 2)]
    trainer = bpeforge.Trainer(r"\S+", num_threads=1)
    for corpus in corpora:
        expected_ranks, expected_merges = R.train(corpus, 300, r"\S+")
        trainer.train_from_iterator(corpus, 300)  # each call replaces the earlier training
        assert trainer.get_mergeable_ranks() == expected_ranks, corpus
        assert trainer.get_merges() == expected_merges, corpus


@settings(max_examples=S.examples(40), **SETTINGS)
@given(corpus=S.corpora(), vocab_size=st.sampled_from([256, 270, 300]),
       specials=st.sampled_from([[], None, ["<|endoftext|>"]]))
def test_tokenizer_train_matches_reference(corpus, vocab_size, specials):
    names = list(bpeforge._base.NANOCHAT_SPECIAL_TOKENS) if specials is None else specials
    n_ranks = vocab_size  # ranks asked for; the Tokenizer's vocab_size adds the specials
    expected_ranks, _ = R.train(corpus, n_ranks, R.GPT4_PATTERN)
    if not "".join(corpus):  # no text at all: no tokenizer (the low-level Trainer gives the bytes)
        with pytest.raises(bpeforge._errors.NoTextError, match="no text to train on"):
            bpeforge.Tokenizer.train_from_iterator(corpus, vocab_size + len(names), special_tokens=specials)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = bpeforge.Tokenizer.train_from_iterator(
            corpus, vocab_size + len(names), special_tokens=specials)
    assert tok.mergeable_ranks == dict(expected_ranks)
    assert tok.special_tokens == {name: len(expected_ranks) + i for i, name in enumerate(names)}
    # A warning exactly when training stopped short of the ranks asked for.
    stopped_short = [w for w in caught if issubclass(w.category, UserWarning)]
    assert bool(stopped_short) == (len(expected_ranks) < n_ranks)


# --------------------------------------------------------------------------------------------
# Hand-checked cases (expectations derived from the specification by hand)


def check(corpus, vocab_size, expected_new_tokens, expected_merges, pattern=None, min_frequency=1):
    """expected_new_tokens: bytes of ids 256.. in order; checked on the reference AND bpeforge."""
    expected_ranks = [(bytes([i]), i) for i in range(256)] + [
        (b, 256 + k) for k, b in enumerate(expected_new_tokens)]
    for ranks, merges in [
        R.train(corpus, vocab_size, ref_pattern(pattern), min_frequency),
        bpeforge_train(corpus, vocab_size, pattern, min_frequency),
    ]:
        assert ranks == expected_ranks
        assert merges == expected_merges


def test_hand_aaab():
    # One span "aaab" x3 (bytes 97 97 97 98). Pairs: (97,97) at 2 positions -> 2*3 = 6,
    # (97,98) -> 3. Merge (97,97) -> 256 b"aa"; left to right: [256, 97, 98].
    # Now (256,97) = 3 and (97,98) = 3: a tie, the smaller tuple (97,98) wins -> 257 b"ab".
    # Then [256, 257]: (256,257) = 3 -> 258 b"aaab". vocab_size 259 reached.
    check(["aaab"] * 3, 259, [b"aa", b"ab", b"aaab"],
          [(97, 97, 256, 6), (97, 98, 257, 3), (256, 257, 258, 3)])


def test_hand_overlapping_positions_both_count():
    # "aaaa": (97,97) sits at 3 overlapping positions -> count 3. Replacing left to right,
    # non-overlapping: [256, 256]; then (256,256) = 1 -> 257 b"aaaa". Nothing left after that.
    check(["aaaa"], 300, [b"aa", b"aaaa"], [(97, 97, 256, 3), (256, 256, 257, 1)])
    # "aaa": (97,97) = 2 -> b"aa"; left to right gives [256, 97] (not [97, 256]) so the next
    # merge is (256, 97) -> b"aaa".
    check(["aaa"], 300, [b"aa", b"aaa"], [(97, 97, 256, 2), (256, 97, 257, 1)])


def test_hand_tie_break_smallest_pair():
    # Spans "ab" and "ba" (count 1 each): (97,98) = (98,97) = 1, the smaller (97,98) wins.
    # Then only (98,97) = 1 is left. Then no pair: training stops at 258 < 300.
    check(["ab", "ba"], 300, [b"ab", b"ba"], [(97, 98, 256, 1), (98, 97, 257, 1)])
    # Same counts, order of the corpus reversed: same result.
    check(["ba", "ab"], 300, [b"ab", b"ba"], [(97, 98, 256, 1), (98, 97, 257, 1)])


def test_hand_span_counts_across_texts():
    # GPT-4 split: "ab ab" -> "ab", " ab"; "ab" -> "ab". So span "ab" has count 2 and " ab"
    # count 1. (97,98) = 2 + 1 = 3 -> b"ab"; then " ab" is [32, 256]: (32,256) = 1 -> b" ab".
    check(["ab ab", "ab"], 300, [b"ab", b" ab"], [(97, 98, 256, 3), (32, 256, 257, 1)])


def test_hand_pattern_decides_spans():
    # GPT-4: "I'LL" -> "I", "'LL" (case-insensitive contraction). Pairs of "'LL": (39,76) = 1
    # and (76,76) = 1, tie -> (39,76) b"'L"; then (256,76) -> b"'LL".
    check(["I'LL"], 300, [b"'L", b"'LL"], [(39, 76, 256, 1), (256, 76, 257, 1)])
    # GPT-2: "I'LL" -> "I", "'", "LL": the only pair is (76,76) -> b"LL".
    check(["I'LL"], 300, [b"LL"], [(76, 76, 256, 1)], pattern=bpeforge.PATTERNS["gpt2"])
    # Pairs never cross spans: with the GPT-4 split, "a b" -> "a", " b": only (32,98).
    check(["a b"] * 2, 300, [b" b"], [(32, 98, 256, 2)])


def test_hand_multibyte():
    # GPT-4 split: "é" and "😀" are one span each (separate texts). "é" is C3 A9, "😀" is
    # F0 9F 98 80 in UTF-8; every pair has count 1, so the smallest tuple wins each time:
    # step 1: (C3,A9) (F0,9F) (9F,98) (98,80) -> (0x98,0x80) -> 256;   "😀" = [F0, 9F, 256]
    # step 2: (C3,A9) (F0,9F) (9F,256)        -> (0x9F,256)  -> 257;   "😀" = [F0, 257]
    # step 3: (C3,A9) (F0,257)                -> (0xC3,0xA9) -> 258 = "é"
    # step 4: (F0,257)                        -> 259 = "😀"; then no pair is left.
    check(["é", "😀"], 300,
          [b"\x98\x80", b"\x9f\x98\x80", "é".encode(), "😀".encode()],
          [(0x98, 0x80, 256, 1), (0x9F, 256, 257, 1), (0xC3, 0xA9, 258, 1), (0xF0, 257, 259, 1)])


def test_hand_min_frequency():
    # ["aaab"] x3 (see test_hand_aaab): counts are 6, then 3.
    check(["aaab"] * 3, 300, [b"aa"], [(97, 97, 256, 6)], min_frequency=4)
    check(["aaab"] * 3, 300, [b"aa"], [(97, 97, 256, 6)], min_frequency=6)  # 6 >= 6 is kept
    check(["aaab"] * 3, 300, [], [], min_frequency=7)
    check(["aaab"] * 3, 300, [b"aa", b"ab", b"aaab"],
          [(97, 97, 256, 6), (97, 98, 257, 3), (256, 257, 258, 3)], min_frequency=3)


def test_hand_stops_at_vocab_size_and_when_no_pair_left():
    check(["aaab"] * 3, 256, [], [])  # 256 tokens already
    check(["aaab"] * 3, 257, [b"aa"], [(97, 97, 256, 6)])
    check(["aaab"] * 3, 100_000, [b"aa", b"ab", b"aaab"],
          [(97, 97, 256, 6), (97, 98, 257, 3), (256, 257, 258, 3)])


@pytest.mark.parametrize("corpus", [[], [""], [""] * 5, [" ", "\n", "x", "!", "7"] * 3],
                         ids=["empty", "one-empty-text", "empty-texts", "one-byte-spans"])
def test_hand_nothing_to_merge(corpus):
    # No span with two bytes, so no pair at all: just the 256 single bytes, whatever the
    # vocab_size, from a list or from an (empty or not) iterator.
    check(corpus, 300, [], [])
    ranks, merges = bpeforge_train(iter(corpus), 1000)
    assert ranks == [(bytes([i]), i) for i in range(256)]
    assert merges == []


# --------------------------------------------------------------------------------------------
# The reuse rule


# The specification says that when bytes(a) + bytes(b) already is a token t, the merge reuses
# id t. It turns out this can never happen with whole-span left-to-right replacement:
#
#   Say token T (bytes w) was made at step t1 from [A, B] in some span, and at a later step
#   t2 a pair [C, D] with bytes w is adjacent in some span S. At t2 there are token boundaries
#   right before and right after w in S, and since tokens only ever merge, those boundaries
#   existed at every earlier step. While both boundaries of a substring stand, its inner
#   segmentation evolves exactly as if the substring were a span on its own: a left-to-right
#   scan can only influence the inside through an occurrence straddling a boundary, and
#   taking such an occurrence would erase that boundary. So just before t1 the segmentation
#   of w in S is [A, B] (as in the span where T was made), and step t1 merges it into T: w is
#   then one token in S and can never again be the pair [C, D]. Contradiction.
#
# E.g. the hinted "ab"+"c" / "a"+"bc": wherever "abc" is delimited, whichever of (a,b) and
# (b,c) comes first claims the "b", so every delimited "abc" is [ab, c] or [a, bc] consistently.
# The reference still implements the rule (it costs one dict lookup), but it is dead code;
# what can be tested honestly is that neither implementation ever reuses or duplicates a
# token, and that they agree on corpora built to invite the situation.


@pytest.mark.parametrize(
    "corpus",
    [
        # (a,b) first, then (b,c) from "bc"-only spans, then both "ab"+"c" and the would-be
        # "a"+"bc" candidates in other contexts.
        ["abc"] * 3 + ["bc"] * 2 + ["xbc"] * 2 + ["abcd"] + ["aabc"] + ["abcbc"],
        # (b,c) first instead.
        ["bc"] * 5 + ["abc"] * 2 + ["ab"] * 3 + ["abcc", "aabc", "abbc"],
        # Self-pairs: "aa" + "a" versus "a" + "aa", "bb" + "a" versus "b" + "ba".
        ["aaa", "aaaa", "aaaaa", "baaa", "aaab", "bbba", "bba", "bbbba", "ba"] * 2,
    ],
)
def test_reuse_candidates_agree_and_no_duplicate_tokens(corpus):
    for pattern in [None, r"\S+"]:
        ranks, merges = assert_same_as_reference(corpus, 400, pattern)
        assert_well_formed(ranks, merges)


@settings(max_examples=S.examples(150), **SETTINGS)
@given(corpus=st.one_of(S.repeated_words_corpus("ab", 9), S.repeated_words_corpus("abc", 9),
                        S.corpora()))
def test_reuse_never_happens(corpus):
    # With the proof above, every merge makes a new token: merge k has id 256 + k, and all
    # token bytes are distinct. Checked on the reference and on bpeforge.
    expected = R.train(corpus, 400, r"\S+|\s+")
    assert_well_formed(*expected)
    got = bpeforge_train(corpus, 400, r"\S+|\s+")
    assert got == (expected[0], expected[1])
