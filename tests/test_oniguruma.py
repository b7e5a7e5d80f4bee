"""Custom split patterns in HuggingFace's regex engine (bpeforge._oniguruma): patterns generated
from the listed constructs split generated text into the same pieces with HuggingFace's
``Split(Regex(to_oniguruma(p)))`` as with bpeforge's splitter (fancy-regex, tiktoken's engine),
every listed Unicode property holds the same code points in both, and each construct off the
list is refused by name. ``-m slow`` runs many more examples and every code point."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge import _oniguruma as oniguruma
from bpeforge._oniguruma import CONSTRUCTS, PROPERTIES, NotPortable, from_oniguruma, to_oniguruma
from bpeforge._patterns import PATTERNS, SUPERWORD_PATTERN
from strategies import texts

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, pre_tokenizers  # noqa: E402

SLOW = settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
FAST = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))


def hf_matches(regex: str, text: str) -> list[str]:
    """The matches of ``regex`` (Oniguruma's spelling) in ``text``, by HuggingFace's Split: text
    between matches removed (the pattern inverted), each match a piece."""
    split = pre_tokenizers.Split(Regex(regex), behavior="removed", invert=True)
    return [piece for piece, _ in split.pre_tokenize_str(text)]


def hf_isolated(regex: str, text: str) -> list[str]:
    """HuggingFace's pieces of ``text`` with ``Split(Regex(regex), behavior="isolated")``: the
    matches and the text between them."""
    return [piece for piece, _ in pre_tokenizers.Split(Regex(regex), behavior="isolated").pre_tokenize_str(text)]


# ------------------------------------------------------------------------------ generated patterns

# Characters the patterns name, and text made of them (with texts()'s scripts, digits, emoji,
# whitespace and punctuation), so that patterns match often: letters with special case folding
# (the long s, the Kelvin sign, the dotted and dotless i, final sigma, ß and ﬁ, which fold to two).
LETTERS = "abstfiklABSTKé"
TRICKY = ["ß", "ẞ", "ſ", "K", "İ", "ı", "ﬁ", "ﬆ", "Σσς", "ǅǄǆ", "\r\n", "\r", "\n\n", "\x0b", "\u2028", "\u00a0", "٣", "²½"]
ESCAPED = [r"\.", r"\-", r"\(", r"\)", r"\[", r"\]", r"\{", r"\}", r"\|", r"\*", r"\+", r"\?", r"\^", r"\$", r"\\", r"\/", r"\#", r"\&", r"\~", r"\!", r"\,", r"\:"]
CONTROLS = [r"\n", r"\r", r"\t", r"\f", r"\v", r"\x41", r"\x{e9}", r"\x{1F600}", r"\x{3000}"]
SHORTHANDS = [r"\s", r"\S", r"\d", r"\D", r"\h", r"\H"]
SOME_PROPERTIES = [r"\p{L}", r"\p{N}", r"\P{L}", r"\p{Lu}", r"\p{Ll}", r"\p{Lo}", r"\p{M}", r"\p{P}", r"\p{S}", r"\p{Z}",
                   r"\p{Han}", r"\p{Greek}", r"\p{Emoji}", r"\P{N}", r"\pL", r"\pN", r"\p{letter}", r"\p{White_Space}"]
CLASS_CHARS = list("abstk ,'!-é日") + ["\\]", "\\^", "\\-", "\\[", "\\\\"]
RANGES = ["a-z", "A-Z", "0-9", "α-ω", "\\x{1F300}-\\x{1F5FF}", "!-/", "a-f"]

literal = st.one_of(st.sampled_from(LETTERS), st.sampled_from(list(" ,'!-日٣😀")), st.sampled_from(ESCAPED), st.sampled_from(CONTROLS))
class_item = st.one_of(st.sampled_from(CLASS_CHARS), st.sampled_from(RANGES), st.sampled_from(SHORTHANDS),
                       st.sampled_from(SOME_PROPERTIES), st.sampled_from(CONTROLS))
char_class = st.tuples(st.sampled_from(["[", "[^"]), st.lists(class_item, min_size=1, max_size=4)).map(lambda t: t[0] + "".join(t[1]) + "]")
atom = st.one_of(literal, literal, st.sampled_from(SHORTHANDS), st.sampled_from(SOME_PROPERTIES), char_class, st.just("."))
QUANTIFIERS = ["?", "*", "+", "{2}", "{1,3}", "{0,2}", "{2,}", "{1}"]
quantifier = st.tuples(st.sampled_from(QUANTIFIERS), st.sampled_from(["", "", "?", "+"])).map("".join)
ANCHORS = ["^", "$", r"\A", r"\z"]


def extend(inner):
    concat = st.lists(inner, min_size=2, max_size=4).map("".join)
    alternation = st.lists(inner, min_size=2, max_size=3).map("|".join)
    group = st.tuples(st.sampled_from(["(?:", "(", "(?<g>", "(?P<g>", "(?>", "(?i:"]), inner).map(lambda t: f"{t[0]}{t[1]})")
    look = st.tuples(st.sampled_from(["(?=", "(?!", "(?<=", "(?<!"]), inner).map(lambda t: f"{t[0]}{t[1]})")
    repeated = st.tuples(group, quantifier).map("".join)
    return st.one_of(concat, alternation, group, look, repeated)


quantified_atom = st.one_of(atom, st.tuples(atom, quantifier).map("".join))
patterns = st.recursive(st.one_of(quantified_atom, quantified_atom, quantified_atom, st.sampled_from(ANCHORS)), extend, max_leaves=8)


def portable(pattern: str) -> str:
    """``pattern`` in Oniguruma's spelling, if it is on the list and splits (never matching an
    empty string, which neither engine's splitting allows); else the example is dropped."""
    try:
        regex = to_oniguruma(pattern)
        bpeforge._core.check_pattern(pattern)
    except ValueError:
        assume(False)
    return regex


def bpeforge_split(text: str, pattern: str) -> list[str]:
    try:
        return bpeforge.split(text, pattern)
    except (ValueError, RuntimeError):  # an empty match at run time, or the engine's backtracking limit
        assume(False)
        raise


def sample_text(pattern: str = ""):
    """Text with the characters ``pattern`` names (and those that fold like them, newlines and
    spaces), so that it matches often, among texts()'s scripts, digits, emoji and punctuation."""
    own = "".join(sorted(set(pattern) - set("\\()[]{}?*+|^$"))) + "ßſK\n\r "
    piece = st.one_of(texts(max_pieces=4), st.sampled_from(TRICKY), st.text(alphabet=LETTERS + " ,'!-.\n", max_size=8),
                      st.text(alphabet=own, min_size=1, max_size=10), st.text(alphabet=own, min_size=1, max_size=10))
    return st.lists(piece, max_size=6).map("".join)


def check_split_alike(pattern: str, text: str) -> None:
    regex = portable(pattern)
    ours = bpeforge_split(text, pattern)
    assert hf_matches(regex, text) == ours, (pattern, regex, text)
    # HuggingFace's isolated Split keeps the text between matches: as with_unmatched_text cuts.
    assert hf_isolated(regex, text) == bpeforge_split(text, oniguruma.with_unmatched_text(pattern)), (pattern, regex, text)
    # And back: HuggingFace's spelling read as bpeforge's splits alike.
    assert bpeforge_split(text, from_oniguruma(regex)) == ours, (pattern, regex, from_oniguruma(regex), text)


@FAST
@given(pattern=patterns, data=st.data())
def test_generated_patterns_split_alike_in_both_engines(pattern, data):
    check_split_alike(pattern, data.draw(sample_text(pattern), label="text"))


@pytest.mark.slow
@SLOW
@given(pattern=patterns, data=st.data())
def test_generated_patterns_split_alike_in_both_engines_many(pattern, data):
    check_split_alike(pattern, data.draw(sample_text(pattern), label="text"))


def test_the_generated_patterns_cover_the_list():
    """Every construct of the list appears among the patterns the generator draws (it would not
    check one it never draws)."""
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(pattern=patterns)
    def draw(pattern):
        try:
            seen.update(oniguruma.constructs_used(pattern))
        except NotPortable:
            pass

    draw()
    assert seen == set(CONSTRUCTS)


@pytest.mark.parametrize("name", [*PATTERNS, "superword"])
def test_the_presets_translate_and_split_alike(name):
    """The presets, read by the parser and written for Oniguruma, split hostile text alike (their
    own export keeps its reviewed spelling, bpeforge.huggingface.oniguruma_regex)."""
    pattern = SUPERWORD_PATTERN if name == "superword" else PATTERNS[name]
    regex = to_oniguruma(pattern)
    text = "Hello world! don't DON'T I'LL ſ's K'd ﬆ ﬁle 1234567 ٣٤ \r\n\r\n  \n x\u00a0y 日本語 😀👍🏽 a/b://c " + " " * 5
    assert hf_isolated(regex, text) == hf_matches(regex, text) == bpeforge.split(text, pattern, fast=False)
    assert bpeforge.split(text, from_oniguruma(regex)) == bpeforge.split(text, pattern)
    assert oniguruma.matches_every_character(pattern)


# ------------------------------------------------------------------------------ text left unmatched


# Alternatives that match some characters whatever follows: a generated pattern before one of
# them often matches every character, through what it adds.
PARTLY = [r"\S", r"\s", r"[^a-z]", r"\P{L}", r"[^\s\p{L}]+", r"\p{L}+|\s", r"[^a-zA-Z\d]", r"[^\n]"]


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=st.tuples(patterns, st.sampled_from(PARTLY)).map("|".join), data=st.data())
def test_a_pattern_said_to_match_every_character_leaves_no_text(pattern, data):
    """Where matches_every_character holds, HuggingFace's isolated Split (which keeps unmatched
    text) and tiktoken's splitting (which drops it) give the same pieces."""
    regex = portable(pattern)
    assume(oniguruma.matches_every_character(pattern))
    text = data.draw(sample_text(pattern), label="text")
    assert hf_isolated(regex, text) == bpeforge_split(text, pattern)


