"""Items and their notes: saved once by key, fetched, noted."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from digest.models import (
    Extracted,
    Item,
    ItemKind,
    ItemState,
    Note,
    NoteBasis,
    SavedItem,
    Usage,
)
from digest.store.base import BATCH, SaveReport, StoreBase, from_iso, iso
from digest.urls import normalize_url


class ItemsStore(StoreBase):
    # -- items -----------------------------------------------------------

    def save_items(self, source_id: int, items: Iterable[SavedItem], now: datetime) -> SaveReport:
        """Insert or merge items by key, in batches; a duplicate keeps its earliest save time.

        New items are told from duplicates by id: inside the write transaction every row
        inserted gets an id above the largest one before, so no per-key lookup is needed.
        """
        collected = iso(now)
        saved = 0
        with self.write() as conn:
            (before,) = conn.execute("SELECT coalesce(max(id), 0) FROM items").fetchone()
            batch: list[tuple[str | None, ...]] = []
            for item in items:
                batch.append(_item_row(item, collected))
                if len(batch) >= BATCH:
                    saved += _save_batch(conn, source_id, batch)
                    batch = []
            saved += _save_batch(conn, source_id, batch)
            (new,) = conn.execute("SELECT count(*) FROM items WHERE id > ?", (before,)).fetchone()
        return SaveReport(new=new, duplicates=saved - new)

    def fetch_candidates(self) -> list[Item]:
        """Link items not fetched yet, whose last fetch failed, or whose page was no article
        (a wall, a stub) and is to be checked again; policy decides which are due."""
        return self._items(
            "WHERE (i.state IN ('new', 'failed')"
            " OR (i.quality IS NOT NULL AND i.next_attempt_at IS NOT NULL))"
            " AND i.url IS NOT NULL AND i.kind = 'link'"
        )

    def record_fetched(
        self,
        item_id: int,
        extracted: Extracted,
        text_hash: str,
        now: datetime,
        *,
        recheck_at: datetime | None = None,
    ) -> None:
        """Store what the page said; a page that was no article (`extracted.quality`) is
        fetched again at `recheck_at`, if given."""
        with self.write() as conn:
            conn.execute(
                "UPDATE items SET state = 'fetched', error = NULL, next_attempt_at = ?,"
                " attempts = attempts + 1, failures = 0, text = ?, text_hash = ?, extracted_title = ?, author = ?,"
                " published = ?, language = ?, extractor = ?, final_url = ?, fetched_at = ?,"
                " quality = ? WHERE id = ?",
                (
                    iso(recheck_at) if recheck_at and extracted.quality else None,
                    extracted.text,
                    text_hash,
                    extracted.title,
                    extracted.author,
                    extracted.published,
                    extracted.language,
                    extracted.extractor,
                    extracted.final_url,
                    iso(now),
                    extracted.quality,
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
                " failures = failures + 1,"
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

    def unread_saved_before(self, moment: datetime, limit: int) -> list[Item]:
        """The oldest items saved before `moment` and not marked read, oldest first."""
        return self._items(
            "WHERE i.saved_at < ? AND i.read_at IS NULL ORDER BY i.saved_at, i.id LIMIT ?",
            (iso(moment), limit),
        )

    def mark_read(self, ref: str, now: datetime) -> Item | None:
        """Mark the item with this id or URL read (the first time counts); None if unknown.

        Raises ValueError for a ref that is neither an id nor an absolute URL.
        """
        column, value = ("id", int(ref)) if ref.isdigit() else ("key", normalize_url(ref))
        with self.write() as conn:
            conn.execute(
                f"UPDATE items SET read_at = coalesce(read_at, ?) WHERE {column} = ?",
                (iso(now), value),
            )
        found = self._items(f"WHERE i.{column} = ?", (value,))
        return found[0] if found else None

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
        self,
        item_id: int,
        cache_key: str,
        note: Note,
        now: datetime,
        *,
        final: bool = True,
        usage: Usage | None = None,
    ) -> None:
        """Store the note under its cache key, with what it cost, and make it the item's note.

        A note that is not `final` (a stand-in after an LLM failure) leaves the item due
        for another note on the next run.
        """
        with self.write() as conn:
            conn.execute(
                "INSERT INTO notes (cache_key, model, prompt_version, summary, key_points, tags,"
                " basis, created_at, tokens_in, tokens_out, cost_usd)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(cache_key) DO NOTHING",
                (
                    cache_key,
                    note.model,
                    note.prompt_version,
                    note.summary,
                    json.dumps(list(note.key_points)),
                    json.dumps(list(note.tags)),
                    note.basis.value,
                    iso(now),
                    usage.tokens_in if usage else 0,
                    usage.tokens_out if usage else 0,
                    usage.cost_usd if usage else 0.0,
                ),
            )
            conn.execute(
                "UPDATE items SET note_id = (SELECT id FROM notes WHERE cache_key = ?),"
                " state = CASE WHEN ? AND (state = 'fetched' OR kind != 'link') THEN 'noted'"
                " ELSE state END WHERE id = ?",
                (cache_key, final, item_id),
            )

    def cached_week_summary(self, cache_key: str) -> tuple[str, Usage] | None:
        """The week summary saved under this key (as saved: JSON) and what it cost."""
        rows = self._query(
            "SELECT text, tokens_in, tokens_out, cost_usd FROM week_summaries WHERE cache_key = ?",
            (cache_key,),
        )
        if not rows:
            return None
        text, tokens_in, tokens_out, cost_usd = rows[0]
        return str(text), Usage(tokens_in, tokens_out, cost_usd)

    def save_week_summary(
        self, cache_key: str, period: str, text: str, now: datetime, *, model: str, usage: Usage
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO week_summaries (cache_key, period, text, created_at, model,"
                " tokens_in, tokens_out, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(cache_key) DO NOTHING",
                (
                    cache_key,
                    period,
                    text,
                    iso(now),
                    model,
                    usage.tokens_in,
                    usage.tokens_out,
                    usage.cost_usd,
                ),
            )

    def note_usage_between(self, start: datetime, end: datetime) -> list[sqlite3.Row]:
        """For the distinct notes of the items saved in [start, end): per (model, prompt
        version), how many notes and what they cost when they were made."""
        return self._query(
            "SELECT model, prompt_version, count(*) AS notes, sum(tokens_in) AS tokens_in,"
            " sum(tokens_out) AS tokens_out, sum(cost_usd) AS cost_usd FROM notes"
            " WHERE id IN (SELECT note_id FROM items WHERE saved_at >= ? AND saved_at < ?)"
            " GROUP BY model, prompt_version ORDER BY model, prompt_version",
            (iso(start), iso(end)),
        )

    def known_tags(self) -> list[str]:
        tags: dict[str, int] = {}
        for (raw,) in self._query("SELECT tags FROM notes"):
            for tag in json.loads(raw):
                tags[tag] = tags.get(tag, 0) + 1
        return sorted(tags, key=lambda tag: (-tags[tag], tag))


_INSERT_ITEM = (
    "INSERT INTO items (key, url, kind, title, topic, context, links, saved_at, collected_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# Merging a row into itself changes nothing, so a batch with any known key is merged whole.
_UPSERT_ITEM = (
    f"{_INSERT_ITEM} ON CONFLICT(key) DO UPDATE SET"
    " title = CASE WHEN excluded.saved_at < saved_at THEN coalesce(excluded.title, title)"
    "   ELSE coalesce(title, excluded.title) END,"
    " topic = CASE WHEN excluded.saved_at < saved_at THEN coalesce(excluded.topic, topic)"
    "   ELSE coalesce(topic, excluded.topic) END,"
    " saved_at = min(saved_at, excluded.saved_at),"
    " context = CASE WHEN context IS NULL THEN excluded.context"
    "   WHEN excluded.context IS NULL OR instr(context, excluded.context) > 0 THEN context"
    "   ELSE context || char(10) || excluded.context END,"
    # new saved context for a link whose page gave no article: its note is due again
    " note_id = CASE WHEN kind = 'link' AND (quality IS NOT NULL OR text IS NULL)"
    "   AND excluded.context IS NOT NULL AND instr(coalesce(context, ''), excluded.context) = 0"
    "   THEN NULL ELSE note_id END"
)
_LINK_SOURCE = (
    "INSERT INTO item_sources (item_id, source_id, saved_at)"
    " SELECT id, ?, ? FROM items WHERE key = ?"
    " ON CONFLICT(item_id, source_id) DO UPDATE SET saved_at = min(saved_at, excluded.saved_at)"
)
_stamp = lru_cache(maxsize=4096)(iso)  # a journal's items share their day's midnight


def _item_row(item: SavedItem, collected: str) -> tuple[str | None, ...]:
    return (
        item_key(item),
        item.url,
        item.kind.value,
        item.title,
        item.topic,
        item.context,
        json.dumps(list(item.links)) if item.links else "[]",
        _stamp(item.saved_at) if item.saved_at else collected,
        collected,
    )


def _save_batch(
    conn: sqlite3.Connection, source_id: int, rows: list[tuple[str | None, ...]]
) -> int:
    rows = _follow_aliases(conn, rows)
    before = conn.total_changes
    conn.executemany(f"{_INSERT_ITEM} ON CONFLICT(key) DO NOTHING", rows)  # the cheap common case
    if conn.total_changes - before < len(rows):
        conn.executemany(_UPSERT_ITEM, rows)
    conn.executemany(_LINK_SOURCE, [(source_id, row[7], row[0]) for row in rows])
    return len(rows)


def _follow_aliases(
    conn: sqlite3.Connection, rows: list[tuple[str | None, ...]]
) -> list[tuple[str | None, ...]]:
    """Rows whose key is a settled shortened link's old key, given its item's key."""
    keys = [row[0] for row in rows]
    aliases = dict(
        conn.execute(
            "SELECT a.key, i.key FROM item_aliases a JOIN items i ON i.id = a.item_id"
            f" WHERE a.key IN ({', '.join('?' * len(keys))})",
            keys,
        ).fetchall()
    )
    if not aliases:
        return rows
    return [(aliases.get(row[0], row[0]), *row[1:]) for row in rows]


def item_key(item: SavedItem) -> str:
    """The normalised URL, or for an item without one a hash of its text."""
    if item.key:
        return item.key
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
        failures=row["failures"],
        error=row["error"],
        next_attempt_at=from_iso(row["next_attempt_at"]),
        text=row["text"],
        sources=tuple(row["source_names"].split("\x1f")) if row["source_names"] else (),
        note=note,
        extracted_title=row["extracted_title"],
        links=tuple(json.loads(row["links"])),
        linked_text=row["linked_text"],
        quality=row["quality"],
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
