"""`digest daemon`: the [schedule] crons, run one job at a time on a clock it is given.

The daemon knows nothing about stages: the pipeline hands it two callables
(`Jobs`). Each job runs inside the same run lock as `digest now`, so the two never
overlap. A job that fails with a DigestError logs one line; any other exception
is logged with its traceback; neither stops the daemon. SIGTERM/SIGINT let the
job in hand finish, then `run_daemon` returns 0.

The collect job runs once at start. A weekly digest missed while the daemon was
down is caught up once at start: `state_path` remembers when the digest job last ran.
A slot that passes while a job runs is not queued: after a run, a job is next due at
its first slot after the run ended. A slot missed by more than the job's grace (the
machine was asleep) is skipped with a line.

The loop reads the time from `now` and waits with `wait`, so a test steps through
weeks of slots at once. Cron expressions (periods.cron_trigger, APScheduler 3's
CronTrigger) have the usual five fields, with cron's weekday numbers (0 or 7 = Sunday).
As an extension, six fields put seconds first (`*/10 * * * * *` fires every ten seconds).
"""

from __future__ import annotations

import json
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from digest.atomic import write_atomic
from digest.clock import Clock, Sleep, utc_now
from digest.errors import DigestError, RunCancelled, RunLocked, disk_error
from digest.periods import cron_trigger
from digest.runtime.lock import run_lock

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from apscheduler.triggers.cron import CronTrigger

    from digest.config import ScheduleConfig

logger = logging.getLogger("digest")

COLLECT_GRACE_S = 3600  # a collect run still worth doing this late; also its lock wait
DIGEST_GRACE_S = 86400
# The clock is read again at least this often: a wait does not count the time the machine slept.
MAX_WAIT_S = 60.0
NEVER = datetime.max.replace(tzinfo=UTC)  # when a schedule that cannot fire is next due


@dataclass(frozen=True)
class Jobs:
    """What the daemon runs; the pipeline passes these in. Return values are ignored."""

    collect: Callable[[], object]
    digest: Callable[[], object]


