"""The daemon on a clock the test steps: the schedule, the run lock, failures, the catch-up of
a missed digest, SIGTERM. One real process on real cron seconds is the slow smoke test."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.config import ScheduleConfig
from digest.daemon import Jobs, missed_fire_time, run_daemon
from digest.errors import SourceError
from digest.periods import cron_trigger
from digest.runtime.lock import run_lock

START = datetime(2026, 11, 21, 12, 0, 0, 500_000, tzinfo=UTC)  # a Saturday, mid-second
EVERY_SECOND = "* * * * * *"
NEVER = "0 0 1 1 *"  # once a year: keeps the job out of the way of the one under test


class Rig:
    """`run_daemon` on a stepped clock: a wait moves the clock on at once, and the run ends
    (`stop` is set, as SIGTERM would) when the clock reaches the end the test gives."""

    def __init__(self, work: Path, start: datetime = START) -> None:
        self.work = work
        self.now = start
        self.end = start
        self.stop = threading.Event()
        self.markers: list[str] = []
        self.naps: dict[datetime, datetime] = {}  # the machine sleeps: fell asleep -> woke

    def clock(self) -> datetime:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now = min(self.now + timedelta(seconds=seconds), self.end)
        for fell_asleep, woke in list(self.naps.items()):
            if self.now >= fell_asleep:
                self.now = woke
                del self.naps[fell_asleep]
        if self.now >= self.end:
            self.stop.set()

    def mark(self, event: str) -> None:
        self.markers.append(f"{event} {self.now:%a %H:%M:%S}.{self.now.microsecond // 100_000}")

    def job(
        self, name: str, takes_s: float = 0.2, fails: Exception | None = None
    ) -> Callable[[], None]:
        def run() -> None:
            self.mark(f"{name} start")
            self.now += timedelta(seconds=takes_s)
            self.mark(f"{name} end")
            if fails is not None:
                raise fails

        return run

    def run(
        self,
        runs_for: timedelta,
        collect: str = NEVER,
        digest: str = NEVER,
        zone: str = "UTC",
        jobs: Jobs | None = None,
    ) -> int:
        self.end = self.now + runs_for
        guard = threading.Timer(30, self.stop.set)  # a hang guard only
        guard.start()
        try:
            return run_daemon(
                ScheduleConfig(collect=collect, digest=digest),
                jobs or Jobs(collect=self.job("collect"), digest=self.job("digest")),
                zone=ZoneInfo(zone),
                lock_dir=self.work,
                state_path=self.work / "daemon-state.json",
                now=self.clock,
                wait=self.wait,
                stop=self.stop,
            )
        finally:
            guard.cancel()

    def state(self) -> dict[str, str]:
        state: dict[str, str] = json.loads((self.work / "daemon-state.json").read_text())
        return state


@pytest.fixture
def rig(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[Rig]:
    with caplog.at_level(logging.INFO, logger="digest"):
        yield Rig(tmp_path)


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{record.levelname} {record.getMessage()}" for record in caplog.records]


def digest_markers(rig: Rig) -> list[str]:
    return [marker for marker in rig.markers if marker.startswith("digest ")]


# --- the schedule ------------------------------------------------------------------------------


def test_collect_runs_at_start_then_at_each_slot(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    assert rig.run(timedelta(seconds=3), collect=EVERY_SECOND) == 0

    assert rig.markers == [
        "collect start Sat 12:00:00.5",
        "collect end Sat 12:00:00.7",
        "collect start Sat 12:00:01.0",
        "collect end Sat 12:00:01.2",
        "collect start Sat 12:00:02.0",
        "collect end Sat 12:00:02.2",
        "collect start Sat 12:00:03.0",
        "collect end Sat 12:00:03.2",
    ]
    lines = logged(caplog)
    assert lines[:2] == [
        "INFO collect: next run 2026-11-21T12:00:00.500000+00:00",
        "INFO digest: next run 2027-01-01T00:00:00+00:00",
    ]
    assert "INFO collect finished in 0.2 s; next run 2026-11-21T12:00:01+00:00" in lines
    assert lines[-2:] == ["INFO stopping: letting the job in hand finish", "INFO daemon stopped"]


@pytest.mark.parametrize(
    ("saturday", "slot_utc"),
    [
        (datetime(2026, 10, 17, 12, 0, tzinfo=UTC), "Mon 06:00:00.0"),  # summer time
        (datetime(2026, 10, 24, 12, 0, tzinfo=UTC), "Mon 07:00:00.0"),  # it ends on Sunday
    ],
)
def test_the_weekly_digest_runs_at_its_hour_in_its_zone(
    tmp_path: Path, saturday: datetime, slot_utc: str
) -> None:
    rig = Rig(tmp_path, start=saturday)
    rig.run(timedelta(days=3), collect="0 */6 * * *", digest="0 8 * * mon", zone="Europe/Berlin")

    assert digest_markers(rig) == [f"digest start {slot_utc}", f"digest end {slot_utc[:-1]}2"]
    assert rig.markers.count("collect start Sat 12:00:00.0") == 1  # at start
    assert len([marker for marker in rig.markers if marker.startswith("collect start")]) == 13
    ran = datetime.fromisoformat(rig.state()["last_digest_run"])
    assert ran.astimezone(ZoneInfo("Europe/Berlin")).strftime("%a %H:%M") == "Mon 08:00"


def test_a_job_that_outlasts_its_interval_runs_next_at_its_first_slot_after(
    rig: Rig,
) -> None:
    jobs = Jobs(collect=rig.job("collect", takes_s=1.5), digest=rig.job("digest"))
    rig.run(timedelta(seconds=4.5), collect=EVERY_SECOND, digest=EVERY_SECOND, jobs=jobs)

    assert rig.markers == [  # the slots passed during a run are not queued; none overlap
        "collect start Sat 12:00:00.5",
        "collect end Sat 12:00:02.0",
        "digest start Sat 12:00:02.0",  # due at 12:00:01, run once the lock is free
        "digest end Sat 12:00:02.2",
        "collect start Sat 12:00:03.0",
        "collect end Sat 12:00:04.5",
        "digest start Sat 12:00:04.5",
        "digest end Sat 12:00:04.7",
    ]


def test_collect_runs_once_at_start_not_again_until_its_slot(rig: Rig) -> None:
    rig.run(timedelta(days=1))  # collect's next slot: the new year

    assert rig.markers == ["collect start Sat 12:00:00.5", "collect end Sat 12:00:00.7"]


def test_a_slot_missed_while_the_machine_slept_is_skipped_with_a_line(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.naps[START + timedelta(minutes=30)] = START + timedelta(hours=2, minutes=30)

    rig.run(timedelta(hours=3), collect="0 * * * *")

    assert [marker for marker in rig.markers if "start" in marker] == [
        "collect start Sat 12:00:00.5",
        "collect start Sat 15:00:00.0",
    ]
    assert (
        "WARNING collect skipped: due at 2026-11-21T13:00:00+00:00, more than 3600 s ago;"
        " next run 2026-11-21T15:00:00+00:00"
    ) in logged(caplog)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_lets_the_job_in_hand_finish_and_the_daemon_returns_0(
    rig: Rig, caplog: pytest.LogCaptureFixture, sig: signal.Signals
) -> None:
    handler = signal.getsignal(sig)

    def collect() -> None:
        rig.mark("collect start")
        os.kill(os.getpid(), sig)  # as `kill` or systemd would
        rig.mark("collect end" if rig.stop.wait(10) else "collect end, never asked to stop")

    code = rig.run(timedelta(hours=1), collect=EVERY_SECOND, jobs=Jobs(collect, rig.job("digest")))

    assert code == 0
    assert rig.markers == ["collect start Sat 12:00:00.5", "collect end Sat 12:00:00.5"]
    lines = logged(caplog)
    assert "INFO stopping: letting the job in hand finish" in lines  # said at once
    assert "INFO collect finished in 0.0 s; next run 2026-11-21T12:00:01+00:00" in lines
    assert lines[-1] == "INFO daemon stopped"
    assert signal.getsignal(sig) is handler  # the daemon's handler is gone with it


# --- the run lock --------------------------------------------------------------------------------


def test_a_job_waits_for_a_run_that_holds_the_lock(rig: Rig) -> None:
    held, release = threading.Event(), threading.Event()

    def outside_run() -> None:  # its own open file: flock tells it apart as from a process
        with run_lock(rig.work):
            rig.markers.append("outside start")
            held.set()
            release.wait(10)
            rig.markers.append("outside end")

    holder = threading.Thread(target=outside_run)
    holder.start()
    held.wait(10)
    threading.Timer(0.2, release.set).start()  # real time: the job polls the lock
    rig.run(timedelta(seconds=0.1))
    holder.join()

    assert rig.markers == [
        "outside start",
        "outside end",
        "collect start Sat 12:00:00.5",
        "collect end Sat 12:00:00.7",
    ]


def test_a_job_waiting_for_the_lock_gives_up_when_the_daemon_stops(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    with run_lock(rig.work):
        threading.Timer(0.2, rig.stop.set).start()  # real time: the job polls the lock
        assert rig.run(timedelta(hours=1)) == 0

    assert rig.markers == []
    assert "INFO collect not run: the daemon is stopping; next run 2027-01-01T00:00:00+00:00" in (
        logged(caplog)
    )


# --- failures ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "line", "traceback"),
    [
        (SourceError("source failed: 'inbox': disk on fire"), "ERROR collect failed: source failed: 'inbox': disk on fire", False),
        (RuntimeError("a bug"), "ERROR collect crashed (a bug)", True),
    ],
)  # fmt: skip
def test_a_failing_job_is_logged_and_the_daemon_goes_on(
    rig: Rig, caplog: pytest.LogCaptureFixture, error: Exception, line: str, traceback: bool
) -> None:
    jobs = Jobs(collect=rig.job("collect", fails=error), digest=rig.job("digest"))
    assert rig.run(timedelta(seconds=2), collect=EVERY_SECOND, jobs=jobs) == 0

    assert len(rig.markers) == 6  # three runs, each to its end
    failures = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert [f"{record.levelname} {record.getMessage()}" for record in failures] == [
        f"{line}; next run 2026-11-21T12:00:01+00:00",
        f"{line}; next run 2026-11-21T12:00:02+00:00",
        f"{line}; next run 2026-11-21T12:00:03+00:00",
    ]
    assert all((record.exc_info is not None) == traceback for record in failures)


# --- catch-up of a missed weekly digest --------------------------------------------------------


def test_a_missed_weekly_digest_runs_once_at_start_and_not_again_on_restart(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    two_weeks_ago = START - timedelta(days=14)
    (rig.work / "daemon-state.json").write_text(
        json.dumps({"last_digest_run": two_weeks_ago.isoformat()})
    )

    rig.run(timedelta(hours=2), collect="0 * * * *", digest="0 8 * * mon")

    assert digest_markers(rig) == ["digest start Sat 12:00:00.7", "digest end Sat 12:00:00.9"]
    assert rig.markers[:2] == ["collect start Sat 12:00:00.5", "collect end Sat 12:00:00.7"]
    assert "INFO digest missed at 2026-11-09T08:00:00+00:00; running it now" in logged(caplog)
    assert rig.state()["last_digest_run"] == "2026-11-21T12:00:00.700000+00:00"

    restarted = Rig(rig.work, start=rig.now)
    restarted.run(timedelta(hours=2), collect="0 * * * *", digest="0 8 * * mon")
    assert digest_markers(restarted) == []
    assert len(restarted.markers) == 6  # collect at start and at two slots


def test_first_start_runs_no_digest_and_starts_watching_for_missed_ones(rig: Rig) -> None:
    rig.run(timedelta(hours=1), collect="0 * * * *", digest="0 8 * * mon")

    assert digest_markers(rig) == []
    assert rig.state() == {"watching_since": "2026-11-21T12:00:00.500000+00:00"}


def test_a_corrupt_state_file_is_logged_and_the_daemon_still_starts(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    (rig.work / "daemon-state.json").write_text("{not json")

    assert rig.run(timedelta(minutes=1), digest="0 8 * * mon") == 0

    assert any(
        line.startswith("WARNING daemon state ") and "unreadable" in line for line in logged(caplog)
    )
    assert rig.state() == {"watching_since": "2026-11-21T12:00:00.500000+00:00"}
    assert rig.markers[0] == "collect start Sat 12:00:00.5"


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


# --- one real process, real cron seconds, a real SIGTERM ----------------------------------


DAEMON = """
import logging, sys, time
from pathlib import Path
from zoneinfo import ZoneInfo
from digest.config import ScheduleConfig
from digest.daemon import Jobs, run_daemon

