"""Hostile inputs for `bpeforge train`, beside the API's (tests/core/test_robustness.py): giant
lines, corpora of whitespace or of one character, binary garbage, compressed files cut short,
folders of empty files, outputs that cannot be written, a disk that fills. Each run either
trains and saves, or stops with one clear ``bpeforge: error: ...`` line; never a traceback or a
panic's text, never a half-written output."""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bpeforge._files

import bpeforge
from bpeforge.cli import main

from .helpers import assert_one_line_error, check_saved, report_int, report_value, run

# The marks of a foreign error reaching stderr: a Python traceback, a Rust panic.
FOREIGN = ("Traceback", "panicked", "PanicException", "RUST_BACKTRACE")


def words_line(n_bytes: int, seed: int = 0) -> str:
    """About ``n_bytes`` of made-up words separated by spaces, with no line end."""
    rng = random.Random(seed)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyzé", k=rng.randint(1, 9))) for _ in range(2000)]
    out, size = [], 0
    while size < n_bytes:
        chunk = " ".join(rng.choices(words, k=10_000)) + " "
        out.append(chunk)
        size += len(chunk.encode())
    return "".join(out)


def assert_trained(r: subprocess.CompletedProcess, out: Path) -> bpeforge.Tokenizer:
    assert r.returncode == 0, r.stderr
    assert not any(mark in r.stderr for mark in FOREIGN), r.stderr
    assert all(line.startswith("bpeforge: ") for line in r.stderr.splitlines()), r.stderr
    return check_saved(out, "hello")


def assert_refused(r: subprocess.CompletedProcess, folder: Path, *needles: str) -> None:
    assert_one_line_error(r, *needles)
    assert not any(mark in r.stderr for mark in FOREIGN), r.stderr
    assert [p.name for p in folder.iterdir() if p.name.startswith(("tok", ".tok"))] == []


# ------------------------------------------------------------------------------ giant lines


def test_a_giant_single_line(tmp_path):
    """4 MB of words on one line with no line end: trained on whole (nothing held out), and the
    report measures the first 1 MB of it."""
    (tmp_path / "giant.txt").write_text(words_line(4_000_000))
    r = run("train", tmp_path / "giant.txt", "--vocab-size", 2000, "-o", tmp_path / "tok")
    tok = assert_trained(r, tmp_path / "tok")
    assert report_int(r.stdout, "documents") == 1 and report_int(r.stdout, "bytes") >= 4_000_000
    assert "(1,000,000 bytes ->" in report_value(r.stdout, "compression")
    assert len(r.stdout) < 5000
    assert tok.n_vocab == 2000


def test_a_giant_line_at_a_held_out_position_is_trained_on(tmp_path):
    """The issue's case, smaller: a 3 MB line at position 100 among short lines is trained on
    (held out whole, training saw 7 KB of the corpus); the next 100th documents are held out."""
    short = [f"short line number {i}" for i in range(300)]
    lines = short[:99] + [words_line(3_000_000)] + short[100:]
    (tmp_path / "c.txt").write_text("\n".join(lines) + "\n")
    r = run("train", tmp_path / "c.txt", "--vocab-size", 2000, "-o", tmp_path / "tok")
    assert_trained(r, tmp_path / "tok")
    assert report_value(r.stdout, "documents") == "298 (+ 2 held out)"
    total = sum(len(line.encode()) for line in lines)
    assert report_int(r.stdout, "bytes") >= 0.99 * total
    assert re.match(r"[\d.]+ bytes/token on 2 held-out documents \(42 bytes -> \d+ tokens\)$", report_value(r.stdout, "compression"))


@pytest.mark.parametrize("size", [2_000_000, pytest.param(10_000_000, marks=pytest.mark.slow)])
def test_a_document_per_line_of_many_megabytes(tmp_path, size):
    """Lines of several MB each, every one at a held-out position (--holdout 1): none fits the
    1 MB budget, so all are trained on (holding them out whole left nothing to train on)."""
    (tmp_path / "big.txt").write_text("\n".join(words_line(size, seed) for seed in range(3)) + "\n")
    r = run("train", tmp_path / "big.txt", "--holdout", 1, "-o", tmp_path / "tok")
    assert_trained(r, tmp_path / "tok")
    assert report_value(r.stdout, "documents") == "3"
    assert "each document is larger than the hold-out budget of 1,000,000 bytes" in r.stdout


# ------------------------------------------------------------------------------ odd corpora


def test_a_whitespace_only_corpus_trains(tmp_path):
    (tmp_path / "ws.txt").write_text(" \t  \u3000 \n\t\t\n      \n" * 2000)
    r = run("train", tmp_path / "ws.txt", "--vocab-size", 300, "-o", tmp_path / "tok")
    tok = assert_trained(r, tmp_path / "tok")
    assert len(tok.encode("      ")) == 1


@pytest.mark.parametrize("text", ["\n" * 10_000, "\r\n" * 5000, ""])
def test_a_corpus_of_line_ends_only_is_refused(tmp_path, text):
    (tmp_path / "nl.txt").write_text(text, newline="")
    r = run("train", tmp_path / "nl.txt", "-o", tmp_path / "tok")
    assert_refused(r, tmp_path, "no documents to train on: the inputs hold no text")


