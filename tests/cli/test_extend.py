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
    r = run("train", "--extend", base, "--pattern", "gpt2", "--vocab-size", 270, "-o", tmp_path / "o", text)
    assert r.returncode == 2 and "--pattern cannot be used with --extend" in r.stderr
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
    # The counts' pattern is checked against the recipe's (the base's) first.
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "--pattern: the span counts were split by 'gpt2', the training asks for 'gpt4'" in r.stderr
