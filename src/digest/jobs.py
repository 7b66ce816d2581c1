"""What the daemon and `digest resend` run: the pipeline, from the outside."""

from __future__ import annotations

import logging
import threading

from digest.backlog import backlog_for, linkable_urls
from digest.config import Config
from digest.daemon import Jobs
from digest.deliver import DeliveryOutcome, resend_email
from digest.errors import RunCancelled
from digest.models import Period
from digest.pipeline import STAGES, Clock, RunResult, resolve_period, run, utc_now
from digest.store import open_store

log = logging.getLogger("digest")


def resend(config: Config, period: Period, clock: Clock = utc_now) -> DeliveryOutcome:
    """`digest resend`: mail the latest revision of `period` again; the caller holds the lock."""
    store = open_store(config.db_path)
    try:
        items = store.items_saved_between(period.start, period.end)
        allowed = linkable_urls(items, backlog_for(store, config, period))
        return resend_email(store, config, period, clock(), allowed_urls=allowed)
    finally:
        store.close()


def daemon_jobs(config: Config, stop: threading.Event, clock: Clock = utc_now) -> Jobs:
    """The daemon's two jobs: collect often; weekly, deliver the week that just ended.

    Once `stop` is set, a job ends after the item in hand (RunCancelled).
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
                stages=STAGES[:3],
                clock=clock,
                progress=stop_when_asked,
            )
        )

    def digest_job() -> None:
        period = resolve_period(config, "last", clock())
        _log_result(
            run(config, "daemon digest", period=period, clock=clock, progress=stop_when_asked)
        )

    return Jobs(collect=collect_job, digest=digest_job)


def _log_result(result: RunResult) -> None:
    for report in result.reports:
        log.info("%s: %d done, %d failed", report.stage, report.done, len(report.failures))
        for line in report.failures:
            log.warning("%s", line)
    if result.path is not None:
        log.info("digest %s written to %s", result.period.label, result.path)