@pytest.mark.parametrize("text", ["x", "x\n" * 5000, "é" * 3])
def test_a_one_character_corpus_trains_what_it_can(tmp_path, text):
    (tmp_path / "one.txt").write_text(text)
    r = run("train", tmp_path / "one.txt", "-o", tmp_path / "tok")
    tok = assert_trained(r, tmp_path / "tok")
    assert "warning: training stopped at" in r.stderr
    assert tok.n_vocab == len(tok.mergeable_ranks) + 9 < 300


# ------------------------------------------------------------------------------ garbage


def garbage(n_lines: int, seed: int = 0) -> bytes:
    """Random bytes, each line holding a 0xff (never UTF-8) and NULs."""
    rng = random.Random(seed)
    return b"".join(rng.randbytes(rng.randint(1, 300)).replace(b"\n", b"") + b"\xff\x00\n" for _ in range(n_lines))


def test_binary_garbage_is_refused_naming_the_line(tmp_path):
    (tmp_path / "bin.txt").write_bytes("fine text\n".encode() + garbage(2000))
    r = run("train", tmp_path / "bin.txt", "-o", tmp_path / "tok")
    assert_refused(r, tmp_path, f"{tmp_path / 'bin.txt'}:2: not valid UTF-8", "--skip-bad-lines")


def test_binary_garbage_skipped_leaves_nothing_to_train_on(tmp_path):
    (tmp_path / "bin.txt").write_bytes(garbage(2000))
    r = run("train", tmp_path / "bin.txt", "--skip-bad-lines", "-o", tmp_path / "tok")
    assert_refused(r, tmp_path, "no documents to train on: the inputs hold no text (2,000 text documents that are not UTF-8 skipped")


def test_binary_garbage_skipped_among_text_trains_on_the_text(tmp_path):
    (tmp_path / "mixed.txt").write_bytes(garbage(500) + "hello world, some text\n".encode() * 500)
    r = run("train", tmp_path / "mixed.txt", "--skip-bad-lines", "--vocab-size", 300, "-o", tmp_path / "tok")
    assert_trained(r, tmp_path / "tok")
    assert "warning: skipped 500 text documents that are not UTF-8" in r.stderr
    assert report_value(r.stdout, "documents").startswith("495 (+ 5 held out)")


@pytest.mark.parametrize("name", ["bin.jsonl", "bin.parquet", "bin.txt.gz", "bin.txt.zst"])
def test_binary_garbage_in_other_formats_is_refused(tmp_path, name):
    (tmp_path / name).write_bytes(garbage(200))
    r = run("train", tmp_path / name, "-o", tmp_path / "tok")
    assert_refused(r, tmp_path, str(tmp_path / name))


# ------------------------------------------------------------------------------ compressed files cut short


def compressed(name: str, data: bytes) -> bytes:
    if name.endswith(".gz"):
        return gzip.compress(data)
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize("name", ["c.txt.gz", "c.txt.zst", "c.jsonl.gz", "c.jsonl.zst"])
@pytest.mark.parametrize("keep", [0.5, 0.99, 0.0])
def test_a_compressed_file_cut_short_is_an_error_not_partial_data(tmp_path, name, keep):
    """Cut anywhere (in the middle, in the last bytes, to nothing at all), a compressed file is
    an error naming it: never the documents before the cut taken silently."""
    lines = [f"line number {i} of a corpus" for i in range(50_000)]
    if ".jsonl" in name:
        data = "".join(json.dumps({"text": line}) + "\n" for line in lines).encode()
    else:
        data = "".join(line + "\n" for line in lines).encode()
    whole = compressed(name, data)
    (tmp_path / name).write_bytes(whole[: int(len(whole) * keep)])
    r = run("train", tmp_path / name, "--vocab-size", 300, "-o", tmp_path / "tok")
    assert_refused(r, tmp_path, str(tmp_path / name))
    assert ("cut short" in r.stderr) if keep == 0.0 else ("cannot read" in r.stderr)


# ------------------------------------------------------------------------------ folders


