"""Highlights from e-readers and read-it-later services, for `digest import`: Kindle's
`My Clippings.txt` and the Readwise CSV export (pure parsing; store/highlights.py keeps them).

A highlight belongs to its item: the page at its URL, else the book by its title and author
(an item of its own, kind note, keyed by both). Kindle writes a highlight again when it is
changed and every note beside the highlight it annotates: a duplicate is kept once, a
highlight later extended from the same place is kept in its longer form, and a note joins
the highlight at its location."""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.models import Highlight, ItemKind, Rejected, SavedItem
from digest.store import Store
from digest.text import shorten

KINDLE = "kindle-clippings"
READWISE = "readwise-csv"
HIGHLIGHT_FORMATS = (KINDLE, READWISE)
_SEPARATOR = "=========="
_KINDLE_META = re.compile(
    r"^-\s*Your (?P<kind>Highlight|Note|Bookmark|Clip)\b.*?(?:Location (?P<loc>\d+)(?:-\d+)?)?"
    r"(?:\s*\|\s*)?(?:Added on (?P<added>.+))?$",
    re.I,
)
_TITLE_AUTHOR = re.compile(r"^(?P<title>.*?)\s*(?:\((?P<author>[^()]*)\))?\s*$")
_KINDLE_DATES = ("%A, %d %B %Y %H:%M:%S", "%A, %B %d, %Y %I:%M:%S %p", "%A, %d %B %Y, %H:%M:%S")
_READWISE_HEADER = "Highlight,Book Title,Book Author"


@dataclass
class Highlights:
    """A file's highlights, and the entries not understood (never dropped silently)."""

    format: str
    found: list[Highlight] = field(default_factory=list)
    duplicates: int = 0
    rejected: list[Rejected] = field(default_factory=list)


def highlights_format(text: str, forced: str | None) -> str | None:
    """KINDLE or READWISE when `text` is one (or `forced` names one), else None."""
    if forced is not None:
        return forced if forced in HIGHLIGHT_FORMATS else None
    head = text.lstrip("\ufeff")[:4096]
    if head.startswith(_READWISE_HEADER):
        return READWISE
    if _SEPARATOR in head and re.search(r"^- ?Your (Highlight|Note|Bookmark)", head, re.M):
        return KINDLE
    return None


def read_highlights(text: str, format: str, zone: ZoneInfo) -> Highlights:
    result = Highlights(format)
    entries = _kindle(text, zone, result) if format == KINDLE else _readwise(text, zone, result)
    return _deduplicated(entries, result)


def book_item(title: str, author: str | None, saved_at: datetime | None) -> SavedItem:
    """The item a book's highlights belong to: one per title and author."""
    name = " ".join(title.split())
    who = " ".join((author or "").split())
    key = hashlib.sha256(f"{name.casefold()}\x1f{who.casefold()}".encode()).hexdigest()[:32]
    shown = f"{name} — {who}" if who else name
    return SavedItem(
        url=None, title=shown, saved_at=saved_at, kind=ItemKind.NOTE, key=f"book:{key}"
    )


def _kindle(text: str, zone: ZoneInfo, result: Highlights) -> list[Highlight]:
    entries: list[Highlight] = []
    line = 1
    for chunk in text.lstrip("\ufeff").replace("\r\n", "\n").split(_SEPARATOR):
        lines = chunk.strip("\n").split("\n")
        start = line + len(chunk) - len(chunk.lstrip("\n"))
        line += chunk.count("\n")
        if not chunk.strip():
            continue
        meta = _KINDLE_META.match(lines[1].strip()) if len(lines) > 1 else None
        body = "\n".join(lines[2:]).strip()
        if meta is None:
            result.rejected.append(Rejected(start, lines[0][:200], "not a Kindle clipping"))
            continue
        kind = meta["kind"].lower()
        if kind in ("bookmark", "clip") or not body:
            continue
        title_author = _TITLE_AUTHOR.match(lines[0].strip().lstrip("\ufeff"))
        assert title_author is not None  # it matches any line
        when = _kindle_date(meta["added"] or "", zone)
        book = book_item(title_author["title"], title_author["author"], when)
        if kind == "note":
            _attach_note(entries, book, meta["loc"], body)
            continue
        entries.append(Highlight(body, book, None, meta["loc"], when, start))
    return entries


