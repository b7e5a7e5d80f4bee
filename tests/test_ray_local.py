"""bpeforge._ray_local: a local Ray cluster listens on loopback only, keeps its files in a
private folder, is refused when Ray was imported so that it would not be, and leaves no
process and no file behind when it stops, Ctrl-C at any moment of ``bpeforge count --ray``
included (exit 130)."""

from __future__ import annotations

import ipaddress
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time

import pytest

psutil = pytest.importorskip("psutil")
ray = pytest.importorskip("ray")
bray = pytest.importorskip("bpeforge.ray")
ray_local = pytest.importorskip("bpeforge._ray_local")
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
ENV.pop("BPEFORGE_DEBUG", None)


def listeners(pids):
    """(process name, address) of every TCP socket listening, and every UDP socket bound, in
    the processes ``pids``."""
    found = []
    for c in psutil.net_connections(kind="inet"):
        if c.pid in pids and c.laddr and (c.status == psutil.CONN_LISTEN or c.type == 2):  # 2: SOCK_DGRAM
            found.append((psutil.Process(c.pid).name(), c.laddr.ip))
    return found


def is_loopback(ip):
    address = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def test_every_listener_is_on_loopback_and_every_file_private(ray_cluster):
    @ray.remote(num_cpus=1)
    def pid():
        return os.getpid()

    workers = set(ray.get([pid.remote() for _ in range(4)]))  # workers started, and alive
    processes = {p.pid for p in ray_cluster.processes()}
    assert workers <= processes  # renamed ray::... workers are found by their open files
    found = listeners(processes | {os.getpid()})
    names = {name for name, _ in found}
    assert {"gcs_server", "raylet"} <= names, found  # not vacuous: the servers were seen
    assert [(n, ip) for n, ip in found if not is_loopback(ip)] == []
    assert [n["NodeManagerAddress"] for n in ray.nodes()] == ["127.0.0.1"]
    folder = ray_cluster.folder
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert len(os.path.join(folder, "ray")) <= ray_local.MAX_FOLDER_LENGTH
    session = ray._private.worker._global_node.get_session_dir_path()
    assert session.startswith(os.path.join(folder, "ray") + os.sep)


def test_a_ray_imported_without_the_setting_is_refused(tmp_path):
    """Imported with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER unset, Ray would put a local node on the
    machine's network address: refused, before anything starts."""
    code = (
        "import ray, bpeforge.ray as bray\n"
        "try:\n"
        "    bray.start_local_cluster(num_cpus=1)\n"
        "except RuntimeError as e:\n"
        "    print('refused:', e)\n"
        "print('initialized:', ray.is_initialized())\n"
    )
    env = {k: v for k, v in ENV.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    env["TMPDIR"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "refused: Ray was imported without RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" in r.stdout, r.stderr
    assert "initialized: False" in r.stdout
    assert list(tmp_path.iterdir()) == []


def test_options_that_would_leave_loopback_are_refused():
    for name in ("_node_ip_address", "dashboard_host", "include_dashboard", "address", "_temp_dir"):
        with pytest.raises(ValueError, match=name):
            bray.start_local_cluster(**{name: "0.0.0.0"})


# ------------------------------------------------------------------------------ nothing left behind


def short_tmp():
    """A temporary folder with a path short enough to hold a cluster's folder (Ray's Unix
    sockets), given to the command as TMPDIR: the cluster's files are all in it."""
    return tempfile.mkdtemp(prefix="b", dir="/tmp")


def interrupt_count(tmpdir, corpus, delay, out):
    """Runs ``bpeforge count --ray`` on ``corpus`` (TMPDIR=``tmpdir``), sends it Ctrl-C after
    ``delay`` seconds; returns its exit code, stderr, and the processes it had started by then
    (its descendants)."""
    cmd = [sys.executable, "-m", "bpeforge", "count", str(corpus), "--ray", "--threads", "1", "-o", str(out)]
    p = subprocess.Popen(cmd, env={**ENV, "TMPDIR": tmpdir}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children = []
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline:
        try:
            children = psutil.Process(p.pid).children(recursive=True) or children
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    return p.returncode, err, children


def alive(processes):
    left = []
    for q in processes:
        try:
            if q.is_running() and q.status() != psutil.STATUS_ZOMBIE:
                left.append(q)
        except psutil.NoSuchProcess:
            pass
    return left


@pytest.mark.parametrize("moment", ["importing", "starting", "counting"])
def test_ctrl_c_at_any_moment_leaves_nothing_behind(tmp_path, moment):
    """Ctrl-C on ``bpeforge count --ray`` while Ray is imported, while the cluster starts, and
    while a task counts (reading a pipe that never ends): exit 130 with one line, and no
    process it started and no file of its cluster left."""
    corpus = tmp_path / "stream.txt"
    writer = None
    if moment == "counting":
        os.mkfifo(corpus)
    else:
        corpus.write_text("some text\n" * 1000)
    tmpdir = short_tmp()
    try:
        if moment == "counting":
            # The pipe opens for writing once a worker opens it for reading: the task runs.
            cmd = [sys.executable, "-m", "bpeforge", "count", str(corpus), "--ray", "--threads", "1", "-o", str(tmp_path / "c.parquet")]
            p = subprocess.Popen(cmd, env={**ENV, "TMPDIR": tmpdir}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            writer = os.open(corpus, os.O_WRONLY)
            os.write(writer, b"some text\n")
            children = psutil.Process(p.pid).children(recursive=True)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=120)
            code = p.returncode
        else:
            # Importing Ray takes about a second; starting the cluster a few more.
            code, err, children = interrupt_count(tmpdir, corpus, 0.6 if moment == "importing" else 2.5, tmp_path / "c.parquet")
        assert code == 130, err
        assert err.strip().splitlines()[-1] == "bpeforge: interrupted"
        if moment != "importing":
            assert children, "no process was started before Ctrl-C: the moment was missed"
        assert alive(children) == []
        assert ray_local.processes_using(tmpdir) == []
        assert os.listdir(tmpdir) == []
        assert not (tmp_path / "c.parquet").exists()
    finally:
        if writer is not None:
            os.close(writer)
        ray_local.end_processes(tmpdir)
        os.rmdir(tmpdir)
