"""bpeforge._inputs.sources: which files are read (formats from extensions, folders, globs, each
file once, standard input, the standard library)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bpeforge import _inputs as inputs
from bpeforge._inputs import InputError, detect, expand_inputs


@pytest.mark.parametrize(
    "name, expected",
    [
        ("a.txt", ("text", None)),
        ("a.TXT", ("text", None)),
        ("a.text.gz", ("text", "gzip")),
        ("shard.jsonl", ("jsonl", None)),
        ("shard.ndjson.zst", ("jsonl", "zstd")),
        ("shard.jsonl.zstd", ("jsonl", "zstd")),
        ("x.parquet", ("parquet", None)),
        ("x.pq", ("parquet", None)),
        ("notes.md", (None, None)),
        ("README", (None, None)),
        ("a.gz", (None, "gzip")),
    ],
)
def test_detect(name, expected):
    assert detect(Path(name)) == expected


def test_folders_are_walked_recursively_sorted_skipping_hidden_and_unknown(tmp_path):
    for rel in ["b.txt", "a.jsonl", "sub/z.parquet", "sub/c.txt.gz", "notes.md", ".hidden.txt", ".git/x.txt", "sub/.cache/y.txt"]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")
    found = [(s.path.relative_to(tmp_path).as_posix(), s.format, s.compression) for s in expand_inputs([str(tmp_path)])]
    assert found == [
        ("a.jsonl", "jsonl", None),
        ("b.txt", "text", None),
        ("sub/c.txt.gz", "text", "gzip"),
        ("sub/z.parquet", "parquet", None),
    ]
    only_text = [s.path.name for s in expand_inputs([str(tmp_path)], "text")]
    assert only_text == ["b.txt", "c.txt.gz"]


def test_folders_are_walked_through_links_but_never_twice(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x.txt").write_text("x")
    (tmp_path / "top").mkdir()
    (tmp_path / "top" / "y.txt").write_text("y")
    (tmp_path / "top" / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "top" / "loop").symlink_to(tmp_path / "top")  # would walk forever
    found = [s.path.relative_to(tmp_path).as_posix() for s in expand_inputs([str(tmp_path / "top")])]
    assert found == ["top/y.txt", "top/linked/x.txt"]


def test_a_folder_that_cannot_be_read_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.txt").write_text("a")
    (tmp_path / "locked").mkdir()
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)  # as root, chmod 000 would not stop us
    with pytest.raises(InputError, match="locked: cannot read the folder \\(Permission denied\\)"):
        expand_inputs([str(tmp_path)])


def test_a_glob_of_folders_without_known_files_is_an_error(tmp_path):
    (tmp_path / "emptyd1").mkdir()
    (tmp_path / "emptyd2").mkdir()
    (tmp_path / "emptyd2" / "notes.md").write_text("x")
    with pytest.raises(InputError, match=r"emptyd\*: matches only folders with no files of a known format"):
        expand_inputs([str(tmp_path / "emptyd*")])


def test_globs_files_and_order(tmp_path):
    for name in ["s2.txt", "s10.txt", "s1.txt", "other.jsonl"]:
        (tmp_path / name).write_text("x")
    got = [s.path.name for s in expand_inputs([str(tmp_path / "s*.txt"), str(tmp_path / "other.jsonl")])]
    assert got == ["s1.txt", "s10.txt", "s2.txt", "other.jsonl"]
    assert [s.path.name for s in expand_inputs([str(tmp_path / "**" / "*.jsonl")])] == ["other.jsonl"]


def test_a_double_star_glob_gives_each_file_once_sorted(tmp_path):
    # `**` matches the folders too: walking them must not add their files again.
    for rel in ["top.txt", "a/b/x.txt", "a/y.jsonl"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    got = [s.path.relative_to(tmp_path).as_posix() for s in expand_inputs([str(tmp_path / "**")])]
    assert got == ["a/b/x.txt", "a/y.jsonl", "top.txt"]


def test_a_file_reached_twice_is_read_once(tmp_path):
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "s1.txt").write_text("one\n")
    (tmp_path / "shards" / "s2.txt").write_text("two\n")
    (tmp_path / "shards" / "latest.txt").symlink_to(tmp_path / "shards" / "s2.txt")
    os.link(tmp_path / "shards" / "s1.txt", tmp_path / "hard.txt")
    sources = expand_inputs([str(tmp_path / "shards"), str(tmp_path / "shards" / "s1.txt"), str(tmp_path / "hard.txt"), "-"])
    kept, left_out = inputs.unique_sources(sources)
    names = lambda ss: [s.path.name for s in ss]  # noqa: E731
    assert names(sources) == ["latest.txt", "s1.txt", "s2.txt", "s1.txt", "hard.txt", "-"]
    assert names(kept) == ["latest.txt", "s1.txt", "-"]
    assert [(again.path.name, first.path.name) for again, first in left_out] == [("s2.txt", "latest.txt"), ("s1.txt", "s1.txt"), ("hard.txt", "s1.txt")]


@pytest.mark.parametrize(
    "make, arg, message",
    [
        (None, "missing.txt", "no such file or folder"),
        (None, "nothing*.txt", "no file matches"),
        ("notes.md", "notes.md", "cannot tell the format"),
        ("data.parquet.gz", "data.parquet.gz", "compressed Parquet"),
        ("emptydir/", "emptydir", "no files of a known format"),
    ],
)
def test_expand_errors(tmp_path, monkeypatch, make, arg, message):
    monkeypatch.chdir(tmp_path)
    if make and make.endswith("/"):
        (tmp_path / make).mkdir()
        (tmp_path / make / "readme.md").write_text("x")
    elif make:
        (tmp_path / make).write_text("x")
    with pytest.raises(InputError, match=re.escape(message)) as e:
        expand_inputs([arg])
    assert arg in str(e.value)


def test_input_format_overrides_extension_and_stdin(tmp_path):
    (tmp_path / "corpus.dat").write_text("x")
    [s] = expand_inputs([str(tmp_path / "corpus.dat")], "jsonl")
    assert s.format == "jsonl"
    [s] = expand_inputs(["-"])
    assert (str(s.path), s.format) == ("-", "text")
    with pytest.raises(InputError, match="standard input"):
        expand_inputs(["-"], "parquet")


def test_stdlib_sources_are_sorted_py_files_without_site_packages():
    root, sources = inputs.stdlib_sources()
    assert len(sources) > 100
    paths = [s.path for s in sources]
    assert all(p.suffix == ".py" and s.format == "text" for p, s in zip(paths, sources))
    assert not any("site-packages" in p.parts or "__pycache__" in p.parts for p in paths)
    assert root / "argparse.py" in paths
    assert inputs.stdlib_sources()[1] == sources  # deterministic
