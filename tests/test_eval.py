"""bpeforge._eval: evaluate, format_table and load_tokenizer, figures checked by hand on tiny texts.
(`bpeforge eval` is tested in tests/cli/test_eval.py.)"""

import re
import warnings

import pytest
import tiktoken

import bpeforge
import bpeforge._eval
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples, texts
from bpeforge._eval import EvalError, EvalRow, evaluate, format_table, load_tokenizer
from bpeforge._io import ranks_to_tiktoken
from ranks import BYTE_RANKS, hand_ranks


@pytest.fixture(scope="module")
def byte_level():
    return bpeforge.Tokenizer(BYTE_RANKS)


# ------------------------------------------------------------------------------ figures


def test_figures_by_hand(byte_level, hello):
    rows = evaluate({"bytes": byte_level, "hello": hello}, {"greet": "hello hello"})
    assert rows == [
        EvalRow("greet", "bytes", bytes=11, tokens=11, bytes_per_token=1.0, tokens_per_char=1.0,
                relative_diff=0.0, chars=11, vocab_size=256),
        EvalRow("greet", "hello", bytes=11, tokens=3, bytes_per_token=11 / 3, tokens_per_char=3 / 11,
                relative_diff=(11 - 3) / 11 * 100, chars=11, vocab_size=261),
    ]
    assert round(rows[1].relative_diff, 1) == 72.7


def test_figures_multibyte_and_reference_order(byte_level, hello):
    # é is 2 bytes: bytes 6, chars 5; byte-level 6 tokens, "hello"-ranks: h é l l o -> h, é(2), ll, o = 5
    rows = evaluate([hello, byte_level], [("w", "héllo")])
    by_tok = {r.tokenizer: r for r in rows}
    assert set(by_tok) == {"tokenizer1", "tokenizer2"}
    h, b = by_tok["tokenizer1"], by_tok["tokenizer2"]
    assert (h.bytes, h.chars, h.tokens) == (6, 5, 5)
    assert (b.bytes, b.chars, b.tokens) == (6, 5, 6)
    assert h.relative_diff == 0.0
    assert b.relative_diff == pytest.approx((5 - 6) / 5 * 100)  # -20%: worse than the first
    assert b.tokens_per_char == pytest.approx(1.2) and b.bytes_per_token == 1.0
    assert h.bytes_per_token == pytest.approx(1.2)


def test_rows_grouped_by_text(byte_level, hello):
    rows = evaluate({"a": byte_level, "b": hello}, {"t1": "hello", "t2": "hi", "t3": "hello hello"})
    assert [(r.text, r.tokenizer) for r in rows] == [
        ("t1", "a"), ("t1", "b"), ("t2", "a"), ("t2", "b"), ("t3", "a"), ("t3", "b"),
    ]
    assert [r.tokens for r in rows] == [5, 1, 2, 2, 11, 3]


def test_special_token_text_counts_as_text(hello):
    (row,) = evaluate([hello], ["<|bos|>"])
    assert row.tokens == 7 and row.text == "text1"


def test_texts_forms(hello):
    a = evaluate([hello], "hello")
    b = evaluate([hello], {"text": "hello"})
    c = evaluate(hello, [("text", "hello")])
    assert a == b
    assert [r.tokens for r in c] == [1]


def test_duplicate_names_are_told_apart(hello):
    rows = evaluate([hello, hello], [("x", "hello"), ("x", "hi")])
    assert [(r.text, r.tokenizer) for r in rows] == [
        ("x", "tokenizer1"), ("x", "tokenizer2"), ("x (2)", "tokenizer1"), ("x (2)", "tokenizer2"),
    ]


def test_trained_tokenizer_matches_encode():
    texts = ["The quick brown fox jumps over the lazy dog.", "日本語のテキスト 🎉"] * 3
    tok = bpeforge.Tokenizer.train_from_iterator(texts, vocab_size=300)
    rows = evaluate([tok], {f"t{i}": t for i, t in enumerate(texts[:2])})
    for row, text in zip(rows, texts[:2]):
        assert row.tokens == len(tok.encode(text))
        assert row.bytes == len(text.encode())
        assert row.chars == len(text)
        assert row.vocab_size == 300


