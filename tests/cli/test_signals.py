"""bpeforge.cli.signals: Ctrl-C during `bpeforge train` ends it at once (exit 130), while reading
and while merging, and leaves nothing written."""

import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from .helpers import ENV, no_outputs_in


def wait_for_line(stream, needle: str, timeout: float) -> bool:
    found = threading.Event()
    lines: list = []

    def reader():
        for line in stream:
            lines.append(line)
            if needle in line:
                found.set()
        found.set()

    threading.Thread(target=reader, daemon=True).start()
    found.wait(timeout)
    return any(needle in line for line in lines)


def interrupt_and_time(p: subprocess.Popen) -> float:
    assert p.poll() is None, "training finished before it could be interrupted"
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    p.wait(timeout=10)
    return time.monotonic() - t0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_while_reading(tmp_path):
    out = tmp_path / "tok"
    p = subprocess.Popen(
        [sys.executable, "-m", "bpeforge", "train", "-", "-o", str(out), "-v"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )
    block = "".join(f"endless stream of words number {i} and more\n" for i in range(5000))

    def feed():
        try:
            while True:
                p.stdin.write(block)
        except (BrokenPipeError, OSError, ValueError):
            pass

    threading.Thread(target=feed, daemon=True).start()
    time.sleep(1.5)
    elapsed = interrupt_and_time(p)
    err = p.stderr.read()
    assert p.returncode == 130, err
    assert elapsed < 1.0
    assert err.rstrip().endswith("bpeforge: interrupted") and "Traceback" not in err
    assert no_outputs_in(tmp_path) == []


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
@pytest.mark.parametrize("how", ["program", "python-call"])
def test_ctrl_c_while_merging(tmp_path, how):
    rng = random.Random(1)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZàéîõüßçñ"
    words = ["".join(rng.choices(letters, k=rng.randint(3, 14))) for _ in range(200_000)]
    with open(tmp_path / "big.txt", "w") as f:
        for _ in range(2500):
            f.write(" ".join(rng.choices(words, k=200)) + "\n")
    out = tmp_path / "out" / "tok"
    args = ["train", str(tmp_path / "big.txt"), "-o", str(out), "-v", "--vocab-size", "200000"]
    if how == "program":  # Ctrl-C ends the process at once
        command = [sys.executable, "-m", "bpeforge", *args]
    else:  # main(argv) from Python: KeyboardInterrupt, raised from inside the merge loop
        command = [sys.executable, "-c", f"import sys, bpeforge.cli; sys.exit(bpeforge.cli.main({args!r}))"]
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    assert wait_for_line(p.stderr, "Starting BPE training", 60)
    time.sleep(0.2)
    elapsed = interrupt_and_time(p)
    assert p.returncode == 130
    assert elapsed < (1.0 if how == "program" else 2.0)
    assert no_outputs_in(tmp_path / "out") == []
