"""The one run lock: `digest now`, every write command and the daemon's jobs take it.

An exclusive `fcntl.flock` on `<data_dir>/digest.lock`. The kernel drops the lock
when its holder exits, however it exits, so a crash never leaves a stale lock.
While held, the file says who holds it (pid, command, start time) so that the
next run can say so in its message; it is emptied when the lock is released, so a
holder named there whose process is gone was killed (`live_holder_started`). The file itself is never deleted: deleting a
flock'ed file lets two processes lock two different inodes. It is opened as
atomic.open_own allows: a symbolic or hard link there is refused, never truncated.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from digest.atomic import PRIVATE_MODE, open_own
from digest.clock import utc_now
from digest.errors import RunLocked, disk_error
from digest.store import ensure_folder
from digest.urls import for_display

LOCK_NAME = "digest.lock"
POLL_S = 0.05


@contextmanager
def run_lock(
    data_dir: Path,
    *,
    wait: bool = False,
    timeout_s: float | None = None,
    cancel: threading.Event | None = None,
) -> Iterator[None]:
    """Hold the run lock for the body; raise RunLocked if another run holds it.

    With `wait`, poll until the lock is free, for at most `timeout_s` seconds if
    given; setting `cancel` (the daemon does so on shutdown) gives up the wait.
    The lock is released when the body exits, also by an exception.
    """
    ensure_folder(data_dir)
    path = data_dir / LOCK_NAME
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = open_own(path, os.O_RDWR, PRIVATE_MODE)
    except OSError as exc:
        raise disk_error(exc, f"the run lock {path}") from exc
    try:
        _acquire(fd, path, wait=wait, timeout_s=timeout_s, cancel=cancel)
        try:
            _write_holder(fd)
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(
    fd: int, path: Path, *, wait: bool, timeout_s: float | None, cancel: threading.Event | None
) -> None:
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        holder = describe_holder(path)
        if not wait:
            raise RunLocked(
                f"another digest run is in progress ({holder}); try again later or pass --wait"
            )
        if deadline is not None and time.monotonic() >= deadline:
            raise RunLocked(
                f"another digest run is in progress ({holder}); gave up after {timeout_s:g} s"
            )
        if cancel is not None and cancel.is_set():
            raise RunLocked(f"another digest run is in progress ({holder}); stopped waiting")
        pause = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic()))
        if cancel is not None:
            cancel.wait(pause)
        else:
            time.sleep(pause)


def _write_holder(fd: int) -> None:
    started = utc_now().strftime("%Y-%m-%dT%H:%M:%SZ")
    command = for_display(" ".join(sys.argv))  # `digest add` of a URL with a password
    holder = {"pid": os.getpid(), "command": command, "started": started}
    data = (json.dumps(holder) + "\n").encode()
    os.ftruncate(fd, 0)
    with contextlib.suppress(OSError):  # a full disk: the lock holds, its holder goes unsaid
        os.pwrite(fd, data, 0)


def live_holder_started(data_dir: Path) -> datetime | None:
    """When the process holding the run lock took it; None when no live process holds it
    (the file is emptied on release, and names a killed holder's pid, now gone)."""
    try:
        holder = json.loads((data_dir / LOCK_NAME).read_text(encoding="utf-8"))
        pid, started = int(holder["pid"]), str(holder["started"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return datetime.fromisoformat(started.replace("Z", "+00:00"))


def describe_holder(path: Path) -> str:
    """'pid 1234, started 2026-11-21T08:00:00Z' from the lock file, as far as it is known."""
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
        return f"pid {int(holder['pid'])}, started {holder['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        # The holder locks before it writes; between the two the file is empty.
        return "pid unknown"
