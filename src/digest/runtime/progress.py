"""Progress of collect, fetch and notes: rich bars at a terminal, a few plain lines under cron."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from digest.clock import Progress as ProgressCallback

PLAIN_STEPS = 10  # plain lines per stage at most, besides the last


class PlainProgress:
    """'fetch: 40/120' about every tenth of a stage, and at its end: cron mail stays short."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.shown: dict[str, int] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        step = max(1, total // PLAIN_STEPS)
        last = self.shown.get(stage, 0)
        if done >= total or done - last >= step:
            self.shown[stage] = done
            print(f"{stage}: {done}/{total}", file=self.stream, flush=True)


class BarProgress:
    """One rich bar per stage, on stderr."""

    def __init__(self, bars: Progress):
        self.bars = bars
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self.tasks:
            self.tasks[stage] = self.bars.add_task(stage, total=total)
        self.bars.update(self.tasks[stage], completed=done, total=total)


@contextmanager
def stage_progress(stream: TextIO = sys.stderr) -> Iterator[ProgressCallback]:
    """Bars when `stream` is a terminal, else plain lines; bars are cleared at the end."""
    if not stream.isatty():
        yield PlainProgress(stream)
        return
    bars = Progress(
        TextColumn("{task.description:>8}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(file=stream),
        transient=True,
    )
    with bars:
        yield BarProgress(bars)
