"""The daemon as a real process: cron every second, SIGTERM, the run lock, catch-up."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.config import ScheduleConfig
from digest.daemon import missed_fire_time
from digest.periods import cron_trigger

NEVER = "0 0 1 1 *"  # once a year: keeps the job out of the way of the one under test

DAEMON = """
import json, logging, sys, time
from pathlib import Path
from zoneinfo import ZoneInfo
from digest.config import ScheduleConfig
from digest.daemon import Jobs, run_daemon
from digest.errors import SourceError

work = Path(sys.argv[1])
plan = json.loads(sys.argv[2])
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")

def marker(text):
    with open(work / "markers", "a") as file:
        file.write(text + "\\n")

def job(name):
    def run():
        marker(f"{name} start")
        time.sleep(plan.get("sleep_s", 0.5))
        if plan.get("fails") == "digest-error":
            marker(f"{name} end")
            raise SourceError("source failed: 'inbox': disk on fire")
        if plan.get("fails") == "bug":
            marker(f"{name} end")
            raise RuntimeError("a bug")
        marker(f"{name} end")
    return run

schedule = ScheduleConfig(collect=plan["collect"], digest=plan["digest"])
sys.exit(run_daemon(schedule, Jobs(collect=job("collect"), digest=job("digest")),
                    zone=ZoneInfo("UTC"), lock_dir=work, state_path=work / "daemon-state.json"))
"""

HOLD_LOCK = """
import sys, time
from pathlib import Path
from digest.runtime.lock import run_lock
work = Path(sys.argv[1])
with run_lock(work):
    with open(work / "markers", "a") as file:
        file.write("outside start\\n")
    print("locked", flush=True)
    time.sleep(2)
    with open(work / "markers", "a") as file:
        file.write("outside end\\n")
