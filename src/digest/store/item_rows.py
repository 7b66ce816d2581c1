"""An items row read back as an Item, with its note: the columns asked for (a page's text
whole or its opening only) and its words, counted in SQLite."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from digest.errors import FailureKind
from digest.models import Item, ItemKind, ItemState, Note, NoteBasis
from digest.store.base import from_iso


def item_columns(text_chars: int | None) -> str:
    """What item_from_row reads: every column, or with only the first `text_chars` characters
    of the page's text (tens of kilobytes an item) and none of what its links led to."""
    if text_chars is None:
        return f"i.*, {_WORDS} AS words"
    text = f"substr(i.text, 1, {int(text_chars)})" if text_chars > 0 else "NULL"
    return (
        f"{_WORDS} AS words, "
        "i.id, i.key, i.url, i.title, i.kind, i.saved_at, i.topic, i.context, i.state,"
        f" i.attempts, i.failures, i.error, i.error_kind, i.error_status, i.next_attempt_at,"
        f" {text} AS text,"
        " i.extracted_title, i.links, NULL AS linked_text, i.quality, i.read_at, i.note_key,"
        " i.note_attempts, i.note_failures, i.note_error, i.note_next_attempt_at, i.language"
    )


# The words of the whole page, counted in SQLite (its text stays there): the spaces and
# line breaks between them (a blank line between paragraphs once), plus one.
_WORDS = (
    "CASE WHEN trim(i.text) = '' THEN NULL ELSE 1 + length(i.text)"
    " - length(replace(replace(i.text, ' ', ''), char(10), ''))"
    " - (length(i.text) - length(replace(i.text, char(10, 10), ''))) / 2 END"
)


def item_from_row(row: sqlite3.Row) -> Item:
    note = note_from_row(row) if row["summary"] is not None else None
    return Item(
        id=row["id"],
        key=row["key"],
        url=row["url"],
        title=row["title"],
        kind=ItemKind(row["kind"]),
        saved_at=datetime.fromisoformat(row["saved_at"]),
        topic=row["topic"],
        context=row["context"],
        state=ItemState(row["state"]),
        attempts=row["attempts"],
        failures=row["failures"],
        error=row["error"],
        error_kind=FailureKind(row["error_kind"]) if row["error_kind"] else None,
        error_status=row["error_status"],
        next_attempt_at=from_iso(row["next_attempt_at"]),
        text=row["text"],
        sources=tuple(row["source_names"].split("\x1f")) if row["source_names"] else (),
        note=note,
        extracted_title=row["extracted_title"],
        links=tuple(json.loads(row["links"])),
        linked_text=row["linked_text"],
        quality=row["quality"],
        read_at=from_iso(row["read_at"]),
        note_key=row["note_key"],
        note_attempts=row["note_attempts"],
        note_failures=row["note_failures"],
        note_error=row["note_error"],
        note_next_attempt_at=from_iso(row["note_next_attempt_at"]),
        language=row["language"],
        newsletters=tuple(row["newsletters"].split("\x1f")) if row["newsletters"] else (),
        words=row["words"],
    )


def note_from_row(row: sqlite3.Row) -> Note:
    return Note(
        summary=row["summary"],
        key_points=tuple(json.loads(row["key_points"])),
        tags=tuple(json.loads(row["tags"])),
        basis=NoteBasis(row["basis"]),
        model=row["model"],
        prompt_version=row["prompt_version"],
    )
