"""Split patterns in HuggingFace's regex engine: a custom pattern translated between bpeforge's
engine (fancy-regex, tiktoken's) and Oniguruma (what ``tokenizers.Regex`` compiles, in its Ruby
syntax), when it uses only constructs both engines are checked to match alike.

A pattern is parsed into constructs (a small parser of the subset below), each checked against
:data:`CONSTRUCTS`, and written back in the other engine's spelling. The first construct not on
the list is refused with a :class:`NotPortable` (a ValueError) naming it and why. The list, and
each spelling, are checked by tests/test_oniguruma.py: patterns generated from the constructs
split generated text (letters of several scripts, digits, whitespace, ``\\r\\n``, punctuation,
emoji, characters with special case folding) into the same pieces in both engines, and every
Unicode property named here holds the same code points in both, all of them.

Where the two spell one thing differently, the translation writes each engine's own:

- ``^`` and ``$`` are the text's start and end for fancy-regex, a *line*'s for Oniguruma (Ruby):
  written ``\\A`` and ``\\z`` for Oniguruma, and Oniguruma's as ``(?m:^)``/``(?m:$)``;
- a possessive interval ``X{m,n}+`` is read by Ruby as ``(?:X{m,n})+``, and ``X{n}?`` as
  ``(?:X{n})?``: written ``(?>X{m,n})`` (an atomic group, the same in both) and ``X{n}``;
- ``\\pL`` (no braces) is fancy-regex's only: written ``\\p{L}``; a property's name is written as
  listed (both engines read names loosely: case, spaces, ``_`` and ``-`` ignored);
- capturing and named groups are written ``(?:...)``: only the whole match splits text.

Refused, by name: ``\\w``, ``\\W``, ``\\b``, ``\\B`` (Oniguruma's word characters differ: it puts
the superscript digits ``²³¹`` and the fractions ``¼½¾`` in ``\\w``, and ``[\\w]`` is yet another
set), properties not in :data:`PROPERTIES`, POSIX classes, nested classes and class set
operations, back-references, flags other than ``i``, ``(?i)`` after a group's start (Oniguruma
applies it to the rest of the alternation, fancy-regex to the rest of the group), and within a
case-insensitive group: properties (fancy-regex case-folds ``\\p{Lu}`` to match ``a``, Oniguruma
does not) and characters that fold to several (Oniguruma matches ``(?i:ss)`` on ``ß`` and
``(?i:ß)`` on ``ss``, fancy-regex folds one character to one).
"""

from __future__ import annotations

import functools
from typing import Iterator, Optional, Union

from . import _core

# ------------------------------------------------------------------------------ the list

CONSTRUCTS: dict[str, str] = {
    "literal character": "any character but the metacharacters, e.g. a ' é 日 or a space",
    "escaped character": r"\. \+ \* \? \( \) \[ \] \{ \} \| \^ \$ \\ \- \/ and other ASCII punctuation; \n \r \t \f \v \xHH \x{H...}",
    "shorthand class": r"\s \S \d \D \h \H (whitespace, decimal digits, hexadecimal digits)",
    "unicode property": r"\p{NAME} \P{NAME} with NAME in PROPERTIES (\pL for \p{L} in bpeforge's spelling)",
    "dot": ". (any character but \\n)",
    "class": "[...] and [^...] of characters, escaped characters, ranges a-z, shorthand classes and properties",
    "group": "(?:...), (...) and (?<name>...) (bpeforge's spelling also (?P<name>...))",
    "atomic group": "(?>...)",
    "alternation": "|",
    "quantifier": "? * + {n} {n,} {n,m}, greedy, lazy (a ? after) or possessive (a + after)",
    "lookahead": "(?=...) and (?!...)",
    "lookbehind": "(?<=...) and (?<!...)",
    "anchor": r"^ $ \A \z (in bpeforge's spelling ^ is \A and $ is \z; in HuggingFace's, the line's)",
    "case-insensitive group": "(?i:...), or (?i) at the start of the pattern or of a group, without properties "
    "and characters that fold to several (ß, ﬁ, İ) inside, and no two letters next to each other that another "
    "character folds to (ss, st, ff, fi, fl, ...)",
}
"""The constructs a custom split pattern may use to be exported to HuggingFace (name: what it
covers), each checked to split alike in both engines."""

