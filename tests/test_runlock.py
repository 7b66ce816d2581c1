"""The run lock against real other processes: python -c children that hold it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from digest.errors import RunLocked
from digest.runtime.lock import run_lock

HOLD = """
import sys
from pathlib import Path
from digest.runtime.lock import run_lock
with run_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.readline()  # hold until the test closes our stdin
"""


@contextmanager
def held_by_other_process(data_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """A child process holding the lock until its stdin is closed."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "locked"
        yield child
    finally:
        if child.stdin and not child.stdin.closed:
            child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if child.stdout:
            child.stdout.close()


def lock_is_free_for_another_process(data_dir: Path) -> bool:
    probe = "import sys; from pathlib import Path; from digest.runtime.lock import run_lock\n"
    probe += "with run_lock(Path(sys.argv[1])): pass"
    return subprocess.run([sys.executable, "-c", probe, str(data_dir)], timeout=30).returncode == 0


@pytest.mark.slow
def test_second_run_is_refused_with_the_holders_pid_and_a_hint(tmp_path: Path) -> None:
    with (
        held_by_other_process(tmp_path) as child,
        pytest.raises(RunLocked) as refused,
        run_lock(tmp_path),
    ):
        pytest.fail("the lock was granted twice")
    message = str(refused.value)
    assert message.startswith(f"another digest run is in progress (pid {child.pid}, started 20")
    assert message.endswith("Z); try again later or pass --wait")


def test_lock_file_names_the_holder_while_held_and_is_empty_after(tmp_path: Path) -> None:
    with held_by_other_process(tmp_path) as child:
        assert f'"pid": {child.pid}' in (tmp_path / "digest.lock").read_text()
    assert (tmp_path / "digest.lock").read_text() == ""


@pytest.mark.slow
def test_wait_blocks_until_the_other_process_releases(tmp_path: Path) -> None:
    events: list[str] = []
    with held_by_other_process(tmp_path) as child:
        stdin = child.stdin
        assert stdin is not None

        def release() -> None:
            events.append("released")
            stdin.close()

        threading.Timer(0.2, release).start()
        with run_lock(tmp_path, wait=True, timeout_s=60):
            events.append("acquired")
            assert child.wait(timeout=30) == 0  # the holder had to finish first
    assert events == ["released", "acquired"]


@pytest.mark.slow
def test_wait_gives_up_after_the_timeout(tmp_path: Path) -> None:
    with held_by_other_process(tmp_path) as child:
        started = time.monotonic()
        with (
            pytest.raises(RunLocked, match=rf"pid {child.pid}.*gave up after 0.3 s"),
            run_lock(tmp_path, wait=True, timeout_s=0.3),
        ):
            pytest.fail("the lock was granted twice")
        assert time.monotonic() - started >= 0.3  # it did wait; no upper bound: load varies


@pytest.mark.slow
def test_cancel_stops_a_wait_early(tmp_path: Path) -> None:
    cancel = threading.Event()
    with held_by_other_process(tmp_path) as child:
        threading.Timer(0.2, cancel.set).start()
        with (
            pytest.raises(RunLocked, match="stopped waiting"),
            run_lock(tmp_path, wait=True, cancel=cancel),  # no timeout: only cancel ends it
        ):
            pytest.fail("the lock was granted twice")
        assert cancel.is_set() and child.poll() is None  # cancelled while still held


def test_lock_is_released_when_the_body_raises(tmp_path: Path) -> None:
    with pytest.raises(ValueError), run_lock(tmp_path):
        raise ValueError("a bug in the run")
    assert lock_is_free_for_another_process(tmp_path)


@pytest.mark.slow
def test_lock_is_released_when_its_holder_is_killed(tmp_path: Path) -> None:
    with held_by_other_process(tmp_path) as child:
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
        with run_lock(tmp_path):
            holder = (tmp_path / "digest.lock").read_text()
    assert f'"pid": {os.getpid()}' in holder


def test_lock_is_refused_to_a_second_holder_in_the_same_process(tmp_path: Path) -> None:
    with run_lock(tmp_path), pytest.raises(RunLocked), run_lock(tmp_path):
        pytest.fail("the lock was granted twice")


def test_missing_data_dir_is_created(tmp_path: Path) -> None:
    data_dir = tmp_path / "not" / "yet"
    with run_lock(data_dir):
        assert (data_dir / "digest.lock").is_file()
