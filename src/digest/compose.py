"""Items and a period -> the digest's markdown, through a jinja2 template (pure).

Identical inputs give identical bytes: nothing volatile (no "generated at") is
written, because the content hash of the result decides whether a delivery is new.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cache
from urllib.parse import quote
from zoneinfo import ZoneInfo

import jinja2

from digest.models import Item, ItemState, NoteBasis, Period

OTHER = "Other"
SAVED_CONTEXT_MARKER = "(from saved context — the page could not be read)"
EMPTY_WEEK = "Nothing was saved this week."

_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
# A line starting like this would open a block (heading, list, quote, fence, table, rule).
_BLOCK_START = re.compile(r"^(\d+)?([#>\-+*=|~`.)])")
_INLINE_SPECIAL = re.compile(r"([\\`\[\]<>*])")
_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# Characters that would end or split a link destination; everything else is kept as saved.
_URL_UNSAFE = re.compile(r"[\s()<>\\\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Entry:
    title: str
    url: str | None
    summary: str | None
    marker: str | None
    points: tuple[str, ...]


@dataclass
class Topic:
    name: str
    entries: list[Entry] = field(default_factory=list)


def compose(period: Period, items: Sequence[Item], week_summary: str, *, zone: ZoneInfo) -> str:
    """The digest of `period`: heading, the week's summary, then the items grouped by topic."""
    unique = _unique(items)
    topics = group_by_topic(unique)
    return _template().render(
        label=period.label,
        period_range=format_period(period, zone),
        week_summary=_week_text(week_summary, unique, topics),
        topics=topics,
    )


def content_hash(markdown: str) -> str:
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


def format_period(period: Period, zone: ZoneInfo) -> str:
    """'17–23 November 2026'; months and years are named only where they change."""
    first = period.start.astimezone(zone).date()
    last = (period.end.astimezone(zone) - timedelta(days=1)).date()
    if first.year != last.year:
        return f"{_day(first)} {first.year} – {_day(last)} {last.year}"
    if first.month != last.month:
        return f"{_day(first)} – {_day(last)} {last.year}"
    return f"{first.day}–{last.day} {_MONTHS[last.month - 1]} {last.year}"


def topic_of(item: Item) -> str:
    """The item's topic, else its note's first tag, else Other."""
    for candidate in (item.topic, item.note.tags[0] if item.note and item.note.tags else None):
        name = " ".join((candidate or "").split())
        if name:
            return name
    return OTHER


def group_by_topic(items: Iterable[Item]) -> list[Topic]:
    """Topics by size (largest first) then name; Other, the catch-all, comes last."""
    groups: dict[str, Topic] = {}
    for item in items:
        name = topic_of(item)
        groups.setdefault(name.casefold(), Topic(name)).entries.append(_entry(item))
    return sorted(
        groups.values(),
        key=lambda t: (t.name == OTHER, -len(t.entries), t.name.casefold(), t.name),
    )


def _unique(items: Iterable[Item]) -> list[Item]:
    """Each item once (by key), in a stable order whatever order they came in."""
    seen: dict[str, Item] = {}
    for item in sorted(items, key=lambda i: (i.saved_at, i.id)):
        seen.setdefault(item.key, item)
    return list(seen.values())


def _entry(item: Item) -> Entry:
    note = item.note
    if not item.url:
        text = _collapse(item.title or item.context or "") or "(untitled note)"
        summary = _collapse(note.summary) if note else None
        points = note.key_points if note else ()
        return Entry(text, None, None if summary == text else summary, None, points)
    title = _collapse(item.display_title) or item.url
    if note is None:
        failed = item.state is ItemState.FAILED
        context = _collapse(item.context or "") or None
        return Entry(title, item.url, context, SAVED_CONTEXT_MARKER if failed else None, ())
    marker = SAVED_CONTEXT_MARKER if note.basis is NoteBasis.SAVED_CONTEXT else None
    return Entry(title, item.url, _collapse(note.summary) or None, marker, note.key_points)


def _week_text(week_summary: str, items: Sequence[Item], topics: Sequence[Topic]) -> str:
    if not items:
        return EMPTY_WEEK
    if week_summary.strip():
        return week_summary
    things = "item" if len(items) == 1 else "items"
    groups = "topic" if len(topics) == 1 else "topics"
    return f"{len(items)} {things} saved this week, in {len(topics)} {groups}."


def _day(day: date) -> str:
    return f"{day.day} {_MONTHS[day.month - 1]}"


def _collapse(text: str) -> str:
    return " ".join(text.split())


def md_line(text: str) -> str:
    """One line of text that cannot open a block (heading, list, quote) where it starts."""
    return _unblock(_collapse(text))


def md_text(text: str) -> str:
    """Text safe inside link brackets or a heading: markdown syntax characters escaped."""
    return _unblock(_EDGE_UNDERSCORE.sub(r"\\_", _INLINE_SPECIAL.sub(r"\\\1", _collapse(text))))


def md_url(url: str) -> str:
    """A link destination that stays one token: spaces, parentheses and brackets encoded."""
    return _URL_UNSAFE.sub(lambda m: quote(m[0], safe=""), url.strip())


def md_block(text: str) -> str:
    """Free text (the week summary) kept as markdown, but unable to add headings of its own."""
    lines = text.strip().replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(re.sub(r"^(\s*)#", r"\1\\#", line) for line in lines)


def _unblock(line: str) -> str:
    """Escape what would make `line` open a block: '# x' -> '\\# x', '1. x' -> '1\\. x'."""
    return _BLOCK_START.sub(lambda m: (m[1] or "") + "\\" + m[2], line, count=1)


@cache
def _template() -> jinja2.Template:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("digest", "templates"),
        autoescape=False,  # markdown, not HTML: escaping is done by the md_* filters
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters.update(md_line=md_line, md_text=md_text, md_url=md_url, md_block=md_block)
    return environment.get_template("digest.md.j2")
