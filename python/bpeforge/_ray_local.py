"""A Ray cluster on this machine for one process: reachable on loopback only, its files in a
private folder, and nothing of it left behind when it stops, however it stops (Ctrl-C while it
starts included). :func:`bpeforge.ray.start_local_cluster` and ``--ray`` start it; why each
step is needed (with what Ray 2.60 does, measured): docs/ray.md, "Local clusters".

- **Loopback only.** Ray binds the servers of a node (GCS, raylet, object manager, workers,
  agents, metrics) to the node's address, and to loopback only when that address is loopback.
  ``ray.init`` replaces a loopback ``_node_ip_address`` by the address of the route to a public
  one unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` was set when Ray was first imported; so it
  is set before the import, a Ray imported without it is refused before anything starts, and
  the node's address is checked once it runs.
- **A private folder.** Ray's temporary folder (session folders, logs, Unix sockets, spilled
  objects) goes in a new folder only this user can enter (0700: Ray makes its own folders
  world-writable), with a short path (Unix socket paths have at most 107 bytes), removed when
  the cluster stops.
- **Nothing left behind.** ``ray.shutdown`` only stops the processes of a node that finished
  starting, and Ray's agents outlive a killed raylet for minutes; so stopping also ends every
  process of this user that names the private folder on its command line or, renamed
  ``ray::...`` as Ray's workers and agents rename themselves, holds a file open in it. Ctrl-C
  is held back while the cluster stops, and raised after.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
from typing import Any, Iterator, List, Optional

LOOPBACK = "127.0.0.1"
# Ray's longest Unix socket path is <temp folder>/session_<date>_<time>_<micro>_<pid>/sockets/plasma_store
# (about 62 bytes after the folder); a socket path has at most 107.
MAX_FOLDER_LENGTH = 40
# How long ending a process waits after SIGTERM before SIGKILL, and how many rounds of looking
# for processes (a raylet that dies last may have started a worker meanwhile).
TERM_SECONDS = 3.0
ROUNDS = 3


class LocalCluster:
    """A running local cluster (see the module's comment): :meth:`stop` (or leaving a ``with``
    block, or the process exiting) stops it and removes its folder. ``ray``: the ``ray``
    module, connected to it."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.ray: Any = None
        self.gcs_address: Optional[str] = None  # once it runs
        self.stopped = False
        atexit.register(self.stop)

    @property
    def address(self) -> str:
        """The cluster's GCS address (``127.0.0.1:PORT``), to connect other processes to it."""
        if self.gcs_address is None:
            raise RuntimeError("the local Ray cluster is not running")
        return self.gcs_address

    def processes(self) -> List[Any]:
        """The processes of this cluster still running (psutil Processes)."""
        return processes_using(self.folder)

    def stop(self) -> None:
        """Disconnects, ends every process of the cluster, removes its folder. Ctrl-C meanwhile is
        held back, and raised once it is done. Stopping twice does nothing."""
        if self.stopped:
            return
        with interrupts_held_back():
            try:
                if self.ray is not None and self.connected():
                    self.ray.shutdown()
            except Exception:  # noqa: BLE001 - a cluster half started: its processes are ended below
                pass
            end_processes(self.folder)
            shutil.rmtree(self.folder, ignore_errors=True)
            self.stopped = True
            atexit.unregister(self.stop)

    def connected(self) -> bool:
        """Whether this process is connected to this cluster (or was starting it)."""
        if self.gcs_address is None:
            return True  # interrupted while starting: ray.shutdown() stops what it knows of
        try:
            return bool(self.ray.is_initialized()) and self.ray.get_runtime_context().gcs_address == self.gcs_address
        except Exception:  # noqa: BLE001 - not connected
            return False

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def start(num_cpus: Optional[int] = None, **init_options: Any) -> LocalCluster:
    """Starts a local cluster and connects this process to it (see the module's comment).
    ``init_options`` go to ``ray.init`` (not those that would let it reach beyond loopback).
    A RuntimeError if it cannot be held to loopback; on any error or Ctrl-C while it starts,
    what was started is stopped before the exception goes on."""
    for name in ("_node_ip_address", "address", "include_dashboard", "dashboard_host", "_temp_dir"):
        if name in init_options:
            raise ValueError(f"a local cluster sets {name} itself")
    try:
        import psutil  # noqa: F401 - what stop() finds the cluster's processes with
    except ImportError:
        raise ImportError("a local Ray cluster needs psutil: pip install 'bpeforge[ray]'") from None
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray_imported = "ray" in sys.modules
    if not ray_imported:
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    check_loopback_possible()
    cluster: Optional[LocalCluster] = None
    try:
        ray = import_ray()
        cluster = LocalCluster(private_folder())
        cluster.ray = ray
        # Ctrl-C waits until ray.init is done: interrupted in the middle, Ray may leave its
        # driver half made, and the process crash (SIGSEGV) as it exits (docs/ray.md).
        with interrupts_held_back(second_interrupts=True):
            ray.init(
                address="local",
                num_cpus=num_cpus,
                include_dashboard=False,
                _node_ip_address=LOOPBACK,
                _temp_dir=os.path.join(cluster.folder, "ray"),
                **{"log_to_driver": False, **init_options},
            )
        cluster.gcs_address = str(ray.get_runtime_context().gcs_address)
        where = [n.get("NodeManagerAddress") for n in ray.nodes()]
        if where != [LOOPBACK]:
            raise RuntimeError(f"the local Ray cluster runs on {', '.join(map(str, where))}, not on loopback only: stopped")
    except BaseException:
        if cluster is not None:
            cluster.stop()
        raise
    return cluster


