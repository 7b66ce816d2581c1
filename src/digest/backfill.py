"""`digest now --since YYYY-Www` / `--all`: every week that has items, in one command.

Collect and fetch once, then note and compose each week with items, oldest first; each week
notes only its own items. Past weeks are written, logged and put in the feed, but not mailed:
a backfill must not send a mail per week of a journal that spans months.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from digest.clock import Clock, Progress, no_progress, utc_now
from digest.config import Config
from digest.models import Period
from digest.periods import parse_week, period_containing, week_label
from digest.pipeline import STAGES, NotesScope, RunResult, run
from digest.store import open_store


@dataclass(frozen=True)
class Week:
    period: Period
    items: int


def weeks_with_items(config: Config, since: Period | None, now_label: str) -> list[Week]:
    """Weeks from `since` (else the first) to the current one that have items, oldest first."""
    zone = config.digest.zone
    with open_store(config.db_path) as store:
        counts = Counter(week_label(item.saved_at, zone) for item in store.all_items())
    first = since.label if since else ""
    return [
        Week(parse_week(label, zone), count)
        for label, count in sorted(counts.items())
        if first <= label <= now_label
    ]


def backfill(
    config: Config,
    since: Period | None,
    *,
    clock: Clock = utc_now,
    progress: Progress = no_progress,
    retry: bool = False,
) -> tuple[RunResult, list[tuple[Week, RunResult]]]:
    """The collect-and-fetch run, then one note-and-compose run per week with items."""
    current = period_containing(clock(), config.digest.zone)
    gathered = run(
        config, "now", period=current, stages=STAGES[:2], clock=clock, progress=progress,
        retry_fetch=retry,
    )  # fmt: skip
    scope = NotesScope(only_period=True, retry=retry)
    quiet = config.model_copy(update={"email": config.email.model_copy(update={"enabled": False})})
    weeks = weeks_with_items(config, since, current.label)
    return gathered, [
        (week, run(quiet, "now", period=week.period, stages=STAGES[2:], clock=clock, notes=scope))
        for week in weeks
    ]