GENERAL_CATEGORIES = (
    "L", "Lu", "Ll", "Lt", "Lm", "Lo", "LC", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No",
    "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp",
    "C", "Cc", "Cf", "Co", "Cn",
    "Letter", "Uppercase_Letter", "Lowercase_Letter", "Titlecase_Letter", "Cased_Letter", "Modifier_Letter",
    "Other_Letter", "Mark", "Nonspacing_Mark", "Spacing_Mark", "Enclosing_Mark", "Number", "Decimal_Number",
    "Letter_Number", "Other_Number", "Punctuation", "Connector_Punctuation", "Dash_Punctuation",
    "Open_Punctuation", "Close_Punctuation", "Initial_Punctuation", "Final_Punctuation", "Other_Punctuation",
    "Symbol", "Math_Symbol", "Currency_Symbol", "Modifier_Symbol", "Other_Symbol", "Separator",
    "Space_Separator", "Line_Separator", "Paragraph_Separator", "Other", "Control", "Format", "Private_Use",
    "Unassigned",
)
SCRIPTS = (
    "Latin", "Greek", "Cyrillic", "Armenian", "Hebrew", "Arabic", "Syriac", "Thaana", "Devanagari", "Bengali",
    "Gurmukhi", "Gujarati", "Tamil", "Telugu", "Kannada", "Malayalam", "Sinhala", "Thai", "Lao", "Tibetan",
    "Myanmar", "Georgian", "Hangul", "Ethiopic", "Cherokee", "Khmer", "Mongolian", "Hiragana", "Katakana",
    "Bopomofo", "Han", "Yi", "Common", "Inherited",
)
BINARY_PROPERTIES = (
    "Alphabetic", "Uppercase", "Lowercase", "Cased", "White_Space", "Emoji", "Emoji_Presentation",
    "Extended_Pictographic", "Ideographic", "Math", "Dash", "Hex_Digit",
)
PROPERTIES: tuple[str, ...] = GENERAL_CATEGORIES + SCRIPTS + BINARY_PROPERTIES
"""The Unicode properties ``\\p{...}`` may name: each holds the same code points in both engines
(tests/test_oniguruma.py checks every code point; a release of either with newer Unicode tables
would show there)."""


def loose(name: str) -> str:
    """A property name as both engines compare them: case, spaces, ``_`` and ``-`` ignored."""
    return "".join(c for c in name.lower() if c not in " _-")


PROPERTY_BY_LOOSE_NAME = {loose(name): name for name in PROPERTIES}


class NotPortable(ValueError):
    """A split pattern using a construct (``construct``) that HuggingFace's regex engine is not
    checked to match as bpeforge's does."""

    def __init__(self, construct: str, reason: str, pattern: str, position: int) -> None:
        self.construct = construct
        super().__init__(
            f"the split pattern {pattern!r} uses {construct} (at position {position}), which HuggingFace's regex "
            f"engine (Oniguruma) is not checked to match as bpeforge's does: {reason}"
        )


# ------------------------------------------------------------------------------ the constructs parsed

class Char:
    """One character, matched as itself (``escaped``: written as an escape)."""

    def __init__(self, char: str, escaped: bool = False, at: int = 0) -> None:
        self.char = char
        self.escaped = escaped
        self.at = at  # its place in the pattern


class Shorthand:
    """``\\s``, ``\\S``, ``\\d``, ``\\D``, ``\\h`` or ``\\H`` (``letter``)."""

    def __init__(self, letter: str) -> None:
        self.letter = letter


class Property:
    """``\\p{name}`` (``\\P{name}`` when ``negated``)."""

    def __init__(self, name: str, negated: bool) -> None:
        self.name = name
        self.negated = negated


class Range:
    """``first-last`` in a class."""

    def __init__(self, first: str, last: str) -> None:
        self.first = first
        self.last = last


ClassItem = Union[Char, Shorthand, Property, Range]


class CharClass:
    """``[...]`` (``[^...]`` when ``negated``)."""

    def __init__(self, items: list[ClassItem], negated: bool) -> None:
        self.items = items
        self.negated = negated


class Dot:
    """``.``: any character but ``\\n``."""


class Anchor:
    """Zero-width: ``text_start``, ``text_end``, ``line_start`` or ``line_end``."""

    def __init__(self, kind: str) -> None:
        self.kind = kind


class Group:
    """A group: ``kind`` is ``group`` (non-capturing, capturing and named alike), ``atomic``,
    ``ahead``, ``not_ahead``, ``behind`` or ``not_behind``; ``ignore_case`` for ``(?i:...)``."""

    def __init__(self, kind: str, body: "Node", ignore_case: bool = False) -> None:
        self.kind = kind
        self.body = body
        self.ignore_case = ignore_case


class Repeat:
    """``body`` repeated from ``least`` to ``most`` (None: no bound) times; ``mode`` is
    ``greedy``, ``lazy`` or ``possessive``."""

    def __init__(self, body: "Node", least: int, most: Optional[int], mode: str) -> None:
        self.body = body
        self.least = least
        self.most = most
        self.mode = mode


class Concat:
    def __init__(self, items: list["Node"]) -> None:
        self.items = items


class Alternation:
    def __init__(self, alternatives: list[Concat]) -> None:
        self.alternatives = alternatives


Node = Union[Char, Shorthand, Property, Range, CharClass, Dot, Anchor, Group, Repeat, Concat, Alternation]

LOOKAROUNDS = {"ahead", "not_ahead", "behind", "not_behind"}

# ASCII punctuation both engines read escaped as itself (``\<``, ``\>``, ``\'`` and ``\``` mean
# more in some of Oniguruma's syntaxes: left out).
ESCAPABLE = set("!\"#$%&()*+,-./:;=?@[\\]^_{|}~")
CONTROL_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v"}

