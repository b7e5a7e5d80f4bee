"""Saving and loading tokenizers: a standard ``.tiktoken`` ranks file, a small JSON config and
``token_bytes.npy`` (the bytes each token id stands for).

No pickle: the ranks and the config are plain text that any tool can read, and the ``.npy``
file is written and read without NumPy (saving must not need it).

tiktoken's cache of ``.tiktoken`` files: ``tiktoken.load.load_tiktoken_bpe`` caches every file
it reads, local ones too, keyed by the path string it was given, and serves that copy when the
same string is read again, even after the file changed. tiktoken has no function to drop an
entry, nor one that gives the cache's folder or key (``read_file_cached`` computes both inline),
so :func:`forget_tiktoken_cache` repeats its scheme: the folder from ``TIKTOKEN_CACHE_DIR``,
else ``DATA_GYM_CACHE_DIR``, else ``$TMPDIR/data-gym-cache``; the key the SHA-1 of the path.
"""

from __future__ import annotations

import ast
import base64
import binascii
import json
import os
import re
import struct
import threading
from pathlib import Path
from typing import Any, Optional, TypeVar, Union

from .base import BaseTokenizer, check_tiktoken_parts, import_numpy
from .checks import MAX_TOKEN_ID
from .errors import TokenizerFileError

T = TypeVar("T", bound=BaseTokenizer)

RANKS_FILE = "tokenizer.tiktoken"
CONFIG_FILE = "tokenizer.json"
TOKEN_BYTES_FILE = "token_bytes.npy"
FORMAT = "bpeforge"
VERSION = 1


def named_like_ranks_file(path: Path) -> bool:
    """Whether ``path`` ends in ``.tiktoken`` (in any case), as ranks files are named: ``save``,
    ``load`` and the command line's ``-o`` all decide with this, so they agree."""
    return path.suffix.lower() == ".tiktoken"


