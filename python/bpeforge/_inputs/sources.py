"""Which files to read: formats from extensions, folders walked, globs expanded, a file
reached twice read once, and the standard library as the default corpus."""

from __future__ import annotations

import glob
import os
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .._errors import InputError


FORMATS = ("text", "jsonl", "parquet")
EXTENSIONS = {
    ".txt": "text",
    ".text": "text",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}


@dataclass(frozen=True)
class Source:
    """One input file: its path, format (text, jsonl, parquet) and compression (None, gzip, zstd);
    or a part of one, for several readers to share it: the documents that start in
    ``byte_range`` (start, end) of an uncompressed text or JSONL file, or the ``row_groups`` of a
    Parquet file."""

    path: Path
    format: str
    compression: Optional[str] = None
    byte_range: Optional[Tuple[int, int]] = None
    row_groups: Optional[Tuple[int, ...]] = None

    def __str__(self) -> str:
        if self.byte_range is not None:
            return f"{self.path} (bytes {self.byte_range[0]:,}-{self.byte_range[1]:,})"
        if self.row_groups is not None:
            return f"{self.path} (row groups {self.row_groups[0]}-{self.row_groups[-1]})"
        return str(self.path)


def detect(path: Path) -> "tuple[Optional[str], Optional[str]]":
    """(format, compression) from the file name; format is None when the extension is unknown.

    >>> detect(Path("shard.jsonl.zst"))
    ('jsonl', 'zstd')
    >>> detect(Path("notes.md"))
    (None, None)
    """
    suffixes = [s.lower() for s in path.suffixes]
    compression = None
    if suffixes and suffixes[-1] in COMPRESSIONS:
        compression = COMPRESSIONS[suffixes.pop()]
    fmt = EXTENSIONS.get(suffixes[-1]) if suffixes else None
    return fmt, compression


def _source(path: Path, input_format: Optional[str]) -> Source:
    fmt, compression = detect(path)
    if input_format is not None:
        fmt = input_format
    if fmt is None:
        known = ", ".join(sorted(EXTENSIONS))
        raise InputError(f"{path}: cannot tell the format from the extension (known: {known}); use --input-format")
    if fmt == "parquet" and compression is not None:
        raise InputError(f"{path}: compressed Parquet files are not supported (Parquet compresses internally)")
    return Source(path, fmt, compression)


def _walk(folder: Path, input_format: Optional[str]) -> List[Path]:
    """Files under ``folder`` (recursively, following links to folders but never into one
    twice, hidden ones skipped, sorted) of a known format, or of ``input_format`` when it is
    given. A folder that cannot be read is an :class:`InputError`."""
    found = []
    seen = set()  # the real paths of the folders walked: a link back up is not walked again

    def unreadable(e: OSError) -> None:
        raise InputError(f"{e.filename}: cannot read the folder ({e.strerror or e})")

    for root, dirs, files in os.walk(folder, onerror=unreadable, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            fmt, _ = detect(Path(name))
            if fmt is not None and (input_format is None or fmt == input_format):
                found.append(Path(root) / name)
    return found


def expand_inputs(inputs: Sequence[str], input_format: Optional[str] = None) -> List[Source]:
    """The input files for ``inputs`` (files, folders, globs, ``-`` for standard input), in the
    order given; a folder or a glob contributes its files sorted by path. Raises :class:`InputError` for a missing file, a
    glob that matches nothing (or only folders with no known file), a folder with no known file,
    or an unknown extension."""
    if input_format is not None and input_format not in FORMATS:
        raise InputError(f"unknown input format {input_format!r} (choose from {', '.join(FORMATS)})")
    sources: List[Source] = []
    for arg in inputs:
        path = Path(arg)
        if arg == "-":
            fmt = input_format or "text"
            if fmt == "parquet":
                raise InputError("-: Parquet cannot be read from standard input; give the file")
            sources.append(Source(path, fmt))
        elif path.is_dir():
            files = _walk(path, input_format)
            if not files:
                what = input_format or "known"
                raise InputError(f"{arg}: no files of a {what} format in this folder (extensions: {', '.join(sorted(EXTENSIONS))}, optionally .gz/.zst)")
            sources.extend(_source(f, input_format) for f in files)
        elif path.is_file():
            sources.append(_source(path, input_format))
        elif path.exists():  # a named pipe, /dev/stdin, a shell's <(zcat ...)
            sources.append(_source(path, input_format))
        elif glob.has_magic(arg):
            matches = glob.glob(arg, recursive=True)
            if not matches:
                raise InputError(f"{arg}: no file matches this pattern")
            # `**` matches a folder and the files under it, each once: a set.
            matched: "set[Path]" = set()
            for m in matches:
                mp = Path(m)
                if mp.is_dir():
                    matched.update(_walk(mp, input_format))
                elif mp.is_file():
                    matched.add(mp)
            if not matched:
                what = input_format or "known"
                raise InputError(f"{arg}: matches only folders with no files of a {what} format")
            sources.extend(_source(f, input_format) for f in sorted(matched))
        else:
            raise InputError(f"{arg}: no such file or folder")
    return sources


def unique_sources(sources: Sequence[Source]) -> "tuple[List[Source], List[Tuple[Source, Source]]]":
    """(the sources, each file once, in order; the (left out, same file as) pairs): a file the
    inputs reach twice, by a link, a hard link, overlapping folders or globs, or named twice, is
    read once, where it comes first. Files are the same by device and inode; standard input and
    files that cannot be looked at are kept."""
    kept: List[Source] = []
    left_out: List[Tuple[Source, Source]] = []
    first: Dict[Tuple[int, int], Source] = {}
    for source in sources:
        try:
            st = os.stat(source.path) if str(source.path) != "-" else None
        except OSError:
            st = None
        if st is not None:
            key = (st.st_dev, st.st_ino)
            if key in first:
                left_out.append((source, first[key]))
                continue
            first[key] = source
        kept.append(source)
    return kept, left_out


def stdlib_sources() -> "tuple[Path, List[Source]]":
    """The running interpreter's standard library ``.py`` files, sorted by path (site-packages,
    dist-packages, ``__pycache__`` and hidden folders left out): the default training corpus."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"site-packages", "dist-packages", "__pycache__"}
    other = {Path(p).resolve() for key in ("purelib", "platlib") for p in [sysconfig.get_paths().get(key)] if p}
    files: List[Path] = []
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = sorted(
            d for d in dirs if d not in skip and not d.startswith(".") and (Path(dirpath) / d).resolve() not in other
        )
        files.extend(Path(dirpath) / n for n in sorted(names) if n.endswith(".py"))
    return root, [Source(f, "text") for f in files]
