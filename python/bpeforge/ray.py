"""Counting spans on a Ray cluster: each file (or each block of a Ray Dataset) counted in a worker
task by the Rust counter, the partial counts added in a tree of reduce tasks, and the sum handed
to the driver as one :class:`~bpeforge.SpanCounts`, to train from here:

    import bpeforge, bpeforge.ray as bray
    counts = bray.count_files(["data/a.parquet", "data/b.parquet"], pattern="gpt4")
    counts = bray.count_dataset(ray.data.read_parquet("data/"), column="text", pattern="gpt4")
    tok = bpeforge.Tokenizer.train_from_counts(counts, vocab_size=65536)

The counts (so the ranks trained from them) are the same as counting the same documents in
one process, whatever the number of workers, files or blocks: adding counts is exact and does
not depend on order or grouping. Files are read in the workers (the driver lists them, never
reads them), so every node must see them at the same paths; data in object storage goes through
a Ray Dataset. A worker that dies mid-task is retried by Ray (tasks return their counts, and
nothing accumulates anywhere else, so a retry cannot count twice); a file that cannot be read
fails the run with bpeforge's error naming it; Ctrl-C on the driver cancels the tasks.

Needs Ray (``pip install 'bpeforge[ray]'``); importing this module does not import it. The
design and its reasons: docs/ray.md.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import queue
import stat
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Sized, Tuple, Union

from . import _core
from ._counts import count_with_figures
from ._errors import InputError
from ._inputs import Corpus, Source, expand_inputs
from ._patterns import resolve_pattern
from ._progress import ConsoleProgress
from ._ray_local import LocalCluster, import_ray
from ._ray_local import start as start_local
from ._training import ProgressCallback, progress_callback

# How many partial counts one reduce task adds: the tree has log_FAN_IN(files) levels, and a
# reduce task holds FAN_IN partial counts and their sum at once.
FAN_IN = 8
# Retries of a task whose worker died (Ray's own default for tasks); an exception raised by
# bpeforge (a file that cannot be read) is not retried.
RETRIES = 3
# Text gathered before each counting pass in a worker, and its bounds in documents, as the
# command line gathers it (the batch size changes memory and speed, never the counts).
BUFFER_BYTES = 8_000_000
MIN_BUFFER, MAX_BUFFER = 64, 8192
# How long the driver waits for a task before looking for Ctrl-C and updating progress.
WAIT_SECONDS = 0.5
# A larger uncompressed text or JSONL file is counted in parts of about this many bytes (byte
# ranges cut at documents), a larger Parquet file in groups of row groups of about this size:
# so that several workers, on several nodes, share one large file.
SPLIT_BYTES = 64_000_000


# What docs/ray.md documents; the rest serves the command line's --ray.
__all__ = ["count_dataset", "count_files", "start_local_cluster"]

def start_local_cluster(num_cpus: Optional[int] = None, **init_options: Any) -> LocalCluster:
    """Starts a Ray cluster on this machine for this process and connects to it: every server
    on loopback only (127.0.0.1), no dashboard, no usage statistics, its files in a private
    folder; returns a :class:`~bpeforge._ray_local.LocalCluster`, whose ``stop()`` (or the end
    of a ``with`` block, or of the process) ends every process of the cluster and removes its
    folder::

        with bray.start_local_cluster(num_cpus=4):
            counts = bray.count_files(paths)

    Start it before importing ``ray`` (or with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` set
    before): a Ray imported otherwise would put the node on a network address, and is refused
    (RuntimeError). ``init_options`` go to ``ray.init``. Ctrl-C while it starts leaves nothing
    behind. Details: docs/ray.md."""
    return start_local(num_cpus, **init_options)


# ------------------------------------------------------------------------------ in the workers


@dataclass(frozen=True)
class Reading:
    """How a worker reads a file's documents: the options the command line reads with (see
    :class:`bpeforge._inputs.Corpus`). ``arrow``: Parquet through pyarrow."""

    text_column: str = "text"
    doc_separator: str = "\n"
    doc_cap: Optional[int] = None
    skip_bad_lines: bool = False
    arrow: bool = False


def read_file(source: Source, reading: Reading) -> Corpus:
    """The documents of one file, read as the command line reads them (in a worker). The one
    function that reads: ``count_files(read=...)`` takes another of the same shape."""
    return Corpus(
        [source],
        text_column=reading.text_column,
        doc_separator=reading.doc_separator,
        doc_cap=reading.doc_cap,
        skip_bad_lines=reading.skip_bad_lines,
        arrow=reading.arrow,
        readers=True,  # counted in Rust, without a Python str per document
    )


@dataclass
class Figures:
    """What was counted: files (or blocks), texts, bytes, the bad lines skipped, and the nodes
    the files were counted on (Ray's node ids)."""

    shards: int = 0
    texts: int = 0
    bytes: int = 0
    bad_lines: int = 0
    bad_documents: int = 0
    """Of ``bad_lines``: text documents that are not UTF-8 (the rest are JSONL lines)."""
    bad_examples: List[str] = field(default_factory=list)
    nodes: Set[str] = field(default_factory=set)

    def add(self, other: "Figures") -> None:
        self.shards += other.shards
        self.texts += other.texts
        self.bytes += other.bytes
        self.bad_lines += other.bad_lines
        self.bad_documents += other.bad_documents
        self.bad_examples = (self.bad_examples + other.bad_examples)[:5]
        self.nodes |= other.nodes


def batches_and_size(documents: Iterable[Any]) -> Tuple[Iterable[Any], int]:
    """The batches of ``documents``, and how many documents to gather before each counting
    pass: about BUFFER_BYTES of text, measured on the first batch."""
    stream = iter(documents)
    first = next(stream, None)
    if first is None:
        return [], MIN_BUFFER
    if isinstance(first, _core.DocumentReader):  # not read yet: the counter's batches end at 2 MiB anyway
        return _chain(first, stream), MAX_BUFFER
    sizes = [len(d) for d in first] if isinstance(first, list) else [first.nbytes / max(len(first), 1)]
    average = sum(sizes) / max(len(sizes), 1)
    size = max(MIN_BUFFER, min(MAX_BUFFER, int(BUFFER_BYTES / max(average, 1.0))))
    return _chain(first, stream), size


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def count_file(
    source: Source,
    reading: Reading,
    regex: str,
    options: Optional[Dict[str, Any]],
    num_threads: int,
    read: Callable[[Source, Reading], Iterable[Any]],
) -> Tuple[bytes, Figures]:
    """A worker task: the counts of one file (packed, ``SpanCounts.to_bytes``) and its figures."""
    documents = read(source, reading)
    batches, size = batches_and_size(documents)
    counted = count_with_figures(batches, regex, num_threads=num_threads, buffer_size=size, options=options)
    figures = Figures(shards=1, texts=counted.texts, bytes=counted.bytes, nodes=node_id())
    bad = getattr(documents, "bad_lines", None)
    if bad is not None and bad.count:
        figures.bad_lines, figures.bad_documents, figures.bad_examples = bad.count, bad.documents, list(bad.examples)
    return counted.counts.to_bytes(), figures


def node_id() -> Set[str]:
    """The id of the Ray node this runs on (in a task), or nothing outside Ray."""
    try:
        import ray

        return {ray.get_runtime_context().get_node_id()} if ray.is_initialized() else set()
    except Exception:  # noqa: BLE001 - only a figure
        return set()


def count_block(batch: Any, column: str, regex: str, num_threads: int) -> Any:
    """A Ray Data ``map_batches`` function: a block (a pyarrow Table) in, one row out holding
    the counts of its ``column`` (packed), its texts and bytes."""
    import pyarrow as pa

    check_column(batch.schema, column)
    texts = batch.column(column)
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        texts = texts.cast(pa.large_string())
    counted = count_with_figures(texts.chunks, regex, num_threads=num_threads)
    return pa.table(
        {
            "counts": pa.array([counted.counts.to_bytes()], pa.large_binary()),
            "texts": pa.array([counted.texts], pa.int64()),
            "bytes": pa.array([counted.bytes], pa.int64()),
        }
    )


def check_column(schema: Any, column: str) -> None:
    """A ValueError unless the pyarrow ``schema`` has a string column ``column``."""
    import pyarrow as pa

    if column not in schema.names:
        raise ValueError(f"the dataset has no column {column!r} (columns: {', '.join(schema.names[:20]) or 'none'})")
    typ = schema.field(column).type
    typ = typ.value_type if pa.types.is_dictionary(typ) else typ
    is_view = getattr(pa.types, "is_string_view", lambda t: False)
    if not (pa.types.is_string(typ) or pa.types.is_large_string(typ) or is_view(typ)):
        raise ValueError(f"the dataset's column {column!r} holds {typ}, not strings")


def add_packed(*parts: Any) -> Tuple[bytes, Figures]:
    """A reduce task: the sum of partial counts (packed, or tables of :func:`count_block`'s
    rows), packed, and the figures of the tables among them."""
    counts, figures = [], Figures()
    for part in parts:
        if isinstance(part, bytes):
            counts.append(_core.SpanCounts.from_bytes(part))
            continue
        for packed in part.column("counts").to_pylist():
            counts.append(_core.SpanCounts.from_bytes(packed))
        figures.add(Figures(shards=part.num_rows, texts=sum(part.column("texts").to_pylist()), bytes=sum(part.column("bytes").to_pylist())))
    return _core.SpanCounts.merge(counts).to_bytes(), figures


# ------------------------------------------------------------------------------ on the driver


class CountedOnRay:
    """What :func:`count_files_with_figures` gives: the counts, and what was counted."""

    def __init__(self, counts: _core.SpanCounts, figures: Figures) -> None:
        self.counts = counts
        self.figures = figures


def count_files(
    paths: Union[str, os.PathLike, Source, Sequence[Union[str, os.PathLike, Source]]],
    pattern: Optional[str] = None,
    *,
    text_column: str = "text",
    doc_separator: str = "\n",
    doc_cap: Optional[int] = None,
    skip_bad_lines: bool = False,
    input_format: Optional[str] = None,
    arrow: bool = False,
    progress: Union[bool, ProgressCallback, ConsoleProgress, None] = False,
    num_cpus: int = 1,
    fan_in: int = FAN_IN,
    read: Optional[Callable[[Source, Reading], Iterable[Any]]] = None,
    split_bytes: Optional[int] = SPLIT_BYTES,
) -> _core.SpanCounts:
    """Counts the spans of files on the Ray cluster this process is connected to (``ray.init``
    first; :func:`start_local_cluster` starts one on this machine): a task per file, reading it
    in the worker as ``bpeforge train`` reads it (text, JSONL, Parquet; ``.gz``/``.zst``;
    ``text_column``, ``doc_separator``, ``doc_cap`` and ``skip_bad_lines`` as there), the sums in
    a tree of reduce tasks of ``fan_in`` parts each. Folders and globs are expanded on the
    driver; each node must see the files at the same paths. ``num_cpus``: CPUs (and counting
    threads) per task. ``progress`` as in :func:`bpeforge.count` (on a console: files counted /
    total, bytes, rate). ``read(source, reading)``: how a worker reads a file (default
    :func:`read_file`). Every document is counted: no hold-out, no sampling.

    A file that cannot be read raises bpeforge's :class:`~bpeforge._errors.InputError` naming it.
    The counts equal ``bpeforge.count`` of the same documents in one process."""
    return count_files_with_figures(
        paths, pattern, text_column=text_column, doc_separator=doc_separator, doc_cap=doc_cap,
        skip_bad_lines=skip_bad_lines, input_format=input_format, arrow=arrow, progress=progress,
        num_cpus=num_cpus, fan_in=fan_in, read=read, split_bytes=split_bytes,
    ).counts


def count_files_with_figures(
    paths: Union[str, os.PathLike, Source, Sequence[Union[str, os.PathLike, Source]]],
    pattern: Optional[str] = None,
    *,
    text_column: str = "text",
    doc_separator: str = "\n",
    doc_cap: Optional[int] = None,
    skip_bad_lines: bool = False,
    input_format: Optional[str] = None,
    arrow: bool = False,
    progress: Union[bool, ProgressCallback, ConsoleProgress, None] = False,
    num_cpus: int = 1,
    fan_in: int = FAN_IN,
    read: Optional[Callable[[Source, Reading], Iterable[Any]]] = None,
    split_bytes: Optional[int] = SPLIT_BYTES,
) -> CountedOnRay:
    """:func:`count_files`, with the figures of what was counted (files, texts, bytes, bad
    lines skipped)."""
    regex = resolve_pattern(pattern)
    check_fan_in(fan_in)
    if doc_cap is not None and (not isinstance(doc_cap, int) or doc_cap < 1):
        raise ValueError(f"doc_cap must be a positive int, got {doc_cap!r}")
    if split_bytes is not None and (not isinstance(split_bytes, int) or isinstance(split_bytes, bool) or split_bytes < 1):
        raise ValueError(f"split_bytes must be a positive int or None, got {split_bytes!r}")
    ray = connected_ray()
    reading = Reading(text_column, doc_separator, doc_cap, skip_bad_lines, arrow)
    sources = [part for source in list_sources(paths, input_format) for part in parts_of(source, reading, split_bytes)]
    options = {"doc_cap": doc_cap} if doc_cap is not None else None
    # SPREAD: parts of one file go to different nodes, even while one node could queue them all
    # on a worker it holds (Ray reuses a leased worker for tasks of the same shape).
    task = ray.remote(count_file).options(
        num_cpus=num_cpus, num_returns=2, max_retries=RETRIES, retry_exceptions=False, scheduling_strategy="SPREAD"
    )
    jobs = [
        Job(str(source), functools.partial(task.remote, source, reading, regex, options, num_cpus, read or read_file))
        for source in sources
    ]
    empty = _core.SpanCounts.from_mapping({}, pattern=regex, options=options)
    whole = all(source.byte_range is None and source.row_groups is None for source in sources)
    return add_up(ray, jobs, empty, "files" if whole else "parts of files", progress, fan_in)


def count_dataset(
    ds: Any,
    column: str = "text",
    pattern: Optional[str] = None,
    *,
    progress: Union[bool, ProgressCallback, ConsoleProgress, None] = False,
    num_cpus: int = 1,
    fan_in: int = FAN_IN,
) -> _core.SpanCounts:
    """Counts the spans of the string column ``column`` of a Ray Dataset (any: read from
    Parquet, JSON, object storage, made by other Ray Data steps): each block is counted where
    Ray Data makes it (``map_batches``, ``num_cpus`` CPUs and counting threads a task), the
    partial counts added in a tree of reduce tasks of ``fan_in`` parts each. Nulls are
    skipped. ``progress`` as in :func:`bpeforge.count` (blocks added / total, bytes; Ray Data
    shows its own progress while the blocks are counted). The counts equal ``bpeforge.count``
    of the column's texts in one process, whatever the blocks."""
    regex = resolve_pattern(pattern)
    check_fan_in(fan_in)
    ray = connected_ray()
    # Checked here too: what a map_batches task raises reaches the driver as text only.
    schema = ds.schema()
    if schema is not None and hasattr(schema, "base_schema"):
        schema = schema.base_schema
    if schema is not None and hasattr(schema, "field"):
        check_column(schema, column)
    counted = ds.map_batches(
        count_block,
        batch_size=None,  # a whole block at a time
        batch_format="pyarrow",
        fn_kwargs={"column": column, "regex": regex, "num_threads": num_cpus},
        num_cpus=num_cpus,
    )
    task = ray.remote(add_packed).options(num_cpus=1, num_returns=2, max_retries=RETRIES, retry_exceptions=False)
    empty = _core.SpanCounts.from_mapping({}, pattern=regex)
    return add_up(ray, block_groups(ray, counted, task, fan_in), empty, "block groups", progress, fan_in).counts


def block_groups(ray: Any, counted: Any, task: Any, fan_in: int) -> Iterator["Job"]:
    """The jobs adding the counted blocks of the dataset ``counted``, ``fan_in`` blocks each,
    as Ray Data finishes them (its streaming executor: the first are added while the others
    are still counted)."""
    bundles = iter(counted.iter_internal_ref_bundles())
    group: List[Any] = []
    first = 0
    while True:
        try:
            bundle = next(bundles, None)
        except Exception as e:  # noqa: BLE001 - Ray Data wraps what a task raised: say ours first
            raise task_error(ray, e, "counting the dataset") from None
        if bundle is not None:
            group += [entry.ref if hasattr(entry, "ref") else entry[0] for entry in bundle.blocks]
        while len(group) >= fan_in or (bundle is None and group):
            parts, group = group[:fan_in], group[fan_in:]
            yield Job(f"blocks {first}-{first + len(parts) - 1}", functools.partial(task.remote, *parts))
            first += len(parts)
        if bundle is None:
            return


def check_fan_in(fan_in: int) -> None:
    if not isinstance(fan_in, int) or isinstance(fan_in, bool) or fan_in < 2:
        raise ValueError(f"fan_in must be an int of at least 2, got {fan_in!r}")


def list_sources(paths: Any, input_format: Optional[str]) -> List[Source]:
    """The files of ``paths`` (files, folders, globs, or Sources), listed on the driver."""
    if isinstance(paths, (str, os.PathLike, Source)):
        paths = [paths]
    sources: List[Source] = []
    for path in paths:
        sources += [path] if isinstance(path, Source) else expand_inputs([os.fspath(path)], input_format)
    return sources


def parts_of(source: Source, reading: Reading, split_bytes: Optional[int]) -> List[Source]:
    """``source`` in parts of about ``split_bytes`` bytes, for several tasks (see
    :func:`count_files`), or ``[source]`` if it stays whole. Only the file's size (and a Parquet
    file's footer) is read here, on the driver."""
    if split_bytes is None or source.byte_range is not None or source.row_groups is not None:
        return [source]
    if source.format in ("text", "jsonl"):
        separator = (reading.doc_separator if source.format == "text" else "\n").encode("utf-8", "surrogateescape")
        if source.compression is not None or str(source.path) == "-" or not splittable(separator):
            return [source]
        try:
            info = os.stat(source.path)
        except OSError:
            return [source]  # the task says what is wrong with it
        if not stat.S_ISREG(info.st_mode) or info.st_size <= split_bytes:
            return [source]
        n = -(-info.st_size // split_bytes)
        bounds = [info.st_size * i // n for i in range(n + 1)]
        return [dataclasses.replace(source, byte_range=(a, b)) for a, b in zip(bounds, bounds[1:])]
    if source.format == "parquet" and source.compression is None:
        try:
            import pyarrow.parquet as pq

            metadata = pq.ParquetFile(source.path).metadata
            sizes = [metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups)]
        except Exception:  # noqa: BLE001 - no pyarrow, or not Parquet: the task says what is wrong
            return [source]
        groups: List[List[int]] = [[]]
        size = 0
        for i, n in enumerate(sizes):
            if groups[-1] and size + n > split_bytes:
                groups.append([])
                size = 0
            groups[-1].append(i)
            size += n
        if len(groups) > 1:
            return [dataclasses.replace(source, row_groups=tuple(g)) for g in groups]
    return [source]


def splittable(separator: bytes) -> bool:
    """Whether a file can be cut into byte ranges at ``separator``: not empty, and no two of its
    occurrences can overlap (no proper prefix is also a suffix; as the Rust readers check)."""
    return bool(separator) and all(separator[:n] != separator[-n:] for n in range(1, len(separator)))


def connected_ray() -> Any:
    """``ray``, connected to a cluster, or a RuntimeError saying how to connect."""
    ray = import_ray()
    if not ray.is_initialized():
        raise RuntimeError(
            "not connected to a Ray cluster: call ray.init(address=...) first, or "
            "bpeforge.ray.start_local_cluster() for one on this machine"
        )
    return ray


@dataclass
class Job:
    """A counting task to submit: what it counts (for messages), and how to submit it (giving
    the refs of its packed counts and of its figures)."""

    label: str
    submit: Callable[[], Tuple[Any, Any]]


def add_up(
    ray: Any,
    jobs: Iterable[Job],
    empty: _core.SpanCounts,
    unit: str,
    progress: Union[bool, ProgressCallback, ConsoleProgress, None],
    fan_in: int,
) -> CountedOnRay:
    """Runs the counting ``jobs`` (a list, or an iterator whose jobs are submitted as it gives
    them; at most two per CPU of the cluster at once, so that the
    partial counts waiting to be added stay few) and adds their counts in a tree: ``fan_in``
    counts of one level make one of the next, the last ones of every level are added at the
    end. The driver owns every task's result and only waits on figures until the sum, which it
    fetches alone; on any error or Ctrl-C it cancels the tasks still running."""
    callback, console = progress_callback(progress)
    add = ray.remote(add_packed).options(num_cpus=1, num_returns=2, max_retries=RETRIES, retry_exceptions=False)
    limit = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    figures = Figures()
    levels: List[List[Any]] = [[]]  # levels[k]: counts refs that are the sum of fan_in**k jobs' counts
    running: Dict[Any, Tuple[Any, Job]] = {}  # figures ref -> (counts ref, job)
    submitted: List[Any] = []  # a ref of every task, to cancel them
    feed = JobFeed(jobs)

    def show() -> None:
        of = f"/{feed.total:,}" if feed.total is not None else ""
        done = feed.started - len(running)
        note = f"{figures.shards:,}{of} {unit}" if unit != "block groups" else f"{done:,}{of} {unit} added"
        if console is not None:
            console.reading(figures.texts, figures.bytes, note)
        elif callback is not None:
            callback("count", {"texts": figures.texts, "bytes": figures.bytes, "done": done, "total": feed.total})

    def add_level(k: int) -> None:
        while len(levels[k]) >= fan_in:
            parts, levels[k] = levels[k][:fan_in], levels[k][fan_in:]
            if len(levels) == k + 1:
                levels.append([])
            counts_ref, _ = add.remote(*parts)
            submitted.append(counts_ref)
            levels[k + 1].append(counts_ref)
            add_level(k + 1)

    try:
        show()
        while feed.more or running:
            while len(running) < limit:
                job = feed.next(wait=not running)
                if job is None:
                    break
                counts_ref, figures_ref = job.submit()
                running[figures_ref] = (counts_ref, job)
                submitted.append(counts_ref)
            if not running:
                continue
            done, _ = ray.wait(list(running), num_returns=1, timeout=WAIT_SECONDS)
            for figures_ref in done:
                counts_ref, job = running.pop(figures_ref)
                try:
                    figures.add(fetch(ray, figures_ref, job.label))
                except BaseException:
                    forget(ray, counts_ref)
                    raise
                levels[0].append(counts_ref)
                add_level(0)
            if done:
                show()
        counts = the_sum(ray, add, levels, empty, fan_in, submitted)
    except BaseException:
        cancel(ray, submitted)
        if console is not None:
            console.abort()
        raise
    if console is not None:
        console("count", {"spans": len(counts)})
        console.close()
    return CountedOnRay(counts, figures)


class JobFeed:
    """The jobs of :func:`add_up`, one at a time: from a list as they are; from another
    iterable (the blocks of a dataset as Ray Data finishes them) through a thread that reads it
    into a queue, so that the driver goes on adding what is done while it waits for more."""

    def __init__(self, jobs: Iterable[Job]) -> None:
        self.total = len(jobs) if isinstance(jobs, Sized) else None
        self.started = 0
        self.more = True
        self.waiting: List[Job] = []
        self.queue: Optional["queue.Queue[Tuple[str, Any]]"] = None
        if self.total is not None:
            self.waiting = list(jobs)
            self.waiting.reverse()
        else:
            self.queue = queue.Queue()
            threading.Thread(target=self.pull, args=(iter(jobs),), name="bpeforge-ray-blocks", daemon=True).start()

    def pull(self, jobs: Iterator[Job]) -> None:
        assert self.queue is not None
        try:
            for job in jobs:
                self.queue.put(("job", job))
            self.queue.put(("end", None))
        except BaseException as e:  # noqa: BLE001 - raised on the driver's thread by next()
            self.queue.put(("error", e))

    def next(self, wait: bool) -> Optional[Job]:
        """The next job, or None: none left (``more`` turns false), or (reading an iterable)
        none ready yet, after waiting up to WAIT_SECONDS if ``wait``. Raises what reading the
        iterable raised."""
        if not self.more:
            return None
        if self.queue is None:
            if not self.waiting:
                self.more = False
                return None
            self.started += 1
            return self.waiting.pop()
        try:
            kind, value = self.queue.get(timeout=WAIT_SECONDS) if wait else self.queue.get_nowait()
        except queue.Empty:
            return None
        if kind != "job":
            self.more = False
            if kind == "error":
                raise value
            return None
        self.started += 1
        return value


def the_sum(ray: Any, add: Any, levels: List[List[Any]], empty: _core.SpanCounts, fan_in: int, submitted: List[Any]) -> _core.SpanCounts:
    """Adds what is left on every level of the tree (``fan_in`` at a time, until one is left),
    and fetches and unpacks the sum: the only counts the driver ever holds (``empty`` if there
    were none)."""
    rest = [ref for level in levels for ref in level]
    levels.clear()
    while len(rest) > 1:
        parts, rest = rest[:fan_in], rest[fan_in:]
        counts_ref, _ = add.remote(*parts)
        submitted.append(counts_ref)
        rest.append(counts_ref)
    if not rest:
        return empty
    packed = fetch(ray, rest.pop(), "adding the counts")
    counts = _core.SpanCounts.from_bytes(packed)
    del packed
    if counts.pattern != empty.pattern or counts.options != empty.options:  # pragma: no cover - a read() of another kind?
        raise RuntimeError("the counts added up on Ray were made with another pattern or options")
    return counts


def cancel(ray: Any, refs: List[Any]) -> None:
    """Cancels the tasks of ``refs`` that have not finished: a waiting one does not start, a
    running one gets a KeyboardInterrupt (which the Rust counter takes between two batches).
    Not ``force=True``, which kills the worker process: Ray may then see a task it just
    handed to a worker finish after it was cancelled, and abort the driver."""
    try:
        _, pending = ray.wait(refs, num_returns=len(refs), timeout=0)
    except Exception:  # noqa: BLE001 - the cluster is gone: nothing left to cancel
        return
    for ref in pending:
        try:
            ray.cancel(ref, force=False, recursive=True)
        except Exception:  # noqa: BLE001 - finished meanwhile, or its worker gone
            pass


def forget(ray: Any, ref: Any) -> None:
    """Takes the error a failed task left in ``ref`` (the same as in the ref the driver
    fetched), so that Ray does not log it again as unhandled."""
    try:
        ray.get(ref, timeout=0)
    except Exception:  # noqa: BLE001 - the error already raised
        pass


def fetch(ray: Any, ref: Any, label: str) -> Any:
    """``ray.get(ref)``, with what a task raised re-raised as bpeforge raised it (its message
    names the file), not wrapped in Ray's traceback."""
    try:
        return ray.get(ref)
    except Exception as e:  # noqa: BLE001 - sorted out by task_error
        raise task_error(ray, e, label) from None


def task_error(ray: Any, e: BaseException, label: str) -> BaseException:
    """The exception to raise for ``e``, which ``ray.get`` raised for a task counting ``label``:
    what bpeforge raised in the task (found through Ray's wrappers), else a RuntimeError naming
    ``label`` and what Ray said (a worker that died more often than it is retried, say)."""
    seen = set()
    cause: Optional[BaseException] = e
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ray.exceptions.RayTaskError):  # also an instance of what it wraps
            cause = cause.cause
        elif isinstance(cause, (InputError, ValueError, TypeError, OverflowError, OSError)):
            return cause.with_traceback(None)
        else:
            cause = cause.__cause__
    first = " ".join(str(e).split())[:500]
    return RuntimeError(f"{label}: the Ray task failed ({type(e).__name__}: {first})")
