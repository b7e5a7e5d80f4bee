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
import errno
import json
import os
import struct
from pathlib import Path
from typing import Any, Optional, TypeVar, Union

from . import _core
from . import _files as files
from ._base import BaseTokenizer, check_tiktoken_parts, import_numpy
from ._checks import MAX_TOKEN_ID
from ._errors import TokenizerFileError

T = TypeVar("T", bound=BaseTokenizer)

RANKS_FILE = "tokenizer.tiktoken"
META_FILE = "bpeforge.json"
HF_TOKENIZER_FILE = "tokenizer.json"
HF_CONFIG_FILE = "tokenizer_config.json"
TOKEN_BYTES_FILE = "token_bytes.npy"
PICKLE_FILE = "tokenizer.pkl"
LEGACY_CONFIG_FILE = "tokenizer.json"
"""Version 1 of the format kept bpeforge's config in ``tokenizer.json``, the name HuggingFace's
file has in version 2."""
FORMAT = "bpeforge"
VERSION = 2
LEGACY_VERSION = 1

SAVED_FILES = (META_FILE, RANKS_FILE, HF_TOKENIZER_FILE, HF_CONFIG_FILE, TOKEN_BYTES_FILE, PICKLE_FILE)
"""The names of every file a save writes into a folder (``tokenizer.pkl``: nanochat's ``save``;
the HuggingFace files: when the tokenizer can be written for HuggingFace)."""


def named_like_ranks_file(path: Path) -> bool:
    """Whether ``path`` ends in ``.tiktoken`` (in any case), as ranks files are named: ``save``,
    ``load`` and the command line's ``-o`` all decide with this, so they agree."""
    return path.suffix.lower() == ".tiktoken"


def _sha256(data: bytes) -> str:
    # Imported here: hashlib loads OpenSSL's libcrypto, which training, the main job, never needs.
    import hashlib

    return hashlib.sha256(data).hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """Replaces the file ``path`` with ``data`` atomically (:func:`bpeforge._files.write_file`):
    a crash leaves the old file or the new one, never half, and a symlink planted at a
    temporary name is never followed."""
    files.write_file(path, data)