def _attach_note(
    entries: list[Highlight], book: SavedItem, location: str | None, note: str
) -> None:
    """A Kindle note joins the last highlight of its book at (or ending just before) its
    location; a note with none is kept as a highlight of its own."""
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        same_book = entry.item.key == book.key and location and entry.location
        if same_book and 0 <= int(location or 0) - int(entry.location or 0) <= 10:
            joined = f"{entry.note}\n{note}" if entry.note else note
            entries[index] = replace(entry, note=joined)
            return
    entries.append(Highlight(note, book, None, location, book.saved_at))


def _kindle_date(text: str, zone: ZoneInfo) -> datetime | None:
    for pattern in _KINDLE_DATES:
        try:
            return datetime.strptime(text.strip(), pattern).replace(tzinfo=zone)
        except ValueError:
            continue
    return None


def _readwise(text: str, zone: ZoneInfo, result: Highlights) -> list[Highlight]:
    entries: list[Highlight] = []
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    for number, row in _csv_rows(reader, result):
        body = (row.get("Highlight") or "").strip()
        title = (row.get("Book Title") or "").strip()
        if not body or not title:
            result.rejected.append(Rejected(number, str(row)[:200], "no highlight or title"))
            continue
        when = _readwise_date(row.get("Highlighted at") or "", zone)
        url = (row.get("URL") or row.get("Source URL") or "").strip()
        item = (
            SavedItem(url=url, title=title, saved_at=when)
            if url.startswith(("https://", "http://"))
            else book_item(title, row.get("Book Author"), when)
        )
        note = (row.get("Note") or "").strip() or None
        entries.append(Highlight(body, item, note, (row.get("Location") or None), when, number))
    return entries


def _csv_rows(
    reader: csv.DictReader[str], result: Highlights
) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows with their line numbers, up to one that is not CSV (named in `result`):
    the rows before it are kept."""
    rows = enumerate(reader, start=2)
    while True:
        try:
            yield next(rows)
        except StopIteration:
            return
        except csv.Error as exc:
            result.rejected.append(Rejected(reader.line_num, "", f"not CSV from here: {exc}"))
            return


def _readwise_date(text: str, zone: ZoneInfo) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=zone)


def _deduplicated(entries: list[Highlight], result: Highlights) -> Highlights:
    """Each highlight once; a later, longer form of one from the same place replaces it."""
    places: dict[tuple[str | None, str | None], list[Highlight]] = {}
    for entry in entries:
        place = places.setdefault((entry.item.key or entry.item.url, entry.location), [])
        index = next(
            (
                i
                for i, other in enumerate(place)
                if other.text in entry.text or entry.text in other.text
            ),
            None,
        )
        if index is None:
            place.append(entry)
            continue
        result.duplicates += 1
        if len(entry.text) > len(place[index].text):
            place[index] = replace(entry, note=entry.note or place[index].note)
    result.found = sorted(
        (entry for place in places.values() for entry in place), key=lambda e: e.line or 0
    )
    return result


@dataclass
class HighlightsReport:
    """What importing one file of highlights did."""

    path: Path
    format: str
    new: int
    known: int  # duplicates in the file, and highlights imported before
    rejected: list[Rejected]

    def describe(self) -> list[str]:
        lines = [
            f"{self.path}: format {self.format}: {self.new} new highlights,"
            f" {self.known} known or duplicate, {len(self.rejected)} entries not understood"
        ]
        lines += [f"  line {r.line}: {r.reason}: {shorten(r.text, 80)}" for r in self.rejected[:10]]
        return lines


def import_highlights(
    store: Store, path: Path, text: str, format: str, source_id: int, zone: ZoneInfo, now: datetime
) -> HighlightsReport:
    """The file's highlights, each attached to its item (saved if need be)."""
    found = read_highlights(text, format, zone)
    _, new = store.save_highlights(source_id, found.found, now)
    known = found.duplicates + len(found.found) - new
    return HighlightsReport(path, format, new, known, found.rejected)