WORD_REASON = (
    "Oniguruma's word characters are not fancy-regex's (it puts the superscript digits ²³¹ and the fractions ¼½¾ "
    "in \\w, and its [\\w] is yet another set)"
)
REFUSED_ESCAPES = {
    "w": ("\\w", WORD_REASON), "W": ("\\W", WORD_REASON),
    "b": ("the word boundary \\b", WORD_REASON), "B": ("the non-boundary \\B", WORD_REASON),
    "Z": ("\\Z", "the end of the text or before a last newline: not checked (use \\z, or $ in bpeforge's spelling)"),
    "G": ("\\G", "where the last match ended: not checked"),
    "K": ("\\K", "Oniguruma's keep: fancy-regex has none"),
    "R": ("\\R", "Oniguruma's line break: fancy-regex has none (write (?:\\r\\n|[\\n\\v\\f\\r\\x{85}\\x{2028}\\x{2029}]))"),
    "X": ("\\X", "Oniguruma's grapheme cluster: fancy-regex has none"),
    "N": ("\\N", "not checked (write [^\\n])"),
    "O": ("\\O", "not checked"),
    "y": ("\\y", "a grapheme boundary: fancy-regex has none"),
    "Y": ("\\Y", "a grapheme boundary: fancy-regex has none"),
    "k": ("the back-reference \\k<...>", "back-references are not checked"),
    "g": ("the subroutine call \\g<...>", "fancy-regex has none"),
    "Q": ("the quoting \\Q...\\E", "not checked (escape each character)"),
    "E": ("\\E", "not checked"),
    "u": ("the escape \\u", "spelled otherwise in each engine: write \\x{...}"),
    "U": ("the escape \\U", "spelled otherwise in each engine: write \\x{...}"),
    "a": ("the escape \\a", "not checked: write \\x{7}"),
    "e": ("the escape \\e", "not checked: write \\x{1B}"),
    "c": ("the control escape \\c", "not checked: write \\x{...}"),
    "C": ("the control escape \\C", "not checked: write \\x{...}"),
    "M": ("the meta escape \\M", "not checked: write \\x{...}"),
    "o": ("the octal escape \\o", "not checked: write \\x{...}"),
}
FLAG_REASONS = {
    "s": "fancy-regex's dot-matches-newline is spelled (?m) in Oniguruma's Ruby syntax, whose (?s) is no flag: not checked (write [\\s\\S])",
    "m": "fancy-regex's multi-line anchors are Oniguruma's default, and Oniguruma's (?m) is fancy-regex's (?s): not checked",
    "x": "extended syntax (spaces and comments ignored) is not checked",
    "u": "not checked",
    "U": "swapped greediness is fancy-regex's only",
    "R": "CRLF mode is fancy-regex's only",
    "-": "turning flags off is not checked",
}


# ------------------------------------------------------------------------------ the parser

