"""`digest export`: every item of a period as JSON lines or CSV."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from typing import Any, TextIO

from digest.models import OFFLINE_MODEL, Item, Period
from digest.reading_time import item_minutes
from digest.store import Store
from digest.text import clean
from digest.unfetched import pretend_note
from digest.urls import for_display

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")  # clean makes a CR a newline

FIELDS = [
    "id",
    "url",
    "title",
    "saved_at",
    "source",
    "state",
    "error",
    "text",
    "note",
    "tags",
    "topic",
    "kind",
    "context",
    "links",
    "basis",
    "quality",
    "read_at",
    "note_by",
    "note_error",
    "starred",
    "newsletters",
    "highlights",
    "reading_minutes",
]  # documented in docs/export.md


def export_row(item: Item, starred: bool = False, highlights: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "id": item.id,
        "url": item.url and for_display(item.url),  # no password or token of a URL printed
        "title": item.display_title,
        "saved_at": item.saved_at.isoformat(),
        "source": ", ".join(item.sources),
        "state": item.state.value,
        "error": item.error and for_display(item.error),
        "text": item.text,
        "note": (item.note.summary or None) if item.note and not pretend_note(item) else None,
        "tags": list(item.note.tags) if item.note else [],
        "topic": item.topic,
        "kind": item.kind.value,
        "context": item.context,  # what was saved with it: journal line, feed summary, post text
        "links": [for_display(link) for link in item.links],
        "basis": item.note.basis.value if item.note else None,
        "quality": item.quality,  # the page was no article: consent, login, paywalled, ...
        "read_at": item.read_at.isoformat() if item.read_at else None,
        "note_by": note_by(item),
        "note_error": item.note_error and for_display(item.note_error),
        "starred": starred,
        "newsletters": list(item.newsletters),  # the letters it came in
        "highlights": list(highlights),  # what the reader highlighted in it
        "reading_minutes": item_minutes(item) or None,  # None: its page was not read
    }


def note_by(item: Item) -> str | None:
    """Who wrote the item's note: the model's name, or "offline"; None without a note."""
    if item.note is None:
        return None
    return item.note.model if item.note.by_model else OFFLINE_MODEL


def write_export(store: Store, period: Period | None, fmt: str, out: TextIO) -> None:
    items = store.items_saved_between(period.start, period.end) if period else store.all_items()
    stars = store.starred_ids()
    highlighted = store.highlights_of([item.id for item in items])
    rows = (export_row(item, item.id in stars, highlighted.get(item.id, ())) for item in items)
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    writer.writeheader()
    for row in rows:
        joined = row | {
            "tags": ";".join(row["tags"]),
            "links": " ".join(row["links"]),
            "newsletters": ";".join(row["newsletters"]),
            "highlights": "\n".join(row["highlights"]),
        }
        writer.writerow({name: csv_cell(value) for name, value in joined.items()})


def csv_cell(value: object) -> object:
    """A text cell no spreadsheet runs as a formula and no terminal obeys: cleaned
    (text.clean), with a `'` before a leading = + - @, tab, CR or newline (OWASP's rule)."""
    if not isinstance(value, str):
        return value
    value = clean(value)
    return "'" + value if value.startswith(FORMULA_STARTS) else value