def import_ray() -> Any:
    """The ``ray`` package, or an ImportError saying how to install it."""
    try:
        import ray
    except ImportError as e:
        if isinstance(e, ModuleNotFoundError) and e.name == "ray":
            raise ImportError("counting on Ray needs Ray: pip install 'bpeforge[ray]'") from None
        raise ImportError(f"counting on Ray needs Ray, which is installed but fails to import: {e}") from None
    return ray


def check_loopback_possible() -> None:
    """A RuntimeError if Ray was imported in a way that puts a local node on a public address
    (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` unset or 1 when it was first imported): ``ray.init``
    would then replace 127.0.0.1 by that address, and every server would listen on it."""
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and getattr(constants, "ENABLE_RAY_CLUSTER", False):
        raise RuntimeError(
            "Ray was imported without RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, so a local cluster would "
            "listen on this machine's network address: set it before importing ray (or start the "
            "local cluster before importing ray)"
        )


def private_folder() -> str:
    """A new folder only this user can enter, with a path short enough for Ray's Unix sockets
    (in the temporary folder, else in /tmp)."""
    for parent in (tempfile.gettempdir(), "/tmp"):
        if len(os.path.join(parent, "bpeforge-ray-XXXXXXXX", "ray")) <= MAX_FOLDER_LENGTH and os.path.isdir(parent):
            return tempfile.mkdtemp(prefix="bpeforge-ray-", dir=parent)  # mode 0700
    raise RuntimeError(f"no temporary folder with a path short enough for Ray's sockets ({tempfile.gettempdir()} is too long)")


def processes_using(folder: str) -> List[Any]:
    """The processes of this user, other than this one, that name ``folder`` on their command
    line or (renamed ``ray::...``) hold a file open in it."""
    import psutil

    folder = os.path.realpath(folder)
    me, uid = os.getpid(), os.getuid()
    found = []
    for p in psutil.process_iter(["pid", "uids", "cmdline"]):
        try:
            if p.info["pid"] == me or p.info["uids"] is None or p.info["uids"].real != uid:
                continue
            cmdline = p.info["cmdline"] or []
            if any(folder in part for part in cmdline):
                found.append(p)
            elif cmdline and cmdline[0].startswith("ray::") and any(f.path.startswith(folder + os.sep) for f in p.open_files()):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def end_processes(folder: str) -> None:
    """Ends the processes using ``folder`` (:func:`processes_using`): SIGTERM, then SIGKILL
    those still running after TERM_SECONDS; looks again, a few rounds, until none is left."""
    import psutil

    for _ in range(ROUNDS):
        found = processes_using(folder)
        if not found:
            return
        for p in found:
            with contextlib.suppress(psutil.Error):
                p.terminate()
        _, alive = psutil.wait_procs(found, timeout=TERM_SECONDS)
        for p in alive:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(alive, timeout=TERM_SECONDS)


@contextlib.contextmanager
def interrupts_held_back(second_interrupts: bool = False) -> Iterator[None]:
    """Holds back Ctrl-C (SIGINT) until the block is done, then raises KeyboardInterrupt if it
    came meanwhile (unless the block raised). With ``second_interrupts``, a second Ctrl-C
    raises KeyboardInterrupt at once (a way out of a block that hangs). Main thread only;
    elsewhere it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed = []

    def note(signum: int, frame: Any) -> None:
        pressed.append(signum)
        if second_interrupts and len(pressed) > 1:
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old if old is not None else signal.default_int_handler)
    if pressed:
        raise KeyboardInterrupt
