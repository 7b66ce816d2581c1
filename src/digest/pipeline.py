"""The thin imperative shell: a named plan's stages in order (collect, fetch, notes, the week
summary, compose and deliver), each one `run(context) -> StageOutcome` (runtime.context);
each decides inside its own package, and what they made (the digest's path, its delivery,
the model's verdict) is read from the run's outcomes. One `run_weeks` serves `digest now`,
`--since`/`--all` and the daemon's weekly job."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from digest.clock import REAL_WAITS, Clock, Progress, Waits, no_progress, utc_now
from digest.collect.stage import CollectStage
from digest.compose.stage import ComposeStage
from digest.config import Config
from digest.deliver.channel import DeliveryOutcome
from digest.deliver.stage import DeliverStage, Delivery, Written
from digest.errors import RunCancelled
from digest.fetch.pages import EarlyStart, stop_fork_server
from digest.fetch.stage import FetchStage
from digest.models import Period, Stage, StageReport
from digest.notes.budget import ModelVerdict, RunBudget
from digest.notes.estimate import Estimate, estimate
from digest.notes.stage import NotesScope, NotesStage, WeekSummaryStage
from digest.periods import parse_week, period_containing, previous_period, week_label
from digest.runtime.context import RunContext, RunStage, run_in_order
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


def estimate_run(
    config: Config, period: Period, *, only_period: bool = True, refresh: bool = False
) -> Estimate:
    """What a run for `period` would spend on the LLM, from the store as it is (no writes,
    no API key needed)."""
    with open_store(config.db_path) as store:
        return estimate(store, config, utc_now, period, only_period=only_period, refresh=refresh)


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


# The plans a run makes, by the stages of models.Stage: DRAFT and DELIVER are the week
# summary (the notes package's), compose, then the file alone or every channel.
GATHER = (Stage.COLLECT, Stage.FETCH)
WRITE = (Stage.NOTES, Stage.DELIVER)
NOW = (*GATHER, *WRITE)
DRAFT = (*GATHER, Stage.NOTES, Stage.DRAFT)  # the daemon's collect job: the week's file as it fills


def planned_stages(
    plan: Sequence[Stage],
    period: Period,
    budget: RunBudget,
    *,
    notes: NotesScope,
    retry_fetch: bool,
    delivery: Delivery,
) -> list[RunStage]:
    """The stage objects of `plan`, in its order."""
    write: list[RunStage] = [WeekSummaryStage(budget, period), ComposeStage(period)]
    # the extraction workers get ready while the feeds are still being read
    collect = CollectStage(period, EarlyStart()) if Stage.FETCH in plan else CollectStage(period)
    stages: dict[Stage, list[RunStage]] = {
        Stage.COLLECT: [collect],
        Stage.FETCH: [FetchStage(retry=retry_fetch)],
        Stage.NOTES: [NotesStage(budget, period, notes)],
        Stage.DRAFT: [*write, DeliverStage(period, replace(delivery, draft=True))],
        Stage.DELIVER: [*write, DeliverStage(period, delivery)],
    }
    return [stage for step in plan for stage in stages[step]]


async def _run_plan(
    run: RunContext, period: Period, stages: Sequence[RunStage], budget: RunBudget
) -> RunResult:
    """The stages in order; the run's result from what they did and made."""
    try:
        await run_in_order(run, stages)
    finally:
        stop_fork_server()  # when the collect stage started it and the fetch stage had no use for it
        await budget.aclose()
    written = run.all_made(Written)
    verdicts = run.all_made(ModelVerdict)
    verdict = verdicts[-1] if verdicts else ModelVerdict()
    return RunResult(
        period,
        path=written[-1].path if written else None,
        reports=run.reports,
        delivery=written[-1].delivery if written else None,
        model_unreachable=verdict.unreachable,
        prompt_problems=list(verdict.prompt_problems),
    )


def run(
    config: Config,
    command: str,
    *,
    period: Period,
    stages: Sequence[Stage] = NOW,
    clock: Clock = utc_now,
    progress: Progress = no_progress,
    notes: NotesScope = NotesScope(),
    retry_fetch: bool = False,
    delivery: Delivery = Delivery(),
    waits: Waits = REAL_WAITS,
) -> RunResult:
    """Open the store, make the plan `stages` for `period` and record the run; the caller
    holds the run lock.

    `notes` says which notes are written; with `retry_fetch`, every failed item is fetched
    again now; `delivery` says how the digest goes out; `waits` are the fetcher's (per-host
    delays).
    """
    with open_store(config.db_path) as store:
        run_id = store.start_run(command, clock())
        context = RunContext(store, config, clock, progress, run_id, waits)
        budget = RunBudget(store, config, clock, run_id)
        planned = planned_stages(
            stages, period, budget, notes=notes, retry_fetch=retry_fetch, delivery=delivery
        )
        status, stats = "failed", dict[str, Any](period=period.label)
        try:
            result = asyncio.run(_run_plan(context, period, planned, budget))
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


def run_weeks(
    config: Config,
    command: str,
    weeks: Sequence[Period],
    *,
    plan: Sequence[Stage] = WRITE,
    notes: NotesScope = NotesScope(),
    retry_fetch: bool = False,
    delivery: Delivery = Delivery(),
    clock: Clock = utc_now,
    progress: Progress = no_progress,
) -> list[RunResult]:
    """Each of `weeks` in a run of its own, oldest first, making `plan` (WRITE: note, compose
    and deliver; NOW: collect and fetch first; see `run` for the rest); between two weeks,
    `progress` hears how many are done (the daemon stops there)."""
    results = []
    for done, period in enumerate(weeks):
        if done:
            progress(Stage.DELIVER, done, len(weeks))
        results.append(
            run(config, command, period=period, stages=plan, clock=clock, progress=progress,
                notes=notes, retry_fetch=retry_fetch, delivery=delivery)
        )  # fmt: skip
    return results


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
        counts = Counter(week_label(saved, zone) for saved in store.saved_times())
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
    """The collect-and-fetch run, then one note-and-compose run per week with items; past
    weeks are not mailed."""
    current = period_containing(clock(), config.digest.zone)
    gathered = run(
        config, "now", period=current, stages=GATHER, clock=clock, progress=progress,
        retry_fetch=retry,
    )  # fmt: skip
    weeks = weeks_with_items(config, since, current.label)
    results = run_weeks(
        config, "now", [week.period for week in weeks], clock=clock,
        notes=NotesScope(only_period=True, retry=retry), delivery=Delivery(mail=False),
    )  # fmt: skip
    return gathered, list(zip(weeks, results, strict=True))