@pytest.mark.parametrize(
    "pattern, every",
    [(r"\S+|\s+", True), (r"[a-z]+|[^a-z]", True), (r"[a-z]+", False), (r"\p{L}+|\P{L}", True), (r"a{2}|[^a]|\s", False),
     (r" ?\p{L}+|\p{N}|[^\p{L}\p{N}]", True), (r"(?i:[a-z])+|[^a-zA-Z]", True), (r"[a-z]+|[^a-zA-Z]", False), (r"(?i:[a-z]|[^a-z])", True),
     (r"[^\s]?+\p{L}+|\s|[^\p{L}]", False), (r"[^\s\p{L}]?+\p{L}+|\s|[^\p{L}]", True), (r"\s?+\s+|[^\s]", False), (r"x(?=y)|[^x]", False), (r"(?:ab|[^a])", False)],
)
def test_what_matches_every_character(pattern, every):
    assert oniguruma.matches_every_character(pattern) == every


# ------------------------------------------------------------------------------ properties


def code_points(step: int) -> str:
    """The code points below U+0800, then every ``step``-th one (all of them for step 1)."""
    return "".join(
        chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000 and (cp < 0x800 or cp % step == 0)
    )


@pytest.mark.parametrize("step", [499, pytest.param(1, marks=pytest.mark.slow)])
def test_every_listed_property_holds_the_same_characters(step):
    text = code_points(step)
    differ = []
    for name in PROPERTIES:
        for spelled in (f"\\p{{{name}}}+", f"[^\\p{{{name}}}]+", f"[\\p{{{name}}}x]+"):
            if hf_matches(to_oniguruma(spelled), text) != bpeforge.split(text, spelled):
                differ.append(spelled)
    for shorthand in ("s", "S", "d", "D", "h", "H"):
        for spelled in (f"\\{shorthand}+", f"[\\{shorthand}]+", f"[^\\{shorthand}]+"):
            if hf_matches(to_oniguruma(spelled), text) != bpeforge.split(text, spelled):
                differ.append(spelled)
    assert differ == []


