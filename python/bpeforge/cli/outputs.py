"""Where ``bpeforge train`` writes: the tokenizer folder and the ``.tiktoken`` link beside it,
checked before training and switched whole after it; and the rule of ``--force`` every command
follows (:func:`check_free`)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Optional, Tuple

from .. import _files as files, huggingface, _io as io
from .._base import BaseTokenizer
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
    """Whether ``folder`` is empty or holds nothing but the files a save writes (and what a save
    cut off leaves): :func:`bpeforge._io.holds_only_saved_files`. A HuggingFace model folder
    has a ``tokenizer.json`` too, beside weights that ``--force`` must never delete."""
    return io.holds_only_saved_files(folder)


def check_parent(path: Path) -> None:
    """Refuses an output whose folder cannot be made or written: found before the work, not
    after it (:func:`bpeforge._files.check_writable_parent`)."""
    problem = files.check_writable_parent(path)
    if problem is not None:
        raise CLIError(f"cannot write the output {path}: {problem}")


def check_free(path: Path, force: bool, *, folder: bool, ours: Callable[[Path], bool] = io.holds_only_saved_files, what: str = "bpeforge's outputs") -> None:
    """The one rule of every command's outputs (docs/training.md, "Outputs"): nothing at
    ``path``, or an empty folder, is written; anything else is refused unless ``force``, and
    even then a folder only is replaced if ``ours`` says it holds nothing but what bpeforge
    writes there (a file is replaced whatever it holds; a symlink is replaced, never followed).
    ``folder``: whether the output is a folder (else a file)."""
    if not os.path.lexists(path):
        return
    kind = "folder" if folder else "file"
    if folder and not path.is_symlink():
        if not path.is_dir():
            raise CLIError(f"output {path} exists and is not a folder")
        try:
            empty = next(os.scandir(path), None) is None
        except OSError as e:
            raise CLIError(f"cannot read the output folder {path}: {e.strerror or e}") from None
        if empty:
            return
    elif path.is_dir() and not path.is_symlink():
        raise CLIError(f"output {kind} {path} exists and is a folder")
    if not force:
        raise CLIError(f"output {kind} {path} already exists (use --force to replace it)")
    if folder and not path.is_symlink() and not ours(path):
        raise CLIError(f"output folder {path} exists and holds something other than {what}; not replacing it, even with --force")


def check_output(folder: Path, tiktoken_file: Path, force: bool) -> None:
    """Refuses an existing output unless ``force`` (:func:`check_free`: even then only a folder
    that holds nothing but a saved tokenizer, so that ``-o ~ --force`` cannot wipe a home
    folder), and an output whose parent cannot be written."""
    check_parent(folder)
    check_free(folder, force, folder=True, what="a tokenizer bpeforge saved")
    check_free(tiktoken_file, force, folder=False)


def save_outputs(
    tokenizer: Optional[BaseTokenizer],
    folder: Path,
    tiktoken_file: Path,
    force: bool,
    output: Optional[str] = None,
    huggingface_json: Optional[dict] = None,
) -> float:
    """Writes the tokenizer folder and the ``.tiktoken`` link beside it so that they switch
    together: the folder is swapped whole in one step (:func:`bpeforge._io.write_saved`), and the
    ``.tiktoken`` file is a relative symlink to the folder's ``tokenizer.tiktoken`` (pointed
    there before a swap, while the folder still holds the old ranks; made after a first save).
    ``output``: the ``-o`` as typed, whose spelling of the two paths tiktoken's cache may hold.
    With ``huggingface_json`` (a training with HuggingFace's tie-break), the folder holds that
    ``tokenizer.json`` (and ``tokenizer.tiktoken`` only if there is a ``tokenizer``: tiktoken
    can express the ranks; an older ``.tiktoken`` beside it is then removed). Returns the
    seconds it took (for the report)."""
    t_start = time.perf_counter()
    parent = folder.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CLIError(f"cannot create the output folder's parent {parent}: {e.strerror or e}") from None
    link = f"{folder.name}/{io.RANKS_FILE}"
    try:
        if huggingface_json is None:
            assert tokenizer is not None
            contents = huggingface.saved_files(tokenizer)
        else:
            contents = {"tokenizer.json": json.dumps(huggingface_json, ensure_ascii=False).encode("utf-8")}
            if tokenizer is not None:
                contents[io.RANKS_FILE] = io.ranks_to_tiktoken(tokenizer.mergeable_ranks)
        with ctrl_c_held_back():  # the switch happens whole, or (on an error) not at all
            check_output(folder, tiktoken_file, force)  # again: it may have appeared while we trained
            if io.RANKS_FILE not in contents:
                io.write_saved(folder, contents)
                if tiktoken_file.is_symlink() or tiktoken_file.exists():
                    os.unlink(tiktoken_file)  # replaced (--force) by a folder it does not go with
            else:
                linked = folder.is_dir() and files.write_link(tiktoken_file, link)  # the old folder's ranks, as the old file had
                io.write_saved(folder, contents)
                if not linked and not files.write_link(tiktoken_file, link):
                    files.write_file(tiktoken_file, contents[io.RANKS_FILE])  # no symlinks here: a copy
        forget_cached_outputs(folder, tiktoken_file, output)
    except OSError as e:
        raise CLIError(f"cannot write the output {folder}: {e.strerror or e}") from None
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
