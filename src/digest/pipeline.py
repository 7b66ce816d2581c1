"""The thin imperative shell: the stages in order, each given the store, the config and `now`."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from digest import lifecycle
from digest.audio.script import Script, week_script
from digest.clock import REAL_WAITS, Clock, Progress, Waits, no_progress, utc_now
from digest.collect.feedlists import imported_feed_sources
from digest.collect.feeds import collect_feeds
from digest.collect.inbox import collect_file_source
from digest.compose.backlog import backlog_for, linkable_urls
from digest.compose.digest import (
    Backlog,
    Provenance,
    Topic,
    format_period,
    reader_view,
    render_digest,
)
from digest.compose.rules import notes_skipped
from digest.compose.week import reader_history, ruled_week, week_context
from digest.config import Config, SourceConfig
from digest.deliver.outbox import DeliveryOutcome, Sleep, deliver_digest, write_draft
from digest.deliver.vault import write_item_notes
from digest.errors import RunCancelled
from digest.fetch.client import Fetcher
from digest.fetch.stage import FetchStage
from digest.models import Item, Period, Stage, StageReport
from digest.notes import CallRecord, Summarizer
from digest.notes.stage import Estimate, NotesStage
from digest.periods import parse_week, period_containing, previous_period, week_label
from digest.runtime.tasks import isolated, run_together
from digest.store import Store, open_store
from digest.urls import for_display

log = logging.getLogger("digest")


@dataclass
class RunResult:
    period: Period
    path: Path | None = None
    reports: list[StageReport] = field(default_factory=list)
    delivery: DeliveryOutcome | None = None
    model_unreachable: str | None = None  # why the model wrote no notes this run

    @property
    def failures(self) -> list[str]:
        return [line for report in self.reports for line in report.failures]

    @property
    def needs_attention(self) -> bool:
        """A configured delivery failed, or the model was unreachable for notes."""
        return bool(self.delivery and self.delivery.failures) or bool(self.model_unreachable)


@dataclass(frozen=True)
class Composed:
    """A period's digest as the store stands: its markdown, its items and backlog, and a
    hash of what a reader sees in it (compose.digest.reader_view)."""

    markdown: str
    items: list[Item]
    backlog: Backlog
    reader_view: str
    topics: list[Topic]  # its sections as listed, for the audio edition
    problems: list[str] = field(default_factory=list)  # a template of yours that failed


class Pipeline:
    """One run's worth of stages over one open store."""

    def __init__(
        self,
        config: Config,
        store: Store,
        *,
        clock: Clock = utc_now,
        progress: Progress = no_progress,
        waits: Waits = REAL_WAITS,
    ):
        self.config = config
        self.store = store
        self.clock = clock
        self.progress = progress
        self.waits = waits
        self.run_id: int | None = None
        self.retry = False  # fetch every failed item now, whatever its backoff says
        self.notes = NotesStage(store, config, clock, notes_offline(config))

    async def _counted(
        self, stage: Stage, total: int, finished: list[int], items: int, work: Awaitable[None]
    ) -> None:
        """Await the work on `items` items, then report the stage's progress (`finished`:
        the count so far, shared by the stage's works)."""
        await work
        finished[0] = min(finished[0] + items, total)
        self.progress(stage, finished[0], total)

    # -- collect -----------------------------------------------------------

    def source_ids(self) -> list[tuple[int, SourceConfig]]:
        return [
            (
                self.store.ensure_source(
                    source.name,
                    source.kind,
                    url=source.url,
                    path=str(source.path) if source.path else None,
                    now=self.clock(),
                ),
                source,
            )
            for source in self.config.sources
            if not source.paused
        ]

    async def collect(self) -> list[StageReport]:
        """Every source of the config, and the feeds imported into the store (OPML)."""
        now = self.clock()
        sources = self.source_ids()
        feeds = [(sid, source) for sid, source in sources if source.kind == "feed"]
        feeds += imported_feed_sources(self.store, self.config.sources)
        reports = []
        for sid, source in sources:
            if source.kind == "file":
                reports.append(
                    collect_file_source(self.store, source, sid, self.config.digest.zone, now)
                )
                self.progress(Stage.COLLECT, len(reports), len(sources))
        if feeds:
            async with Fetcher(self.config.fetch, self.waits) as fetcher:
                report = await collect_feeds(self.store, fetcher, feeds, self.config.fetch, now)
                if fetcher.offline is not None and report.failures:
                    report = _offline(report, fetcher.offline)
                reports.append(report)
            self.progress(Stage.COLLECT, len(sources), len(sources))
        return reports

    # -- fetch and extract -------------------------------------------------

    def due_for_fetch(self, now: datetime) -> list[Item]:
        return lifecycle.items_due_for_fetch(self.store.fetch_candidates(), now, retry=self.retry)

    async def fetch_and_extract(self) -> StageReport:
        """Fetch and extract the due items and follow new posts' links (see fetch_stage)."""
        stage = FetchStage(self.store, self.config.fetch, self.clock, self.progress, self.waits)
        return await stage.run(self.due_for_fetch(self.clock()), self.store.posts_to_follow())

    def earlier_weeks(self, period: Period, last_item_id: int) -> str | None:
        """A line for the items newer than `last_item_id` that were saved before `period`:
        their digests are written only on request."""
        count, earliest = self.store.saved_before(period.start, after_id=last_item_id)
        if not count or earliest is None:
            return None
        first = period_containing(earliest, self.config.digest.zone).label
        things = "item belongs" if count == 1 else "items belong"
        return (
            f"{count} new {things} to earlier weeks (from {first}): "
            f"`digest now --since {first}` writes their digests"
        )

    # -- notes -------------------------------------------------------------

    async def make_notes(
        self,
        summarizer: Summarizer,
        period: Period | None = None,
        *,
        only_period: bool = False,
        refresh: bool = False,
    ) -> StageReport:
        """Notes for the items that need one (see NotesStage.due), made concurrently."""
        report = StageReport(Stage.NOTES)
        due = self.notes.due(summarizer, period, only_period=only_period, refresh=refresh)
        known_tags = self.notes.known_tags()
        finished = [0]
        self.notes.start()
        skipped = {item.id for item in due if self.notes.offline_only(item)}
        writers = {False: summarizer, True: self.notes.offline_summarizer()}  # no model call
        groups = [
            (writer, group)
            for offline, writer in writers.items()
            for group in self.notes.by_text(
                writer, [item for item in due if (item.id in skipped) == offline], known_tags
            )
        ]
        await run_together(
            self._counted(
                Stage.NOTES,
                len(due),
                finished,
                len(group),
                isolated(  # a bug on one text: those items stay pending, the others go on
                    self.notes.note_same_text(writer, group, known_tags, report),
                    f"item {group[0].id}",
                    report.failures,
                ),
            )
            for writer, group in groups
        )
        self.notes.finish(report)
        return report

    # -- compose and deliver -----------------------------------------------

    async def compose_digest(self, period: Period, summarizer: Summarizer) -> Composed:
        """The period's markdown as the store stands, with its items and backlog."""
        week = ruled_week(self.store, self.config, period)
        items = week.shown
        week_summary = await self.notes.week_summary(period, items, summarizer)
        muted = [item.id for item in week.muted]
        provenance = Provenance(
            self.notes.notes_usage(period, muted),
            self.notes.week_usage,
            self.notes.note_calls(period),
            muted=len(muted),
        )
        backlog = backlog_for(self.store, self.config, period)
        history = reader_history(self.store)
        context = week_context(
            self.config, period, week, week_summary, history, backlog, provenance
        )
        rendered = render_digest(context, self.config.output.templates_dir)
        markdown = for_display(rendered.text)  # the digest goes everywhere: no secrets
        problems = [rendered.problem] if rendered.problem else []
        return Composed(markdown, items, backlog, reader_view(context), context["topics"], problems)

    async def compose_draft(self, period: Period, summarizer: Summarizer) -> Path:
        """Rewrite the period's digest file only: the log and mail get the weekly revision."""
        composed = await self.compose_digest(period, summarizer)
        for problem in composed.problems:
            log.warning("%s", problem)
        return write_draft(self.config, period, composed.markdown)

    async def compose_and_deliver(
        self, period: Period, summarizer: Summarizer, sleep: Sleep = time.sleep
    ) -> DeliveryOutcome:
        composed = await self.compose_digest(period, summarizer)
        items = composed.items
        outcome = deliver_digest(
            self.store,
            self.config,
            period,
            composed.markdown,
            self.clock(),
            allowed_urls=[for_display(url) for url in linkable_urls(items, composed.backlog)],
            sleep=sleep,
            empty=not items,
            reader_view=composed.reader_view,
            audio=self._script(period, composed.topics) if self.config.audio.enabled else None,
        )
        outcome.failures.extend(composed.problems)
        self._write_item_notes(period, items, outcome)
        return outcome

    def _script(self, period: Period, topics: Sequence[Topic]) -> Script:
        """The week for the ear: the digest's topics in its order (the same items)."""
        audio = self.config.audio
        return week_script(
            period.label,
            format_period(period, self.config.digest.zone),
            topics,
            max_minutes=audio.max_minutes,
            words_per_minute=audio.words_per_minute,
        )

    def _write_item_notes(
        self, period: Period, items: list[Item], outcome: DeliveryOutcome
    ) -> None:
        folder = self.config.output.notes_dir
        if folder is None:
            return
        try:
            vault = write_item_notes(folder, period, items, self.config.digest.zone)
        except OSError as exc:
            outcome.failures.append(f"cannot write item notes in {folder}: {exc.strerror or exc}")
            return
        if vault.written:
            outcome.delivered.append("notes")
        outcome.failures.extend(
            f"{path}: not written by digest (or edited since): left as it is" for path in vault.left
        )

    def summarizer(self) -> Summarizer:
        return self.notes.summarizer(on_call=self._record_call)

    def _record_call(self, call: CallRecord) -> None:
        self.notes.record_call(call, self.run_id)