def run_daemon(
    schedule: ScheduleConfig,
    jobs: Jobs,
    *,
    zone: ZoneInfo,
    lock_dir: Path,
    state_path: Path,
    now: Clock = utc_now,
    wait: Sleep | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run the schedule until SIGTERM or SIGINT; the job in hand finishes; return 0.

    SIGTERM/SIGINT set `stop` (pass the event the jobs watch, to let them end after
    the item in hand). `wait(seconds)` returns after that long, or earlier once `stop` is
    set (by default `stop.wait`). Call from the main thread (signal handlers are installed
    only there); the jobs run in a thread of their own, as `_stop_on_signals` needs.
    """
    stop = stop or threading.Event()
    slots = _slots(schedule, jobs, zone, state_path, now)
    for slot in slots:
        logger.info("%s: next run %s", slot.name, slot.next_run())
    announcer = threading.Thread(target=_announce_stop, args=(stop,), daemon=True)
    announcer.start()
    with _stop_on_signals(stop), ThreadPoolExecutor(1, "digest-schedule") as thread:
        thread.submit(_run_slots, slots, lock_dir, stop, now, wait or stop.wait).result()
    announcer.join()  # the loop ends only once `stop` is set
    logger.info("daemon stopped")
    return 0


def _announce_stop(stop: threading.Event) -> None:
    stop.wait()
    logger.info("stopping: letting the job in hand finish")


def _run_slots(
    slots: list[_Slot], lock_dir: Path, stop: threading.Event, now: Clock, wait: Sleep
) -> None:
    """Run each job when due, the earliest first (collect before digest when both are),
    until `stop` is set."""
    while not stop.is_set():
        slot = min(slots, key=lambda slot: slot.due)
        current = now()
        if slot.due > current:
            wait(min((slot.due - current).total_seconds(), MAX_WAIT_S))
        elif (current - slot.due).total_seconds() > slot.grace_s:
            missed, slot.due = slot.due, first_fire_after(slot.trigger, current)
            logger.warning(
                "%s skipped: due at %s, more than %d s ago; next run %s",
                slot.name, missed.isoformat(), slot.grace_s, slot.next_run(),
            )  # fmt: skip
        else:
            slot.run(lock_dir, stop, now)


@dataclass
class _Slot:
    """One job on its cron schedule; `due` is when it next runs."""

    name: str
    func: Callable[[], object]
    trigger: CronTrigger
    grace_s: int
    due: datetime

    def next_run(self) -> str:
        return (
            "never" if self.due == NEVER else self.due.astimezone(self.trigger.timezone).isoformat()
        )

    def run(self, lock_dir: Path, cancel: threading.Event, now: Clock) -> None:
        """Take the lock, run the job, then move `due` to the first slot after the run ended;
        log one line for each event. Setting `cancel` gives up a wait for the lock."""
        due = self.due
        try:
            with run_lock(lock_dir, wait=True, timeout_s=self.grace_s, cancel=cancel):
                outcome = self._call(now)
        except RunLocked as exc:  # from the lock only: _call catches what the job raises
            if cancel.is_set():
                outcome = _Outcome(logging.INFO, "not run: the daemon is stopping")
            else:
                outcome = _Outcome(logging.WARNING, f"skipped: {exc}")
        except DigestError as exc:  # the lock cannot be written: a full or read-only disk
            outcome = _Outcome(logging.ERROR, f"failed: {exc}")
        self.due = first_fire_after(self.trigger, max(due, now()))
        logger.log(
            outcome.level,
            "%s %s; next run %s",
            self.name, outcome.text, self.next_run(),
            exc_info=outcome.bug,
        )  # fmt: skip

    def _call(self, now: Clock) -> _Outcome:
        logger.info("%s started", self.name)
        started = now()
        try:
            self.func()
        except RunCancelled as exc:
            return _Outcome(logging.INFO, f"ended early: {exc}; what was done is saved")
        except DigestError as exc:
            return _Outcome(logging.ERROR, f"failed: {exc}")
        except Exception as exc:
            return _Outcome(logging.ERROR, "crashed (a bug)", bug=exc)
        elapsed = (now() - started).total_seconds()
        return _Outcome(logging.INFO, f"finished in {elapsed:.1f} s")


@dataclass(frozen=True)
class _Outcome:
    """The line a run ends with; a bug's traceback goes with it."""

    level: int
    text: str
    bug: Exception | None = None


def _slots(
    schedule: ScheduleConfig, jobs: Jobs, zone: ZoneInfo, state_path: Path, now: Clock
) -> list[_Slot]:
    """Collect is due at once: a fresh start should not wait for the next slot to show
    anything. The digest at its next slot, or at once if one was missed while down."""
    start = now()
    collect, digest = cron_trigger(schedule.collect, zone), cron_trigger(schedule.digest, zone)
    missed = _missed_digest_slot(digest, state_path, start)
    if missed is not None:
        logger.info("digest missed at %s; running it now", missed.isoformat())
    digest_due = start if missed is not None else first_fire_after(digest, start)
    return [
        _Slot("collect", jobs.collect, collect, COLLECT_GRACE_S, start),
        _Slot(
            "digest",
            _RecordedDigest(jobs.digest, state_path, now),
            digest,
            DIGEST_GRACE_S,
            digest_due,
        ),
    ]


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM/SIGINT set `stop` and nothing else. The handler runs in the main thread, which
    only waits for the jobs' thread: it holds no lock that `stop.set` could wait on."""

    def handle(signum: int, _: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def first_fire_after(trigger: CronTrigger, moment: datetime) -> datetime:
    """The first time `trigger` fires strictly after `moment`, or NEVER (pure)."""
    return trigger.get_next_fire_time(moment, moment) or NEVER


# --- catch-up of a missed digest -------------------------------------------------------------


def missed_fire_time(trigger: CronTrigger, since: datetime, now: datetime) -> datetime | None:
    """The first time `trigger` fired after `since` and up to `now`, or None (pure)."""
    fire = first_fire_after(trigger, since)
    return fire if fire <= now else None


def _missed_digest_slot(trigger: CronTrigger, state_path: Path, now: datetime) -> datetime | None:
    """Compare the schedule with the state; on the first start, begin watching from now."""
    state = _read_state(state_path)
    since = _parse_time(state.get("last_digest_run")) or _parse_time(state.get("watching_since"))
    if since is None:
        _write_state(state_path, {**state, "watching_since": now.isoformat()})
        return None
    return missed_fire_time(trigger, since, now)


@dataclass(frozen=True)
class _RecordedDigest:
    """The digest job; a run that ends without an exception is remembered in the state."""

    func: Callable[[], object]
    state_path: Path
    now: Callable[[], datetime]

    def __call__(self) -> None:
        started = self.now()
        self.func()
        state = _read_state(self.state_path)
        _write_state(self.state_path, {**state, "last_digest_run": started.isoformat()})


def _read_state(path: Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.warning("daemon state %s unreadable (%s); starting afresh", path, exc)
        return {}
    return state if isinstance(state, dict) else {}


def _write_state(path: Path, state: dict[str, Any]) -> None:
    """Save the state; a full or read-only disk is logged, not fatal: the daemon goes on and
    the next write tries again (until then a missed digest may be missed)."""
    try:
        write_atomic(path, json.dumps(state, indent=2) + "\n", private=True)
    except OSError as exc:
        logger.warning("%s; the daemon goes on", disk_error(exc, f"daemon state {path}"))


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
