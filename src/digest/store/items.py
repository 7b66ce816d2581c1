"""Items and their notes: saved once by key, fetched, noted."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from digest.models import (
    Extracted,
    Item,
    ItemKind,
    ItemState,
    Note,
    NoteBasis,
    SavedItem,
)
from digest.store.base import BATCH, SaveReport, StoreBase, from_iso, iso
from digest.urls import normalize_url


class ItemsStore(StoreBase):
    # -- items -----------------------------------------------------------

    def save_items(self, source_id: int, items: Iterable[SavedItem], now: datetime) -> SaveReport:
        """Insert or merge items by key, in batches; a duplicate keeps its earliest save time."""
        new = duplicates = 0
        with self.write() as conn:
            batch: list[tuple[str, SavedItem]] = []
            for item in items:
                batch.append((item_key(item), item))
                if len(batch) >= BATCH:
                    n, d = self._save_batch(conn, source_id, batch, now)
                    new, duplicates, batch = new + n, duplicates + d, []
            if batch:
                n, d = self._save_batch(conn, source_id, batch, now)
                new, duplicates = new + n, duplicates + d
        return SaveReport(new=new, duplicates=duplicates)

    def _save_batch(
        self,
        conn: sqlite3.Connection,
        source_id: int,
        batch: list[tuple[str, SavedItem]],
        now: datetime,
    ) -> tuple[int, int]:
        keys = list(dict.fromkeys(key for key, _ in batch))
        marks = ",".join("?" * len(keys))
        existing = {
            row[0] for row in conn.execute(f"SELECT key FROM items WHERE key IN ({marks})", keys)
        }
        collected = iso(now)
        rows = [
            (
                key,
                item.url,
                item.kind.value,
                item.title,
                item.topic,
                item.context,
                json.dumps(list(item.links)),
                iso(item.saved_at) if item.saved_at else collected,
                collected,
            )
            for key, item in batch
        ]
        conn.executemany(
            "INSERT INTO items (key, url, kind, title, topic, context, links, saved_at, collected_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(key) DO UPDATE SET"
            " title = CASE WHEN excluded.saved_at < saved_at THEN coalesce(excluded.title, title)"
            "   ELSE coalesce(title, excluded.title) END,"
            " topic = CASE WHEN excluded.saved_at < saved_at THEN coalesce(excluded.topic, topic)"
            "   ELSE coalesce(topic, excluded.topic) END,"
            " saved_at = min(saved_at, excluded.saved_at),"
            " context = CASE WHEN context IS NULL THEN excluded.context"
            "   WHEN excluded.context IS NULL OR instr(context, excluded.context) > 0 THEN context"
            "   ELSE context || char(10) || excluded.context END",
            rows,
        )
        conn.executemany(
            "INSERT INTO item_sources (item_id, source_id, saved_at)"
            " SELECT id, ?, ? FROM items WHERE key = ?"
            " ON CONFLICT(item_id, source_id) DO UPDATE SET saved_at = min(saved_at, excluded.saved_at)",
            [(source_id, row[7], row[0]) for row in rows],
        )
        new = len(set(keys) - existing)
        return new, len(batch) - new

    def fetch_candidates(self) -> list[Item]:
        """Link items not fetched yet or whose last fetch failed; policy decides which are due."""
        return self._items(
            "WHERE i.state IN ('new', 'failed') AND i.url IS NOT NULL AND i.kind = 'link'"
        )

    def record_fetched(
        self, item_id: int, extracted: Extracted, text_hash: str, now: datetime
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE items SET state = 'fetched', error = NULL, next_attempt_at = NULL,"
                " attempts = attempts + 1, text = ?, text_hash = ?, extracted_title = ?, author = ?,"
                " published = ?, language = ?, extractor = ?, final_url = ?, fetched_at = ?"
                " WHERE id = ?",
                (
                    extracted.text,
                    text_hash,
                    extracted.title,
                    extracted.author,
                    extracted.published,
                    extracted.language,
                    extracted.extractor,
                    extracted.final_url,
                    iso(now),
                    item_id,
                ),
            )

    def record_fetch_failure(
        self, item_id: int, error: str, next_attempt_at: datetime | None
    ) -> None:
        """Keep the item, count the attempt; no next attempt means fetching it is given up."""
        with self.write() as conn:
            conn.execute(
                "UPDATE items SET state = 'failed', error = ?, attempts = attempts + 1,"
                " next_attempt_at = ? WHERE id = ?",
                (error, iso(next_attempt_at) if next_attempt_at else None, item_id),
            )

    def note_candidates(self) -> list[Item]:
        """Items without a note, items whose text arrived after their stand-in note, and
        notes and posts whose note was only a stand-in."""
        return self._items(
            "WHERE i.note_id IS NULL OR i.state = 'fetched' OR (i.kind != 'link' AND i.state = 'new')"
        )

    def items_saved_between(self, start: datetime, end: datetime) -> list[Item]:
        return self._items(
            "WHERE i.saved_at >= ? AND i.saved_at < ? ORDER BY i.saved_at, i.id",
            (iso(start), iso(end)),
        )

    def all_items(self) -> list[Item]:
        return self._items("ORDER BY i.saved_at, i.id")

    def count_items(self) -> int:
        return int(self._query("SELECT count(*) FROM items")[0][0])

    def _items(self, where: str, params: Sequence[Any] = ()) -> list[Item]:
        rows = self._query(
            "SELECT i.*, n.summary, n.key_points, n.tags, n.basis, n.model, n.prompt_version,"
            " (SELECT group_concat(s.name, char(31)) FROM item_sources x"
            "  JOIN sources s ON s.id = x.source_id WHERE x.item_id = i.id) AS source_names"
            f" FROM items i LEFT JOIN notes n ON n.id = i.note_id {where}",
            params,
        )
        return [_item_from_row(row) for row in rows]

    # -- notes -----------------------------------------------------------

    def cached_note(self, cache_key: str) -> Note | None:
        rows = self._query("SELECT * FROM notes WHERE cache_key = ?", (cache_key,))
        return _note_from_row(rows[0]) if rows else None

    def attach_note(
        self, item_id: int, cache_key: str, note: Note, now: datetime, *, final: bool = True
    ) -> None:
        """Store the note under its cache key and make it the item's note.

        A note that is not `final` (a stand-in after an LLM failure) leaves the item due
        for another note on the next run.
        """
        with self.write() as conn:
            conn.execute(
                "INSERT INTO notes (cache_key, model, prompt_version, summary, key_points, tags,"
                " basis, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(cache_key) DO NOTHING",
                (
                    cache_key,
                    note.model,
                    note.prompt_version,
                    note.summary,
                    json.dumps(list(note.key_points)),
                    json.dumps(list(note.tags)),
                    note.basis.value,
                    iso(now),
                ),
            )
            conn.execute(
                "UPDATE items SET note_id = (SELECT id FROM notes WHERE cache_key = ?),"
                " state = CASE WHEN ? AND (state = 'fetched' OR kind != 'link') THEN 'noted'"
                " ELSE state END WHERE id = ?",
                (cache_key, final, item_id),
            )

    def cached_week_summary(self, cache_key: str) -> str | None:
        rows = self._query("SELECT text FROM week_summaries WHERE cache_key = ?", (cache_key,))
        return str(rows[0][0]) if rows else None

    def save_week_summary(self, cache_key: str, period: str, text: str, now: datetime) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO week_summaries (cache_key, period, text, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(cache_key) DO NOTHING",
                (cache_key, period, text, iso(now)),
            )

    def known_tags(self) -> list[str]:
        tags: dict[str, int] = {}
        for (raw,) in self._query("SELECT tags FROM notes"):
            for tag in json.loads(raw):
                tags[tag] = tags.get(tag, 0) + 1
        return sorted(tags, key=lambda tag: (-tags[tag], tag))


def item_key(item: SavedItem) -> str:
    """The normalised URL, or for an item without one a hash of its text."""
    if item.url:
        return normalize_url(item.url)
    text = " ".join((item.context or item.title or "").split())
    return "note:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _item_from_row(row: sqlite3.Row) -> Item:
    note = _note_from_row(row) if row["summary"] is not None else None
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
        error=row["error"],
        next_attempt_at=from_iso(row["next_attempt_at"]),
        text=row["text"],
        sources=tuple(row["source_names"].split("\x1f")) if row["source_names"] else (),
        note=note,
        extracted_title=row["extracted_title"],
    )


def _note_from_row(row: sqlite3.Row) -> Note:
    return Note(
        summary=row["summary"],
        key_points=tuple(json.loads(row["key_points"])),
        tags=tuple(json.loads(row["tags"])),
        basis=NoteBasis(row["basis"]),
        model=row["model"],
        prompt_version=row["prompt_version"],
    )