class Parser:
    """Reads ``pattern`` in one engine's syntax (``dialect`` ``fancy``, bpeforge's, or
    ``oniguruma``, HuggingFace's) into constructs, refusing what is not on the list."""

    def __init__(self, pattern: str, dialect: str) -> None:
        self.pattern = pattern
        self.dialect = dialect
        self.at = 0

    def refuse(self, construct: str, reason: str, position: Optional[int] = None) -> NotPortable:
        return NotPortable(construct, reason, self.pattern, self.at if position is None else position)

    def peek(self, n: int = 1) -> str:
        return self.pattern[self.at : self.at + n]

    def take(self) -> str:
        if self.at >= len(self.pattern):
            raise self.refuse("an unfinished construct", "the pattern ends inside it")
        c = self.pattern[self.at]
        self.at += 1
        return c

    def parse(self) -> Node:
        node = self.alternation(ignore_case=False, group_start=True)
        if self.at < len(self.pattern):
            raise self.refuse("an unmatched )", "a ) that closes no group")
        return node

    def alternation(self, ignore_case: bool, group_start: bool) -> Node:
        if group_start and self.peek(4) == "(?i)":
            # (?i) at a group's start: the whole group, across its alternatives, in both engines.
            self.at += 4
            return Group("group", self.alternation(ignore_case=True, group_start=False), ignore_case=True)
        alternatives = [self.concat(ignore_case)]
        while self.peek() == "|":
            self.at += 1
            alternatives.append(self.concat(ignore_case))
        return alternatives[0] if len(alternatives) == 1 else Alternation(alternatives)

    def concat(self, ignore_case: bool) -> Concat:
        items: list[Node] = []
        while self.at < len(self.pattern) and self.peek() not in "|)":
            start = self.at
            atom = self.atom(ignore_case)
            items.append(self.quantified(atom, start))
        return Concat(items)

    def atom(self, ignore_case: bool) -> Node:
        start = self.at
        c = self.take()
        if c == "(":
            return self.group(start, ignore_case)
        if c == "[":
            return self.char_class(start, ignore_case)
        if c == "\\":
            return self.escape(start, in_class=False, ignore_case=ignore_case)
        if c == ".":
            return Dot()
        if c == "^":
            return Anchor("text_start" if self.dialect == "fancy" else "line_start")
        if c == "$":
            return Anchor("text_end" if self.dialect == "fancy" else "line_end")
        if c in "*+?":
            raise self.refuse(f"the quantifier {c} with nothing before it", "nothing to repeat", start)
        if c in "{}]":
            raise self.refuse(f"an unescaped {c}", f"each engine reads a lone {c} its own way: write \\{c}", start)
        return self.literal(c, start, ignore_case)

    def literal(self, c: str, start: int, ignore_case: bool) -> Char:
        if ignore_case and len(c.casefold()) > 1:
            raise self.refuse(
                f"the character {c!r} in a case-insensitive group",
                f"it folds to {c.casefold()!r}, which Oniguruma matches too and fancy-regex does not",
                start,
            )
        return Char(c, at=start)

    def group(self, start: int, ignore_case: bool) -> Node:
        kinds = {"?:": "group", "?>": "atomic", "?=": "ahead", "?!": "not_ahead", "?<=": "behind", "?<!": "not_behind"}
        for opening in ("?<=", "?<!", "?:", "?>", "?=", "?!"):
            if self.pattern.startswith(opening, self.at):
                self.at += len(opening)
                return self.group_body(kinds[opening], start, ignore_case)
        if self.peek() != "?":
            return self.group_body("group", start, ignore_case)  # capturing: only the whole match splits
        rest = self.pattern[self.at + 1 :]
        if rest.startswith("<") or (rest.startswith("P<") and self.dialect == "fancy"):
            end = self.pattern.find(">", self.at)
            name = self.pattern[self.at + (2 if rest.startswith("<") else 3) : end] if end > 0 else ""
            if not (name and (name[0].isalpha() or name[0] == "_") and all(ch.isalnum() or ch == "_" for ch in name) and name.isascii()):
                raise self.refuse("a group name", "a name of ASCII letters, digits and _ (not first a digit) is checked", start)
            self.at = end + 1
            return self.group_body("group", start, ignore_case)
        if rest.startswith("i:"):
            self.at += 3
            return self.group_body("group", start, ignore_case=True, flagged=True)
        if rest.startswith("i)"):
            raise self.refuse(
                "the inline flag (?i) after the start of a group",
                "Oniguruma applies it to the rest of the alternation, fancy-regex to the rest of the group: write (?i:...)",
                start,
            )
        if rest[:1] == "#":
            raise self.refuse("a comment (?#...)", "not checked", start)
        if rest[:1] == "(":
            raise self.refuse("a conditional (?(...)...)", "fancy-regex's and Oniguruma's differ", start)
        if rest[:1] == "~":
            raise self.refuse("the absent operator (?~...)", "Oniguruma's only", start)
        if rest[:2] in ("P=", "P>") or rest[:1] in ("'", "P"):
            raise self.refuse(f"the group (?{rest[:2]}", "back-references, calls and this naming are not checked", start)
        flag = next((f for f in rest if f not in "i"), "")
        if flag in FLAG_REASONS:
            raise self.refuse(f"the flag {flag if flag != '-' else '(?-...)'}", FLAG_REASONS[flag], start)
        raise self.refuse(f"the group (?{rest[:1]}", "not a construct on the list", start)

    def group_body(self, kind: str, start: int, ignore_case: bool, flagged: bool = False) -> Group:
        body = self.alternation(ignore_case, group_start=True)
        if self.peek() != ")":
            raise self.refuse("an unclosed group", "a ( without its )", start)
        self.at += 1
        if kind in ("behind", "not_behind"):
            inner = next((n for n in nodes(body) if isinstance(n, Group) and n.kind in LOOKAROUNDS or isinstance(n, Anchor) and n.kind.endswith("end")), None)
            if inner is not None:
                raise self.refuse(
                    "a lookaround or an end anchor inside a lookbehind", "Oniguruma refuses most (invalid pattern in look-behind)", start
                )
        return Group(kind, body, ignore_case=flagged)

    def quantified(self, atom: Node, start: int) -> Node:
        node = atom
        count = 0
        while True:
            bounds = self.quantifier()
            if bounds is None:
                return node
            count += 1
            least, most, mode, spelled = bounds
            if count > 1:
                raise self.refuse(f"the quantifier {spelled} after a quantifier", "each engine reads a repeated repeat its own way: put the first in (?:...)")
            if bare_assertion(node):
                raise self.refuse(f"the quantifier {spelled} on a zero-width assertion (or an alternative of one)", "not checked", start)
            if self.dialect == "oniguruma" and least == most and mode == "lazy" and spelled.startswith("{"):
                # Ruby: X{n}? is (?:X{n})?, an optional X{n}.
                node = Repeat(Repeat(node, least, most, "greedy"), 0, 1, "greedy")
            elif self.dialect == "oniguruma" and mode == "possessive" and spelled.startswith("{"):
                # Ruby: X{n,m}+ is (?:X{n,m})+, any number of X{n,m}.
                node = Repeat(Repeat(node, least, most, "greedy"), 1, None, "greedy")
            else:
                node = Repeat(node, least, most, mode)

    def quantifier(self) -> Optional[tuple[int, Optional[int], str, str]]:
        start = self.at
        c = self.peek()
        if c == "?":
            least, most = 0, 1
        elif c == "*":
            least, most = 0, None
        elif c == "+":
            least, most = 1, None
        elif c == "{":
            end = self.pattern.find("}", self.at)
            inside = self.pattern[self.at + 1 : end] if end > 0 else ""
            parts = inside.split(",")
            if not (1 <= len(parts) <= 2 and all(p.isascii() and p.isdigit() for p in parts if p) and parts[0]):
                raise self.refuse(
                    f"the interval {{{inside}}}" if end > 0 else "an unescaped {",
                    "an interval {n}, {n,} or {n,m} is checked ({,n} is Oniguruma's only); a literal { is written \\{",
                )
            least = int(parts[0])
            most = least if len(parts) == 1 else (int(parts[1]) if parts[1] else None)
            if most is not None and most < least:
                raise self.refuse(f"the interval {{{inside}}}", "its bounds are reversed")
            self.at = end
        else:
            return None
        self.at += 1
        mode = "greedy"
        if self.peek() == "?":
            mode = "lazy"
            self.at += 1
        elif self.peek() == "+":
            mode = "possessive"
            self.at += 1
        return least, most, mode, self.pattern[start : self.at]

    def escape(self, start: int, in_class: bool, ignore_case: bool) -> Union[Char, Shorthand, Property, Anchor]:
        c = self.take()
        if c in CONTROL_ESCAPES:
            return Char(CONTROL_ESCAPES[c], escaped=True, at=start)
        if c in "sSdDhH":
            return Shorthand(c)
        if c in "pP":
            return self.property(c == "P", start, ignore_case)
        if c == "x":
            return self.hex_escape(start, ignore_case)
        if not in_class and c in "Az":
            return Anchor("text_start" if c == "A" else "text_end")
        if c in ESCAPABLE:
            return Char(c, escaped=True, at=start)
        if c.isdigit():
            raise self.refuse(f"the escape \\{c}", "back-references and octal escapes are not checked", start)
        if c in REFUSED_ESCAPES:
            construct, reason = REFUSED_ESCAPES[c]
            raise self.refuse(construct, reason, start)
        raise self.refuse(f"the escape \\{c}", "not an escape on the list", start)

    def hex_escape(self, start: int, ignore_case: bool) -> Char:
        if self.peek() == "{":
            end = self.pattern.find("}", self.at)
            digits = self.pattern[self.at + 1 : end] if end > 0 else ""
            self.at = end + 1 if end > 0 else self.at
        else:
            digits = self.pattern[self.at : self.at + 2]
            self.at += 2
            if len(digits) != 2:
                digits = ""
        try:
            code = int(digits, 16) if digits and all(d in "0123456789abcdefABCDEF" for d in digits) else -1
            char = chr(code)
        except (ValueError, OverflowError):
            code = -1
        if code < 0 or 0xD800 <= code < 0xE000:
            raise self.refuse(f"the escape \\x{digits}", "\\xHH or \\x{H...} naming a Unicode scalar value is checked", start)
        found = self.literal(char, start, ignore_case)
        found.escaped = True
        return found

    def property(self, negated: bool, start: int, ignore_case: bool) -> Property:
        if self.peek() == "{":
            end = self.pattern.find("}", self.at)
            if end < 0:
                raise self.refuse("an unclosed \\p{", "a property's name ends with }", start)
            name = self.pattern[self.at + 1 : end]
            self.at = end + 1
        elif self.dialect == "fancy" and self.peek() and self.peek().isalpha():
            name = self.take()
        else:
            raise self.refuse("a property without braces", "Oniguruma reads \\p{NAME} only", start)
        spelled = self.pattern[start : self.at]
        if name.startswith("^"):
            raise self.refuse(f"the negated property {spelled}", "spelled otherwise in each engine: write \\P{...}", start)
        if "=" in name or ":" in name:
            raise self.refuse(f"the property {spelled}", "a property given as name=value is not checked", start)
        canonical = PROPERTY_BY_LOOSE_NAME.get(loose(name))
        if canonical is None:
            raise self.refuse(f"the property {spelled}", "not among the properties checked to hold the same characters in both engines (bpeforge._oniguruma.PROPERTIES)", start)
        if ignore_case:
            raise self.refuse(
                f"the property {spelled} in a case-insensitive group",
                "fancy-regex case-folds a property (\\p{Lu} matches a), Oniguruma does not",
                start,
            )
        return Property(canonical, negated)

    def char_class(self, start: int, ignore_case: bool) -> CharClass:
        negated = self.peek() == "^"
        if negated:
            self.at += 1
        if self.peek() == "]":
            raise self.refuse("an unescaped ] at the start of a class", "each engine reads it its own way: write \\]")
        items: list[ClassItem] = []
        while self.peek() != "]":
            if self.at >= len(self.pattern):
                raise self.refuse("an unclosed class", "a [ without its ]", start)
            for operator_ in ("&&", "--", "~~"):
                if self.peek(2) == operator_:
                    raise self.refuse(f"the class operation {operator_}", "class set operations are spelled otherwise in each engine: not checked")
            if self.peek() == "[":
                construct = "a POSIX class [:...:]" if self.peek(2) == "[:" else "a nested class"
                raise self.refuse(construct, "not checked (fancy-regex's POSIX classes are ASCII, Oniguruma's Unicode)")
            item = self.class_item(ignore_case)
            if self.peek() == "-" and self.peek(2) != "-]" and self.pattern[self.at + 1 : self.at + 2] not in ("]", ""):
                dash = self.at
                self.at += 1
                last = self.class_item(ignore_case)
                if not (isinstance(item, Char) and isinstance(last, Char)):
                    raise self.refuse("a range with a class at an end", "a range is between two characters", dash)
                if ord(last.char) < ord(item.char):
                    raise self.refuse("a reversed range", "its first character is after its last", dash)
                if ignore_case:
                    folding = next((chr(cp) for cp in multi_fold_characters() if ord(item.char) <= cp <= ord(last.char)), None)
                    if folding is not None:
                        raise self.refuse(
                            f"the range {item.char}-{last.char} in a case-insensitive group",
                            f"it holds {folding!r}, which folds to {folding.casefold()!r}: Oniguruma may match that too",
                            dash,
                        )
                item = Range(item.char, last.char)
            items.append(item)
        self.at += 1
        return CharClass(items, negated)

    def class_item(self, ignore_case: bool) -> ClassItem:
        start = self.at
        c = self.take()
        if c == "\\":
            item = self.escape(start, in_class=True, ignore_case=ignore_case)
            assert not isinstance(item, Anchor)
            return item
        return self.literal(c, start, ignore_case)