@pytest.mark.parametrize(
    "tokenizers, texts, message",
    [
        ([], ["x"], "no tokenizers"),
        ({}, ["x"], "no tokenizers"),
        (None, {}, "no texts"),
        (None, [], "no texts"),
        (None, {"e": ""}, "text 'e' is empty"),
        (None, [("a", 3)], "text 'a' must be a str"),
        (None, [42], r"texts\[0\] must be a str, a TextFile or a \(name, text\) pair"),
    ],
)
def test_evaluate_errors(hello, tokenizers, texts, message):
    with pytest.raises(EvalError, match=message):
        evaluate([hello] if tokenizers is None else tokenizers, texts)


def test_bad_tokenizer_type(hello):
    with pytest.raises(TypeError, match="got int"):
        evaluate([hello, 3], ["x"])


# ------------------------------------------------------------------------------ loading


def test_saved_folder(hello, tmp_path):
    hello.save(tmp_path / "tok")
    rows = evaluate([str(tmp_path / "tok") + "/", tmp_path / "tok"], ["hello hello"])
    assert [r.tokens for r in rows] == [3, 3]
    assert rows[0].tokenizer == str(tmp_path / "tok")
    assert rows[1].tokenizer == str(tmp_path / "tok") + " (2)"


@pytest.fixture()
def lolo_file(tmp_path):
    # lo, " lo", "lo lo": split by GPT-4's pattern "lo lo" is "lo" + " lo" (2 tokens); as one
    # chunk it merges all the way to "lo lo" (1 token)
    path = tmp_path / "lolo.tiktoken"
    path.write_bytes(ranks_to_tiktoken(hand_ranks(b"lo", b" lo", b"lo lo")))
    return path


def test_tiktoken_file_with_pattern(lolo_file):
    whole = r"[\s\S]+"
    cases = {
        str(lolo_file): 2,  # GPT-4's pattern by default
        f"{lolo_file}:gpt4": 2,
        f"{lolo_file}:nanochat": 2,
        f"{lolo_file}:{whole}": 1,  # a regex, itself containing no ':'
        f"{lolo_file}:(?:x|[\\s\\S]+)": 1,
    }
    for spec, tokens in cases.items():
        (row,) = evaluate([spec], ["lo lo"])
        assert row.tokens == tokens, spec
        assert row.tokenizer == spec
    (row,) = evaluate([lolo_file], ["lo lo"], pattern=whole)  # the separate pattern argument
    assert row.tokens == 1
    (row,) = evaluate([f"{lolo_file}:gpt4"], ["lo lo"], pattern=whole)  # the suffix wins
    assert row.tokens == 2
    tok = load_tokenizer(f"{lolo_file}:nanochat")
    assert tok.pattern == bpeforge.PATTERNS["nanochat"] and tok.special_tokens == {}


def test_tiktoken_file_errors(lolo_file, tmp_path):
    with pytest.raises(EvalError, match="bad pattern"):
        load_tokenizer(f"{lolo_file}:(unclosed")
    with pytest.raises(EvalError, match="no such .tiktoken file"):
        load_tokenizer(tmp_path / "missing.tiktoken")
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("aGk= 0\nnot-a-line\n")
    with pytest.raises(bpeforge.TokenizerFileError, match="bad.tiktoken:2"):
        load_tokenizer(bad)