def test_a_folder_of_many_empty_files_is_refused(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    for i in range(500):
        (d / f"{i:03}.txt").write_bytes(b"")
    r = run("train", d, "-o", tmp_path / "tok")
    assert_refused(r, tmp_path, "no documents to train on: the inputs hold no text")
    (d / "250.txt").write_text("hello world\n" * 100)
    r = run("train", d, "--vocab-size", 270, "-o", tmp_path / "tok")
    assert_trained(r, tmp_path / "tok")
    assert report_value(r.stdout, "corpus").startswith("500 files (text)")


# ------------------------------------------------------------------------------ outputs


def test_an_output_under_a_file_is_refused_before_training(tmp_path):
    (tmp_path / "a.txt").write_text("hello world\n" * 100)
    (tmp_path / "file").write_text("not a folder")
    r = run("train", tmp_path / "a.txt", "-o", tmp_path / "file" / "tok")
    assert_one_line_error(r, f"cannot write the output {tmp_path / 'file' / 'tok'}: {tmp_path / 'file'} is not a folder")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc, where no file can be made")
def test_an_output_where_no_file_can_be_made_is_refused_before_training(tmp_path, monkeypatch, capsys):
    """Permissions do not stop root (as CI runs): the output's folder is tried with a file
    before training, so that training is not lost to a folder that cannot be written."""
    (tmp_path / "a.txt").write_text("hello world\n" * 100)

    def no_training(*args, **kwargs):
        raise AssertionError("trained before finding that the output cannot be written")

    monkeypatch.setattr("bpeforge.cli.train.train_on", no_training)
    assert main(["train", str(tmp_path / "a.txt"), "-o", "/proc/bpeforge-no-such/tok"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bpeforge: error: cannot write the output /proc/bpeforge-no-such/tok: cannot make a file in /proc (")
    assert len(err.splitlines()) == 1


class FillingDisk:
    """A fake disk that fills: files opened for writing take ``room`` bytes in all, then a write
    writes what fits and fails with ENOSPC, as a full disk does. Root ignores permissions, but
    not a full disk; this fakes one without mounting anything."""

    def __init__(self, room: int, real_open) -> None:
        self.room = room
        self.real_open = real_open

    def write_all(self, fd, data):
        """bpeforge._files' writer of a file's contents, on this disk."""
        n = len(memoryview(data).cast("B"))
        if n > self.room:
            os.write(fd, memoryview(data).cast("B")[: self.room])
            self.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= n
        os.write(fd, data)

    def open(self, file, mode="r", *args, **kwargs):
        f = self.real_open(file, mode, *args, **kwargs)
        if not any(c in mode for c in "wax+"):
            return f
        disk = self

        class Filling:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                f.close()

            def write(self, data):
                n = len(memoryview(data).cast("B"))
                if n > disk.room:
                    f.write(memoryview(data).cast("B")[: disk.room])
                    disk.room = 0
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                disk.room -= n
                return f.write(data)

            def __getattr__(self, name):
                return getattr(f, name)

        return Filling()


def output_sizes(tmp_path: Path, corpus: Path) -> int:
    assert main(["train", str(corpus), "--vocab-size", "400", "-q", "-o", str(tmp_path / "ref")]) == 0
    assert (tmp_path / "ref.tiktoken").is_symlink()  # into the folder: no bytes of its own to write
    return sum(p.stat().st_size for p in (tmp_path / "ref").iterdir())


@pytest.mark.parametrize("fill", [0.0, 0.3, 0.6, 0.9, 0.999])
@pytest.mark.parametrize("force", [False, True])
def test_a_disk_that_fills_leaves_no_half_written_output(tmp_path, monkeypatch, capsys, fill, force):
    """The disk fills somewhere while the outputs are written (in the ranks file, the token
    bytes, the config, the .tiktoken file): one error line, nothing half-written left, and
    with --force the tokenizer being replaced is still there, whole."""
    corpus = tmp_path / "in" / "a.txt"
    corpus.parent.mkdir()
    corpus.write_text(words_line(200_000))
    out = tmp_path / "out"
    out.mkdir()
    total = output_sizes(out, corpus)
    before = {}
    if force:
        assert main(["train", str(corpus), "--vocab-size", "300", "-q", "-o", str(out / "tok")]) == 0
        before = {p.name: p.read_bytes() for p in (out / "tok").iterdir()}
        before["tok.tiktoken"] = (out / "tok.tiktoken").read_bytes()
    capsys.readouterr()
    disk = FillingDisk(int(total * fill), io.open)
    monkeypatch.setattr("builtins.open", disk.open)
    monkeypatch.setattr(io, "open", disk.open)
    monkeypatch.setattr(bpeforge._files, "_write_all", disk.write_all)
    code = main(["train", str(corpus), "--vocab-size", "400", "-o", str(out / "tok")] + ["--force"] * force)
    monkeypatch.undo()
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err == f"bpeforge: error: cannot write the output {out / 'tok'}: No space left on device\n"
    assert captured.out == ""
    left = sorted(p.name for p in out.iterdir() if p.name not in ("ref", "ref.tiktoken"))
    if force:
        assert left == ["tok", "tok.tiktoken"]
        after = {p.name: p.read_bytes() for p in (out / "tok").iterdir()}
        after["tok.tiktoken"] = (out / "tok.tiktoken").read_bytes()
        assert after == before
        check_saved(out / "tok", "hello")
    else:
        assert left == []


def mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    if sys.platform != "linux" or os.geteuid() != 0:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    return r.returncode == 0


def test_a_small_real_disk_that_fills(tmp_path):
    """The same on a real file system that fills: a 64 KB tmpfs, where mounting one is allowed."""
    small = tmp_path / "small"
    if not mount_tmpfs(small, "64k"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        corpus = tmp_path / "a.txt"
        corpus.write_text(words_line(1_000_000))
        r = run("train", corpus, "--vocab-size", 4000, "-o", small / "tok")
        assert_refused(r, small, f"cannot write the output {small / 'tok'}: No space left on device")
        assert list(small.iterdir()) == []
    finally:
        subprocess.run(["umount", str(small)], check=True)
