"""``bpeforge train --extend BASE``: continued BPE from the command line, as the API extends."""

from __future__ import annotations

import pytest

import bpeforge

from .helpers import assert_one_line_error, check_saved, run


def write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_extend_keeps_every_id_and_equals_the_api(tmp_path):
    english = write(tmp_path / "en.txt", ["the cat sat on the mat", "a dog and a cat"] * 20)
    code = write(tmp_path / "code.txt", ["int main(void) { return 0; }", "for (int i = 0; i < n; i++)"] * 20)
    base_dir = tmp_path / "en"
    r = run("train", english, "--vocab-size", 300, "--special-tokens", "none", "--holdout", 0, "-o", base_dir)
    assert r.returncode == 0, r.stderr
    base = bpeforge.Tokenizer.load(base_dir)
    out = tmp_path / "en+code"
    r = run("train", "--extend", base_dir, "--vocab-size", base.n_vocab + 20, "--holdout", 0, "-o", out, code)
    assert r.returncode == 0, r.stderr
    assert "the base's, gpt4" in r.stdout
    tok = check_saved(out)
    assert tok.n_vocab == base.n_vocab + 20
    assert all(tok.mergeable_ranks[t] == i for t, i in base.mergeable_ranks.items())
    api = base.extend(code.read_text().splitlines(), vocab_size=base.n_vocab + 20)
    assert tok.mergeable_ranks == api.mergeable_ranks


def test_extend_takes_the_longest_token_as_the_api_does(tmp_path):
    english = write(tmp_path / "en.txt", ["the cat sat on the mat"] * 20)
    code = write(tmp_path / "code.txt", ["catastrophe catamaran catalogue"] * 20)
    r = run("train", english, "--vocab-size", 262, "--special-tokens", "none", "--holdout", 0, "-o", tmp_path / "en")
    assert r.returncode == 0, r.stderr
    base = bpeforge.Tokenizer.load(tmp_path / "en")
    out = tmp_path / "ext"
    r = run("train", "--extend", tmp_path / "en", "--vocab-size", 300, "--max-token-length", 3, "--holdout", 0, "-o", out, code)
    assert r.returncode == 0, r.stderr
    tok = check_saved(out)
    new = [t for t, i in tok.mergeable_ranks.items() if i >= base.n_vocab]
    assert new and all(len(t) <= 3 for t in new)
    with pytest.warns(UserWarning, match="no pair making a token of at most 3 bytes is left"):
        api = base.extend(code.read_text().splitlines(), vocab_size=300, max_token_length=3)
    assert tok.mergeable_ranks == api.mergeable_ranks
    r = run("train", "--extend", tmp_path / "en", "--vocab-size", 300, "--max-token-length", 1, "-o", tmp_path / "o", code)
    assert r.returncode == 2 and "--max-token-length" in r.stderr


def test_extend_errors_are_one_line(tmp_path):
    text = write(tmp_path / "t.txt", ["abcd abce"] * 5)
    r = run("train", "--extend", tmp_path / "missing", "-o", tmp_path / "o", text)
    assert_one_line_error(r, "--extend", "cannot read the base tokenizer")
    base = tmp_path / "base"
    bpeforge.Tokenizer(
        {**{bytes([i]): i for i in range(256)}, b"bc": 256, b"ab": 257, b"cd": 258, b"abcd": 259}, special_tokens=[]
    ).save(base)
    r = run("train", "--extend", base, "--vocab-size", 100, "-o", tmp_path / "o", text)
    assert r.returncode == 2 and "--vocab-size must be at least the base's 260 ids" in r.stderr
    r = run("train", "--extend", base, "--special-tokens", "<|x|>", "--vocab-size", 270, "-o", tmp_path / "o", text)
    assert r.returncode == 2 and "--special-tokens cannot be used with --extend" in r.stderr
    r = run("train", "--extend", base, "--vocab-size", 270, "--holdout", 0, "-o", tmp_path / "o", text)
    assert_one_line_error(r, "--extend", "token 259 \"abcd\" is not what merging its bytes makes")


def test_extend_a_base_with_special_tokens(tmp_path):
    # bpeforge train's default: nanochat's nine special tokens, after which the new ranks come.
    english = write(tmp_path / "en.txt", ["the cat sat on the mat", "a dog and a cat"] * 20)
    code = write(tmp_path / "code.txt", ["int main(void) { return 0; }"] * 20)
    r = run("train", english, "--vocab-size", 280, "--holdout", 0, "-o", tmp_path / "en")
    assert r.returncode == 0, r.stderr
    base = bpeforge.Tokenizer.load(tmp_path / "en")
    r = run("train", "--extend", tmp_path / "en", "--vocab-size", base.n_vocab + 5, "--holdout", 0, "-o", tmp_path / "ext", code)
    assert r.returncode == 0, r.stderr
    tok = check_saved(tmp_path / "ext")
    assert tok.special_tokens == base.special_tokens and tok.n_vocab == base.n_vocab + 5