def test_other_paths(tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("hi")
    with pytest.raises(EvalError, match="not a .tiktoken ranks file"):
        load_tokenizer(other)
    with pytest.raises(EvalError, match="no such file or folder"):
        load_tokenizer(str(tmp_path / "nope"))
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    with pytest.raises(FileNotFoundError, match="not a saved bpeforge tokenizer"):
        load_tokenizer(empty_dir)


def test_tiktoken_encoding_object():
    enc = tiktoken.Encoding("mini", pat_str=r"\S+|\s+", mergeable_ranks=hand_ranks(b"ab"), special_tokens={})
    (row,) = evaluate([enc], ["ab ab"])
    assert row.tokenizer == "mini" and row.tokens == 3


def test_tiktoken_names(monkeypatch):
    asked = []
    enc = tiktoken.Encoding("fake", pat_str=r"\S+|\s+", mergeable_ranks=BYTE_RANKS, special_tokens={"<|endoftext|>": 256})

    def fake_get_encoding(name):
        asked.append(name)
        return enc

    monkeypatch.setattr(tiktoken, "get_encoding", fake_get_encoding)
    rows = evaluate(["gpt2", "gpt4", "gpt-4o", "cl100k_base"], ["hi"])
    assert asked == ["gpt2", "cl100k_base", "o200k_base", "cl100k_base"]
    assert [r.tokenizer for r in rows] == ["gpt2", "gpt4", "gpt-4o", "cl100k_base"]


def test_tiktoken_name_offline(monkeypatch):
    def offline(name):
        raise ConnectionError("Max retries exceeded (NameResolutionError)")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    with pytest.raises(EvalError, match=r"could not load the encoding 'cl100k_base'.*offline.*ConnectionError"):
        evaluate(["gpt4"], ["hi"])


def test_unknown_name():
    """A name that is neither a file or folder nor an encoding tiktoken knows: both are said."""
    with pytest.raises(EvalError, match="^gpt-17: no such file or folder, and 'gpt-17' is not a tiktoken encoding or model name"):
        load_tokenizer("gpt-17")


# ------------------------------------------------------------------------------ table


def test_format_table(byte_level, hello):
    rows = evaluate({"bytes": byte_level, "hello": hello}, {"greet": "hello hello", "hi": "hi"})
    table = format_table(rows)
    lines = table.splitlines()
    assert lines[:3] == ["Vocab sizes:", "  bytes  256", "  hello  261"]
    assert "Diff %: tokens saved against bytes" in table
    header = next(line for line in lines if line.startswith("Text"))
    assert header.split() == ["Text", "Bytes", "Chars", "Tokenizer", "Tokens", "Bytes/token", "Tokens/char", "Diff", "%", "Better"]
    body = lines[lines.index(header) + 2 :]
    assert [line.split() for line in body] == [
        ["greet", "11", "11", "bytes", "11", "1.00", "1.000"],
        ["hello", "3", "3.67", "0.273", "+72.7%", "hello"],
        ["hi", "2", "2", "bytes", "2", "1.00", "1.000"],
        ["hello", "2", "1.00", "1.000", "+0.0%", "tie"],
    ]
    assert "\033[" not in table
    assert len({len(line) for line in lines if line and set(line) <= {"=", "-"}}) == 1


def test_format_table_colours(byte_level, hello):
    rows = evaluate([hello, byte_level], ["hello hello"])
    coloured = format_table(rows, color=True)
    assert "\033[91m" in coloured  # byte-level is worse than the reference
    assert re.sub(r"\033\[\d+m", "", coloured) == format_table(rows)
    assert format_table([]) == ""


# ------------------------------------------------------------------------------ command line


def test_tiktoken_file_missing_single_bytes_is_a_clear_error(tmp_path):
    from bpeforge._eval import EvalError, load_tiktoken_file
    from bpeforge._io import ranks_to_tiktoken

    path = tmp_path / "few.tiktoken"
    path.write_bytes(ranks_to_tiktoken({bytes([i]): i for i in range(200)}))
    with pytest.raises(EvalError, match="single bytes are not tokens"):
        load_tiktoken_file(path)


def test_pattern_matching_empty_strings_is_refused(tmp_path):
    from bpeforge._eval import EvalError, load_tiktoken_file
    from bpeforge._io import ranks_to_tiktoken

    path = tmp_path / "full.tiktoken"
    path.write_bytes(ranks_to_tiktoken({bytes([i]): i for i in range(256)}))
    with pytest.raises(EvalError, match="empty string"):
        load_tiktoken_file(path, "a*")


def test_text_with_no_tokens_is_a_clear_error(tmp_path):
    from bpeforge._eval import EvalError, load_tiktoken_file
    from bpeforge._io import ranks_to_tiktoken

    path = tmp_path / "full.tiktoken"
    path.write_bytes(ranks_to_tiktoken({bytes([i]): i for i in range(256)}))
    digits_only = load_tiktoken_file(path, "[0-9]+")
    with pytest.raises(EvalError, match="encodes only 0 of the 14 bytes of text 'words'"):
        bpeforge.evaluate([digits_only], {"words": "no digits here"})
    # Some of the text, not all: the comparison would credit the tokenizer with bytes it drops.
    with pytest.raises(EvalError, match="encodes only 2 of the 16 bytes of text 'words'.*skips the rest"):
        bpeforge.evaluate([digits_only], {"words": "no digits but 42"})


def test_surrogate_pairs_are_counted_as_tiktoken_reads_them():
    """tiktoken reads a str holding surrogates through UTF-16: a pair is one character of 4
    bytes, a lone surrogate U+FFFD (3 bytes). The counts follow what was encoded."""
    tok = bpeforge.Tokenizer.train_from_iterator(["hello world 😀"] * 10, vocab_size=270, special_tokens=[])
    paired, lone = "\ud83d\ude00 hi", "a\ud800b"
    rows = bpeforge.evaluate([tok], [paired, lone])
    assert (rows[0].bytes, rows[0].chars) == (len("😀 hi".encode()), len("😀 hi"))
    assert (rows[1].bytes, rows[1].chars) == (len("a\ufffdb".encode()), 3)
    assert rows[0].tokens == len(tok.encode("😀 hi"))


def test_evaluate_checks_num_threads():
    with pytest.raises(ValueError, match="num_threads must be a positive int, got 0"):
        bpeforge.evaluate([bpeforge.Tokenizer(BYTE_RANKS)], ["hi"], num_threads=0)


# ------------------------------------------------------------------------------ pieces, huge texts

PRESET_NAMES = [name for name, _ in bpeforge._core.PRESETS]
TRICKY = [
    "The quick brown fox jumps over the lazy dog. " * 40,
    "def main():\n    return [x ** 2 for x in range(10)]\r\n\r\n\tpass  \n\n  \nend\n",
    "I'll say it's 3.14159 — DON'T you think? 2025-11-21 abc123def4567 ½² ①\n/usr/bin\n.\n/x\n",
    "Ünïcödé, 日本語のテキスト, emoji 🎉🎉 and combining e\u0301\u0302 marks\n\n\nx\n y\n\tz  \n",
    "a\nb\n.\n/\n1\n2\n'\ns\n" * 20 + "   trailing spaces   ",
]


def spans(text, pattern):
    import regex

    return regex.findall(pattern, text)


@settings(max_examples=examples(300), deadline=None)
@given(text=st.lists(texts(max_pieces=12), min_size=1, max_size=4).map("".join), size=st.integers(1, 30), data=st.data())
def test_pieces_cut_only_where_every_preset_pattern_ends_a_span(text, size, data):
    from bpeforge._eval import text_pieces

    pieces = list(text_pieces([text], size))
    assert "".join(p for p, _ in pieces) == text
    assert all(0 < len(p) <= size for p, _ in pieces)
    # Where pieces end depends on the text alone, not on how its parts reach text_pieces.
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=5)))
    parts = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    assert list(text_pieces(parts, size)) == pieces
    if any(forced for _, forced in pieces):
        return
    for name, pattern in bpeforge._core.PRESETS:
        assert [s for p, _ in pieces for s in spans(p, pattern)] == spans(text, pattern), name