"""


class Daemon:
    """`run_daemon` in a child process; its log goes to a file the test can poll."""

    def __init__(self, work: Path, **plan: object) -> None:
        self.work = work
        self.log_path = work / f"daemon-{time.monotonic_ns()}.log"
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-c", DAEMON, str(work), json.dumps(plan)], stderr=self._log
        )

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self, timeout_s: float = 15) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout_s)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    started: list[Daemon] = []

    def start(**plan: object) -> Daemon:
        daemon = Daemon(tmp_path, **plan)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.kill()


def markers(work: Path) -> list[str]:
    path = work / "markers"
    return path.read_text().splitlines() if path.exists() else []


def wait_for(condition: Callable[[], bool], timeout_s: float = 60) -> None:  # a hang guard only
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for the daemon")
        time.sleep(0.02)


def assert_never_interleaved(lines: list[str]) -> None:
    """Every `x start` is followed by its own `x end` before anything else starts."""
    for position, line in enumerate(lines):
        if position % 2 == 0:
            assert line.endswith(" start"), lines
        else:
            assert line == lines[position - 1].replace(" start", " end"), lines


# --- the schedule ------------------------------------------------------------------------------


@pytest.mark.slow
def test_collect_runs_every_second_and_sigterm_lets_the_job_in_hand_finish(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    daemon = daemons(collect="* * * * * *", digest=NEVER, sleep_s=0.5)
    wait_for(lambda: "collect: next run" in daemon.log)  # the scheduler is up
    wait_for(lambda: markers(tmp_path).count("collect start") >= 2)
    wait_for(lambda: markers(tmp_path)[-1] == "collect start")  # a job in hand

    assert daemon.stop() == 0

    lines = markers(tmp_path)
    assert lines[-1] == "collect end"
    assert_never_interleaved(lines)
    assert "stopping: letting the job in hand finish" in daemon.log
    assert "daemon stopped" in daemon.log


@pytest.mark.slow
def test_runs_never_overlap_when_a_job_outlasts_its_interval(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    daemon = daemons(collect="* * * * * *", digest="* * * * * *", sleep_s=1.2)
    wait_for(lambda: len(markers(tmp_path)) >= 6)

    assert daemon.stop() == 0

    lines = markers(tmp_path)
    assert_never_interleaved(lines)
    assert {"collect start", "digest start"} <= set(lines)


@pytest.mark.slow
def test_a_job_waits_for_a_run_held_by_another_process(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path)], stdout=subprocess.PIPE, text=True
    ) as outside:
        assert outside.stdout is not None
        assert outside.stdout.readline().strip() == "locked"
        daemon = daemons(collect="* * * * * *", digest=NEVER, sleep_s=0.2)
        assert outside.wait(timeout=10) == 0
    wait_for(lambda: "collect end" in markers(tmp_path))

    assert daemon.stop() == 0

    lines = markers(tmp_path)
    assert lines[:2] == ["outside start", "outside end"]
    assert_never_interleaved(lines)


@pytest.mark.parametrize(
    ("fails", "logged"),
    [
        ("digest-error", "ERROR collect failed: source failed: 'inbox': disk on fire; next run 20"),
        ("bug", "ERROR collect crashed (a bug); next run 20"),
    ],
)
@pytest.mark.slow
def test_a_failing_job_is_logged_and_the_daemon_goes_on(
    tmp_path: Path, daemons: Callable[..., Daemon], fails: str, logged: str
) -> None:
    daemon = daemons(collect="* * * * * *", digest=NEVER, sleep_s=0.1, fails=fails)
    wait_for(lambda: markers(tmp_path).count("collect end") >= 2)
    wait_for(lambda: daemon.log.count(logged) >= 2)

    assert daemon.stop() == 0

    assert daemon.process.returncode == 0
    if fails == "digest-error":
        assert "Traceback" not in daemon.log
    else:
        assert "RuntimeError: a bug" in daemon.log


# --- catch-up of a missed weekly digest --------------------------------------------------------


def write_state(work: Path, **state: str) -> None:
    (work / "daemon-state.json").write_text(json.dumps(state))


def digest_markers(work: Path) -> list[str]:
    return [line for line in markers(work) if line.startswith("digest ")]


def after_two_collects(work: Path) -> None:
    """Wait for two more collect runs to end: a catch-up due at start would have had the lock
    by then (it is due first, and a waiter polls far more often than collect fires)."""
    ended = markers(work).count("collect end")
    wait_for(lambda: markers(work).count("collect end") >= ended + 2)


def read_state(work: Path) -> dict[str, str]:
    state: dict[str, str] = json.loads((work / "daemon-state.json").read_text())
    return state


@pytest.mark.slow
def test_a_missed_weekly_digest_runs_once_at_start_and_not_again_on_restart(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    two_weeks_ago = datetime.now(UTC) - timedelta(days=14)
    write_state(tmp_path, last_digest_run=two_weeks_ago.isoformat())

    first = daemons(collect="* * * * * *", digest="0 8 * * mon", sleep_s=0.1)
    wait_for(lambda: "digest end" in markers(tmp_path))
    after_two_collects(tmp_path)  # room for a second, wrong, run
    assert first.stop() == 0
    assert digest_markers(tmp_path) == ["digest start", "digest end"]
    last_run = datetime.fromisoformat(read_state(tmp_path)["last_digest_run"])
    assert datetime.now(UTC) - last_run < timedelta(minutes=1)
    assert "digest missed at" in first.log

    second = daemons(collect="* * * * * *", digest="0 8 * * mon", sleep_s=0.1)
    after_two_collects(tmp_path)
    assert second.stop() == 0
    assert digest_markers(tmp_path) == ["digest start", "digest end"]


@pytest.mark.slow
def test_first_start_runs_no_digest_and_starts_watching_for_missed_ones(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    daemon = daemons(collect="* * * * * *", digest="0 8 * * mon", sleep_s=0.1)
    after_two_collects(tmp_path)
    assert daemon.stop() == 0

    assert digest_markers(tmp_path) == []
    state = read_state(tmp_path)
    assert "last_digest_run" not in state
    assert datetime.now(UTC) - datetime.fromisoformat(state["watching_since"]) < timedelta(
        minutes=1
    )


@pytest.mark.slow
def test_a_corrupt_state_file_is_logged_and_the_daemon_still_starts(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    (tmp_path / "daemon-state.json").write_text("{not json")
    daemon = daemons(collect=NEVER, digest="0 8 * * mon")
    wait_for(lambda: "digest: next run" in daemon.log)
    assert daemon.stop() == 0
    assert "daemon state" in daemon.log and "unreadable" in daemon.log
    assert "watching_since" in read_state(tmp_path)


def test_missed_fire_time_is_the_first_slot_after_the_last_run() -> None:
    monday_8 = cron_trigger("0 8 * * mon", ZoneInfo("Europe/Berlin"))
    last_run = datetime(2026, 11, 2, 7, 0, tzinfo=UTC)  # Monday 08:00 Berlin
    now = datetime(2026, 11, 18, 12, 0, tzinfo=UTC)

    missed = missed_fire_time(monday_8, last_run, now)

    assert missed == datetime(2026, 11, 9, 8, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    assert missed_fire_time(monday_8, datetime(2026, 11, 16, 7, 0, tzinfo=UTC), now) is None


# --- cron expressions ----------------------------------------------------------------------------


def next_fire(expr: str, after: datetime) -> datetime:
    fire = cron_trigger(expr, ZoneInfo("UTC")).get_next_fire_time(None, after)
    assert isinstance(fire, datetime)
    return fire


def test_weekday_numbers_mean_what_cron_means() -> None:
    saturday = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    assert next_fire("0 8 * * 1", saturday).strftime("%a %H:%M") == "Mon 08:00"
    assert next_fire("0 8 * * 0", saturday).strftime("%a") == "Sun"
    assert next_fire("0 8 * * 7", saturday).strftime("%a") == "Sun"
    assert next_fire("0 8 * * 1-5", saturday).strftime("%a") == "Mon"
    assert next_fire("0 8 * * mon", saturday).strftime("%a") == "Mon"


def test_six_fields_put_seconds_first() -> None:
    start = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
    assert next_fire("*/10 * * * * *", start + timedelta(seconds=1)) == start + timedelta(
        seconds=10
    )
    assert next_fire("* * * * *", start + timedelta(seconds=1)) == start + timedelta(minutes=1)


@pytest.mark.parametrize("expr", ["* * * *", "* * * * * * *", "61 * * * *", "0 8 * * 8"])
def test_the_config_rejects_what_is_not_a_cron_expression(expr: str) -> None:
    with pytest.raises(ValueError, match="not a cron expression"):
        ScheduleConfig(collect=expr)


def test_the_config_accepts_six_fields() -> None:
    assert ScheduleConfig(collect="*/5 * * * * *").collect == "*/5 * * * * *"


@pytest.mark.slow
def test_collect_runs_once_at_start_not_at_the_next_slot(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    daemon = daemons(collect="0 0 1 1 *", digest="0 8 * * mon", sleep_s=0.1)  # next: new year

    wait_for(lambda: "collect end" in markers(tmp_path))
    assert daemon.stop() == 0

    assert markers(tmp_path) == ["collect start", "collect end"]
