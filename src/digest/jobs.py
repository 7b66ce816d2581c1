"""What the daemon and `digest resend` run: the pipeline, from the outside."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from digest.clock import REAL_WAITS, Clock, Progress, Waits, utc_now
from digest.compose.backlog import backlog_for, linkable_urls
from digest.config import Config
from digest.daemon import Jobs
from digest.deliver.channel import DeliveryOutcome, Sleep
from digest.deliver.outbox import resend_email
from digest.deliver.stage import Delivery
from digest.errors import RunCancelled
from digest.models import Period
from digest.periods import period_containing, previous_period
from digest.pipeline import DRAFT, GATHER, RunResult, resolve_period, run, run_weeks
from digest.store import Store, open_store

log = logging.getLogger("digest")

CATCH_UP_WEEKS = 8  # how far back the weekly job delivers missed or changed weeks


def resend(
    config: Config, period: Period, clock: Clock = utc_now, to: Sequence[str] = ()
) -> DeliveryOutcome:
    """`digest resend`: mail the latest revision of `period` again (to `to` alone if given);
    the caller holds the lock."""
    with open_store(config.db_path) as store:
        items = store.items_saved_between(period.start, period.end)
        allowed = linkable_urls(items, backlog_for(store, config, period))
        return resend_email(store, config, period, clock(), allowed_urls=allowed, to=to)


def daemon_jobs(
    config: Config, stop: threading.Event, clock: Clock = utc_now, waits: Waits = REAL_WAITS
) -> Jobs:
    """The daemon's two jobs: collect often, rewriting this week's file as it fills; weekly,
    deliver the weeks due (see `periods_to_deliver`).

    Once `stop` is set, a job ends after the item in hand (RunCancelled), and a mail
    retry stops waiting.
    """

    def stop_when_asked(stage: str, done: int, total: int) -> None:
        if stop.is_set():
            raise RunCancelled(
                f"{stage} stopped after {done} of {total} items: the daemon is stopping"
            )

    def collect_job() -> None:
        period = resolve_period(config, None, clock())
        _log_result(
            run(
                config,
                "daemon collect",
                period=period,
                stages=DRAFT,
                clock=clock,
                progress=stop_when_asked,
                waits=waits,
            )
        )

    def digest_job() -> None:
        deliver_due_weeks(config, clock, stop_when_asked, stop.wait)

    return Jobs(collect=collect_job, digest=digest_job)


def deliver_due_weeks(config: Config, clock: Clock, progress: Progress, pause: Sleep) -> None:
    """Collect and fetch once, then note and deliver each week due, oldest first."""
    last = resolve_period(config, "last", clock())
    _log_result(
        run(config, "daemon digest", period=last, stages=GATHER, clock=clock, progress=progress)
    )
    periods = due_periods(config, clock())
    for result in run_weeks(
        config,
        "daemon digest",
        periods,
        delivery=Delivery(sleep=pause),
        clock=clock,
        progress=progress,
    ):
        _log_result(result)


def due_periods(config: Config, now: datetime) -> list[Period]:
    """`periods_to_deliver` over the store as it stands."""
    with open_store(config.db_path) as store:
        return periods_to_deliver(store, config.digest.zone, now)


def periods_to_deliver(store: Store, zone: ZoneInfo, now: datetime) -> list[Period]:
    """Last week and, within CATCH_UP_WEEKS back, every week after the last one delivered
    and every delivered week with items collected since its latest revision; oldest first.

    With no digest delivered yet, only last week (a first run does not send a backlog).
    """
    window = [previous_period(period_containing(now, zone), zone)]
    while len(window) < CATCH_UP_WEEKS:
        window.insert(0, previous_period(window[0], zone))
    latest = store.latest_digest_period(up_to=window[-1].label)
    if latest is None:
        return window[-1:]
    return [
        period
        for period in window
        if period.label > latest
        or store.collected_since_digest(period.label, period.start, period.end)
    ]


def _log_result(result: RunResult) -> None:
    for report in result.reports:
        log.info("%s: %s", report.name, report.counts)
        for line in report.failures:
            log.warning("%s", line)
    if result.path is not None:
        log.info("digest %s written to %s", result.period.label, result.path)
