"""Pure decisions about retrying: when a failed fetch is due again, and when to give up."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

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


def retry_after_s(headers: Mapping[str, str], now: datetime, *, cap_s: float) -> float | None:
    """Seconds the server asked us to wait: retry-after-ms, else Retry-After in seconds or as
    an HTTP date (a past date means now); clamped to cap_s; None when absent or unreadable."""
    if (millis := _seconds(headers.get("retry-after-ms"))) is not None:
        return min(millis / 1000, cap_s)
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    if (seconds := _seconds(value)) is None:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        seconds = max((when - now).total_seconds(), 0.0)
    return min(seconds, cap_s)


def _seconds(value: str | None) -> float | None:
    """A non-negative finite number, or None."""
    try:
        seconds = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def is_due(next_attempt: datetime | None, now: datetime) -> bool:
    return next_attempt is None or next_attempt <= now