def holds_only_saved_files(folder: Path) -> bool:
    """Whether ``folder`` is empty or holds nothing but files a save writes (regular files of
    the names in :data:`SAVED_FILES`) and leftovers of cut-off saves, its ``tokenizer.json``
    (if there) bpeforge's: beside a ``bpeforge.json``, or version 1's config. These are the
    folders ``--force`` may replace, and that a save swaps whole. Anything else (a model's
    weights, a user's notes, a subfolder, a HuggingFace tokenizer of other origin) is never
    replaced."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    if not all((n in SAVED_FILES or files.is_leftover(n)) and files.is_regular_file(folder / n) for n in names):
        return False
    if HF_TOKENIZER_FILE in names and META_FILE not in names:
        # Version 1's config, or HuggingFace's own file of a tokenizer that is not bpeforge's.
        try:
            config = json.loads(files.read_member(folder, LEGACY_CONFIG_FILE))
        except (OSError, ValueError, RecursionError):
            return False
        return isinstance(config, dict) and config.get("format") == FORMAT
    return True


def ranks_to_tiktoken(ranks: dict) -> bytes:
    """The ``.tiktoken`` text of ``ranks``: one ``base64(token) rank`` line per token, by rank.
    Made in Rust, in place in the bytes returned: the text is held once, the tokens not copied
    (a run of one character can make tokens of megabytes)."""
    return _core.ranks_to_tiktoken(ranks)


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
            raise TokenizerFileError(f"{path}:{lineno}: expected 'base64-token rank', got {len(parts)} fields")
        try:
            token = base64.b64decode(parts[0], validate=True)
        except (binascii.Error, ValueError):
            raise TokenizerFileError(f"{path}:{lineno}: the token is not valid base64") from None
        try:
            rank = int(parts[1])
        except ValueError:
            raise TokenizerFileError(f"{path}:{lineno}: the rank is not an integer") from None
        if token in ranks:
            raise TokenizerFileError(f"{path}:{lineno}: the token of this line already has rank {ranks[token]}")
        if not 0 <= rank < MAX_TOKEN_ID:
            raise TokenizerFileError(f"{path}:{lineno}: rank {rank} is out of range (ranks are from 0 up to {MAX_TOKEN_ID - 1})")
        if rank in seen:
            raise TokenizerFileError(f"{path}:{lineno}: rank {rank} is given twice")
        seen.add(rank)
        ranks[token] = rank
    if not ranks:
        raise TokenizerFileError(f"{path}: the file is empty")
    return ranks


def _canonical(meta: dict) -> bytes:
    """The bytes of ``meta`` its own checksum covers: compact JSON, keys sorted."""
    return json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def saved_files(tokenizer: BaseTokenizer, *, extra_files: Optional[dict] = None) -> dict:
    """``{name: contents}`` of every file :func:`save` writes for ``tokenizer``, ``bpeforge.json``
    last: the ranks, the token byte lengths, ``extra_files`` (HuggingFace's files, added by
    :func:`bpeforge.huggingface.saved_files`; nanochat's pickle), and bpeforge's metadata: the
    pattern, the special tokens, the number of ranks and every other file's SHA-256, with a
    SHA-256 of all that (so that an edit of any file, this one included, is caught by
    :func:`load`)."""
    mergeable_ranks = tokenizer.mergeable_ranks  # (a copy: taken once)
    check_savable(tokenizer, mergeable_ranks)
    out: dict = {RANKS_FILE: ranks_to_tiktoken(mergeable_ranks)}
    try:
        out[TOKEN_BYTES_FILE] = token_bytes_npy(tokenizer)
    except MemoryError:
        raise MemoryError(
            f"cannot save: {TOKEN_BYTES_FILE} would hold one entry per id up to {tokenizer.n_vocab - 1:,} "
            f"(the largest special token id), more than fits in memory"
        ) from None
    out.update(extra_files or {})
    meta: dict = {
        "format": FORMAT,
        "version": VERSION,
        "pattern": tokenizer.pattern,
        "special_tokens": tokenizer.special_tokens,
        "n_ranks": len(mergeable_ranks),
        "files": {name: _sha256(data) for name, data in out.items()},
    }
    meta["sha256"] = _sha256(_canonical(meta))
    out[META_FILE] = (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return out


def save(tokenizer: BaseTokenizer, directory: Union[str, os.PathLike], *, extra_files: Optional[dict] = None) -> None:
    """Writes the files of ``tokenizer`` (:func:`saved_files`; :meth:`bpeforge.Tokenizer.save`
    adds HuggingFace's through :func:`bpeforge.huggingface.save_folder`) as the folder ``directory``,
    switched in one step (:func:`bpeforge._files.new_folder`): readers, and a crash, see the
    whole old folder or the whole new one. A folder that holds anything else (a model's
    weights, notes) keeps it: there each file is replaced atomically, ``bpeforge.json`` last,
    and a crash in between leaves a folder :func:`load` refuses (its checksums) rather than one
    mixing two tokenizers. ``directory`` and its parents are made if needed."""
    check_save_path(directory)
    # Every file's contents first: a save that fails leaves the folder as it was.
    write_saved(Path(directory), saved_files(tokenizer, extra_files=extra_files))
    forget_tiktoken_cache(os.path.join(os.fspath(directory), RANKS_FILE))  # the caller's spelling, `./` and all


def check_save_path(directory: Union[str, os.PathLike]) -> None:
    """Refuses a ``directory`` that :func:`save` cannot write: one named like a ranks file (not
    a folder already, no trailing slash), or something other than a folder."""
    given, directory = directory, Path(directory)
    spelled = os.fspath(given)
    named_as_folder = spelled.endswith("/") or spelled.endswith(os.sep)  # `x.tiktoken/`: a folder, as asked
    if named_like_ranks_file(directory) and not directory.is_dir() and not named_as_folder:
        # A folder named like a ranks file would surprise whoever reads it back with tiktoken
        # (`bpeforge train -o x.tiktoken` writes the folder `x` and the file `x.tiktoken`).
        raise ValueError(
            f"cannot save to {spelled!r}: save writes a folder (several files), and this names a "
            f".tiktoken ranks file; pass a folder, e.g. {os.fspath(directory.with_suffix(''))!r} "
            f"(its {RANKS_FILE} is the ranks file tiktoken reads)"
        )
    if (directory.exists() or directory.is_symlink()) and not directory.is_dir():
        raise FileExistsError(errno.EEXIST, "cannot save: it exists and is not a folder", spelled)


def write_saved(directory: Path, contents: dict) -> None:
    """Writes ``contents`` (:func:`saved_files`) as the folder ``directory``, as :func:`save`
    describes: swapped whole (a symlink at ``directory`` is replaced, never followed), or file
    by file (``bpeforge.json`` last) into a folder that holds other things too."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    if directory.is_dir() and not directory.is_symlink() and not holds_only_saved_files(directory):
        for name, data in contents.items():  # bpeforge.json last: it names the files it goes with
            files.write_file(directory / name, data)
    else:
        with files.new_folder(directory) as tmp:
            for name, data in contents.items():
                files.create_file(tmp / name, data)


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
    """Reads a tokenizer written by :func:`save` (or by a version-1 bpeforge, whose config is
    ``tokenizer.json``), as an instance of ``tokenizer_class``. Every file it uses must be a
    regular file in the folder and match the checksums of ``bpeforge.json``, which must match
    its own; errors name the file, never its contents."""
    directory = Path(directory)
    if not directory.is_dir():
        if named_like_ranks_file(directory) and directory.is_file():
            beside = directory.with_suffix("")
            saved = (beside / META_FILE).is_file() or (beside / LEGACY_CONFIG_FILE).is_file()
            hint = f"; the folder {str(beside)!r} beside it is what Tokenizer.load reads" if saved else ""
            raise FileNotFoundError(
                f"no saved tokenizer at {directory}: it is a ranks file, not a folder (read it with "
                f"tiktoken.load.load_tiktoken_bpe{hint})"
            )
        raise FileNotFoundError(f"no saved tokenizer at {directory}: not a directory")
    if os.path.lexists(directory / META_FILE):
        pattern, specials, ranks_data = _read_meta(directory)
    else:
        pattern, specials, ranks_data = _read_legacy_config(directory)
    ranks = read_tiktoken(directory / RANKS_FILE, ranks_data)
    try:
        return tokenizer_class(ranks, pattern, specials)  # checks the ranks (once, on this path)
    except ValueError as e:
        raise TokenizerFileError(f"{directory}: {e}") from None


def _read_json(path: Path) -> Any:
    """The JSON of member file ``path`` (a regular file in its folder), or TokenizerFileError."""
    try:
        return json.loads(files.read_member(path.parent, path.name).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TokenizerFileError(f"{path}: not valid JSON ({type(e).__name__} at byte {getattr(e, 'pos', getattr(e, 'start', '?'))})") from None
    except RecursionError:
        raise TokenizerFileError(f"{path}: not a bpeforge file (nested too deeply)") from None


def check_format(path: Path, data: Any, what: str, version: int) -> None:
    """Refuses (TokenizerFileError naming ``path``) ``data`` that is not bpeforge's ``what``
    (no ``"format": "bpeforge..."``) or not of format ``version``."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise TokenizerFileError(f"{path}: not a bpeforge {what} (no \"format\": \"{FORMAT}\")")
    found = data.get("version")
    if type(found) is not int or found != version:
        shown = found if isinstance(found, int) else "(not an integer)"
        raise TokenizerFileError(f"{path}: format version {shown} is not supported (this bpeforge reads {LEGACY_VERSION} and {VERSION})")


def read_meta(directory: Path) -> dict:
    """``bpeforge.json`` of ``directory``, checked: bpeforge's, version 2, and matching its own
    checksum (TokenizerFileError otherwise)."""
    path = directory / META_FILE
    meta = _read_json(path)
    check_format(path, meta, "tokenizer's metadata", VERSION)
    body = {k: v for k, v in meta.items() if k != "sha256"}
    if meta.get("sha256") != _sha256(_canonical(body)):
        raise TokenizerFileError(f"{path} does not match its own checksum (the file was edited or cut off)")
    return meta


def _read_meta(directory: Path) -> tuple:
    """(pattern, special tokens, the ranks file's bytes) of a version-2 folder, every file that
    ``bpeforge.json`` names checked against its checksum."""
    meta = read_meta(directory)
    path = directory / META_FILE
    pattern, specials, n_ranks, checksums = meta.get("pattern"), meta.get("special_tokens"), meta.get("n_ranks"), meta.get("files")
    if not isinstance(pattern, str):
        raise TokenizerFileError(f"{path}: \"pattern\" must be a string")
    if not isinstance(specials, dict) or not all(type(v) is int for v in specials.values()):
        raise TokenizerFileError(f"{path}: \"special_tokens\" must map names to integer ids")
    if type(n_ranks) is not int:
        raise TokenizerFileError(f"{path}: \"n_ranks\" must be an integer")
    if not isinstance(checksums, dict) or RANKS_FILE not in checksums or not all(n in SAVED_FILES for n in checksums):
        raise TokenizerFileError(f"{path}: \"files\" must give the checksum of {RANKS_FILE} and of bpeforge's other files")
    ranks_data = b""
    for name, checksum in checksums.items():
        # Read once: checked and parsed as the same bytes, even if a save replaces the file meanwhile.
        data = _read_listed(directory, name)
        check_checksum(directory, name, checksum, data)
        if name == RANKS_FILE:
            ranks_data = data
    n_lines = sum(1 for line in ranks_data.split(b"\n") if line.strip())
    if n_lines != n_ranks:
        raise TokenizerFileError(f"{directory / RANKS_FILE}: {n_lines} ranks, {META_FILE} says {n_ranks} (truncated?)")
    return pattern, specials, ranks_data


def _read_listed(directory: Path, name: str) -> bytes:
    try:
        return files.read_member(directory, name)
    except FileNotFoundError:
        raise TokenizerFileError(f"{directory / name} is missing, though {directory / META_FILE} names it") from None


def _read_legacy_config(directory: Path) -> tuple:
    """(pattern, special tokens, the ranks file's bytes) of a folder saved by version 1, whose
    config is ``tokenizer.json`` (only the ranks and token-bytes files were checksummed then)."""
    config_path = directory / LEGACY_CONFIG_FILE
    try:
        config = _read_json(config_path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{directory / META_FILE} is missing: {directory} is not a saved bpeforge tokenizer") from None
    if isinstance(config, dict) and "model" in config and "format" not in config:
        raise TokenizerFileError(
            f"{directory} holds a HuggingFace {LEGACY_CONFIG_FILE} but no {META_FILE}: read it with Tokenizer.from_huggingface"
        )
    check_format(config_path, config, "tokenizer config", LEGACY_VERSION)
    pattern, specials, n_ranks = config.get("pattern"), config.get("special_tokens"), config.get("n_ranks")
    if not isinstance(pattern, str):
        raise TokenizerFileError(f"{config_path}: \"pattern\" must be a string")
    if not isinstance(specials, dict) or not all(type(v) is int for v in specials.values()):
        raise TokenizerFileError(f"{config_path}: \"special_tokens\" must map names to integer ids")
    ranks_path = directory / RANKS_FILE
    ranks_data = files.read_member(directory, RANKS_FILE)
    if n_ranks is not None and type(n_ranks) is not int:
        raise TokenizerFileError(f"{config_path}: \"n_ranks\" must be an integer")
    n_lines = sum(1 for line in ranks_data.split(b"\n") if line.strip())
    if n_ranks is not None and n_lines != n_ranks:
        raise TokenizerFileError(f"{ranks_path}: {n_lines} ranks, the config says {n_ranks} (truncated?)")
    if config.get("ranks_sha256") is not None:  # (early version-1 configs have none)
        check_checksum(directory, RANKS_FILE, config["ranks_sha256"], ranks_data, config_path)
    if config.get("token_bytes_sha256") is not None:
        data = files.read_member(directory, TOKEN_BYTES_FILE)
        check_checksum(directory, TOKEN_BYTES_FILE, config.get("token_bytes_sha256"), data, config_path)
    return pattern, specials, ranks_data


def check_checksum(directory: Path, name: str, checksum: object, data: bytes, config_path: Optional[Path] = None) -> None:
    """Raises :class:`TokenizerFileError` unless ``data``, the contents of file ``name`` of
    ``directory``, has the SHA-256 ``checksum`` its metadata gives."""
    if _sha256(data) != checksum:
        raise TokenizerFileError(
            f"{directory / name} does not match {config_path or directory / META_FILE} (its checksum differs): the files "
            f"come from different saves, or one was cut off or edited"
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
    """Raises TokenizerFileError if ``directory`` is a saved tokenizer whose metadata names
    another token-bytes file than ``data``, the one there (two saves into the folder at once)."""
    if os.path.lexists(directory / META_FILE):
        checksum = read_meta(directory).get("files", {}).get(TOKEN_BYTES_FILE)
        config_path = directory / META_FILE
    else:
        try:
            config = json.loads(files.read_member(directory, LEGACY_CONFIG_FILE).decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return  # no config (a folder of write_token_bytes alone), or one load would refuse
        checksum = config.get("token_bytes_sha256") if isinstance(config, dict) and config.get("format") == FORMAT else None
        config_path = directory / LEGACY_CONFIG_FILE
    if checksum is not None:
        check_checksum(directory, TOKEN_BYTES_FILE, checksum, data, config_path)


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
    data = files.read_member(folder, TOKEN_BYTES_FILE) if folder is not None else path.read_bytes()
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