def test_pieces_of_tricky_texts_split_as_the_whole_text_on_every_preset():
    from bpeforge._eval import text_pieces

    checked = 0
    for text in TRICKY:
        for size in (4, 7, 16, 50):
            pieces = list(text_pieces([text], size))
            if any(forced for _, forced in pieces):
                continue
            checked += 1
            for name, pattern in bpeforge._core.PRESETS:
                assert [s for p, _ in pieces for s in spans(p, pattern)] == spans(text, pattern), (name, size)
    assert checked >= 8  # (the others hold a stretch of `size` characters with no place to cut)


@pytest.fixture(scope="module")
def preset_tokenizers():
    corpus = TRICKY * 5 + ["hello world 123 aaaa bbbb", "   \n\n\t  ", "x" * 300]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some stop early: no pair is left
        return {
            name: bpeforge.Tokenizer.train_from_iterator(corpus, 460, pattern=name, special_tokens=["<|endoftext|>"])
            for name in PRESET_NAMES
        }


@pytest.mark.filterwarnings("error")  # no text is cut inside a span
@pytest.mark.parametrize("piece_chars", [bpeforge._eval.PIECE_CHARS, 24])
def test_counts_equal_tiktokens_on_ordinary_texts(preset_tokenizers, monkeypatch, piece_chars):
    """The differential test: the encoder's counts, in pieces, are tiktoken's encode_ordinary
    of each text whole, for every preset pattern (special-token text counted as text)."""
    monkeypatch.setattr(bpeforge._eval, "PIECE_CHARS", piece_chars)
    texts = {f"t{i}": t for i, t in enumerate(TRICKY + ["<|endoftext|> is text here"])}
    rows = evaluate(preset_tokenizers, texts)
    assert len(rows) == len(texts) * len(PRESET_NAMES)
    for row in rows:
        tok, text = preset_tokenizers[row.tokenizer], texts[row.text]
        assert row.tokens == len(tok.encoding.encode_ordinary(text)), (row.tokenizer, row.text)
        assert (row.bytes, row.chars) == (len(text.encode()), len(text))