def zero_width(node: Node) -> bool:
    """Whether ``node`` only asserts (anchors and lookarounds) and never takes a character:
    Oniguruma refuses to repeat it (target of repeat operator is invalid)."""
    if isinstance(node, Anchor):
        return True
    if isinstance(node, Group):
        return node.kind in LOOKAROUNDS or zero_width(node.body)
    if isinstance(node, Repeat):
        return zero_width(node.body)
    if isinstance(node, Alternation):
        return all(zero_width(a) for a in node.alternatives)
    if isinstance(node, Concat):
        return all(zero_width(item) for item in node.items)
    return False


def bare_assertion(node: Node) -> bool:
    """Whether ``node`` is, or has as an alternative, a construct that only asserts: Oniguruma
    refuses to repeat it (target of repeat operator is invalid)."""
    if zero_width(node):
        return True
    if isinstance(node, Group) and node.kind in ("group", "atomic"):
        return bare_assertion(node.body)
    if isinstance(node, Alternation):
        return any(bare_assertion(a) for a in node.alternatives)
    if isinstance(node, Concat):
        return len(node.items) == 1 and bare_assertion(node.items[0])
    return False


def nodes(node: Node) -> Iterator[Node]:
    """``node`` and every construct inside it."""
    yield node
    if isinstance(node, (Group, Repeat)):
        yield from nodes(node.body)
    elif isinstance(node, Alternation):
        for alternative in node.alternatives:
            yield from nodes(alternative)
    elif isinstance(node, Concat):
        for item in node.items:
            yield from nodes(item)


