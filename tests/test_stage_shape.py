"""Stages of one shape: each one object whose `run(context)` returns a StageOutcome, its
reports and what it made; what a stage made reaches the stages after it and the caller
through the run's outcomes; the pipeline makes named plans of them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.collect.stage import CollectStage
from digest.compose.stage import ComposeStage
from digest.config import Config, DigestSection
from digest.deliver.stage import DeliverStage, Delivery
from digest.fetch.stage import FetchStage
from digest.models import Stage, StageReport
from digest.notes.budget import RunBudget
from digest.notes.stage import NotesScope, NotesStage, WeekSummaryStage
from digest.periods import parse_week
from digest.pipeline import DRAFT, GATHER, NOW, WRITE, planned_stages
from digest.runtime.context import RunContext, StageOutcome, run_in_order
from digest.store import open_store

W47 = parse_week("2026-W47", ZoneInfo("UTC"))


@dataclass(frozen=True)
class Counted:
    before: int


@dataclass(frozen=True)
class Counting:
    """Makes a Counted of how many the stages before it made."""

    async def run(self, run: RunContext) -> StageOutcome:
        before = len(run.all_made(Counted))
        return StageOutcome([StageReport(Stage.NOTES, done=before)], (Counted(before),))


def test_each_stage_reads_what_the_stages_before_it_made(tmp_path: Path) -> None:
    config = Config(digest=DigestSection(data_dir=tmp_path))
    with open_store(config.db_path) as store:
        run = RunContext(store, config)
        asyncio.run(run_in_order(run, [Counting(), Counting(), Counting()]))

    assert [report.done for report in run.reports] == [0, 1, 2]
    assert run.made(Counted) == Counted(2)


def test_compose_without_the_week_the_notes_stage_summed_up_is_a_plan_bug(
    tmp_path: Path,
) -> None:
    config = Config(digest=DigestSection(data_dir=tmp_path))
    with open_store(config.db_path) as store:
        run = RunContext(store, config)
        with pytest.raises(LookupError, match="SummedWeek"):
            asyncio.run(run_in_order(run, [ComposeStage(W47)]))


def test_the_named_plans_are_the_stages_in_order(tmp_path: Path) -> None:
    config = Config(digest=DigestSection(data_dir=tmp_path))
    with open_store(config.db_path) as store:
        budget = RunBudget(store, config, lambda: W47.start)

        def kinds(plan: tuple[Stage, ...], delivery: Delivery = Delivery()) -> list[type]:
            stages = planned_stages(
                plan, W47, budget, notes=NotesScope(), retry_fetch=False, delivery=delivery
            )
            return [type(stage) for stage in stages]

        now = kinds(NOW)
        gather = kinds(GATHER)
        write = kinds(WRITE)
        draft = planned_stages(
            DRAFT, W47, budget, notes=NotesScope(), retry_fetch=False, delivery=Delivery()
        )

    assert gather == [CollectStage, FetchStage]
    assert write == [NotesStage, WeekSummaryStage, ComposeStage, DeliverStage]
    assert now == gather + write
    assert [type(stage) for stage in draft] == now
    assert isinstance(draft[-1], DeliverStage) and draft[-1].delivery.draft
