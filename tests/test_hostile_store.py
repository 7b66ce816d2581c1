"""The store and the data folder under hostile conditions: a newer schema, full and read-only
disks, for the CLI and the daemon."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.errors import StoreTooNew
from digest.store import open_store
from digest.store.migrations import known_steps


def write_config(tmp_path: Path, data_dir: Path) -> Path:
    inbox = tmp_path / "inbox"
    inbox.mkdir(exist_ok=True)
    (inbox / "links.md").write_text("- [a](https://a.example/one)\n")
    config = tmp_path / "digest.toml"
    config.write_text(
        f'[digest]\ndata_dir = "{data_dir}"\n\n'
        '[[sources]]\nname = "inbox"\nkind = "file"\npath = "inbox"\n'
    )
    return config


def run(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config)])


def assert_one_line_and_exit_1(result: Result, *words: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("digest: "), result.output
    for word in words:
        assert word in lines[0]


# -- a newer schema ----------------------------------------------------------------


def from_the_future(path: Path) -> None:
    """What a newer digest leaves behind: one more applied migration (and its table)."""
    open_store(path).close()
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at)"
            " VALUES ('digest', 'm042_from_the_future', '2027-01-01 00:00:00')"
        )
        db.execute("CREATE TABLE future_things (id INTEGER PRIMARY KEY)")
    db.close()


def test_a_database_of_a_newer_schema_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "data" / "digest.db"
    from_the_future(path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()

    with pytest.raises(StoreTooNew) as refused:
        open_store(path)
    result = run(write_config(tmp_path, tmp_path / "data"), "collect")

    assert "m042_from_the_future" in str(refused.value)
    assert known_steps()[-1] in str(refused.value)
    assert_one_line_and_exit_1(result, "m042_from_the_future", known_steps()[-1])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM items").fetchone()[0] == 0


def test_a_database_of_this_schema_with_an_extra_table_is_used(tmp_path: Path) -> None:
    path = tmp_path / "digest.db"
    open_store(path).close()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE my_own_notes (id INTEGER PRIMARY KEY)")
    open_store(path).close()


# -- full and read-only disks ------------------------------------------------------


def mount_tmpfs(folder: Path, *options: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(["size=1m", *options]), "tmpfs", str(folder)],
        capture_output=True,
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root): " + mounted.stderr.decode().strip())


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs, unmounted afterwards; skipped where mounting is not allowed."""
    folder = tmp_path / "disk"
    mount_tmpfs(folder)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as file:
        try:
            while True:
                file.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def test_a_full_disk_gives_one_line_and_exit_1(tmp_path: Path, small_disk: Path) -> None:
    config = write_config(tmp_path, small_disk / "data")
    assert run(config, "collect").exit_code == 0
    fill(small_disk)
    with (tmp_path / "inbox" / "links.md").open("a") as journal:
        journal.write("- [b](https://a.example/two)\n")

    assert_one_line_and_exit_1(run(config, "collect"), "full")


def test_a_full_disk_before_the_first_run_gives_one_line_and_exit_1(
    tmp_path: Path, small_disk: Path
) -> None:
    fill(small_disk)
    assert_one_line_and_exit_1(run(write_config(tmp_path, small_disk / "data"), "collect"), "full")


def test_a_read_only_data_folder_gives_one_line_and_exit_1(tmp_path: Path) -> None:
    root = os.geteuid() == 0  # root writes through file modes: a read-only file system then
    disk = tmp_path / "disk"
    if root:
        mount_tmpfs(disk)
    config = write_config(tmp_path, disk / "data")
    try:
        assert run(config, "collect").exit_code == 0
        with (tmp_path / "inbox" / "links.md").open("a") as journal:
            journal.write("- [b](https://a.example/two)\n")
        if root:
            subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        else:
            (disk / "data").chmod(0o555)
            (disk / "data" / "digest.db").chmod(0o444)
        assert_one_line_and_exit_1(run(config, "collect"), "run again")
    finally:
        if root:
            subprocess.run(["umount", "-l", str(disk)], check=False)
        else:
            (disk / "data").chmod(0o755)


DAEMON = """
import logging, sys
from pathlib import Path
from zoneinfo import ZoneInfo
from digest.config import ScheduleConfig
from digest.daemon import Jobs, run_daemon
from digest.store import open_store

disk, markers = Path(sys.argv[1]), Path(sys.argv[2])
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")

def collect():
    open_store(disk / "data" / "digest.db").close()
    with markers.open("a") as file:
        file.write("collect ran\\n")

schedule = ScheduleConfig(collect="* * * * * *", digest="0 0 1 1 *")
sys.exit(run_daemon(schedule, Jobs(collect=collect, digest=collect), zone=ZoneInfo("UTC"),
                    lock_dir=disk / "data", state_path=disk / "data" / "daemon-state.json"))
"""


@pytest.mark.slow
def test_a_daemon_started_on_a_full_disk_keeps_running_and_retries(
    tmp_path: Path, small_disk: Path
) -> None:
    filler = fill(small_disk)
    markers, log = tmp_path / "markers", tmp_path / f"daemon-{uuid.uuid4().hex}.log"
    with log.open("w") as stderr:
        daemon = subprocess.Popen(
            [sys.executable, "-c", DAEMON, str(small_disk), str(markers)], stderr=stderr
        )
        try:
            wait_for(lambda: log.read_text().count("collect failed: database") >= 2)
            assert not markers.exists()
            filler.unlink()
            wait_for(markers.exists)
            daemon.send_signal(signal.SIGTERM)
            assert daemon.wait(timeout=15) == 0
        finally:
            daemon.kill()
            daemon.wait()
    assert "Traceback" not in log.read_text()
    assert "daemon state" in log.read_text()


def wait_for(condition: object, timeout_s: float = 30) -> None:  # a hang guard only
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail("timed out")
        time.sleep(0.05)
