"""The one shape of a stage: `run(context) -> StageOutcome`, which the pipeline makes in the
order of a plan (collect, fetch, notes, compose and deliver). What a stage made reaches the
later stages and the caller through the run's outcomes, never through the stage itself; what
a stage does and decides is its own package's business."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from digest.clock import REAL_WAITS, Clock, Progress, Waits, no_progress, utc_now
from digest.config import Config
from digest.models import StageReport
from digest.store import Store

T = TypeVar("T")


@dataclass(frozen=True)
class StageOutcome:
    """What one stage did (its reports, a line per failure) and what it made for the stages
    after it and the caller (the week summary, the composed digest, where it was written…)."""

    reports: list[StageReport] = field(default_factory=list)
    made: tuple[object, ...] = ()


@dataclass(frozen=True)
class RunContext:
    """What every stage of one run is given: the open store, the config, the time, where
    progress goes, the run's id (its LLM calls are recorded against it), what the fetcher
    waits on, and the outcomes of the stages run so far."""

    store: Store
    config: Config
    clock: Clock = utc_now
    progress: Progress = no_progress
    run_id: int | None = None
    waits: Waits = REAL_WAITS
    outcomes: list[StageOutcome] = field(default_factory=list)

    def all_made(self, kind: type[T]) -> list[T]:
        """What the stages run so far made of `kind`, in the order they made it."""
        return [
            thing for outcome in self.outcomes for thing in outcome.made if isinstance(thing, kind)
        ]

    def made(self, kind: type[T]) -> T:
        """The latest thing of `kind` an earlier stage made; LookupError when the plan has
        no stage making it before this one (a plan's bug)."""
        if not (found := self.all_made(kind)):
            raise LookupError(f"no stage of this run made a {kind.__name__} before it was needed")
        return found[-1]

    @property
    def reports(self) -> list[StageReport]:
        return [report for outcome in self.outcomes for report in outcome.reports]


class RunStage(Protocol):
    """One stage of a run: what it did and made."""

    async def run(self, run: RunContext) -> StageOutcome: ...


async def run_in_order(run: RunContext, stages: Sequence[RunStage]) -> None:
    """Each stage in turn, its outcome added to the run's for the stages after it."""
    for stage in stages:
        run.outcomes.append(await stage.run(run))