def test_word_characters_differ_so_they_are_refused():
    """The reason \\w is off the list, in numbers: the engines disagree on it."""
    text = "x²½\u200dy"
    assert hf_matches(r"\w+", text) != bpeforge.split(text, r"\w+")


# ------------------------------------------------------------------------------ refused by name


@pytest.mark.parametrize(
    "pattern, construct",
    [
        (r"\w+", r"\w"), (r"\W", r"\W"), (r"\bx", r"word boundary \b"), (r"x\B", r"\B"),
        (r"(a)\1", r"the escape \1"), (r"(?<n>a)\k<n>", r"back-reference \k"), (r"x\Z", r"\Z"), (r"\Gx", r"\G"),
        (r"\p{Bidi_Class=L}", "a property given as name=value"), (r"\p{Sidetic}", r"the property \p{Sidetic}"),
        (r"\p{^L}", r"the negated property \p{^L}"), (r"[[:alpha:]]", "a POSIX class"), (r"[a[bc]]", "a nested class"),
        (r"[a-z&&[^aeiou]]", "the class operation &&"), (r"[a-z--c]", "the class operation --"), (r"[a~~b]", "the class operation ~~"),
        (r"(?s).", "the flag s"), (r"(?m)^x", "the flag m"), (r"(?x)a b", "the flag x"), (r"(?-i)a", "the flag (?-...)"),
        (r"a(?i)b", "the inline flag (?i) after the start of a group"), (r"(?i:ss)", "the letters 'ss' side by side"),
        (r"(?i:s(?:t))", "the letters 'st' side by side"), (r"(?i:ß)", "the character 'ß' in a case-insensitive group"),
        (r"(?i:[ﬁ])", "the character 'ﬁ'"), (r"(?i:[\x{80}-\x{FF}])", r"the range"), (r"(?i:\p{Lu})", r"the property \p{Lu} in a case-insensitive"),
        (r"a{,3}", "the interval {,3}"), (r"a{2}{3}", "the quantifier {3} after a quantifier"), (r"a**", "after a quantifier"),
        (r"(?=a)+", "on a zero-width assertion"), (r"\u0041", r"the escape \u"), (r"\e", r"the escape \e"), (r"(?#c)a", "a comment"),
        (r"\Qa.b\E", r"the quoting \Q"), (r"a{", "an unescaped {"), (r"a}", "an unescaped }"), (r"[]a]", "an unescaped ] at the start"),
        (r"\R", r"\R"), (r"\X", r"\X"), (r"(?<=a)\K", r"\K"), (r"[\w]", r"\w"), (r"[\s-z]", "a range with a class at an end"),
    ],
)
def test_a_construct_off_the_list_is_refused_by_name(pattern, construct):
    with pytest.raises(NotPortable) as raised:
        to_oniguruma(pattern)
    assert construct in str(raised.value), str(raised.value)
    assert f"the split pattern {pattern!r} uses " in str(raised.value)


