"""What the stages are given instead of reading the time or printing progress themselves."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Clock = Callable[[], datetime]
# Seams for waiting: code that waits takes these, so a test can stand in for the wait.
Monotonic = Callable[[], float]  # seconds on a clock that never goes back
AsyncSleep = Callable[[float], Awaitable[None]]
Sleep = Callable[[float], object]
# A name lookup: (host, port) -> getaddrinfo's tuples, or socket.gaierror (fetch.guard)
Lookup = Callable[[str, int], Awaitable[list[tuple[Any, ...]]]]

monotonic: Monotonic = time.monotonic


async def async_sleep(seconds: float) -> None:
    """asyncio.sleep, with asyncio imported by the first wait (not by every command)."""
    import asyncio

    await asyncio.sleep(seconds)


@dataclass(frozen=True)
class Waits:
    """What the fetcher waits on: its clock and sleep for per-host delays, and name lookups
    (None: the system's resolver), the longest wait of a run without a network."""

    monotonic: Monotonic = monotonic
    sleep: AsyncSleep = async_sleep
    lookup: Lookup | None = None


REAL_WAITS = Waits()
# (stage, done, total), after each item of collect, fetch and notes; it may raise RunCancelled.
Progress = Callable[[str, int, int], None]


def utc_now() -> datetime:
    """The one place digest reads the wall clock."""
    return datetime.now(UTC)


def no_progress(stage: str, done: int, total: int) -> None:
    return None
