"""Pure decisions about retrying: when a failed fetch is due again, and when to give up."""

from __future__ import annotations

from datetime import datetime, timedelta

PERMANENT_FAILURE_LIMIT = 3  # a 404 may be a passing mistake; three in a row is not


def backoff_delay(failures: int, *, base_s: float, max_s: float) -> timedelta:
    """base, 2×base, 4×base … capped; `failures` counts this one too."""
    return timedelta(seconds=min(base_s * 2 ** max(failures - 1, 0), max_s))


def next_attempt_at(
    failures: int,
    now: datetime,
    *,
    base_s: float,
    max_s: float,
    retry_after_s: float | None = None,
    permanent: bool = False,
    max_attempts: int,
) -> datetime | None:
    """When to try again after the `failures`-th failure in a row, or None to give up."""
    limit = min(PERMANENT_FAILURE_LIMIT, max_attempts) if permanent else max_attempts
    if failures >= limit:
        return None
    delay = backoff_delay(failures, base_s=base_s, max_s=max_s)
    if retry_after_s is not None:
        delay = max(delay, timedelta(seconds=min(retry_after_s, max_s)))
    return now + delay


def is_due(next_attempt: datetime | None, now: datetime) -> bool:
    return next_attempt is None or next_attempt <= now
