"""``--ray`` and ``--ray-address ADDR`` of ``bpeforge train`` and ``bpeforge count``: the inputs
counted on a Ray cluster (a local one started for the run, or an existing one) through
:mod:`bpeforge.ray`, every document counted (no hold-out); training, or saving the counts,
then happens here."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any, Iterator, List, Optional, Sequence

from .._errors import InputError
from .._inputs import Source
from .._progress import ConsoleProgress
from ..ray import CountedOnRay, count_files_with_figures, import_ray, start_local_cluster
from .arguments import EXIT_USAGE, CLIError, one_line

RAY_HELP = """\
Ray:
  --ray counts the inputs on a Ray cluster started on this machine for the run (loopback
  only, one worker per core or --threads), --ray-address ADDR on an existing cluster
  (ray://head:10001, head:6379, or auto); every node must see the input files at the same
  paths. Each file is counted in a task, the counts added in a tree of tasks; then
  training (or saving the counts) happens here. Every document is counted: no hold-out,
  so compression is measured on --eval-text FILE when given.
"""


def add_ray_options(p: argparse.ArgumentParser) -> None:
    """``--ray`` and ``--ray-address`` (``train`` and ``count`` share them)."""
    p.add_argument("--ray", action="store_true", help="count the inputs on a local Ray cluster started for this run (pip install 'bpeforge[ray]')")
    p.add_argument("--ray-address", metavar="ADDR", help="count the inputs on the Ray cluster at ADDR (e.g. ray://head:10001 or auto)")


def on_ray(args: argparse.Namespace) -> bool:
    """Whether ``args`` ask for counting on Ray."""
    return bool(getattr(args, "ray", False) or getattr(args, "ray_address", None))


def check_ray_options(args: argparse.Namespace) -> None:
    """Refuses ``--ray`` with ``--ray-address``, and no INPUT (a usage error)."""
    if args.ray and args.ray_address:
        raise CLIError("--ray starts a local cluster, --ray-address connects to one: give one of them", EXIT_USAGE)
    if not args.inputs:
        raise CLIError("--ray counts INPUT files: name them (the standard library is no default here)", EXIT_USAGE)


def describe_cluster(ray: Any) -> str:
    """The cluster, for the report: its nodes and CPUs."""
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        cpus = int(ray.cluster_resources().get("CPU", 0))
        return f"{len(nodes):,} node{'s' if len(nodes) != 1 else ''}, {cpus:,} CPUs"
    except Exception:  # noqa: BLE001 - only a label
        return "cluster"


def count_on_ray(args: argparse.Namespace, sources: Sequence[Source], separator: str, pattern: str, progress: ConsoleProgress) -> "RayCounting":
    """Counts ``sources`` on the cluster ``args`` ask for (started, or connected to, and left
    again after, whatever happens, Ctrl-C included; a process already connected to a cluster,
    a caller of ``cli.main``, uses its connection as it is). A problem with the data, with Ray,
    or Ray missing, is a :class:`CLIError`."""
    with cluster(args) as ray:
        label = describe_cluster(ray)
        try:
            counted = count_files_with_figures(
                list(sources),
                pattern,
                text_column=args.text_column,
                doc_separator=separator,
                doc_cap=args.doc_cap,
                skip_bad_lines=args.skip_bad_lines,
                arrow=args.parquet_reader == "pyarrow",
                progress=progress,
            )
        except InputError as e:
            raise CLIError(str(e)) from None
        except (ValueError, TypeError, OSError, RuntimeError) as e:
            raise CLIError(one_line(e)) from None
    return RayCounting(counted, label, "a local Ray cluster" if args.ray else f"the Ray cluster at {args.ray_address}")


class RayCounting:
    """What counting on Ray gave the command line: the counts and figures, the cluster."""

    def __init__(self, counted: CountedOnRay, cluster: str, where: str) -> None:
        self.counts = counted.counts
        self.figures = counted.figures
        self.cluster = cluster
        self.where = where

    def bad_lines_note(self) -> Optional[str]:
        """What was skipped with --skip-bad-lines, with an example, or None."""
        f = self.figures
        if not f.bad_lines:
            return None
        lines, documents = f.bad_lines - f.bad_documents, f.bad_documents
        parts: List[str] = []
        if lines:
            parts.append(f"{lines:,} bad line{'s' if lines != 1 else ''}")
        if documents:
            parts.append(f"{documents:,} text document{'s that are' if documents != 1 else ' that is'} not UTF-8")
        return " and ".join(parts) + (f", e.g. {f.bad_examples[0]}" if f.bad_examples else "")


@contextlib.contextmanager
def cluster(args: argparse.Namespace) -> Iterator[Any]:
    """``ray``, connected to the cluster ``args`` ask for for the block: a local cluster
    started (``--ray``) and stopped after, or the cluster at ``--ray-address`` connected to and
    left after; already connected (a caller of ``cli.main``), the connection as it is. The
    cluster is stopped (or left) however the block or the start ends, Ctrl-C included."""
    if "ray" in sys.modules and sys.modules["ray"] is not None and sys.modules["ray"].is_initialized():
        yield sys.modules["ray"]
        return
    if args.ray:
        try:
            local = start_local_cluster(num_cpus=args.threads, logging_level="ERROR")
        except ImportError as e:
            raise CLIError(one_line(e)) from None
        except Exception as e:  # noqa: BLE001 - Ray's errors are many: said in one line
            raise CLIError(f"cannot start a local Ray cluster: {one_line(e)}") from None
        with local:
            yield local.ray
        return
    try:
        ray = import_ray()
    except ImportError as e:
        raise CLIError(one_line(e)) from None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        try:
            ray.init(address=args.ray_address, log_to_driver=False, logging_level="ERROR")
        except Exception as e:  # noqa: BLE001 - Ray's errors are many: said in one line
            raise CLIError(f"cannot connect to the Ray cluster at {args.ray_address}: {one_line(e)}") from None
        yield ray
    finally:
        ray.shutdown()
