"""Writing outputs so that a crash never loses or mixes them (see docs/tokenizer.md, "Crash
consistency").

- :func:`write_file` replaces one file: a temporary file beside it, created exclusively under an
  unpredictable name (``mkstemp``: ``O_CREAT|O_EXCL``, so a symlink planted there is never
  followed), written, flushed to disk, then renamed over the target; the folder is flushed too.
- :func:`new_folder` builds a folder the same way: a temporary folder beside it (``mkdtemp``),
  filled, flushed, then switched in one step: renamed into place if there is no folder yet
  (``RENAME_NOREPLACE``), or swapped with the existing one (``renameat2(RENAME_EXCHANGE)``,
  Linux), after which the old one, now under the temporary name, is removed. Every reader sees
  the whole old folder or the whole new one. Without ``RENAME_EXCHANGE`` (another system, or a
  file system that lacks it) the old folder is renamed away first and the new one renamed in:
  a crash between those two renames leaves no folder at the name, and the old one beside it.
- :func:`write_link` points a symlink somewhere, atomically (a new link under a temporary name,
  renamed over the old): ``bpeforge train``'s ``out/tok.tiktoken`` is a relative link into
  ``out/tok/``, so that it switches with the folder.

Temporary names are ``.NAME.XXXXXXXX.tmp`` beside the target. A save cut off leaves one behind:
loading never looks at them, and the next save of the same name removes those whose writer is
gone (each writer holds an ``flock`` on its temporary file or folder while it works, released
when its process ends, however it ends).

Testing hook: with ``BPEFORGE_KILL_AT_STEP=N`` set, the process kills itself (SIGKILL) just
before its N-th filesystem step (each temporary created, file written, rename, swap or removal
is one step), so that tests can cut a save off at every step in turn. The compiled core's span
counts writer honours the same variable with its own count.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, ContextManager, Iterator, Optional, Union

from ._errors import TokenizerFileError

PathLike = Union[str, "os.PathLike[str]"]

KILL_AT_STEP_ENV = "BPEFORGE_KILL_AT_STEP"

_step_lock = threading.Lock()
_steps_done = 0


def step() -> None:
    """Marks the next filesystem step: with ``BPEFORGE_KILL_AT_STEP=N``, the N-th step of the
    process kills it (tests only; see the module docstring)."""
    global _steps_done
    at = os.environ.get(KILL_AT_STEP_ENV)
    if not at:
        return
    with _step_lock:
        _steps_done += 1
        if _steps_done == int(at):
            os.kill(os.getpid(), signal.SIGKILL)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()  # read once, at import: os.umask can only be read by setting it

_LEFTOVER_RANDOM = r"[a-z0-9_]{8}"  # mkstemp's and mkdtemp's random part


def _prefix(name: str) -> str:
    """The start of a temporary name for ``name``: ``.NAME.`` (the name cut so that the whole
    temporary name stays within 255 bytes)."""
    return f".{name[:100]}."


def is_leftover_of(name: str, entry: str) -> bool:
    """Whether ``entry`` is named as a temporary file or folder of a save of ``name``.

    >>> is_leftover_of("tok", ".tok.k2j_x9a0.tmp"), is_leftover_of("tok", ".tok.tmp"), is_leftover_of("tok", ".toke.k2j_x9a0.tmp")
    (True, False, False)
    """
    return re.fullmatch(re.escape(_prefix(name)) + _LEFTOVER_RANDOM + r"\.tmp", entry) is not None


def is_leftover(entry: str) -> bool:
    """Whether ``entry`` is named as any save's temporary file or folder (``.NAME.XXXXXXXX.tmp``)."""
    return re.fullmatch(r"\..+\." + _LEFTOVER_RANDOM + r"\.tmp", entry, flags=re.DOTALL) is not None


LEFTOVER_AGE = 10.0
"""Seconds a temporary file or folder must have been left unchanged before it is taken for a
leftover: a save locks its own right after making it, and this covers that instant."""


def remove_leftovers(parent: Path, name: str) -> None:
    """Removes the temporary files and folders that cut-off saves of ``name`` left in ``parent``:
    those no process holds locked (a save under way holds its own) and unchanged for
    :data:`LEFTOVER_AGE` seconds. Symlinks, and anything that cannot be opened or locked, are
    left alone."""
    try:
        entries = [e for e in os.listdir(parent) if is_leftover_of(name, e)]
    except OSError:
        return
    for entry in entries:
        path = parent / entry
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue  # a symlink (O_NOFOLLOW), or gone already
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its save is still under way
            info = os.fstat(fd)
            if time.time() - info.st_ctime < LEFTOVER_AGE:
                continue
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        finally:
            os.close(fd)


