"""Saving and loading: standard files, same encoding after reload, clear errors on bad files."""

import json

import pytest
import tiktoken.load

import bpeforge
from bpeforge.io import CONFIG_FILE, RANKS_FILE, TOKEN_BYTES_FILE

SAMPLE = "The quick brown fox; jumps over 12345 lazy dogs!\n\tdon't STOP — ünïcödé 日本語 🎉"


@pytest.fixture(scope="module")
def tok():
    texts = [SAMPLE, "hello world " * 20, "def f(x):\n    return x + 1\n"] * 5
    return bpeforge.Tokenizer.train_from_iterator(texts, 340, pattern="nanochat")


def test_round_trip(tok, tmp_path):
    tok.save(tmp_path / "tok")
    again = bpeforge.Tokenizer.load(tmp_path / "tok")
    assert again.mergeable_ranks == tok.mergeable_ranks
    assert again.pattern == tok.pattern == bpeforge.PATTERNS["nanochat"]
    assert again.special_tokens == tok.special_tokens
    assert again.encode(SAMPLE) == tok.encode(SAMPLE)
    assert again.encode_special("<|bos|>") == tok.encode_special("<|bos|>")


def test_ranks_file_is_standard_tiktoken(tok, tmp_path):
    tok.save(tmp_path)
    assert tiktoken.load.load_tiktoken_bpe(str(tmp_path / RANKS_FILE)) == tok.mergeable_ranks


def test_no_temporary_files_left(tok, tmp_path):
    tok.save(tmp_path)
    tok.save(tmp_path)  # overwriting works too
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([RANKS_FILE, CONFIG_FILE, TOKEN_BYTES_FILE])


def test_missing_directory_and_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a directory"):
        bpeforge.Tokenizer.load(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match=CONFIG_FILE):
        bpeforge.Tokenizer.load(tmp_path)


def saved(tok, tmp_path):
    tok.save(tmp_path)
    return tmp_path / RANKS_FILE, tmp_path / CONFIG_FILE


def test_truncated_ranks(tok, tmp_path):
    ranks, _ = saved(tok, tmp_path)
    lines = ranks.read_bytes().splitlines(keepends=True)
    ranks.write_bytes(b"".join(lines[:300]))
    with pytest.raises(bpeforge.TokenizerFileError, match="truncated"):
        bpeforge.Tokenizer.load(tmp_path)


def test_truncated_mid_line(tok, tmp_path):
    ranks, _ = saved(tok, tmp_path)
    data = ranks.read_bytes()
    ranks.write_bytes(data[: len(data) - 3])
    last = len(data.splitlines())
    with pytest.raises(bpeforge.TokenizerFileError, match=f"{RANKS_FILE}:{last}: rank"):
        bpeforge.Tokenizer.load(tmp_path)


@pytest.mark.parametrize(
    "line, message",
    [(b"!!notbase64 300\n", "bad base64"), (b"YWJj\n", "expected 'base64-token rank'"), (b"YWJj x\n", "bad rank")],
)
def test_corrupt_line_names_file_and_line(tok, tmp_path, line, message):
    ranks, _ = saved(tok, tmp_path)
    lines = ranks.read_bytes().splitlines(keepends=True)
    lines[299] = line
    ranks.write_bytes(b"".join(lines))
    with pytest.raises(bpeforge.TokenizerFileError, match=f"{RANKS_FILE}:300: {message}"):
        bpeforge.Tokenizer.load(tmp_path)


def test_duplicate_token(tok, tmp_path):
    ranks, _ = saved(tok, tmp_path)
    lines = ranks.read_bytes().splitlines(keepends=True)
    lines[300] = lines[299].split()[0] + b" 300\n"
    ranks.write_bytes(b"".join(lines))
    with pytest.raises(bpeforge.TokenizerFileError, match=":301: token .* already has rank 299"):
        bpeforge.Tokenizer.load(tmp_path)


def test_rank_gap(tok, tmp_path):
    ranks, _ = saved(tok, tmp_path)
    lines = ranks.read_bytes().splitlines(keepends=True)
    token = lines[-1].split()[0]
    lines[-1] = token + b" 100000\n"
    ranks.write_bytes(b"".join(lines))
    with pytest.raises(bpeforge.TokenizerFileError, match="rank 100000 where .* was expected"):
        bpeforge.Tokenizer.load(tmp_path)


def test_not_our_json(tok, tmp_path):
    _, config = saved(tok, tmp_path)
    config.write_text(json.dumps({"model": {"type": "BPE"}}))
    with pytest.raises(bpeforge.TokenizerFileError, match="not a bpeforge tokenizer"):
        bpeforge.Tokenizer.load(tmp_path)
    config.write_text("{not json")
    with pytest.raises(bpeforge.TokenizerFileError, match="not valid JSON"):
        bpeforge.Tokenizer.load(tmp_path)


def test_wrong_version(tok, tmp_path):
    _, config = saved(tok, tmp_path)
    data = json.loads(config.read_text())
    data["version"] = 99
    config.write_text(json.dumps(data))
    with pytest.raises(bpeforge.TokenizerFileError, match="version 99 is not supported"):
        bpeforge.Tokenizer.load(tmp_path)


def test_a_save_cut_off_between_files_is_caught(tok, tmp_path):
    tok.save(tmp_path)
    other = bpeforge.Tokenizer.train_from_iterator(["completely different text " * 30], 300)
    other.save(tmp_path / "other")
    # As if a crash came after the new ranks were in place but before the new config.
    (tmp_path / RANKS_FILE).write_bytes((tmp_path / "other" / RANKS_FILE).read_bytes())
    data = json.loads((tmp_path / CONFIG_FILE).read_text())
    data["n_ranks"] = len(other.mergeable_ranks)
    (tmp_path / CONFIG_FILE).write_text(json.dumps(data))
    with pytest.raises(bpeforge.TokenizerFileError, match="does not match"):
        bpeforge.Tokenizer.load(tmp_path)
