"""ISO-week arithmetic in the configured time zone, weeks and days as a reader reads them
("17–23 November 2026"), and cron expressions read as cron means them; pure functions of
their arguments."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, tzinfo
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from digest.models import Period

if TYPE_CHECKING:
    from apscheduler.triggers.cron import CronTrigger

_CRON_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")

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


MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def format_period(period: Period, zone: ZoneInfo, *, short: bool = False) -> str:
    """'17–23 November 2026' ('17–23 Nov 2026' if short); months and years are named only
    where they change."""
    first = period.start.astimezone(zone).date()
    last = (period.end.astimezone(zone) - timedelta(days=1)).date()
    months = [month[:3] for month in MONTHS] if short else MONTHS
    start, end = (f"{day.day} {months[day.month - 1]}" for day in (first, last))
    if first.year != last.year:
        return f"{start} {first.year} – {end} {last.year}"
    if first.month != last.month:
        return f"{start} – {end} {last.year}"
    return f"{first.day}–{end} {last.year}"


def format_date(day: date) -> str:
    """'3 November 2026'."""
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def cron_trigger(expr: str, zone: tzinfo | str) -> CronTrigger:
    """A CronTrigger from 5 cron fields, or 6 with seconds first; weekdays as in cron.

    Raises ValueError naming what is wrong.
    """
    from apscheduler.triggers.cron import CronTrigger  # loaded on use: config imports this

    fields = expr.split()
    if len(fields) not in (5, 6):
        raise ValueError(f"expected 5 fields (or 6 with seconds first), got {len(fields)}")
    second = fields.pop(0) if len(fields) == 6 else "0"
    minute, hour, day, month, day_of_week = fields
    return CronTrigger(
        second=second,
        minute=minute,
        hour=hour,
        day=day,
        month=month,
        day_of_week=cron_weekdays(day_of_week),
        timezone=zone,
    )


def cron_weekdays(field: str) -> str:
    """Cron's weekday numbers (0 or 7 = Sunday) as names, which APScheduler 3 reads alike.

    APScheduler 3 takes 0 as Monday, so `0 8 * * 1` would fire on Tuesdays.
    """
    if not any(char.isdigit() for char in field):
        return field
    names: list[str] = []
    for part in field.split(","):
        span, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if span == "*":
            first, last = 0, 6
        elif "-" in span:
            first_text, last_text = span.split("-", 1)
            first, last = _weekday_number(first_text), _weekday_number(last_text)
        else:
            first = _weekday_number(span)
            last = first if not step_text else 6
        if last < first or step < 1:
            raise ValueError(f"bad day-of-week range {part!r}")
        names.extend(_CRON_WEEKDAYS[number] for number in range(first, last + 1, step))
    return ",".join(dict.fromkeys(names))


def _weekday_number(text: str) -> int:
    if text.isdigit() and int(text) <= 7:
        return int(text)
    if text.lower() in _CRON_WEEKDAYS:
        return _CRON_WEEKDAYS.index(text.lower())
    raise ValueError(f"bad day of week {text!r}")
