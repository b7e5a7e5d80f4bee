"""bpeforge.eval: evaluate, format_table and load_tokenizer, figures checked by hand on tiny texts.
(`bpeforge eval` is tested in tests/cli/test_eval.py.)"""

import re

import pytest
import tiktoken

import bpeforge
from bpeforge.eval import EvalError, EvalRow, evaluate, format_table, load_tokenizer
from bpeforge.io import ranks_to_tiktoken

BYTE_RANKS = {bytes([i]): i for i in range(256)}


def hand_ranks(*tokens):
    ranks = dict(BYTE_RANKS)
    for t in tokens:
        ranks[t] = len(ranks)
    return ranks


@pytest.fixture(scope="module")
def byte_level():
    return bpeforge.Tokenizer(BYTE_RANKS)


@pytest.fixture(scope="module")
def hello():
    # he, ll, hell, hello: "hello" is one token, " hello" is " " + "hello" (no " h" merge)
    return bpeforge.Tokenizer(hand_ranks(b"he", b"ll", b"hell", b"hello"), special_tokens=["<|bos|>"])


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
        (None, [42], r"texts\[0\] must be a str or a \(name, text\) pair"),
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
    assert tok.pattern == bpeforge.PATTERNS["nanochat"] and tok.get_special_tokens() == set()


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
    with pytest.raises(EvalError, match="'gpt-17' is not a tiktoken encoding or model name"):
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
    from bpeforge.eval import EvalError, load_tiktoken_file
    from bpeforge.io import ranks_to_tiktoken

    path = tmp_path / "few.tiktoken"
    path.write_bytes(ranks_to_tiktoken({bytes([i]): i for i in range(200)}))
    with pytest.raises(EvalError, match="single bytes are not tokens"):
        load_tiktoken_file(path)


def test_pattern_matching_empty_strings_is_refused(tmp_path):
    from bpeforge.eval import EvalError, load_tiktoken_file
    from bpeforge.io import ranks_to_tiktoken

    path = tmp_path / "full.tiktoken"
    path.write_bytes(ranks_to_tiktoken({bytes([i]): i for i in range(256)}))
    with pytest.raises(EvalError, match="empty string"):
        load_tiktoken_file(path, "a*")


def test_text_with_no_tokens_is_a_clear_error(tmp_path):
    from bpeforge.eval import EvalError, load_tiktoken_file
    from bpeforge.io import ranks_to_tiktoken

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
