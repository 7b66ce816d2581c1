"""The one shape of a stage: a call over the run's context, which the pipeline makes in
order (collect, fetch, notes, compose and deliver); what a stage does and decides is its
own package's business."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from digest.clock import REAL_WAITS, Clock, Progress, Waits, no_progress, utc_now
from digest.config import Config
from digest.models import StageReport
from digest.store import Store


@dataclass(frozen=True)
class RunContext:
    """What every stage of one run is given: the open store, the config, the time, where
    progress goes, the run's id (its LLM calls are recorded against it) and what the
    fetcher waits on."""

    store: Store
    config: Config
    clock: Clock = utc_now
    progress: Progress = no_progress
    run_id: int | None = None
    waits: Waits = REAL_WAITS


class RunStage(Protocol):
    """One stage of a run: its reports, a line per failure."""

    async def run(self, run: RunContext) -> list[StageReport]: ...
