"""Hypothesis strategies for small training corpora (lists of str).

Texts are built from pieces that stress the split patterns and the byte-level merging: ASCII
words, accented Latin (precomposed and with combining marks), CJK, emoji (with ZWJ sequences,
skin tones, flags and variation selectors), whitespace runs of every kind, digits (ASCII and
not), English contractions in mixed case, punctuation, and arbitrary assigned characters.
Corpora are small so that the pure-Python reference stays fast, and texts are repeated so that
span counts above 1 and ties between pair counts occur.

Characters excluded on purpose (a genuine engine difference, not a bpeforge bug):
the ``regex`` package (2026.x) uses Unicode 17 tables, while bpeforge's splitter (fancy-regex
over the Rust ``regex-syntax`` 0.8 crate) uses Unicode 16. They disagree on

* the ~4,700 code points first assigned in Unicode 17 (new scripts such as Sidetic
  U+10940.., Beria Erfe U+16EA0.., the Latin letters U+A7CE..U+A7F1, Arabic U+088F, Telugu
  U+0C5C, Kannada U+0CDC, combining marks U+1ACF.., digits U+11DE0..), which ``regex`` puts in
  \\p{L}/\\p{N}/\\p{M} and Rust treats as unassigned, and
* U+0295 LATIN LETTER PHARYNGEAL VOICED FRICATIVE, recategorised from Ll to Lo in Unicode 17
  (it matters for o200k_base's \\p{Ll} / \\p{Lo} classes).

So the "any character" strategy only draws characters that this Python's ``unicodedata``
(Unicode 14 on Python 3.11) considers assigned (hypothesis filters categories with
``unicodedata``), minus U+0295. \\s is identical in both engines (25 code points; \\x1c-\\x1f
are *not* whitespace in either), so those control characters are kept on purpose.
"""

from __future__ import annotations

import string

from hypothesis import settings
from hypothesis import strategies as st


def examples(thorough: int) -> int:
    """The examples a property test runs that asks for ``thorough`` of them under the "thorough"
    profile (whose max_examples is 100): scaled to the loaded profile's max_examples, at least
    ten (the "ci" profile, the default, runs a third; see conftest.py)."""
    return min(thorough, max(10, round(thorough * settings.default.max_examples / 100)))


# Unicode-version differences between the `regex` package and Rust's regex-syntax (see above).
UNICODE_VERSION_DIFFERENCES = frozenset({"\u0295"})

ASCII_WORDS = ["the", "hello", "world", "a", "an", "low", "lower", "lowest", "newer", "wider",
               "aaa", "abab", "Hello", "WORLD", "iPhone", "x", "zz"]

ACCENTED = "éèêëàâäáãåçñóöôõøúüùûíîïýÿæœßÉÈÀÂÄÇÑÖØÜÆŒĀāĒēĞğİıŁłŐőŠšŽžǅǈ"
COMBINING = ["\u0301", "\u0300", "\u0302", "\u0308", "\u0303", "\u0327", "\u030a", "\u0323",
             "\u0336", "\u20dd", "\ufe0f"]
CJK_SAMPLES = ["你好", "世界", "日本語", "中文", "漢字", "ひらがな", "カタカナ", "한국어", "テスト", "的"]
EMOJI = ["😀", "👍", "👍🏽", "❤️", "❤", "🇫🇷", "🇯🇵", "👨‍👩‍👧", "🏳️‍🌈", "🤖", "✨", "🔥", "💯", "⭐"]
WHITESPACE = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", "\r", " \n",
              "\n ", "  \n", " \t ", "\x0b", "\x0c", "\u00a0", "\u3000", "\x85", "\u2028",
              "\u2009", "\u202f"]
# Not whitespace in either engine: file/group/record/unit separators, NUL, DEL, BOM, ZWSP.
CONTROLS = ["\x1c", "\x1d", "\x1e", "\x1f", "\x00", "\x7f", "\ufeff", "\u200b", "\u200d"]
CONTRACTIONS = ["don't", "DON'T", "I'LL", "i'll", "we've", "We'VE", "she's", "SHE'S", "they're",
                "THEY'RE", "I'm", "I'M", "he'd", "HE'D", "it's", "'s", "'", "''", "'t", "'ll",
                "it’s", "o'clock", "rock'n'roll"]
PUNCTUATION = list(string.punctuation) + ["...", "…", "—", "–", "«", "»", "“", "”", "¿", "¡",
                                          "://", "-->", "!!", "?!", "/", "//", "。", "、", "·"]
OTHER_DIGITS = ["٣", "٠١٢", "१२३", "੭", "①", "½", "Ⅻ", "²"]

ascii_words = st.one_of(
    st.sampled_from(ASCII_WORDS),
    st.text(alphabet=string.ascii_letters, min_size=1, max_size=8),
)
accented_words = st.text(alphabet=string.ascii_lowercase[:6] + ACCENTED, min_size=1, max_size=6)
combining = st.tuples(st.sampled_from("aeiouAEIOUn"), st.sampled_from(COMBINING),
                      st.sampled_from(["", "\u0301", "x"])).map("".join)
cjk = st.one_of(
    st.sampled_from(CJK_SAMPLES),
    st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x4E3F), min_size=1, max_size=4),
)
emoji = st.sampled_from(EMOJI)
whitespace = st.one_of(
    st.sampled_from(WHITESPACE),
    st.text(alphabet=" \t\n\r", min_size=1, max_size=5),
)
digits = st.one_of(
    st.text(alphabet=string.digits, min_size=1, max_size=7),
    st.sampled_from(OTHER_DIGITS),
)
contractions = st.sampled_from(CONTRACTIONS)
punctuation = st.sampled_from(PUNCTUATION + CONTROLS)
any_character = st.characters(exclude_categories=("Cs", "Cn")).filter(
    lambda c: c not in UNICODE_VERSION_DIFFERENCES
)

piece = st.one_of(
    ascii_words, ascii_words, accented_words, combining, cjk, emoji, whitespace, whitespace,
    digits, contractions, punctuation, any_character,
)


@st.composite
def texts(draw, max_pieces: int = 10) -> str:
    """One text: up to ``max_pieces`` pieces, often separated by a space."""
    pieces = draw(st.lists(piece, max_size=max_pieces))
    seps = draw(st.lists(st.sampled_from(["", " ", " ", "\n"]), min_size=len(pieces), max_size=len(pieces)))
    return "".join(p + s for p, s in zip(pieces, seps))


@st.composite
def corpora(draw, max_distinct: int = 6, max_repeat: int = 4, max_pieces: int = 10) -> list:
    """A list of texts: a few distinct texts, each repeated 1..max_repeat times, shuffled."""
    distinct = draw(st.lists(texts(max_pieces=max_pieces), max_size=max_distinct))
    repeats = draw(st.lists(st.integers(1, max_repeat), min_size=len(distinct), max_size=len(distinct)))
    corpus = [t for t, n in zip(distinct, repeats) for _ in range(n)]
    return draw(st.permutations(corpus))


def repeated_words_corpus(alphabet: str = "ab", max_len: int = 6):
    """Corpora of short words over a tiny alphabet: lots of repeated pairs, overlaps (``aaa``)
    and equal pair counts, so the tie-break and left-to-right replacement are exercised."""
    word = st.text(alphabet=alphabet, min_size=1, max_size=max_len)
    line = st.lists(word, min_size=1, max_size=5).map(" ".join)
    return st.lists(line, min_size=1, max_size=8).flatmap(
        lambda lines: st.lists(st.sampled_from(lines), min_size=len(lines), max_size=3 * len(lines))
    )
