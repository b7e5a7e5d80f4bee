"""Where ``bpeforge train`` writes: the tokenizer folder and the ``.tiktoken`` file beside it,
checked before training and written whole or not at all after it."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Optional, Tuple

from .. import io
from ..base import BaseTokenizer
from .arguments import EXIT_USAGE, CLIError
from .signals import ctrl_c_held_back


def output_paths(output: str) -> Tuple[Path, Path]:
    """(folder, .tiktoken file) for ``-o``: ``out/tok`` -> ``out/tok/`` and ``out/tok.tiktoken``;
    ``out/tok.tiktoken`` -> the same two. The suffix is taken in any case, as ``save`` and
    ``load`` take it, and the file keeps the case typed.

    >>> [str(p) for p in output_paths("out/tok")], [str(p) for p in output_paths("out/tok.tiktoken")]
    (['out/tok', 'out/tok.tiktoken'], ['out/tok', 'out/tok.tiktoken'])
    >>> [str(p) for p in output_paths("out/tok.TikToken")]
    ['out/tok', 'out/tok.TikToken']
    """
    path = Path(output)
    suffix = ".tiktoken"
    if io.named_like_ranks_file(path):
        suffix = path.suffix
        path = path.with_suffix("")
    if not path.name or path.name in (".", ".."):
        raise CLIError(f"-o {output!r}: give a folder name, e.g. -o out/tok", EXIT_USAGE)
    if io.named_like_ranks_file(path):
        # `x.tiktoken.tiktoken`: the folder would be named like a ranks file.
        raise CLIError(f"-o {output!r}: the folder would be named like a .tiktoken ranks file; give e.g. -o out/tok", EXIT_USAGE)
    if ".." in path.parts:
        # Where the system takes it (through links): making `a/../b`'s parents would create `a`.
        path = path.parent.resolve() / path.name
    return path, path.with_name(path.name + suffix)


def holds_only_a_saved_tokenizer(folder: Path) -> bool:
    """Whether ``folder`` is empty or holds a tokenizer bpeforge saved and nothing else: only
    the files ``save`` writes (and what a save cut off leaves), and its ``tokenizer.json`` (if
    there) says it is bpeforge's. A HuggingFace model folder also has a ``tokenizer.json``,
    beside weights that ``--force`` must never delete."""
    try:
        names = {p.name for p in folder.iterdir()}
    except OSError:
        return False
    names = {n for n in names if not io.is_save_leftover(folder, n)}
    if not names <= {io.CONFIG_FILE, io.RANKS_FILE, io.TOKEN_BYTES_FILE}:
        return False
    if io.CONFIG_FILE in names:
        try:
            config = json.loads((folder / io.CONFIG_FILE).read_bytes())
        except (OSError, ValueError):
            return False
        return isinstance(config, dict) and config.get("format") == io.FORMAT
    return True


def check_parent(folder: Path) -> None:
    """Refuses an output whose parent cannot be made or written: found before training, not
    after it. The closest existing ancestor must be a folder this process may write in, and
    in which a file can be made: permissions do not stop root, but a read-only file system or
    a folder such as ``/proc`` does, and only trying finds out (an empty file, removed at once)."""
    parent = folder.absolute().parent
    while not (parent.exists() or parent.is_symlink()) and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise CLIError(f"cannot write the output {folder}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CLIError(f"cannot write the output {folder}: no permission to write in {parent}")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{folder.name}.probe-", dir=parent)
    except OSError as e:
        raise CLIError(f"cannot write the output {folder}: cannot make a file in {parent} ({e.strerror or e})") from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass


def check_output(folder: Path, tiktoken_file: Path, force: bool) -> None:
    """Refuses an existing output unless ``force``; even then only replaces a folder that is empty
    or holds a saved tokenizer (so that ``-o ~ --force`` cannot wipe a home folder). Also refuses
    an output whose parent cannot be written."""
    check_parent(folder)
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir():
            raise CLIError(f"output {folder} exists and is not a folder")
        if not force:
            raise CLIError(f"output folder {folder} already exists (use --force to replace it)")
        if not holds_only_a_saved_tokenizer(folder):
            raise CLIError(
                f"output folder {folder} exists and holds something other than a tokenizer bpeforge saved; not replacing it, even with --force"
            )
    if tiktoken_file.exists():
        if tiktoken_file.is_dir():
            raise CLIError(f"output file {tiktoken_file} exists and is a folder")
        if not force:
            raise CLIError(f"output file {tiktoken_file} already exists (use --force to replace it)")


def save_outputs(
    tokenizer: Optional[BaseTokenizer],
    folder: Path,
    tiktoken_file: Path,
    force: bool,
    output: Optional[str] = None,
    huggingface_json: Optional[dict] = None,
) -> float:
    """Writes the tokenizer folder and the ``.tiktoken`` file, each complete or not at all:
    the folder is written under a temporary name beside it and renamed at the end. ``output``:
    the ``-o`` as typed, whose spelling of the two paths tiktoken's cache may hold. With
    ``huggingface_json`` (a training with HuggingFace's tie-break), the folder holds that
    ``tokenizer.json`` instead, and the ``.tiktoken`` file is written only if there is a
    ``tokenizer`` (tiktoken can express the ranks; an older one is then removed). Returns the
    seconds it took (for the report)."""
    t_start = time.perf_counter()
    parent = folder.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CLIError(f"cannot create the output folder's parent {parent}: {e.strerror or e}") from None
    tag = f"{os.getpid()}"
    tmp = parent / f".{folder.name}.tmp-{tag}"
    old = parent / f".{folder.name}.old-{tag}"
    tmp_file = parent / f".{tiktoken_file.name}.tmp-{tag}"
    try:
        if huggingface_json is None:
            assert tokenizer is not None
            io.save(tokenizer, tmp)
        else:
            tmp.mkdir()
            io.write_atomic(tmp / "tokenizer.json", json.dumps(huggingface_json, ensure_ascii=False).encode("utf-8"))
        if tokenizer is not None:
            tmp_file.write_bytes(io.ranks_to_tiktoken(tokenizer.mergeable_ranks))
        with ctrl_c_held_back():  # the two renames happen together, or (on an error) not at all
            check_output(folder, tiktoken_file, force)  # again: it may have appeared while we trained
            if folder.exists():
                os.rename(folder, old)
            os.rename(tmp, folder)
            try:
                if tokenizer is not None:
                    os.replace(tmp_file, tiktoken_file)
                elif tiktoken_file.exists():
                    os.unlink(tiktoken_file)  # replaced (--force) by a folder it does not go with
            except OSError:
                os.rename(folder, tmp)  # take the new folder back out, so that nothing is half-done
                raise
        forget_cached_outputs(folder, tiktoken_file, output)
    except OSError as e:
        raise CLIError(f"cannot write the output {folder}: {e.strerror or e}") from None
    finally:
        if old.exists() or old.is_symlink():
            if folder.exists():
                if old.is_symlink():
                    old.unlink()  # a link to the replaced tokenizer: the link goes, not its target
                else:
                    shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(old, folder)  # put the replaced tokenizer back
        shutil.rmtree(tmp, ignore_errors=True)
        if tmp_file.exists():
            tmp_file.unlink()
    return time.perf_counter() - t_start


def forget_cached_outputs(folder: Path, tiktoken_file: Path, output: Optional[str]) -> None:
    """Drops tiktoken's cached copies of the two ranks files just replaced, under the paths
    written and under the ``-o`` as typed (``./out/tok``, ``a/../b``): tiktoken keys its cache
    by the path string, and would serve its copy of the old file."""
    replaced = [str(tiktoken_file), str(folder / io.RANKS_FILE)]
    if output:
        typed = output.rstrip("/") or output
        stem = typed[: -len(tiktoken_file.suffix)] if io.named_like_ranks_file(Path(typed)) else typed
        replaced += [stem + tiktoken_file.suffix, os.path.join(stem, io.RANKS_FILE)]
    for path in replaced:
        io.forget_tiktoken_cache(path)
