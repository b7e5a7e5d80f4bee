"""The panic audit: every way the Rust code can panic outside its tests says why it cannot fire.

Rust is read here as text: comments and the insides of string and char literals are blanked (so
that brackets and words left are code), then each item a `#[cfg(test)]` attribute applies to (a
`mod tests { ... }`, a test-only `use`, fn, impl or field) is blanked by matching its brackets.
Everything left is audited, wherever the file's tests sit.
"""

import re
from pathlib import Path

RUST_SRC = Path(__file__).resolve().parents[2] / "rust" / "src"
PANICS = re.compile(
    r"\.unwrap\(\)|\.expect\(|\.unwrap_err\(\)|\.expect_err\("
    r"|\bpanic!|\bunreachable!|\btodo!|\bunimplemented!|\bassert!|\bassert_eq!|\bassert_ne!"
)
CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
RAW_STRING = re.compile(r'b?r(#*)"')
CLOSING = {"(": ")", "[": "]", "{": "}"}


def _blank(chars, start, end):
    for k in range(start, end):
        if chars[k] != "\n":
            chars[k] = " "


def code_only(source):
    """`source` with its comments and the insides of its string and char literals replaced by
    spaces (newlines kept, so lines and offsets stay where they were)."""
    out = list(source)
    n = len(source)
    i = 0
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            _blank(out, i, end)
            i = end
        elif source.startswith("/*", i):  # block comments nest in Rust
            depth, j = 1, i + 2
            while j < n and depth:
                if source.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif source.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            _blank(out, i, j)
            i = j
        elif (raw := RAW_STRING.match(source, i)) and not (i and (source[i - 1].isalnum() or source[i - 1] == "_")):
            close = '"' + raw.group(1)
            end = source.find(close, raw.end())
            end = n if end < 0 else end
            _blank(out, raw.end(), end)
            i = end + len(close)
        elif c == '"':
            j = i + 1
            while j < n and source[j] != '"':
                j += 2 if source[j] == "\\" else 1
            _blank(out, i + 1, j)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\'', '\u{7f}', b'x') or a lifetime ('a, 'static).
            if source.startswith("\\", i + 1):
                end = source.find("'", i + 3)
                _blank(out, i + 1, end)
                i = end + 1
            elif i + 2 < n and source[i + 2] == "'":
                _blank(out, i + 1, i + 2)
                i += 3
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def item_end(code, start):
    """The end of the item that starts at offset `start` of `code` (a code_only text): past the
    `;` or the closing brace that ends it outside any bracket (its own attributes included)."""
    expected = []
    for i in range(start, len(code)):
        c = code[i]
        if c in CLOSING:
            expected.append(CLOSING[c])
        elif c in ")]}":
            assert expected and expected.pop() == c, f"unbalanced {c!r} at offset {i}"
            if c == "}" and not expected:
                return i + 1
        elif c == ";" and not expected:
            return i + 1
    raise AssertionError(f"the item at offset {start} never ends")


def non_test_code(source):
    """The code of a Rust file (as code_only) with every item a `#[cfg(test)]` applies to blanked."""
    code = code_only(source)
    out = list(code)
    at = 0
    while attribute := CFG_TEST.search(code, at):
        at = item_end(code, attribute.end())
        item = code[attribute.end() : at]
        # A test module in a file of its own would be audited as if it were shipped code.
        assert not re.fullmatch(r"\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*;", item), f"a test module in its own file: {item}"
        _blank(out, attribute.start(), at)
    return "".join(out)


def unjustified_panics(source):
    """(line number, line) of each panic path outside test code (unwrap, expect, panic!,
    unreachable!, todo!, unimplemented!, assert!) without a `// panic-free:` comment on its line or
    the line before saying why it cannot fire on any input."""
    lines = source.splitlines()
    return [
        (i + 1, lines[i].strip())
        for i, code in enumerate(non_test_code(source).splitlines())
        if PANICS.search(code) and not any("panic-free:" in line for line in lines[max(0, i - 1) : i + 1])
    ]


def test_every_panic_path_in_rust_is_justified():
    unjustified = [
        f"{path.relative_to(RUST_SRC)}:{number}: {line}"
        for path in sorted(RUST_SRC.rglob("*.rs"))
        for number, line in unjustified_panics(path.read_text())
    ]
    assert not unjustified, "unjustified panic paths:\n" + "\n".join(unjustified)


def test_the_audit_reads_past_a_test_only_import():
    """count/mod.rs starts with a test-only `use`: an unwrap planted in the code after it is found."""
    lines = (RUST_SRC / "count" / "mod.rs").read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip() == "#[cfg(test)]")
    assert lines[at + 1].startswith("use "), "count/mod.rs no longer starts with a test-only use"
    planted = "fn planted() -> u8 { None::<u8>.unwrap() }\n"
    source = "".join(lines[: at + 2] + [planted] + lines[at + 2 :])
    assert unjustified_panics("".join(lines)) == []
    assert unjustified_panics(source) == [(at + 3, planted.strip())]


def test_the_audit_skips_exactly_the_items_under_cfg_test():
    source = """\
#[cfg(test)]
use std::sync::Once;
fn shipped(x: Option<u8>) -> u8 { x.unwrap() }
#[cfg(test)]
#[derive(Debug)]
struct Sizes { a: [u8; 4] }
impl Sizes {
    #[cfg(test)]
    fn only_in_tests(&self) -> u8 { self.a.first().copied().unwrap() }
    fn shipped(&self) -> u8 { self.a.first().copied().expect("four") }
}
#[cfg(test)]
mod tests {
    fn braces_in_literals() { let _ = ("}", '}', r#"}"#, b'{'); /* } */ Some(1).unwrap(); }
    // }
    fn lifetimes<'a>(x: &'a str) -> &'a str { Some(x).unwrap() }
}
fn after_the_tests() { assert!(true); panic!("a .unwrap() in a string is no panic path") }
fn justified() {
    // panic-free: a constant.
    Some(1).unwrap();
    Some(2).unwrap(); // panic-free: a constant.
}
"""
    assert [number for number, _ in unjustified_panics(source)] == [3, 10, 18]
