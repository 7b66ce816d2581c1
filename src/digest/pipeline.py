"""The thin imperative shell: the stages in order (collect, fetch, notes, compose and
deliver), each one call over the run's context (runtime.context); each decides inside its
own package."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from digest.clock import REAL_WAITS, Clock, Progress, Waits, no_progress, utc_now
from digest.collect.stage import CollectStage
from digest.config import Config
from digest.deliver.channel import DeliveryOutcome, Sleep
from digest.deliver.stage import ComposeStage
from digest.errors import RunCancelled
from digest.fetch.stage import EarlyStart, FetchAndExtract, stop_fork_server
from digest.models import Item, Period, Stage, StageReport
from digest.notes.stage import Estimate, NotesScope, NotesStage, WriteNotes
from digest.periods import parse_week, period_containing, previous_period, week_label
from digest.rules import notes_skipped
from digest.runtime.context import RunContext, RunStage
from digest.store import open_store

log = logging.getLogger("digest")


@dataclass
class RunResult:
    period: Period
    path: Path | None = None
    reports: list[StageReport] = field(default_factory=list)
    delivery: DeliveryOutcome | None = None
    model_unreachable: str | None = None  # why the model wrote no notes this run
    prompt_problems: list[str] = field(default_factory=list)  # the built-in prompt stood in

    @property
    def failures(self) -> list[str]:
        return [line for report in self.reports for line in report.failures]

    @property
    def left_behind(self) -> int:
        """Saves the sources could not read this run."""
        return sum(report.left_behind for report in self.reports)

    @property
    def needs_attention(self) -> bool:
        """A configured delivery failed, the model was unreachable for notes, a prompt file
        failed, or saves were left behind."""
        delivery_failed = bool(self.delivery and self.delivery.failures)
        problems = self.model_unreachable or self.prompt_problems or self.left_behind
        return delivery_failed or bool(problems)


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


def planned_stages(
    period: Period,
    stages: Sequence[Stage],
    notes: NotesStage,
    *,
    sleep: Sleep,
    scope: NotesScope,
    retry_fetch: bool,
) -> list[RunStage]:
    """The stages of `stages` as a run makes them, in order: collect, fetch, notes, then
    compose and deliver (or the file only: Stage.DRAFT)."""
    planned: list[RunStage] = []
    if Stage.COLLECT in stages:
        # the extraction workers get ready while the feeds are still being read
        planned.append(
            CollectStage(period, EarlyStart()) if Stage.FETCH in stages else CollectStage(period)
        )
    if Stage.FETCH in stages:
        planned.append(FetchAndExtract(retry=retry_fetch))
    if Stage.NOTES in stages:
        planned.append(WriteNotes(notes, period, scope))
    if Stage.DRAFT in stages or Stage.DELIVER in stages:
        planned.append(ComposeStage(period, notes, deliver=Stage.DELIVER in stages, sleep=sleep))
    return planned


async def _run_stages(
    run: RunContext,
    period: Period,
    stages: Sequence[Stage],
    sleep: Sleep,
    scope: NotesScope,
    retry_fetch: bool,
) -> RunResult:
    result = RunResult(period)
    notes = NotesStage(run.store, run.config, run.clock, notes_offline(run.config), run.progress)
    planned = planned_stages(
        period, stages, notes, sleep=sleep, scope=scope, retry_fetch=retry_fetch
    )
    try:
        for stage in planned:
            result.reports.extend(await stage.run(run))
    finally:
        stop_fork_server()  # when the collect stage started it and the fetch stage had no use for it
        await notes.aclose()
        result.model_unreachable = notes.unreachable
        result.prompt_problems = notes.prompt_problems
    for stage in planned:
        if isinstance(stage, ComposeStage):
            result.path, result.delivery = stage.path, stage.delivery
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
        run_id = store.start_run(command, clock())
        context = RunContext(store, config, clock, progress, run_id, waits)
        status, stats = "failed", dict[str, Any](period=period.label)
        try:
            result = asyncio.run(_run_stages(context, period, stages, sleep, notes, retry_fetch))
            status = "partial" if result.failures else "ok"
            stats |= {report.name: report.done for report in result.reports}
            stats["failures"] = len(result.failures)
            if any(report.offline for report in result.reports):
                stats["offline"] = True  # the footer and `status` say so until a fetch works
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
