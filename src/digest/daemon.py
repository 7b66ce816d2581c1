"""`digest daemon`: the [schedule] crons on an APScheduler 3 BlockingScheduler.

The daemon knows nothing about stages: the pipeline hands it two callables
(`Jobs`). Each job runs inside the same run lock as `digest now`, so the two never
overlap. A job that fails with a DigestError logs one line; any other exception
is logged with its traceback; neither stops the daemon. SIGTERM/SIGINT let the
job in hand finish, then `run_daemon` returns 0.

The collect job runs once at start. A weekly digest missed while the daemon was
down is caught up once at start: `state_path` remembers when the digest job last ran.

Cron expressions have the usual five fields, with cron's weekday numbers
(0 or 7 = Sunday). As an extension, six fields put seconds first
(`*/10 * * * * *` fires every ten seconds).
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from apscheduler.events import EVENT_SCHEDULER_STARTED, SchedulerEvent
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.cron import CronTrigger

from digest.atomic import write_atomic
from digest.clock import Clock, now_in, utc_now
from digest.errors import DigestError, RunCancelled, RunLocked, disk_error
from digest.periods import cron_trigger
from digest.runtime.lock import run_lock

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from digest.config import ScheduleConfig

logger = logging.getLogger("digest")

COLLECT_GRACE_S = 3600  # a collect run still worth doing this late; also its lock wait
DIGEST_GRACE_S = 86400


@dataclass(frozen=True)
class Jobs:
    """What the daemon runs; the pipeline passes these in. Return values are ignored."""

    collect: Callable[[], object]
    digest: Callable[[], object]


def build_scheduler(
    schedule: ScheduleConfig,
    jobs: Jobs,
    *,
    zone: ZoneInfo,
    lock_dir: Path,
    cancel: threading.Event | None = None,
) -> BlockingScheduler:
    """A scheduler with a `collect` and a `digest` job, each run under the run lock.

    Setting `cancel` makes a job still waiting for the lock give up (on shutdown).
    """
    scheduler = BlockingScheduler(
        timezone=zone, job_defaults={"coalesce": True, "max_instances": 1}
    )
    for name, func, expr, grace in (
        ("collect", jobs.collect, schedule.collect, COLLECT_GRACE_S),
        ("digest", jobs.digest, schedule.digest, DIGEST_GRACE_S),
    ):
        trigger = cron_trigger(expr, zone)
        scheduler.add_job(
            _LockedJob(name, func, trigger, lock_dir, grace, cancel),
            trigger,
            id=name,
            name=name,
            misfire_grace_time=grace,
        )
    return scheduler


@dataclass(frozen=True)
class _LockedJob:
    """One scheduled run: take the lock, run, log one line for each event."""

    name: str
    func: Callable[[], object]
    trigger: CronTrigger
    lock_dir: Path
    lock_wait_s: float
    cancel: threading.Event | None

    def __call__(self) -> None:
        try:
            with run_lock(self.lock_dir, wait=True, timeout_s=self.lock_wait_s, cancel=self.cancel):
                self._run()
        except RunLocked as exc:  # from the lock only: _run catches what the job raises
            if self.cancel is not None and self.cancel.is_set():
                logger.info("%s not run: the daemon is stopping", self.name)
            else:
                logger.warning("%s skipped: %s; next run %s", self.name, exc, self._next_run())
        except DigestError as exc:  # the lock cannot be written: a full or read-only disk
            logger.error("%s failed: %s; next run %s", self.name, exc, self._next_run())

    def _run(self) -> None:
        logger.info("%s started", self.name)
        started = time.monotonic()
        try:
            self.func()
        except RunCancelled as exc:
            logger.info("%s ended early: %s; what was done is saved", self.name, exc)
        except DigestError as exc:
            logger.error("%s failed: %s; next run %s", self.name, exc, self._next_run())
        except Exception:
            logger.exception("%s crashed (a bug); next run %s", self.name, self._next_run())
        else:
            elapsed = time.monotonic() - started
            logger.info("%s finished in %.1f s; next run %s", self.name, elapsed, self._next_run())

    def _next_run(self) -> str:
        next_time = self.trigger.get_next_fire_time(None, now_in(self.trigger.timezone))
        return next_time.isoformat() if next_time else "never"


def run_daemon(
    schedule: ScheduleConfig,
    jobs: Jobs,
    *,
    zone: ZoneInfo,
    lock_dir: Path,
    state_path: Path,
    now: Clock = utc_now,
    stop: threading.Event | None = None,
) -> int:
    """Run the schedule until SIGTERM or SIGINT; the job in hand finishes; return 0.

    SIGTERM/SIGINT set `stop` (pass the event the jobs watch, to let them end after
    the item in hand). Call from the main thread (signal handlers are installed only there).
    """
    stop = stop or threading.Event()
    recorded = Jobs(collect=jobs.collect, digest=_RecordedDigest(jobs.digest, state_path, now))
    scheduler = build_scheduler(schedule, recorded, zone=zone, lock_dir=lock_dir, cancel=stop)
    # collect at once: a fresh start should not wait for the next slot to show anything
    scheduler.modify_job("collect", next_run_time=now_in(zone))
    missed = _missed_digest_slot(cron_trigger(schedule.digest, zone), state_path, now())
    if missed is not None:
        logger.info("digest missed at %s; running it now", missed.isoformat())
        scheduler.modify_job("digest", next_run_time=now_in(zone))
    stopper = threading.Thread(
        target=_shut_down_when_asked, args=(scheduler, stop), name="digest-stopper", daemon=True
    )
    scheduler.add_listener(
        lambda event: _on_started(scheduler, stopper, event), EVENT_SCHEDULER_STARTED
    )
    with _stop_on_signals(stop):
        scheduler.start()  # blocks until the stopper shuts the scheduler down
    stopper.join()
    logger.info("daemon stopped")
    return 0


def _on_started(scheduler: BlockingScheduler, stopper: threading.Thread, _: SchedulerEvent) -> None:
    for job in scheduler.get_jobs():
        when = job.next_run_time.isoformat() if job.next_run_time else "never"
        logger.info("%s: next run %s", job.name, when)
    stopper.start()  # only now: shutting down a scheduler that is not running raises


def _shut_down_when_asked(scheduler: BlockingScheduler, stop: threading.Event) -> None:
    stop.wait()
    logger.info("stopping: letting the job in hand finish")
    scheduler.pause()  # no new submissions while the executor shuts down
    scheduler.shutdown(wait=True)


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM/SIGINT set `stop` and nothing else: the handler must not block or take locks."""

    def handle(signum: int, _: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --- catch-up of a missed digest -------------------------------------------------------------


def missed_fire_time(trigger: CronTrigger, since: datetime, now: datetime) -> datetime | None:
    """The first time `trigger` fired after `since` and up to `now`, or None (pure)."""
    fire = trigger.get_next_fire_time(since, since)
    return fire if fire is not None and fire <= now else None


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