@functools.lru_cache(maxsize=1)
def multi_fold_characters() -> tuple[int, ...]:
    """The code points whose full case folding is several characters (ß, ﬁ, İ, ...)."""
    return tuple(cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000 and len(chr(cp).casefold()) > 1)


@functools.lru_cache(maxsize=1)
def multi_fold_pairs() -> frozenset[str]:
    """Each two characters next to each other in what a character folds to when that is several
    (``ss``, ``st``, ``fi``, ...): Oniguruma matches a case-insensitive literal holding them on
    that one character too."""
    pairs: set[str] = set()
    for cp in multi_fold_characters():
        folded = chr(cp).casefold()
        pairs.update(folded[i : i + 2] for i in range(len(folded) - 1))
    return frozenset(pairs)


# ------------------------------------------------------------------------------ checks on the tree

def check_case_folding(node: Node, parser: Parser, ignore_case: bool = False) -> None:
    """Raises :class:`NotPortable` where a case-insensitive group puts two characters next to
    each other that another character folds to (``(?i:ss)``: Oniguruma matches ``ß`` too)."""
    if isinstance(node, Group):
        check_case_folding(node.body, parser, ignore_case or node.ignore_case)
    elif isinstance(node, Repeat):
        check_case_folding(node.body, parser, ignore_case)
    elif isinstance(node, Alternation):
        for alternative in node.alternatives:
            check_case_folding(alternative, parser, ignore_case)
    elif isinstance(node, Concat):
        for item in node.items:
            check_case_folding(item, parser, ignore_case)
        if ignore_case:
            before: list[Char] = []
            for item in node.items:
                first, last, empty = ends(item)
                for b in first:
                    for a in before:
                        if (a.char.casefold()[-1:] + b.char.casefold()[:1]) in multi_fold_pairs():
                            raise parser.refuse(
                                f"the letters {a.char + b.char!r} side by side in a case-insensitive group",
                                f"a character folds to {(a.char + b.char).casefold()!r}, which Oniguruma matches too and fancy-regex does not",
                                b.at,
                            )
                before = last + before if empty else last


def ends(node: Node) -> tuple[list[Char], list[Char], bool]:
    """The literal characters that can begin and end a match of ``node`` (where Oniguruma could
    join them with a neighbour into one string), and whether it can match nothing."""
    if isinstance(node, Char):
        return [node], [node], False
    if isinstance(node, (Shorthand, Property, Range, CharClass, Dot)):
        return [], [], False
    if isinstance(node, Anchor):
        return [], [], True
    if isinstance(node, Group):
        if node.kind in LOOKAROUNDS:
            return [], [], True
        return ends(node.body)
    if isinstance(node, Repeat):
        begins, ends_, nothing = ends(node.body)
        return begins, ends_, nothing or node.least == 0
    if isinstance(node, Alternation):
        results = [ends(a) for a in node.alternatives]
        return [c for r in results for c in r[0]], [c for r in results for c in r[1]], any(r[2] for r in results)
    first: list[Char] = []
    last: list[Char] = []
    empty = True
    for item in node.items:
        f, l_, e = ends(item)
        if empty:
            first += f
        last = l_ + last if e else l_
        empty = empty and e
    return first, last, empty


