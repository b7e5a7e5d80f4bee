"""Crash consistency of every writer: each is killed (SIGKILL) at its 1st filesystem step, then
at its 2nd, and so on until it completes (the ``BPEFORGE_KILL_AT_STEP`` hook of
``bpeforge._files`` and of the compiled core's span counts writer), and after every kill:

- through bpeforge's loaders, the output is the complete old result or the complete new one,
  never missing, never a mix;
- through the other libraries' loaders (tiktoken, ``tokenizers``, nanochat's pickle), every file
  is whole and the files that must agree (the folder's, and ``out/T.tiktoken`` beside it) agree.

Tokenizers are tiny, and the writers other than ``train`` and ``count`` run from a short script
with tokenizers built without training, so that the whole file takes a few seconds per writer.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Optional

import pytest
import tiktoken
import tokenizers
from tiktoken.load import load_tiktoken_bpe

import bpeforge
from bpeforge import _files as files, _io as io

SAMPLE = "hello world, lower lowest 12345 alpha beta"
MAX_STEPS = 80


def run_killed_at_every_step(argv: list, cwd: Path, check: Callable[[int], None]) -> int:
    """Runs ``argv`` killed at step 1, 2, ... until it completes; ``check(n)`` after each kill and
    after the run that completes. Returns how many steps were cut."""
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": "", "PYTHONHASHSEED": "0"}
    for n in range(1, MAX_STEPS):
        r = subprocess.run(argv, cwd=cwd, env={**env, files.KILL_AT_STEP_ENV: str(n)}, capture_output=True, text=True, timeout=120)
        if r.returncode == 0:
            check(n)
            assert n > 2, "the writer took fewer steps than expected: is the hook reached?"
            return n - 1
        assert r.returncode == -9, f"step {n}: {r.returncode} {r.stderr}"
        check(n)
    raise AssertionError(f"the writer was still killed at step {MAX_STEPS}")


def tokenizer_version(folder: Path, versions: dict) -> Optional[str]:
    """Which of ``versions`` (name -> ranks) the saved folder is, through every loader, or None
    if there is no folder; fails on a mix or a part missing."""
    if not os.path.lexists(folder):
        return None
    loaded = bpeforge.Tokenizer.load(folder)
    names = [name for name, ranks in versions.items() if ranks == loaded.mergeable_ranks]
    assert len(names) == 1, "the folder loads as neither the old tokenizer nor the new one"
    assert load_tiktoken_bpe(str(folder / io.RANKS_FILE)) == loaded.mergeable_ranks
    if (folder / io.HF_TOKENIZER_FILE).exists() and (folder / io.META_FILE).exists():  # (version 1: bpeforge's config)
        hf = tokenizers.Tokenizer.from_file(str(folder / io.HF_TOKENIZER_FILE))
        assert hf.encode(SAMPLE).ids == loaded.encode(SAMPLE)
        config = json.loads((folder / io.HF_CONFIG_FILE).read_text())
        assert config.get("bos_token") in (None, *loaded.special_tokens)
    if (folder / io.PICKLE_FILE).exists():
        enc = pickle.loads((folder / io.PICKLE_FILE).read_bytes())
        assert enc.encode_ordinary(SAMPLE) == loaded.encode(SAMPLE)
    return names[0]


def check_sibling(link: Path, folder: Path) -> None:
    """``out/T.tiktoken`` is absent, or whole and the folder's own ranks."""
    if os.path.lexists(link):
        assert load_tiktoken_bpe(str(link)) == load_tiktoken_bpe(str(folder / io.RANKS_FILE))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("crash-corpus")
    words = ["alpha", "beta", "gamma", "lower", "lowest", "hello", "world"]
    lines = [" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(10)) for i in range(150)]
    (d / "docs.txt").write_text("\n".join(lines) + "\n")
    return d / "docs.txt"


@pytest.fixture(autouse=True)
def no_tiktoken_cache(monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would serve a file's old copy by its path


def test_train_killed_at_every_step(tmp_path, corpus):
    # The previous release's outputs: a version-1 folder and a regular .tiktoken file beside it.
    out = tmp_path / "out"
    out.mkdir()
    v1 = Path(__file__).parent / "data" / "saved-v1"
    (out / "T").mkdir()
    for p in v1.iterdir():
        (out / "T" / p.name).write_bytes(p.read_bytes())
    (out / "T.tiktoken").write_bytes((v1 / io.RANKS_FILE).read_bytes())
    versions = {"old": bpeforge.Tokenizer.load(out / "T").mergeable_ranks}
    train = [sys.executable, "-m", "bpeforge", "train", str(corpus), "-q", "--vocab-size", "300", "-o"]
    assert subprocess.run(train + [str(tmp_path / "new" / "T")], capture_output=True).returncode == 0
    versions["new"] = bpeforge.Tokenizer.load(tmp_path / "new" / "T").mergeable_ranks
    seen = set()

    def check(n: int) -> None:
        version = tokenizer_version(out / "T", versions)
        assert version is not None, f"step {n}: the output is missing"
        seen.add(version)
        check_sibling(out / "T.tiktoken", out / "T")

    run_killed_at_every_step(train + [str(out / "T"), "--force"], tmp_path, check)
    assert seen == {"old", "new"}
    assert (out / "T.tiktoken").is_symlink() and os.readlink(out / "T.tiktoken") == f"T/{io.RANKS_FILE}"


def test_a_first_train_killed_at_every_step_leaves_nothing_or_everything(tmp_path, corpus):
    out = tmp_path / "out"
    train = [sys.executable, "-m", "bpeforge", "train", str(corpus), "-q", "--vocab-size", "300", "-o"]
    assert subprocess.run(train + [str(tmp_path / "ref" / "T")], capture_output=True).returncode == 0
    versions = {"new": bpeforge.Tokenizer.load(tmp_path / "ref" / "T").mergeable_ranks}

    def check(n: int) -> None:
        if os.path.lexists(out / "T"):
            assert tokenizer_version(out / "T", versions) == "new"
        check_sibling(out / "T.tiktoken", out / "T")
        for leftover in [p for p in out.iterdir()] if out.exists() else []:
            # Only temporary names beside the outputs, which nothing loads.
            assert leftover.name in ("T", "T.tiktoken") or files.is_leftover(leftover.name), leftover
        # and a new run is not refused for what the killed one left (no --force: no output yet)
        if not os.path.lexists(out / "T"):
            assert not os.path.lexists(out / "T.tiktoken")

    # (--force: a run killed once the folder is in place has written the output)
    run_killed_at_every_step(train + [str(out / "T"), "--force"], tmp_path, check)


SCRIPT = """
import sys
from pathlib import Path
import bpeforge

def tokenizer(merges):
    ranks = {bytes([i]): i for i in range(256)}
    for token in merges:
        ranks[token] = len(ranks)
    return bpeforge.Tokenizer(ranks, "nanochat", bpeforge._base.NANOCHAT_SPECIAL_TOKENS)

version, writer, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
tok = tokenizer([b"lo", b"low", b"er"] if version == "old" else [b"he", b"ll", b"hell", b"hello", b"wo"])
if writer == "save":
    tok.save(out)
elif writer == "nanochat":
    from bpeforge.nanochat import RustBPETokenizer
    RustBPETokenizer(tok.encoding, "<|bos|>").save(out)
elif writer.startswith("export-"):
    # (the tokenizer exported is saved by a run without the kill hook: see script())
    import bpeforge.cli
    src = str(out.parent.parent / f"src-{version}")
    raise SystemExit(bpeforge.cli.main(["export", src, "--format", writer[len("export-"):], "-o", str(out), "--force"]))
elif writer == "sweep":
    from bpeforge.cli.sweep import save_sweep
    from bpeforge._sweep import Sweep
    sizes = {256 + 3: tok} if version == "old" else {256 + 5: tok}
    sweep = Sweep(sizes, [])
    save = sweep.save
    sweep.save = lambda directory: save(directory, plot=False)  # (matplotlib is slow to import)
    save_sweep(sweep, out, True)
"""


def script(tmp_path: Path, version: str, writer: str, out: Path) -> list:
    """The command that runs ``writer`` on the ``version`` ("old" or "new") tokenizer to ``out``."""
    path = tmp_path / "writer.py"
    path.write_text(textwrap.dedent(SCRIPT))
    if writer.startswith("export-") and not (tmp_path / f"src-{version}").exists():
        run(script(tmp_path, version, "save", tmp_path / f"src-{version}"))
    return [sys.executable, str(path), version, writer, str(out)]


def run(argv: list) -> None:
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def script_versions(tmp_path: Path) -> dict:
    """The ranks of the script's old and new tokenizers."""
    versions = {}
    for version in ("old", "new"):
        run(script(tmp_path, version, "save", tmp_path / f"ref-{version}"))
        versions[version] = bpeforge.Tokenizer.load(tmp_path / f"ref-{version}").mergeable_ranks
    return versions


@pytest.mark.parametrize("writer", ["save", "nanochat", "export-huggingface"])
def test_folder_writers_killed_at_every_step(tmp_path, writer):
    versions = script_versions(tmp_path)
    out = tmp_path / "out" / "T"
    run(script(tmp_path, "old", writer, out))
    seen = set()

    def check(n: int) -> None:
        version = tokenizer_version(out, versions)
        assert version is not None, f"step {n}: the output is missing"
        seen.add(version)
        if writer == "nanochat":
            assert (out / io.PICKLE_FILE).is_file()

    run_killed_at_every_step(script(tmp_path, "new", writer, out), tmp_path, check)
    assert seen == {"old", "new"}


def test_export_tiktoken_killed_at_every_step(tmp_path):
    versions = script_versions(tmp_path)
    out = tmp_path / "out" / "t.tiktoken"
    run(script(tmp_path, "old", "export-tiktoken", out))
    seen = set()

    def check(n: int) -> None:
        ranks = load_tiktoken_bpe(str(out))
        assert ranks in versions.values(), f"step {n}: neither the old ranks nor the new"
        seen.add(ranks == versions["new"])

    run_killed_at_every_step(script(tmp_path, "new", "export-tiktoken", out), tmp_path, check)
    assert seen == {False, True}


def test_sweep_killed_at_every_step(tmp_path):
    out = tmp_path / "out" / "S"
    run(script(tmp_path, "old", "sweep", out))
    old = sorted(p.name for p in out.iterdir())
    seen = set()

    def check(n: int) -> None:
        names = sorted(p.name for p in out.iterdir())
        assert names in (old, ["261", "261.tiktoken", "sweep.csv", "sweep.json"]), f"step {n}: {names}"
        seen.add(tuple(names))
        for name in names:
            if name.isdecimal():
                tok = bpeforge.Tokenizer.load(out / name)
                assert len(tok.mergeable_ranks) == int(name)
                assert load_tiktoken_bpe(str(out / f"{name}.tiktoken")) == tok.mergeable_ranks

    run_killed_at_every_step(script(tmp_path, "new", "sweep", out), tmp_path, check)
    assert len(seen) == 2


def test_count_killed_at_every_step(tmp_path, corpus):
    out = tmp_path / "c.parquet"
    count = [sys.executable, "-m", "bpeforge", "count", "-q", "-o", str(out)]
    other = tmp_path / "other.txt"
    other.write_text("entirely other words here\n" * 20)
    assert subprocess.run(count + [str(other)], capture_output=True).returncode == 0
    old = bpeforge.SpanCounts.load(out)
    new_path = tmp_path / "new.parquet"
    assert subprocess.run(count[:-1] + [str(new_path), str(corpus)], capture_output=True).returncode == 0
    new = bpeforge.SpanCounts.load(new_path)
    seen = set()

    def check(n: int) -> None:
        loaded = bpeforge.SpanCounts.load(out)
        assert loaded in (old, new), f"step {n}: neither the old counts nor the new"
        seen.add(loaded == new)

    steps = run_killed_at_every_step(count + [str(corpus), "--force"], tmp_path, check)
    assert seen == {False, True} and steps >= 3
