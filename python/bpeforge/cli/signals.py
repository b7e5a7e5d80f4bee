"""Ctrl-C during ``bpeforge train``: ending the process at once while nothing is written,
holding it back while the outputs are renamed into place, and once they are, skipping the rest
of the report with exit code 0."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Any, Callable, Iterator

from .arguments import EXIT_INTERRUPTED, PROG, stderr_line


class ExitOnCtrlC:
    """While started, Ctrl-C ends the process at once with exit code 130 (after one line on
    stderr), even while the GIL is released in a long Rust call, which Python's own
    KeyboardInterrupt would only interrupt once the call returns. It works through
    ``signal.set_wakeup_fd`` and a thread watching that pipe; POSIX main thread only, a no-op
    elsewhere. :meth:`stop` before writing anything, so that nothing is cut half-written."""

    def __init__(self, bars_active: Callable[[], bool]) -> None:
        self._bars_active = bars_active
        self._lock = threading.Lock()
        self._active = False
        self._old_fd = -1
        self._write_fd = -1

    def start(self) -> None:
        """Ctrl-C ends the process from now on (until :meth:`stop`)."""
        if os.name != "posix" or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return  # someone else handles Ctrl-C (e.g. an embedding program): leave it alone
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        try:
            self._old_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(read_fd)
            os.close(write_fd)
            return
        self._write_fd = write_fd
        self._active = True
        threading.Thread(target=self._watch, args=(read_fd,), name="bpeforge-ctrl-c", daemon=True).start()

    def _watch(self, read_fd: int) -> None:
        try:
            while True:
                data = os.read(read_fd, 64)
                if not data:
                    return  # stop() closed the pipe
                if signal.SIGINT in data:
                    with self._lock:
                        if not self._active:
                            return
                        message = f"{PROG}: interrupted\n"
                        if self._bars_active():
                            message = "\n" + message  # below the bar
                        try:
                            os.write(2, message.encode())
                        finally:
                            os._exit(EXIT_INTERRUPTED)
        finally:
            os.close(read_fd)

    def stop(self) -> None:
        """Ctrl-C raises KeyboardInterrupt again, as usual."""
        with self._lock:  # waits for a watcher that is already exiting
            if not self._active:
                return
            self._active = False
            signal.set_wakeup_fd(self._old_fd)
            os.close(self._write_fd)


@contextlib.contextmanager
def ctrl_c_ends_the_process(args: Any, bars_active: Callable[[], bool]) -> Iterator[None]:
    """Within the ``with`` block, Ctrl-C ends the process at once (:class:`ExitOnCtrlC`, with
    ``bars_active`` saying whether a progress bar is showing) when the command runs as the
    program (``args.exit_on_ctrl_c``); called from Python it raises KeyboardInterrupt as
    usual. End the block before writing anything."""
    exit_on_ctrl_c = ExitOnCtrlC(bars_active)
    if getattr(args, "exit_on_ctrl_c", False):
        exit_on_ctrl_c.start()
    try:
        yield
    finally:
        exit_on_ctrl_c.stop()


@contextlib.contextmanager
def ctrl_c_held_back() -> Iterator[None]:
    """Holds back Ctrl-C for the duration of a few renames; raises KeyboardInterrupt after them
    if it was pressed meanwhile (and nothing else went wrong). Main thread only: elsewhere
    Python delivers no signal, and this does nothing."""
    pressed = False
    old: Any = None

    def note_press(signum: int, frame: Any) -> None:
        nonlocal pressed
        pressed = True

    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGINT, note_press)
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)
    if pressed:
        raise KeyboardInterrupt


def after_saving(saved: str, report: Callable[[], int]) -> int:
    """Runs ``report`` (what follows the outputs once they are saved: measures, warnings, the
    report) and returns its exit code. Ctrl-C there skips the rest and exits 0 with a line
    saying so and what is ``saved``: 130 means nothing was written."""
    try:
        return report()
    except KeyboardInterrupt:
        stderr_line(f"{PROG}: interrupted: the rest of the report is skipped; {saved}")
        return 0