def parse(pattern: str, dialect: str) -> Node:
    """The constructs of ``pattern`` in ``dialect``'s syntax (``fancy`` or ``oniguruma``), or
    :class:`NotPortable` naming the first one not on the list."""
    if not isinstance(pattern, str):
        raise TypeError(f"a split pattern must be a str, got {type(pattern).__name__}")
    parser = Parser(pattern, dialect)
    tree = parser.parse()
    check_case_folding(tree, parser)
    return tree


# ------------------------------------------------------------------------------ writing

OUTSIDE_CLASS = set("\\.+*?()[]{}|^$#")
INSIDE_CLASS = set("\\[]^-&~")
PRINTED_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}


def spelled_char(c: str, special: set[str]) -> str:
    if c in PRINTED_CONTROLS:
        return PRINTED_CONTROLS[c]
    if c in special:
        return "\\" + c
    if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c.isspace() and c != " ":
        return f"\\x{{{ord(c):X}}}"
    return c


def spelled(node: Node, dialect: str) -> str:
    """``node`` written in ``dialect``'s syntax (``fancy`` or ``oniguruma``)."""
    if isinstance(node, Char):
        return spelled_char(node.char, OUTSIDE_CLASS)
    if isinstance(node, Shorthand):
        return "\\" + node.letter
    if isinstance(node, Property):
        return f"\\{'P' if node.negated else 'p'}{{{node.name}}}"
    if isinstance(node, Range):
        return spelled_char(node.first, INSIDE_CLASS) + "-" + spelled_char(node.last, INSIDE_CLASS)
    if isinstance(node, CharClass):
        inside = "".join(spelled_char(i.char, INSIDE_CLASS) if isinstance(i, Char) else spelled(i, dialect) for i in node.items)
        return f"[{'^' if node.negated else ''}{inside}]"
    if isinstance(node, Dot):
        return "."
    if isinstance(node, Anchor):
        if dialect == "oniguruma":
            return {"text_start": "\\A", "text_end": "\\z", "line_start": "^", "line_end": "$"}[node.kind]
        return {"text_start": "^", "text_end": "$", "line_start": "(?m:^)", "line_end": "(?m:$)"}[node.kind]
    if isinstance(node, Group):
        opening = {"group": "(?:", "atomic": "(?>", "ahead": "(?=", "not_ahead": "(?!", "behind": "(?<=", "not_behind": "(?<!"}[node.kind]
        if node.ignore_case:
            opening = "(?i:"  # (only plain groups are flagged)
        return opening + spelled(node.body, dialect) + ")"
    if isinstance(node, Repeat):
        body = spelled(node.body, dialect)
        if not is_atom(node.body):
            body = f"(?:{body})"
        if node.least == node.most and node.least == 1:
            quantifier = ""
        elif (node.least, node.most) == (0, 1):
            quantifier = "?"
        elif (node.least, node.most) == (0, None):
            quantifier = "*"
        elif (node.least, node.most) == (1, None):
            quantifier = "+"
        elif node.least == node.most:
            quantifier = f"{{{node.least}}}"
        else:
            quantifier = f"{{{node.least},{'' if node.most is None else node.most}}}"
        if quantifier.startswith("{") or quantifier == "":
            if node.mode == "possessive":
                # Ruby reads X{n,m}+ as (?:X{n,m})+: an atomic group means the same in both.
                return f"(?>{body}{quantifier})" if dialect == "oniguruma" or quantifier == "" else f"{body}{quantifier}+"
            if node.mode == "lazy" and node.least != node.most:
                return f"{body}{quantifier}?"
            return body + quantifier  # X{n}? and X{n} match alike; Ruby reads X{n}? otherwise
        return body + quantifier + {"greedy": "", "lazy": "?", "possessive": "+"}[node.mode]
    if isinstance(node, Concat):
        return "".join(spelled(item, dialect) for item in node.items)
    assert isinstance(node, Alternation)
    return "|".join(spelled(a, dialect) for a in node.alternatives)


def is_atom(node: Node) -> bool:
    """Whether a quantifier written after ``node``'s spelling applies to all of it."""
    if isinstance(node, Concat):
        return len(node.items) == 1 and is_atom(node.items[0])
    if isinstance(node, Repeat):
        return False
    if isinstance(node, Anchor):
        return False
    return not isinstance(node, Alternation)


def to_oniguruma(pattern: str) -> str:
    """``pattern`` (bpeforge's, fancy-regex's syntax) in Oniguruma's spelling, to be given to
    HuggingFace's ``Split(Regex(...))``; :class:`NotPortable` naming the first construct not on
    :data:`CONSTRUCTS`.

    >>> to_oniguruma(r"^\\pL+|\\d{1,3}+|\\s+$")
    '\\\\A\\\\p{L}+|(?>\\\\d{1,3})|\\\\s+\\\\z'
    >>> to_oniguruma(r"\\w+")
    Traceback (most recent call last):
    bpeforge._oniguruma.NotPortable: the split pattern '\\\\w+' uses \\w (at position 0), which HuggingFace's regex engine (Oniguruma) is not checked to match as bpeforge's does: Oniguruma's word characters are not fancy-regex's (it puts the superscript digits ²³¹ and the fractions ¼½¾ in \\w, and its [\\w] is yet another set)
    """
    return spelled(parse(pattern, "fancy"), "oniguruma")