def _offline(report: StageReport, why: str) -> StageReport:
    """The feeds' report of a run without a network: one line, not one per feed."""
    line = f"{why}: {report.failed} feeds left for a later run (polled next time)"
    return replace(report, failures=[line], failed_units=report.failed)


def notes_offline(config: Config) -> Callable[[Item], bool]:
    """Whether the reader's rules keep the model off an item's note."""
    return functools.partial(notes_skipped, config.rules)


def estimate_run(
    config: Config, period: Period, *, only_period: bool = True, refresh: bool = False
) -> Estimate:
    """What a run for `period` would spend on the LLM, from the store as it is (no writes,
    no API key needed)."""
    with open_store(config.db_path) as store:
        notes = NotesStage(store, config, utc_now, notes_offline(config))
        summarizer = notes.summarizer(on_call=lambda call: None, need_key=False)
        return notes.estimate(summarizer, period, only_period=only_period, refresh=refresh)


def resolve_period(config: Config, week: str | None, now: datetime) -> Period:
    """An ISO week label, "last" for the week before this one, or None for this week."""
    zone = config.digest.zone
    current = period_containing(now, zone)
    if week is None or week == "this":
        return current
    if week == "last":
        return previous_period(current, zone)
    try:
        period = parse_week(week, zone)
    except ValueError as exc:
        raise ValueError(f"{exc}; or 'last' for last week, 'this' for this one") from exc
    if period.start > now:
        raise ValueError(f"week {period.label} has not started yet (now is {current.label})")
    return period


