"""The deliver stage: the composed digest (compose.stage) written as a draft, or delivered on
every channel, exactly once each (outbox.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from digest.audio.script import Script, week_script
from digest.compose.backlog import linkable_urls
from digest.compose.entries import Topic
from digest.compose.stage import Composed
from digest.config import Config
from digest.deliver.channel import DeliveryOutcome, Edition, Sleep
from digest.deliver.outbox import deliver_digest, record_resurfaced, write_draft
from digest.models import Period, Stage, StageReport
from digest.periods import format_period
from digest.runtime.context import RunContext, StageOutcome
from digest.urls import for_display

log = logging.getLogger("digest")


@dataclass(frozen=True)
class Delivery:
    """How a run's digest goes out: `draft`, its file alone rewritten (the log and the mail
    get the weekly revision); else on every channel the config asks for, but the mail when
    `mail` is false (a backfill's past weeks: written, logged and put in the feed, not
    mailed). `sleep` is the pause between mail retries; a true result stops them."""

    draft: bool = False
    mail: bool = True
    sleep: Sleep = time.sleep

    @property
    def left_out(self) -> frozenset[str]:
        return frozenset() if self.mail else frozenset({"email"})


@dataclass(frozen=True)
class Written:
    """Where the week's digest went: its file, and its delivery (None: the draft alone)."""

    path: Path
    delivery: DeliveryOutcome | None = None


@dataclass(frozen=True)
class DeliverStage:
    """Deliver the Composed digest of `period` as `delivery` says. Makes Written."""

    period: Period
    delivery: Delivery = Delivery()

    async def run(self, run: RunContext) -> StageOutcome:
        composed = run.made(Composed)
        if self.delivery.draft:
            for problem in composed.problems:
                log.warning("%s", problem)
            path = write_draft(run.config, self.period, composed.markdown)
            record_resurfaced(run.store, self.period, composed.backlog.highlights)
            return StageOutcome([], (Written(path),))
        outcome = deliver_composed(run, self.period, composed, self.delivery)
        record_resurfaced(run.store, self.period, composed.backlog.highlights)
        report = StageReport(
            Stage.DELIVER, len(outcome.delivered), outcome.failures, [*outcome.held, *outcome.info]
        )
        return StageOutcome([report], (Written(outcome.path, outcome),))


def deliver_composed(
    run: RunContext, period: Period, composed: Composed, delivery: Delivery
) -> DeliveryOutcome:
    config, items = run.config, composed.items
    outcome = deliver_digest(
        run.store,
        config,
        period,
        composed.markdown,
        run.clock(),
        allowed_urls=[for_display(url) for url in linkable_urls(items, composed.backlog)],
        sleep=delivery.sleep,
        empty=not items,
        reader_view=composed.reader_view,
        audio=_script(config, period, composed.topics) if config.audio.enabled else None,
        items=items,
        edition=Edition(format_period(period, config.digest.zone), composed.brief, composed.topics),
        left_out=delivery.left_out,
    )
    outcome.failures.extend(composed.problems)
    return outcome


def _script(config: Config, period: Period, topics: Sequence[Topic]) -> Script:
    """The week for the ear: the digest's topics in its order (the same items)."""
    audio = config.audio
    return week_script(
        period.label,
        format_period(period, config.digest.zone),
        topics,
        max_minutes=audio.max_minutes,
        words_per_minute=audio.words_per_minute,
    )