def fsync_folder(folder: PathLike) -> None:
    """Flushes ``folder``'s entries (names made, renamed or removed) to disk."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return  # a system whose folders cannot be opened: nothing more to do
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def create_file(path: PathLike, data: bytes) -> None:
    """Creates the file ``path`` with ``data``, flushed to disk; FileExistsError if anything
    (a symlink too: it is never followed) is at that name. For files of a folder being built
    by :func:`new_folder`."""
    step()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except OSError as e:  # a full disk: named by the file (new_folder names it by its final place)
        if e.errno is None or e.filename is not None:
            raise
        raise type(e)(e.errno, e.strerror, os.fspath(path)) from None
    finally:
        os.close(fd)


def write_file(path: PathLike, data: bytes) -> None:
    """Replaces the file ``path`` with ``data`` atomically (see the module docstring): a reader
    sees the whole old file or the whole new one; a symlink at ``path`` is replaced, not
    followed. An OSError (a full disk, a folder that is a file) names ``path``, not the
    temporary file."""
    try:
        _write_file(Path(path), data)
    except OSError as e:
        if e.errno is None:
            raise
        raise type(e)(e.errno, e.strerror, os.fspath(path)) from None


def _write_file(path: Path, data: bytes) -> None:
    parent = path.parent
    remove_leftovers(parent, path.name)
    step()
    fd, tmp = tempfile.mkstemp(prefix=_prefix(path.name), suffix=".tmp", dir=parent)
    renamed = False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.fchmod(fd, 0o666 & ~_UMASK)  # as open() would make it (mkstemp makes it private)
        step()
        _write_all(fd, data)
        os.fsync(fd)
        step()
        os.replace(tmp, path)
        renamed = True
    finally:
        os.close(fd)
        if not renamed:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    fsync_folder(parent)


# ------------------------------------------------------------------------------ renameat2

AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2

_renameat2 = None
if hasattr(os, "uname") and os.uname().sysname == "Linux":
    try:
        _renameat2 = ctypes.CDLL(None, use_errno=True).renameat2  # glibc 2.28 and later
        _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        _renameat2.restype = ctypes.c_int
    except (AttributeError, OSError):
        _renameat2 = None

UNSUPPORTED = (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP)
"""What renameat2 fails with where the system or the file system lacks a flag."""


def renameat2(source: PathLike, target: PathLike, flags: int) -> None:
    """``renameat2(2)``: OSError (EINVAL, ENOSYS) where the system or file system cannot do it."""
    if _renameat2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available on this system")
    if _renameat2(AT_FDCWD, os.fsencode(source), AT_FDCWD, os.fsencode(target), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), os.fspath(source), None, os.fspath(target))


def exchange(a: PathLike, b: PathLike) -> None:
    """Swaps the entries ``a`` and ``b`` in one step (``RENAME_EXCHANGE``)."""
    renameat2(a, b, RENAME_EXCHANGE)


def rename_new(source: PathLike, target: PathLike) -> None:
    """Renames ``source`` to ``target``, which must not exist (``RENAME_NOREPLACE`` where the
    system has it, so that an empty folder made at ``target`` meanwhile is not replaced)."""
    try:
        renameat2(source, target, RENAME_NOREPLACE)
    except OSError as e:
        if e.errno not in UNSUPPORTED:
            raise
        os.rename(source, target)


# ------------------------------------------------------------------------------ folders


def _remove(path: Path) -> None:
    """Removes ``path``: a folder with everything in it, or a file or symlink (never followed)."""
    step()
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _fsync_tree(folder: Path) -> None:
    """Flushes every folder under ``folder`` (files are flushed as they are written)."""
    for root, dirs, _ in os.walk(folder):
        for d in dirs:
            fsync_folder(os.path.join(root, d))
    fsync_folder(folder)


@contextlib.contextmanager
def new_folder(
    folder: PathLike, *, guard: Optional[Callable[[], ContextManager]] = None, before_switch: Optional[Callable[[], None]] = None
) -> Iterator[Path]:
    """Yields a new empty temporary folder beside ``folder``; once the ``with`` body has filled
    it (with :func:`create_file`, :func:`write_file` or nested saves), it replaces ``folder``
    in one step, or is removed if the body raises. See the module docstring. ``guard``: a
    context manager to switch inside (e.g. one holding Ctrl-C back); ``before_switch``: called
    inside it first (e.g. to check the output again)."""
    folder = Path(folder)
    parent = folder.parent
    remove_leftovers(parent, folder.name)
    step()
    tmp = Path(tempfile.mkdtemp(prefix=_prefix(folder.name), suffix=".tmp", dir=parent))
    lock = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    placed = False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # ours while we work: remove_leftovers leaves it alone
        os.chmod(tmp, 0o777 & ~_UMASK)  # as mkdir would make it (mkdtemp makes it private)
        try:
            yield tmp
        except OSError as e:  # a file of the temporary folder named by where it was to go
            if e.errno is None or e.filename is None or Path(e.filename).parent != tmp:
                raise
            raise type(e)(e.errno, e.strerror, os.fspath(folder / Path(e.filename).name)) from None
        _fsync_tree(tmp)
        with guard() if guard is not None else contextlib.nullcontext():
            if before_switch is not None:
                before_switch()
            _switch(tmp, folder)
            placed = True
    finally:
        os.close(lock)
        if not placed:
            _remove(tmp)
    fsync_folder(parent)


def _switch(tmp: Path, folder: Path) -> None:
    """Puts the complete folder ``tmp`` at ``folder``; the old ``folder``, if any, is removed."""
    if not (folder.exists() or folder.is_symlink()):
        step()
        rename_new(tmp, folder)
        return
    if not folder.is_symlink() and not folder.is_dir():
        raise FileExistsError(errno.EEXIST, "exists and is not a folder", os.fspath(folder))
    step()
    try:
        exchange(tmp, folder)
    except OSError as e:
        if e.errno not in UNSUPPORTED:
            raise
        _switch_in_two_renames(tmp, folder)
        return
    _remove(tmp)  # the old folder (or a symlink that was at the name), now under the temporary name


def _switch_in_two_renames(tmp: Path, folder: Path) -> None:
    """Where folders cannot be swapped: the old folder renamed to a temporary name, the new one
    renamed into place, the old one removed; if the second rename fails, the old one is put back."""
    old = folder.with_name(f"{_prefix(folder.name)}{os.urandom(4).hex()}.tmp")
    step()
    rename_new(folder, old)
    try:
        step()
        rename_new(tmp, folder)
    except BaseException:
        with contextlib.suppress(OSError):
            rename_new(old, folder)
        raise
    _remove(old)


def write_link(path: PathLike, target: str) -> bool:
    """Makes ``path`` a symlink to ``target`` (relative to ``path``'s folder), atomically,
    replacing whatever file or link is there. Returns False, changing nothing, where symlinks
    cannot be made (a file system without them)."""
    path = Path(path)
    with contextlib.suppress(OSError):
        if os.readlink(path) == target:
            return True
    while True:
        tmp = path.with_name(f"{_prefix(path.name)}{os.urandom(4).hex()}.tmp")
        step()
        try:
            os.symlink(target, tmp)  # fails if anything is at that name: never follows
            break
        except FileExistsError:
            continue
        except OSError as e:
            if e.errno in (errno.EPERM, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
                return False
            raise
    try:
        step()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_folder(path.parent)
    return True


# ------------------------------------------------------------------------------ reading


def read_member(folder: Path, name: str) -> bytes:
    """The contents of file ``name`` of ``folder``, which must be a regular file in it: a symlink
    is refused (never followed out of the folder), as is anything else not a regular file
    (FileNotFoundError if nothing is there). Errors name the file, never its contents."""
    path = folder / name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ELOOP or (e.errno == errno.ENXIO and path.is_symlink()):
            raise TokenizerFileError(f"{path} is a symbolic link; a saved tokenizer's files must be regular files in its folder") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TokenizerFileError(f"{path} is not a regular file; a saved tokenizer's files must be regular files in its folder")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def is_regular_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a symlink to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def check_writable_parent(path: PathLike) -> Optional[str]:
    """Why an output at ``path`` could not be written, or None: the closest existing folder above
    it must let this process make a file (tried: an empty file made and removed at once, since
    permissions do not stop root but a read-only file system does)."""
    parent = Path(path).absolute().parent
    while not (parent.exists() or parent.is_symlink()) and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"no permission to write in {parent}"
    try:
        fd, probe = tempfile.mkstemp(prefix=_prefix(Path(path).name), suffix=".tmp", dir=parent)
    except OSError as e:
        return f"cannot make a file in {parent} ({e.strerror or e})"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None