@pytest.mark.parametrize(
    "regex, construct",
    [(r"\pL", "a property without braces"), (r"(?P<n>a)", "the group (?P<"), (r"(?m:.)", "the flag m"), (r"\w", r"\w")],
)
def test_what_huggingfaces_spelling_cannot_carry_is_refused_by_name(regex, construct):
    with pytest.raises(NotPortable, match=None) as raised:
        from_oniguruma(regex)
    assert construct in str(raised.value), str(raised.value)


@pytest.mark.parametrize(
    "pattern, regex",
    [
        (r"^a|b$", r"\Aa|b\z"), (r"\d{1,3}+", r"(?>\d{1,3})"), (r"\d{2}?", r"\d{2}"), (r"\d{2,}+", r"(?>\d{2,})"),
        (r"(x)(?P<n>y)", "(?:x)(?:y)"), (r"\pL\PN", r"\p{L}\P{N}"), (r"\p{ letter }", r"\p{Letter}"), (r"[\x{2028}\t]", r"[\x{2028}\t]"),
        ("(?i)ab|c", "(?i:ab|c)"), (r"\v", r"\x{B}"),
    ],
)
def test_spellings_that_differ_are_translated(pattern, regex):
    assert to_oniguruma(pattern) == regex


@pytest.mark.parametrize(
    "pattern, text",
    [(r"a$|\n", "a\na"), (r"^a|\n", "b\na\na"), (r"\d{1,2}+\d", "123 12"), (r"\d{1,2}+", "12345"), (r"a{2}?b", "aab ab"),
     (r"(?i)a|b", "A B b"), (r"(?i:k)", "kK\u212a"), (r"(?i:[a-z]+)", "ſK\u212a ß"), (r"\pL+", "abc déf"), (r"(?<n>a)(b)", "ab"),
     (r"\v+|\x{85}", "\x0b\x85\n"), (r"[\x{2028}\t]", "\u2028\t"), (r"\s++$|\s+(?!\S)|\s", "a  \n\n b  ")],
)
def test_spellings_that_differ_split_alike(pattern, text):
    """Each translated spelling, on a text where the untranslated one would split otherwise."""
    check_split_alike(pattern, text)


@pytest.mark.parametrize(
    "regex, pattern", [(r"^a|b$", "(?m:^)a|b(?m:$)"), (r"ba{2}?", "b(?:a{2})?"), (r"a{1,2}+", "(?:a{1,2})+"), (r"a{1,2}?", "a{1,2}?")]
)
def test_huggingfaces_spellings_are_read_as_oniguruma_means_them(regex, pattern):
    assert from_oniguruma(regex) == pattern
    text = "aaa\naa\nb\nab aaaaa b"
    assert hf_matches(regex, text) == bpeforge.split(text, pattern)
