"""The compose-and-deliver stage: the week's digest composed from the store as it stands
(with its week summary, from the run's notes stage), then written as a draft or delivered
on every channel, exactly once each (outbox.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from digest.audio.script import Script, week_script
from digest.compose.backlog import backlog_for, linkable_urls
from digest.compose.digest import Backlog, reader_view, render_digest
from digest.compose.entries import Topic
from digest.compose.footer import Provenance
from digest.compose.week import archive_before, reader_history, ruled_week, week_context
from digest.config import Config
from digest.deliver.channel import DeliveryOutcome, Edition, Sleep
from digest.deliver.outbox import deliver_digest, record_resurfaced, write_draft
from digest.models import Item, Period, Stage, StageReport
from digest.notes import Summarizer
from digest.notes.stage import NotesStage
from digest.periods import format_period
from digest.runtime.context import RunContext
from digest.urls import for_display

log = logging.getLogger("digest")


@dataclass(frozen=True)
class Composed:
    """A period's digest as the store stands: its markdown, its items and backlog, and a
    hash of what a reader sees in it (compose.digest.reader_view)."""

    markdown: str
    items: list[Item]
    backlog: Backlog
    reader_view: str
    topics: list[Topic]  # its sections as listed, for the audio edition
    brief: str  # the week in brief, markdown
    problems: list[str] = field(default_factory=list)  # a template of yours that failed


@dataclass
class ComposeStage:
    """Compose `period` and deliver it, or (`deliver` false) rewrite its file only: the log
    and mail get the weekly revision. `path` and `delivery` say what it did."""

    period: Period
    notes: NotesStage
    deliver: bool = True
    sleep: Sleep = time.sleep  # the pause between mail retries; a true result stops them
    path: Path | None = None
    delivery: DeliveryOutcome | None = None

    async def run(self, run: RunContext) -> list[StageReport]:
        composed = await compose_digest(run, self.notes, self.period, self.notes.writer(run))
        if not self.deliver:
            for problem in composed.problems:
                log.warning("%s", problem)
            self.path = write_draft(run.config, self.period, composed.markdown)
            record_resurfaced(run.store, self.period, composed.backlog.highlights)
            return []
        outcome = self.delivery = deliver_composed(run, self.period, composed, self.sleep)
        record_resurfaced(run.store, self.period, composed.backlog.highlights)
        self.path = outcome.path
        return [
            StageReport(
                Stage.DELIVER,
                len(outcome.delivered),
                outcome.failures,
                [*outcome.held, *outcome.info],
            )
        ]


async def compose_digest(
    run: RunContext, notes: NotesStage, period: Period, summarizer: Summarizer
) -> Composed:
    """The period's markdown as the store stands, with its items and backlog."""
    store, config = run.store, run.config
    week = ruled_week(store, config, period)
    items = week.shown
    week_summary = await notes.week_summary(period, items, summarizer)
    muted = [item.id for item in week.muted]
    provenance = Provenance(
        notes.notes_usage(period, muted),
        notes.week_usage,
        notes.note_calls(period),
        muted=len(muted),
        offline_at=store.last_fetch_offline(),
    )
    backlog = backlog_for(store, config, period, items)
    history = reader_history(store)
    archive = archive_before(store, config, period)
    context = week_context(
        config, period, week, week_summary, history, backlog, provenance, archive
    )
    rendered = render_digest(context, config.output.templates_dir)
    markdown = for_display(rendered.text)  # the digest goes everywhere: no secrets
    problems = [rendered.problem] if rendered.problem else []
    notes.took_problems(problems)  # the week summary's prompt file
    return Composed(
        markdown,
        items,
        backlog,
        reader_view(context),
        context["topics"],
        context["week_summary"],
        problems,
    )


def deliver_composed(
    run: RunContext, period: Period, composed: Composed, sleep: Sleep
) -> DeliveryOutcome:
    config, items = run.config, composed.items
    outcome = deliver_digest(
        run.store,
        config,
        period,
        composed.markdown,
        run.clock(),
        allowed_urls=[for_display(url) for url in linkable_urls(items, composed.backlog)],
        sleep=sleep,
        empty=not items,
        reader_view=composed.reader_view,
        audio=_script(config, period, composed.topics) if config.audio.enabled else None,
        items=items,
        edition=Edition(format_period(period, config.digest.zone), composed.brief, composed.topics),
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
