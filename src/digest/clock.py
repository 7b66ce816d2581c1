"""What the stages are given instead of reading the time or printing progress themselves."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]
# (stage, done, total), after each item of collect, fetch and notes; it may raise RunCancelled.
Progress = Callable[[str, int, int], None]


def utc_now() -> datetime:
    return datetime.now(UTC)


def no_progress(stage: str, done: int, total: int) -> None:
    return None
