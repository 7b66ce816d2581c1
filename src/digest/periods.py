"""ISO-week arithmetic in the configured time zone; pure functions of their arguments."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from digest.models import Period

_WEEK = re.compile(r"^(\d{4})-[Ww](\d{2})$")


def week_label(moment: datetime, zone: ZoneInfo) -> str:
    year, week, _ = moment.astimezone(zone).isocalendar()
    return f"{year}-W{week:02d}"


def parse_week(label: str, zone: ZoneInfo) -> Period:
    """The period of an ISO week label such as 2026-W47; ValueError if it is not one."""
    match = _WEEK.match(label.strip())
    if not match:
        raise ValueError(f"not an ISO week (YYYY-Www): {label!r}")
    year, week = int(match[1]), int(match[2])
    try:
        monday = date.fromisocalendar(year, week, 1)
    except ValueError as exc:
        raise ValueError(f"no such ISO week: {label!r}") from exc
    start = datetime.combine(monday, time.min, zone)
    end = datetime.combine(monday + timedelta(days=7), time.min, zone)
    return Period(label=f"{year}-W{week:02d}", start=start, end=end)


def period_containing(moment: datetime, zone: ZoneInfo) -> Period:
    return parse_week(week_label(moment, zone), zone)


def previous_period(period: Period, zone: ZoneInfo) -> Period:
    return period_containing(period.start - timedelta(days=1), zone)


def local_midnight(day: date, zone: ZoneInfo) -> datetime:
    """A date saved without a time (a journal heading) means that day in the user's zone."""
    return datetime.combine(day, time.min, zone)


def year_earlier(period: Period, zone: ZoneInfo) -> Period:
    """The same ISO week a year earlier; week 53 becomes week 52 in a year that has no 53."""
    year, week = int(period.label[:4]) - 1, int(period.label[-2:])
    try:
        return parse_week(f"{year}-W{week:02d}", zone)
    except ValueError:
        return parse_week(f"{year}-W52", zone)
