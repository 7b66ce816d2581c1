"""The notes stages as a run makes them, within the run's budget (notes.budget): the notes
the run's scope asks for (notes.writer), and the week summary over the week the reader's
rules leave (notes.summary), which compose lays out."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from digest.models import Period
from digest.notes.budget import RunBudget
from digest.notes.summary import SummaryMade, week_summary
from digest.notes.writer import NoteWriter
from digest.rules import RulesOutcome, notes_skipped
from digest.runtime.context import RunContext, StageOutcome
from digest.selection import ruled_week


@dataclass(frozen=True)
class NotesScope:
    """Which notes a run writes: `only_period`: those of the period's items alone (`digest
    now`); `retry`: items whose note attempts ran out are asked for again."""

    only_period: bool = False
    retry: bool = False
    refresh: bool = False  # renew the period's notes made with another prompt file


@dataclass(frozen=True)
class NotesStage:
    """The notes of `period` (and the other items due) as `scope` says, within `budget` (the
    run's, which the week summary shares). Makes the model's verdict (budget.ModelVerdict)."""

    budget: RunBudget
    period: Period
    scope: NotesScope = NotesScope()

    async def run(self, run: RunContext) -> StageOutcome:
        summarizer = self.budget.writer()  # first: a model it cannot use changes nothing
        if self.scope.retry:
            run.store.retry_notes()
        writer = NoteWriter(
            self.budget, functools.partial(notes_skipped, run.config.rules), run.progress
        )
        scope = self.scope
        report = await writer.make_notes(
            summarizer, self.period, only_period=scope.only_period, refresh=scope.refresh
        )
        return StageOutcome([report], (self.budget.verdict(),))


@dataclass(frozen=True)
class SummedWeek:
    """The week as the reader's rules leave it, and its summary: what compose lays out."""

    week: RulesOutcome
    made: SummaryMade
    problems: tuple[str, ...] = ()  # a prompt file that failed: the built-in one stood in


@dataclass(frozen=True)
class WeekSummaryStage:
    """The summary of `period`'s items after the reader's rules, within `budget`. Makes the
    SummedWeek and the model's verdict."""

    budget: RunBudget
    period: Period

    async def run(self, run: RunContext) -> StageOutcome:
        self.budget.writer()  # first: a model it cannot use changes nothing
        week = ruled_week(run.store, run.config, self.period)
        made = await week_summary(self.budget, self.period, week.shown)
        summed = SummedWeek(week, made, tuple(self.budget.take_problems()))
        return StageOutcome([], (summed, self.budget.verdict()))
