"""How long a server asked us to wait (Retry-After); what a wait leads to is the lifecycle's
business (lifecycle.next_attempt_at)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


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