def _sha256(data: bytes) -> str:
    # Imported here: hashlib loads OpenSSL's libcrypto, which training, the main job, never needs.
    import hashlib

    return hashlib.sha256(data).hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` beside it, then renames: a crash leaves the old file or the
    new one, never half. The temporary name is this thread's own (the process and the thread),
    so that two saves into one folder at once never write the same temporary file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:  # named by the file asked for, not the temporary one (a full disk too)
        if e.errno is None:
            raise
        raise type(e)(e.errno, e.strerror, os.fspath(path)) from None
    finally:
        if tmp.exists():
            tmp.unlink()


def is_save_leftover(folder: Path, name: str) -> bool:
    """Whether file ``name`` of ``folder`` is a temporary file :func:`write_atomic` left behind
    when a save was cut off (``.NAME.PID.THREAD.tmp``, or ``.NAME.PID.tmp`` for one file of
    ours); ASCII digits only."""
    ours = "|".join(map(re.escape, (CONFIG_FILE, RANKS_FILE, TOKEN_BYTES_FILE)))
    path = folder / name
    return bool(re.fullmatch(r"\.(?:%s)\.[0-9]+(?:\.[0-9]+)?\.tmp" % ours, name)) and path.is_file() and not path.is_symlink()


def ranks_to_tiktoken(ranks: dict) -> bytes:
    """The ``.tiktoken`` text of ``ranks``: one ``base64(token) rank`` line per token, by rank."""
    # Joined from the pieces, not from lines made first: a long token's base64 (a run of one
    # character can make tokens of megabytes) is then held once, and the text once more.
    parts: list[bytes] = []
    for token, rank in sorted(ranks.items(), key=lambda x: x[1]):
        parts += (base64.b64encode(token), b" %d\n" % rank)
    return b"".join(parts)


def read_tiktoken(path: Union[str, os.PathLike], data: Optional[bytes] = None) -> dict:
    """Reads a ``.tiktoken`` ranks file strictly: every line must be ``base64 rank``, each token
    and each rank given once (ranks may leave gaps, as tiktoken's model of ids allows).
    Raises FileNotFoundError or :class:`TokenizerFileError` naming the file and line. ``data``, if
    given, is the file's contents, already read (``path`` then only names it in errors)."""
    path = Path(path)
    if data is None:
        data = path.read_bytes()
    ranks: dict = {}
    seen: set = set()
    for lineno, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise TokenizerFileError(f"{path}:{lineno}: expected 'base64-token rank', got {line[:80]!r}")
        try:
            token = base64.b64decode(parts[0], validate=True)
        except (binascii.Error, ValueError):
            raise TokenizerFileError(f"{path}:{lineno}: bad base64 {parts[0][:60]!r}") from None
        try:
            rank = int(parts[1])
        except ValueError:
            raise TokenizerFileError(f"{path}:{lineno}: bad rank {parts[1][:30]!r}") from None
        if token in ranks:
            raise TokenizerFileError(f"{path}:{lineno}: token {token!r} already has rank {ranks[token]}")
        if not 0 <= rank < MAX_TOKEN_ID:
            raise TokenizerFileError(f"{path}:{lineno}: rank {rank} is out of range (ranks are from 0 up to {MAX_TOKEN_ID - 1})")
        if rank in seen:
            raise TokenizerFileError(f"{path}:{lineno}: rank {rank} is given twice")
        seen.add(rank)
        ranks[token] = rank
    if not ranks:
        raise TokenizerFileError(f"{path}: the file is empty")
    return ranks


def save(tokenizer: BaseTokenizer, directory: Union[str, os.PathLike]) -> None:
    """Writes the ranks, the config and the token byte lengths of ``tokenizer`` into
    ``directory`` (created if needed), each file atomically."""
    given, directory = directory, Path(directory)
    spelled = os.fspath(given)
    named_as_folder = spelled.endswith("/") or spelled.endswith(os.sep)  # `x.tiktoken/`: a folder, as asked
    if named_like_ranks_file(directory) and not directory.is_dir() and not named_as_folder:
        # A folder named like a ranks file would surprise whoever reads it back with tiktoken
        # (`bpeforge train -o x.tiktoken` writes the folder `x` and the file `x.tiktoken`).
        raise ValueError(
            f"cannot save to {spelled!r}: save writes a folder (three files), and this names a "
            f".tiktoken ranks file; pass a folder, e.g. {os.fspath(directory.with_suffix(''))!r} "
            f"(its {RANKS_FILE} is the ranks file tiktoken reads)"
        )
    mergeable_ranks = tokenizer.mergeable_ranks  # (a copy: taken once)
    check_savable(tokenizer, mergeable_ranks)
    # Every file's contents first: a save that fails leaves the folder as it was.
    ranks = ranks_to_tiktoken(mergeable_ranks)
    try:
        token_bytes = token_bytes_npy(tokenizer)
    except MemoryError:
        raise MemoryError(
            f"cannot save: {TOKEN_BYTES_FILE} would hold one entry per id up to {tokenizer.n_vocab - 1:,} "
            f"(the largest special token id), more than fits in memory"
        ) from None
    config = {
        "format": FORMAT,
        "version": VERSION,
        "pattern": tokenizer.pattern,
        "special_tokens": tokenizer.special_tokens,
        "n_ranks": len(mergeable_ranks),
        "ranks_sha256": _sha256(ranks),
        "token_bytes_sha256": _sha256(token_bytes),
    }
    directory.mkdir(parents=True, exist_ok=True)
    # Each file is replaced atomically, the config last: it names the files it goes with (by
    # their checksums), so a save cut off between two files, or two saves into one folder at
    # once, are caught by load rather than mixing two tokenizers.
    write_atomic(directory / RANKS_FILE, ranks)
    forget_tiktoken_cache(os.path.join(os.fspath(given), RANKS_FILE))  # the caller's spelling, `./` and all
    write_atomic(directory / TOKEN_BYTES_FILE, token_bytes)
    write_atomic(directory / CONFIG_FILE, (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode())


def forget_tiktoken_cache(path: Union[str, os.PathLike]) -> None:
    """Drops tiktoken's cached copies of the file at ``path`` (see the module docstring). A save
    that replaces a ``.tiktoken`` file calls this for the spellings a reader most likely uses
    (as given, with and without ``./``, normalized, absolute, with links resolved); a reader
    using another one gets the stale copy (pass ``expected_hash``, the file's SHA-256, to
    ``load_tiktoken_bpe``, or set ``TIKTOKEN_CACHE_DIR=''``)."""
    import hashlib
    import tempfile

    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir or not os.path.isdir(cache_dir):
        return  # caching off, or nothing cached yet
    spelled = os.fspath(path)
    spellings = {spelled, os.path.normpath(spelled), os.path.abspath(spelled), os.path.realpath(spelled)}
    if not os.path.isabs(spelled):
        spellings.add(os.path.join(os.curdir, os.path.normpath(spelled)))  # ./out/tok.tiktoken
        spellings.add(os.path.join(os.getcwd(), spelled))  # absolute, `..` and all
    for spelling in spellings:
        try:
            os.remove(os.path.join(cache_dir, hashlib.sha1(spelling.encode()).hexdigest()))
        except (OSError, UnicodeEncodeError):
            pass


def check_savable(tokenizer: BaseTokenizer, ranks: Optional[dict] = None) -> None:
    """Raises ValueError if :func:`load` would refuse what :func:`save` writes for ``tokenizer``
    (possible for one wrapped by ``Tokenizer.from_encoding``, whose encoding is taken as it is):
    ranks outside tiktoken's model of ids, special ids that ranks use, or a pattern that can
    match empty text.
    ``ranks``: its mergeable ranks, if already at hand."""
    try:
        check_tiktoken_parts(tokenizer.mergeable_ranks if ranks is None else ranks, tokenizer.pattern, tokenizer.special_tokens)
    except ValueError as e:
        raise ValueError(f"cannot save: {e}") from None


def load(directory: Union[str, os.PathLike], tokenizer_class: type[T] = BaseTokenizer) -> T:  # type: ignore[assignment]
    """Reads a tokenizer written by :func:`save`, as an instance of ``tokenizer_class``."""
    directory = Path(directory)
    if not directory.is_dir():
        if named_like_ranks_file(directory) and directory.is_file():
            beside = directory.with_suffix("")
            hint = f"; the folder {str(beside)!r} beside it is what Tokenizer.load reads" if (beside / CONFIG_FILE).is_file() else ""
            raise FileNotFoundError(
                f"no saved tokenizer at {directory}: it is a ranks file, not a folder (read it with "
                f"tiktoken.load.load_tiktoken_bpe{hint})"
            )
        raise FileNotFoundError(f"no saved tokenizer at {directory}: not a directory")
    config_path = directory / CONFIG_FILE
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{config_path} is missing: {directory} is not a saved bpeforge tokenizer") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TokenizerFileError(f"{config_path}: not valid JSON ({e})") from None
    except RecursionError:
        raise TokenizerFileError(f"{config_path}: not a bpeforge tokenizer config (nested too deeply)") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise TokenizerFileError(f"{config_path}: not a bpeforge tokenizer config (no \"format\": \"{FORMAT}\")")
    if type(config.get("version")) is not int or config["version"] != VERSION:
        raise TokenizerFileError(
            f"{config_path}: format version {config.get('version')!r} is not supported (this bpeforge reads {VERSION})"
        )
    pattern, specials, n_ranks = config.get("pattern"), config.get("special_tokens"), config.get("n_ranks")
    if not isinstance(pattern, str):
        raise TokenizerFileError(f"{config_path}: \"pattern\" must be a string")
    if not isinstance(specials, dict) or not all(isinstance(v, int) for v in specials.values()):
        raise TokenizerFileError(f"{config_path}: \"special_tokens\" must map names to integer ids")
    ranks_path = directory / RANKS_FILE
    # Read once: checked and parsed as the same bytes, even if a save replaces the file meanwhile.
    ranks_data = ranks_path.read_bytes()
    ranks = read_tiktoken(ranks_path, ranks_data)
    if n_ranks is not None and type(n_ranks) is not int:
        raise TokenizerFileError(f"{config_path}: \"n_ranks\" must be an integer")
    if n_ranks is not None and len(ranks) != n_ranks:
        raise TokenizerFileError(f"{ranks_path}: {len(ranks)} ranks, the config says {n_ranks} (truncated?)")
    check_checksum(directory, RANKS_FILE, config.get("ranks_sha256"), ranks_data)
    check_checksum(directory, TOKEN_BYTES_FILE, config.get("token_bytes_sha256"))
    try:
        return tokenizer_class(ranks, pattern, specials)  # checks the ranks (once, on this path)
    except ValueError as e:
        raise TokenizerFileError(f"{directory}: {e}") from None


def check_checksum(directory: Path, name: str, checksum: object, data: Optional[bytes] = None) -> None:
    """Raises :class:`TokenizerFileError` unless file ``name`` of ``directory`` (its contents
    ``data``, if already read) has the checksum its config gives (configs of earlier versions
    give none for some files: nothing to check)."""
    if checksum is None:
        return
    path = directory / name
    try:
        if data is None:
            data = path.read_bytes()
    except FileNotFoundError:
        raise TokenizerFileError(f"{path} is missing, though {directory / CONFIG_FILE} names it") from None
    if _sha256(data) != checksum:
        raise TokenizerFileError(
            f"{path} does not match {directory / CONFIG_FILE} (its checksum differs): the files come from "
            f"different saves, or one was cut off or edited"
        )


# ------------------------------------------------------------------------------ token bytes


def token_bytes_npy(tokenizer: BaseTokenizer) -> bytes:
    """The ``.npy`` file (format 1.0, little-endian int32, 1-D) of ``tokenizer.token_bytes()``,
    written without NumPy: ``numpy.load`` reads it, and ``torch.from_numpy`` of that is
    nanochat's ``token_bytes.pt`` tensor.

    >>> tok = BaseTokenizer({bytes([i]): i for i in range(256)}, special_tokens=["<|bos|>"])
    >>> data = token_bytes_npy(tok)
    >>> data[:6], len(data) % 64 == (257 * 4) % 64
    (b'\\x93NUMPY', True)
    """
    values = tokenizer.token_bytes()
    header = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    # magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of
    # 64 bytes and ending in a newline, as numpy writes it.
    pad = 64 - (10 + len(header) + 1) % 64
    header_bytes = (header + " " * (pad % 64) + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header_bytes)) + header_bytes + struct.pack(f"<{len(values)}i", *values)


def write_token_bytes(tokenizer: BaseTokenizer, directory: Union[str, os.PathLike]) -> Path:
    """Writes :data:`TOKEN_BYTES_FILE` for ``tokenizer`` into ``directory``; returns its path.
    (:func:`save` writes it too; this is for folders written otherwise.)"""
    path = Path(directory) / TOKEN_BYTES_FILE
    write_atomic(path, token_bytes_npy(tokenizer))
    return path


def _check_against_config(directory: Path, data: bytes) -> None:
    """Raises TokenizerFileError if ``directory`` is a saved tokenizer whose config names
    another token-bytes file than ``data``, the one there (two saves into the folder at once)."""
    try:
        config = json.loads((directory / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return  # no config (a folder of write_token_bytes alone), or one load would refuse
    if isinstance(config, dict):
        check_checksum(directory, TOKEN_BYTES_FILE, config.get("token_bytes_sha256"), data)


def read_token_bytes(path: Union[str, os.PathLike], as_numpy: bool = False) -> Any:
    """Reads a token-bytes file (a saved tokenizer folder, or the ``.npy`` file itself) as a list,
    or as a NumPy array with ``as_numpy=True``. Only what :func:`token_bytes_npy` writes is read
    without NumPy; a bad file raises ``bpeforge.TokenizerFileError``.

    >>> import tempfile
    >>> tok = BaseTokenizer({bytes([i]): i for i in range(256)}, special_tokens=["<|bos|>"])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = write_token_bytes(tok, d)
    ...     read_token_bytes(d)[-3:]
    [1, 1, 0]
    """
    path = Path(path)
    folder = path if path.is_dir() else None
    if folder is not None:
        path = path / TOKEN_BYTES_FILE
    # Read once: checked and parsed as the same bytes, even if a save replaces the file meanwhile.
    data = path.read_bytes()
    if folder is not None:
        _check_against_config(folder, data)
    if as_numpy:
        import io

        return import_numpy("as_numpy=True").load(io.BytesIO(data), allow_pickle=False)
    if data[:8] != b"\x93NUMPY\x01\x00" or len(data) < 10:
        raise TokenizerFileError(f"{path}: not a .npy file (format 1.0)")
    (header_len,) = struct.unpack("<H", data[8:10])
    try:
        header = ast.literal_eval(data[10 : 10 + header_len].decode("latin1"))
        descr, shape = header["descr"], header["shape"]
    except (ValueError, SyntaxError, KeyError, TypeError):
        raise TokenizerFileError(f"{path}: bad .npy header") from None
    if (
        descr != "<i4"
        or header.get("fortran_order")
        or not (isinstance(shape, tuple) and len(shape) == 1 and isinstance(shape[0], int) and shape[0] >= 0)
    ):
        raise TokenizerFileError(f"{path}: expected a 1-D little-endian int32 array, got {descr} of shape {shape}")
    body = data[10 + header_len :]
    if len(body) != 4 * shape[0]:
        raise TokenizerFileError(f"{path}: {len(body)} data bytes where {4 * shape[0]} were expected (truncated?)")
    return list(struct.unpack(f"<{shape[0]}i", body))