def from_oniguruma(regex: str) -> str:
    """``regex`` (Oniguruma's Ruby syntax, as HuggingFace's ``Split`` holds it) in bpeforge's
    spelling; :class:`NotPortable` naming the first construct not on :data:`CONSTRUCTS`.

    >>> from_oniguruma(r"^\\p{L}+|\\d{2}?|\\s+$")
    '(?m:^)\\\\p{L}+|(?:\\\\d{2})?|\\\\s+(?m:$)'
    """
    return spelled(parse(regex, "oniguruma"), "fancy")


# ------------------------------------------------------------------------------ text left unmatched

def characters_always_matched(node: Node) -> Optional[str]:
    """A pattern (bpeforge's spelling) for one character that ``node`` is sure to match when the
    text at a position starts with it, whatever follows and precedes: an alternative whose first
    construct that must match is one character, repeated or not, with only optional constructs
    before it (greedy or lazy, which give way) and after it. None if there is none such."""
    return first_character(node)


def first_character(node: Node, ignore_case: bool = False) -> Optional[str]:
    """A pattern for the characters at which ``node`` is sure to match (see
    :func:`characters_always_matched`), or None."""
    if isinstance(node, SINGLE_CHARACTER):
        text = spelled(node, "fancy")
        return f"(?i:{text})" if ignore_case else text
    if isinstance(node, Group) and node.kind in ("group", "atomic"):
        # An atomic group commits to the first alternative that matches: one does.
        return first_character(node.body, ignore_case or node.ignore_case)
    if isinstance(node, Repeat):
        return first_character(node.body, ignore_case) if node.least == 1 else None
    if isinstance(node, Alternation):
        parts = [f for f in (first_character(a, ignore_case) for a in node.alternatives) if f is not None]
        return "|".join(f"(?:{f})" for f in parts) or None
    if isinstance(node, Concat):
        not_before = ""
        for i, item in enumerate(node.items):
            if isinstance(item, Repeat) and item.least == 0:
                if item.mode != "possessive":
                    continue  # gives way: matches nothing if it must
                if isinstance(item.body, SINGLE_CHARACTER):
                    # Possessive: matches nothing where its one character does not.
                    not_before += f"(?!{first_character(item.body, ignore_case)})"
                    continue
                return None
            if all(isinstance(rest, Repeat) and rest.least == 0 for rest in node.items[i + 1 :]):
                found = first_character(item, ignore_case)
                return None if found is None else f"{not_before}(?:{found})"
            return None
    return None


SINGLE_CHARACTER = (Char, Shorthand, Property, CharClass, Dot)


@functools.lru_cache(maxsize=1)
def every_character() -> str:
    """Every Unicode scalar value, in order."""
    return "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000)


@functools.lru_cache(maxsize=64)
def matches_every_character(pattern: str) -> bool:
    """Whether ``pattern`` (bpeforge's spelling) is sure to leave no text unmatched: at every
    position, some alternative matches (see :func:`characters_always_matched`), for every
    Unicode character. tiktoken and bpeforge drop text a pattern does not match, HuggingFace's
    ``Split`` with behavior ``isolated`` keeps it as a piece: where this holds, the two agree."""
    try:
        sure = characters_always_matched(parse(pattern, "fancy"))
    except NotPortable:
        return False
    if sure is None:
        return False
    text = every_character()
    unmatched = f"(?!{sure})[\\s\\S]"
    if _core.split(text[:0x3000], unmatched):
        return False  # (most patterns that leave some character are seen to in the first scripts)
    return not any(_core.split(text[i : i + (1 << 16)], unmatched) for i in range(0, len(text), 1 << 16))


def with_unmatched_text(pattern: str) -> str:
    """``pattern`` (bpeforge's spelling) with an alternative that matches the text it leaves
    unmatched (as one piece, up to where it matches again): what HuggingFace's ``Split`` with
    behavior ``isolated`` cuts, as a pattern that tiktoken's way (dropping what is not matched)
    cuts alike."""
    return f"(?:{pattern})|(?:(?!(?:{pattern}))[\\s\\S])+"


def constructs_used(pattern: str, dialect: str = "fancy") -> Iterator[str]:
    """The names (keys of :data:`CONSTRUCTS`) of the constructs ``pattern`` uses (for tests)."""
    def walk(node: Node) -> Iterator[str]:
        if isinstance(node, Char):
            yield "escaped character" if node.escaped else "literal character"
        elif isinstance(node, Shorthand):
            yield "shorthand class"
        elif isinstance(node, Property):
            yield "unicode property"
        elif isinstance(node, CharClass):
            yield "class"
            for member in node.items:
                yield from walk(member)
        elif isinstance(node, Range):
            yield "class"
        elif isinstance(node, Dot):
            yield "dot"
        elif isinstance(node, Anchor):
            yield "anchor"
        elif isinstance(node, Group):
            yield {"group": "group", "atomic": "atomic group", "ahead": "lookahead", "not_ahead": "lookahead"}.get(node.kind, "lookbehind")
            if node.ignore_case:
                yield "case-insensitive group"
            yield from walk(node.body)
        elif isinstance(node, Repeat):
            yield "quantifier"
            yield from walk(node.body)
        elif isinstance(node, Alternation):
            yield "alternation"
            for a in node.alternatives:
                yield from walk(a)
        elif isinstance(node, Concat):
            for item in node.items:
                yield from walk(item)

    yield from walk(parse(pattern, dialect))