work = Path(sys.argv[1])
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")

def collect():
    with open(work / "markers", "a") as file:
        file.write("collect start\\n")
        file.flush()
        time.sleep(0.5)
        file.write("collect end\\n")

schedule = ScheduleConfig(collect="* * * * * *", digest="0 0 1 1 *")
sys.exit(run_daemon(schedule, Jobs(collect=collect, digest=collect), zone=ZoneInfo("UTC"),
                    lock_dir=work, state_path=work / "daemon-state.json"))
"""


def markers(work: Path) -> list[str]:
    path = work / "markers"
    return path.read_text().splitlines() if path.exists() else []


def wait_for(condition: Callable[[], bool], timeout_s: float = 60) -> None:  # a hang guard only
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for the daemon")
        time.sleep(0.02)


@pytest.mark.slow
def test_a_real_daemon_collects_every_second_and_sigterm_lets_the_job_in_hand_finish(
    tmp_path: Path,
) -> None:
    log_path = tmp_path / "daemon.log"
    with log_path.open("w") as stderr:
        daemon = subprocess.Popen([sys.executable, "-c", DAEMON, str(tmp_path)], stderr=stderr)
    try:
        wait_for(lambda: markers(tmp_path).count("collect start") >= 2)
        wait_for(lambda: markers(tmp_path)[-1] == "collect start")  # a job in hand
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=15) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()

    lines = markers(tmp_path)
    assert lines == ["collect start", "collect end"] * (len(lines) // 2)
    log = log_path.read_text().splitlines()
    assert "INFO stopping: letting the job in hand finish" in log
    assert sum(line.startswith("INFO collect finished in ") for line in log) == len(lines) // 2
    assert log[-1] == "INFO daemon stopped"
