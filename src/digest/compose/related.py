"""What came before an item, in one quiet line (pure): "follow-up to *Day 83/365 of GPU
Programming* (2026-W02)" for the next part of a series saved before, else "You saved 3
related pieces (latest: *Title*, March)" when earlier saves share its rare title words.

Strong matches only: a series is the same title with other numbers; a related piece shares
at least MIN_SHARED words of its title that few titles of the archive use. A line per item
at most, the same for the same store (ties go to the newest save, then the last saved).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from zoneinfo import ZoneInfo

from digest.compose.linktitles import slug_title
from digest.models import Item
from digest.periods import MONTHS, week_label
from digest.text import shorten, words

ARCHIVE_ITEMS = 2000  # the most recent earlier saves looked at
MIN_SHARED = 2  # title words a related piece shares with the item
RARE_SHARE = 0.02  # a word in more than this share of the archive's titles is no match
MIN_SERIES_WORDS = 3  # "Day 12 of GPU Programming": a numbered title of a few words
TITLE_CHARS = 60
_NUMBER = re.compile(r"\d+")
# words of many titles whatever their subject ("A deep dive into…", "Part 2: notes")
_GENERIC = frozenset(
    [
        "deep",
        "dive",
        "guide",
        "intro",
        "introduction",
        "part",
        "notes",
        "blog",
        "post",
        "paper",
        "papers",
        "lecture",
        "lectures",
        "video",
        "series",
        "understanding",
        "explained",
        "learn",
        "learning",
        "build",
        "building",
        "better",
        "simple",
        "great",
        "tips",
        "overview",
        "review",
        "survey",
        "thread",
        "talk",
        "book",
        "books",
        "course",
        "free",
        "day",
        "week",
        "year",
        "today",
    ]
)


def related_lines(
    week: Sequence[Item], archive: Sequence[Item], zone: ZoneInfo
) -> Mapping[int, str]:
    """By item id, the line under each of the week's items that the archive connects to."""
    if not archive:
        return {}
    newest_first = sorted(archive, key=lambda item: (-item.saved_at.timestamp(), -item.id))
    known = _Archive(newest_first)
    lines: dict[int, str] = {}
    for item in week:
        if line := _follow_up(item, known, zone) or _related(item, known, zone):
            lines[item.id] = line
    return lines


class _Archive:
    """The archive's titles read once (newest first): each series' latest part, and by rare
    title word the positions of the saves that use it, so that a week looks them up."""

    def __init__(self, newest_first: Sequence[Item]) -> None:
        self.items = newest_first
        self.titles = [_title(item) for item in newest_first]
        self.latest_part: dict[str, int] = {}
        for position, title in enumerate(self.titles):
            if (key := series_key(title)) is not None:
                self.latest_part.setdefault(key, position)
        words_of = [set(words(title)) - _GENERIC for title in self.titles]
        counts = Counter(word for found in words_of for word in found)
        most = max(2, math.floor(RARE_SHARE * len(newest_first)))
        self.rare = {word for word, count in counts.items() if count <= most}
        self.using: dict[str, list[int]] = {}
        for position, found in enumerate(words_of):
            for word in found & self.rare:
                self.using.setdefault(word, []).append(position)

    def sharing(self, mine: set[str]) -> list[int]:
        """Positions (newest first) of the saves whose titles share MIN_SHARED of `mine`."""
        shared = Counter(position for word in mine for position in self.using.get(word, ()))
        return sorted(position for position, count in shared.items() if count >= MIN_SHARED)


def _follow_up(item: Item, archive: _Archive, zone: ZoneInfo) -> str | None:
    key = series_key(_title(item))
    if key is None or (position := archive.latest_part.get(key)) is None:
        return None
    earlier, title = archive.items[position], archive.titles[position]
    if title == _title(item):
        return None
    week = week_label(earlier.saved_at, zone)
    return f"follow-up to *{shorten(title, TITLE_CHARS)}* ({week})"


def _related(item: Item, archive: _Archive, zone: ZoneInfo) -> str | None:
    mine = _words(item) & archive.rare
    if len(mine) < MIN_SHARED or not (found := archive.sharing(mine)):
        return None
    latest, title = archive.items[found[0]], archive.titles[found[0]]
    saved = latest.saved_at.astimezone(zone)
    when = MONTHS[saved.month - 1]
    if saved.year != item.saved_at.astimezone(zone).year:
        when += f" {saved.year}"
    pieces = "piece" if len(found) == 1 else "pieces"
    return (
        f"You saved {len(found)} related {pieces} (latest: *{shorten(title, TITLE_CHARS)}*, {when})"
    )


def series_key(title: str) -> str | None:
    """A numbered title with its numbers taken out ("day # of gpu programming"), or None."""
    if not _NUMBER.search(title) or len(title.split()) < MIN_SERIES_WORDS:
        return None
    return " ".join(_NUMBER.sub("#", title.casefold()).split())


def _title(item: Item) -> str:
    """The item's title as a reader knows it; "" for a link named only by its address."""
    if item.title or item.page_title or not item.url:
        return " ".join(item.display_title.split())
    return slug_title(item.url) or ""


def _words(item: Item) -> set[str]:
    return set(words(_title(item))) - _GENERIC