def test_a_text_file_is_read_in_pieces_with_the_counts_of_the_text_whole(preset_tokenizers, tmp_path, monkeypatch):
    from bpeforge._eval import TextFile

    text = "".join(TRICKY) * 3
    path = tmp_path / "t.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())  # a byte-order mark is not text
    whole = evaluate(preset_tokenizers, {"t": text})
    monkeypatch.setattr(bpeforge._eval, "READ_BYTES", 5)  # reads cut characters' bytes apart
    monkeypatch.setattr(bpeforge._eval, "PIECE_CHARS", 64)
    monkeypatch.setattr(bpeforge._eval, "BATCH_BYTES", 100)
    assert evaluate(preset_tokenizers, {"t": TextFile(path)}) == whole


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "the file is empty"),
        (b"\xef\xbb\xbf", "the file is empty"),
        ("ab\nc".encode() * 10 + b"\xe9t\xc3", r"not UTF-8 text \(byte 40: b'\\xe9'\)"),
        ("é".encode() * 4 + b"\xc3", r"not UTF-8 text \(byte 8: b'\\xc3'\)"),  # cut short at the end
    ],
)
def test_a_bad_text_file_is_an_eval_error_naming_it(tmp_path, monkeypatch, data, message):
    from bpeforge._eval import TextFile

    monkeypatch.setattr(bpeforge._eval, "READ_BYTES", 3)
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    with pytest.raises(EvalError, match=f"bad.txt: {message}"):
        TextFile(path).check()
    with pytest.raises(EvalError, match="missing.txt: No such file"):
        TextFile(tmp_path / "missing.txt").check()


def test_a_huge_run_is_counted_in_bounded_time_with_a_warning_of_the_cuts(monkeypatch):
    """A run of one letter has no place to cut without cutting a span: it is cut anyway (the
    encoder is O(n log n) on a span, but holds tens of bytes per byte of it), with a warning."""
    import time

    tok = bpeforge.Tokenizer.train_from_iterator(["a" * 5000], 300, special_tokens=[])
    monkeypatch.setattr(bpeforge._eval, "PIECE_CHARS", 1 << 16)
    start = time.perf_counter()
    with pytest.warns(UserWarning, match=r"text 'run': 15 stretches of 65,536 characters without a space .* off by a few tokens per cut"):
        (row,) = evaluate([tok], {"run": "a" * 1_000_000})
    assert time.perf_counter() - start < 20
    exact = len(tok.encode("a" * (1 << 16)))
    assert abs(row.tokens - 1_000_000 // (1 << 16) * exact) <= 2 * exact  # each piece alike but the last


def test_a_custom_pattern_the_regex_engine_gives_up_on_is_an_eval_error_naming_the_tokenizer(tmp_path):
    from bpeforge._eval import load_tiktoken_file

    path = tmp_path / "full.tiktoken"
    path.write_bytes(ranks_to_tiktoken(BYTE_RANKS))
    costly = load_tiktoken_file(path, r"(?:a|aa)+(?=b)|\S|\s")
    with pytest.raises(EvalError, match=r"tokenizer 'costly' cannot encode text 'run': the split pattern failed on a text: .*simplify the pattern"):
        evaluate({"bytes": bpeforge.Tokenizer(BYTE_RANKS), "costly": costly}, {"run": "a" * 100_000})