def test_extend_from_counts_equals_extending_from_the_text(tmp_path):
    english = write(tmp_path / "en.txt", ["the cat sat on the mat", "a dog and a cat"] * 20)
    code = write(tmp_path / "code.txt", ["int main(void) { return 0; }", "for (int i = 0; i < n; i++)"] * 20)
    base_dir = tmp_path / "en"
    assert run("train", english, "--vocab-size", 300, "--holdout", 0, "-o", base_dir).returncode == 0
    base = bpeforge.Tokenizer.load(base_dir)
    counts = tmp_path / "code.parquet"
    r = run("count", code, "-o", counts)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "en+code"
    r = run("train", "--extend", base_dir, "--from-counts", counts, "--vocab-size", base.n_vocab + 20, "-o", out)
    assert r.returncode == 0, r.stderr
    api = base.extend(code.read_text().splitlines(), vocab_size=base.n_vocab + 20)
    tok = check_saved(out)
    assert tok.mergeable_ranks == api.mergeable_ranks and tok.special_tokens == api.special_tokens
    gpt2 = tmp_path / "gpt2.parquet"
    assert run("count", code, "--pattern", "gpt2", "-o", gpt2).returncode == 0
    r = run("train", "--extend", base_dir, "--from-counts", gpt2, "--vocab-size", base.n_vocab + 20, "-o", tmp_path / "o")
    # The extension splits by the base's pattern unless --pattern names another.
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "--pattern: the span counts were split by 'gpt2', the training asks for 'gpt4'" in r.stderr


def test_extend_a_folder_trained_with_huggingfaces_tie_break(tmp_path):
    """``train --tie-break huggingface --initial-alphabet all`` writes HuggingFace's tokenizer.json
    and a .tiktoken, no bpeforge.json: --extend reads it as Tokenizer.from_huggingface does
    (HuggingFace's ids, its special tokens first, its split pattern, a custom one included) and
    extends it as the API extends that tokenizer."""
    english = write(tmp_path / "en.txt", ["the cat sat on the mat", "a dog and a cat", "x = 12345"] * 20)
    code = write(tmp_path / "code.txt", ["int main(void) { return 0; }", "for (int i = 0; i < n; i++)"] * 20)
    base_dir = tmp_path / "en"
    pattern = r" ?\p{L}+|\p{N}{1,2}+|\s+(?!\S)|\s|[^\s\p{L}\p{N}]+"
    r = run("train", english, "--vocab-size", 300, "--special-tokens", "<|endoftext|>", "--holdout", 0, "--tie-break", "huggingface",
            "--initial-alphabet", "all", "--pattern", pattern, "-o", base_dir)
    assert r.returncode == 0, r.stderr
    assert "tokenizer.json (HuggingFace's" in r.stdout  # not bpeforge.Tokenizer.load, which reads no such folder
    assert not (base_dir / "bpeforge.json").exists()
    base = bpeforge.Tokenizer.from_huggingface(base_dir)
    assert base.special_tokens == {"<|endoftext|>": 0}
    out = tmp_path / "en+code"
    r = run("train", "--extend", base_dir, "--vocab-size", base.n_vocab + 20, "--holdout", 0, "-o", out, code)
    assert r.returncode == 0, r.stderr
    tok = check_saved(out)
    assert tok.n_vocab == base.n_vocab + 20 and tok.special_tokens == base.special_tokens
    assert all(tok.mergeable_ranks[t] == i for t, i in base.mergeable_ranks.items())
    assert tok.mergeable_ranks == base.extend(code.read_text().splitlines(), vocab_size=base.n_vocab + 20).mergeable_ranks
    for text in ["the cat, 12345 times", "int i = 0;\n  x"]:
        assert bpeforge.split(text, tok.pattern) == bpeforge.split(text, pattern)


def test_extend_says_why_a_huggingface_folder_cannot_be_extended(tmp_path):
    english = write(tmp_path / "en.txt", ["the cat sat on the mat", "a dog and a cat"] * 20)
    base_dir = tmp_path / "en"
    r = run("train", english, "--vocab-size", 300, "--holdout", 0, "--tie-break", "huggingface", "-o", base_dir)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in base_dir.iterdir()) == ["tokenizer.json"]  # the bytes never seen are not in its alphabet
    r = run("train", "--extend", base_dir, "--vocab-size", 400, "--holdout", 0, "-o", tmp_path / "o", english)
    assert_one_line_error(r, "--extend", "HuggingFace's tokenizer.json there lacks")
    assert "of the 256 single bytes" in r.stderr and not (tmp_path / "o").exists()
    r = run("train", "--extend", base_dir, "--tie-break", "huggingface", "--vocab-size", 400, "-o", tmp_path / "o", english)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "--tie-break huggingface cannot be used with --extend: an extension keeps the base's ids" in r.stderr
