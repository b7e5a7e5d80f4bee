"""`bpeforge export` (bpeforge.cli.export): a saved tokenizer to HuggingFace's tokenizer.json and
back to a .tiktoken file, and one-line errors."""

import errno
import os
import re

import pytest

import bpeforge
from bpeforge.cli import main

tokenizers = pytest.importorskip("tokenizers")

TEXT = "Hello world! The lowest   newer wider, don't 1234567 日本語 🎉\n\n  x"


def test_the_export_command(tmp_path, capsys):
    tok = bpeforge.Tokenizer.train_from_iterator([TEXT] * 20, vocab_size=270, special_tokens=["<|bos|>"])
    tok.save(tmp_path / "tok")
    assert main(["export", str(tmp_path / "tok"), "--format", "huggingface", "-o", str(tmp_path / "hf")]) == 0
    h = tokenizers.Tokenizer.from_file(str(tmp_path / "hf" / "tokenizer.json"))
    assert h.encode(TEXT).ids == tok.encode(TEXT)
    assert main(["export", str(tmp_path / "hf"), "--format", "tiktoken", "-o", str(tmp_path / "t.tiktoken")]) == 0
    assert (tmp_path / "t.tiktoken").read_bytes() == (tmp_path / "tok" / "tokenizer.tiktoken").read_bytes()
    assert f'"<|bos|>": {tok.special_tokens["<|bos|>"]}' in capsys.readouterr().err
    assert main(["export", str(tmp_path / "tok"), "--format", "huggingface", "-o", str(tmp_path / "tok")]) == 1
    assert "already exists (use --force to replace it)" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "nope"), "--format", "huggingface", "-o", str(tmp_path / "x")]) == 1
    assert capsys.readouterr().err == f"bpeforge: error: {tmp_path / 'nope'}: no such file or folder\n"


def test_what_cannot_be_exported_is_one_line(tmp_path, capsys):
    ranks = tmp_path / "r.tiktoken"
    assert main(["export", str(tmp_path / "x"), "-o", str(tmp_path / "y")]) == 2
    assert "--format" in capsys.readouterr().err
    bpeforge.Tokenizer({bytes([b]): b for b in range(256)}).save(tmp_path / "t")
    ranks.write_bytes((tmp_path / "t" / "tokenizer.tiktoken").read_bytes())
    assert main(["export", f"{ranks}:\\w+|\\s+", "--format", "huggingface", "-o", str(tmp_path / "hf")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "uses \\w (at position 0)" in err
    assert not (tmp_path / "hf").exists()
    assert main(["export", f"{ranks}:gpt2", "--format", "huggingface", "-o", str(tmp_path / "hf")]) == 0
    assert (tmp_path / "hf" / "tokenizer.json").is_file() and (tmp_path / "hf" / "tokenizer_config.json").is_file()


def test_a_file_that_cannot_be_written_is_named_not_its_temporary(tmp_path, capsys, monkeypatch):
    bpeforge.Tokenizer({bytes([b]): b for b in range(256)}).save(tmp_path / "t")
    (tmp_path / "afile").write_text("")
    out = tmp_path / "afile" / "x.tiktoken"
    assert main(["export", str(tmp_path / "t"), "--format", "tiktoken", "-o", str(out)]) == 1
    # Checked before any work: the output's folder is a file.
    assert capsys.readouterr().err == f"bpeforge: error: cannot write the output {out}: {tmp_path / 'afile'} is not a folder\n"

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)  # a full disk, met when the file is flushed
    out = tmp_path / "x.tiktoken"
    assert main(["export", str(tmp_path / "t"), "--format", "tiktoken", "-o", str(out)]) == 1
    assert capsys.readouterr().err == f"bpeforge: error: cannot write {out}: No space left on device\n"
    with pytest.raises(OSError, match=re.escape(f"No space left on device: '{tmp_path / 't2' / 'tokenizer.tiktoken'}'")):
        bpeforge.Tokenizer({bytes([b]): b for b in range(256)}).save(tmp_path / "t2")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
