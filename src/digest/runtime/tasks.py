"""Running one stage's items at once, without leaving any running when one of them fails."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any

from digest.errors import DigestError, bugs_recorded


async def run_together(works: Iterable[Coroutine[Any, Any, None]]) -> None:
    """Await every work at once. The first one to raise (RunCancelled from a progress
    callback, or a bug) cancels the others, and is raised once they have all ended:
    nothing of the stage goes on behind the caller's back. Our own error is raised as
    itself, not wrapped in an ExceptionGroup (the first, when several works failed with
    ours: the same full disk)."""
    try:
        async with asyncio.TaskGroup() as group:
            for work in works:
                group.create_task(work)
    except BaseExceptionGroup as failed:
        _, others = failed.split(DigestError)
        if others is None:
            raise failed.exceptions[0] from None
        raise


async def isolated(work: Coroutine[Any, Any, None], culprit: str, failures: list[str]) -> None:
    """Await one unit's `work`; a bug in it is recorded against `culprit` in `failures`
    (errors.unit_bug) and the stage goes on. digest's own errors are raised as they are."""
    with bugs_recorded(culprit, failures):
        await work