STAGES = (Stage.COLLECT, Stage.FETCH, Stage.NOTES, Stage.DELIVER)  # Stage.DRAFT: the file only


@dataclass(frozen=True)
class NotesScope:
    """Which notes a run writes: `only_period`: those of the period's items alone (`digest
    now`); `retry`: items whose note attempts ran out are asked for again."""

    only_period: bool = False
    retry: bool = False
    refresh: bool = False  # renew the period's notes made with another prompt file


async def _run_stages(
    pipeline: Pipeline,
    period: Period,
    stages: Sequence[Stage],
    sleep: Sleep,
    scope: NotesScope = NotesScope(),
) -> RunResult:
    result = RunResult(period)
    if Stage.COLLECT in stages:
        last = pipeline.store.last_item_id()
        result.reports.extend(await pipeline.collect())
        if result.reports and (earlier := pipeline.earlier_weeks(period, last)):
            result.reports[-1].info.append(earlier)
    if Stage.FETCH in stages:
        result.reports.append(await pipeline.fetch_and_extract())
    if not {Stage.NOTES, Stage.DRAFT, Stage.DELIVER} & set(stages):
        return result
    summarizer = pipeline.summarizer()
    try:
        if Stage.NOTES in stages:
            if scope.retry:
                pipeline.store.retry_notes()
            report = await pipeline.make_notes(
                summarizer, period, only_period=scope.only_period, refresh=scope.refresh
            )
            result.reports.append(report)
        if Stage.DRAFT in stages:
            result.path = await pipeline.compose_draft(period, summarizer)
        if Stage.DELIVER in stages:
            result.delivery = await pipeline.compose_and_deliver(period, summarizer, sleep)
            result.path = result.delivery.path
            delivery = result.delivery
            result.reports.append(
                StageReport(
                    Stage.DELIVER,
                    len(delivery.delivered),
                    delivery.failures,
                    [*delivery.held, *delivery.info],
                )
            )
    finally:
        await summarizer.aclose()
        result.model_unreachable = pipeline.notes.unreachable
    return result


def run(
    config: Config,
    command: str,
    *,
    period: Period,
    stages: Sequence[Stage] = STAGES,
    clock: Clock = utc_now,
    progress: Progress = no_progress,
    sleep: Sleep = time.sleep,
    notes: NotesScope = NotesScope(),
    retry_fetch: bool = False,
    waits: Waits = REAL_WAITS,
) -> RunResult:
    """Open the store, run the stages in order and record the run; the caller holds the run lock.

    `sleep` is the pause between mail retries; a true result stops the retries; `waits`
    are the fetcher's (per-host delays). With `retry_fetch`, every failed item is fetched
    again now.
    """
    with open_store(config.db_path) as store:
        pipeline = Pipeline(config, store, clock=clock, progress=progress, waits=waits)
        pipeline.retry = retry_fetch
        run_id = pipeline.run_id = store.start_run(command, clock())
        status, stats = "failed", dict[str, Any](period=period.label)
        try:
            result = asyncio.run(_run_stages(pipeline, period, stages, sleep, notes))
            status = "partial" if result.failures else "ok"
            stats |= {report.name: report.done for report in result.reports}
            stats["failures"] = len(result.failures)
        except RunCancelled:
            status = "cancelled"
            raise
        finally:
            store.finish_run(run_id, status, stats, clock())
        return result


# `digest now --since YYYY-Www` / `--all`: every week that has items, in one command.
# Collect and fetch once, then note and compose each week with items, oldest first; each
# week notes only its own items. Past weeks are written, logged and put in the feed, but not
# mailed: a backfill must not send a mail per week of a journal that spans months.
@dataclass(frozen=True)
class Week:
    period: Period
    items: int


def weeks_with_items(config: Config, since: Period | None, now_label: str) -> list[Week]:
    """Weeks from `since` (else the first) to the current one that have items, oldest first."""
    zone = config.digest.zone
    with open_store(config.db_path) as store:
        counts = Counter(week_label(item.saved_at, zone) for item in store.all_items())
    first = since.label if since else ""
    return [
        Week(parse_week(label, zone), count)
        for label, count in sorted(counts.items())
        if first <= label <= now_label
    ]


def backfill(
    config: Config,
    since: Period | None,
    *,
    clock: Clock = utc_now,
    progress: Progress = no_progress,
    retry: bool = False,
) -> tuple[RunResult, list[tuple[Week, RunResult]]]:
    """The collect-and-fetch run, then one note-and-compose run per week with items."""
    current = period_containing(clock(), config.digest.zone)
    gathered = run(
        config, "now", period=current, stages=STAGES[:2], clock=clock, progress=progress,
        retry_fetch=retry,
    )  # fmt: skip
    scope = NotesScope(only_period=True, retry=retry)
    quiet = config.model_copy(update={"email": config.email.model_copy(update={"enabled": False})})
    weeks = weeks_with_items(config, since, current.label)
    return gathered, [
        (week, run(quiet, "now", period=week.period, stages=STAGES[2:], clock=clock, notes=scope))
        for week in weeks
    ]
