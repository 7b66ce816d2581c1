"""Full-text search over everything saved (the FTS5 index of migration m022a), and stars."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from digest.errors import BadSearch, SearchTooSlow
from digest.lifecycle import ItemStarred
from digest.models import Item, ItemKind, ItemState
from digest.store.base import iso, store_error
from digest.store.items import ItemsStore

MARK_START, MARK_END = "\x02", "\x03"  # around each matched word in a snippet
SNIPPET_WORDS = 16
SEARCH_SECONDS = 5.0  # a search still running then stops (SQLite's progress handler)
# bm25 weights of the indexed columns: title, text, note, context, tags, host
RANK = "bm25(10.0, 1.0, 2.0, 3.0, 4.0, 5.0)"
# What an unparsable query makes SQLite say; anything else is the store's own trouble.
_QUERY_TROUBLE = (
    "fts5:",
    "syntax error",
    "no such column",
    "unterminated string",
    "unknown special",
)


@dataclass(frozen=True)
class SearchFilter:
    """What narrows a search besides its words; None: no narrowing."""

    start: datetime | None = None  # saved at or after
    end: datetime | None = None  # saved before
    source: str | None = None
    kind: ItemKind | None = None
    state: ItemState | None = None
    unread: bool = False


@dataclass(frozen=True)
class SearchHit:
    id: int
    saved_at: datetime
    title: str
    url: str | None
    host: str | None
    kind: ItemKind
    state: ItemState
    read: bool
    snippet: str  # matched words between MARK_START and MARK_END


class SearchStore(ItemsStore):
    def search(self, query: str, narrow: SearchFilter, limit: int) -> list[SearchHit]:
        """The items matching the FTS5 `query`, best first (bm25, the title weighted most).

        BadSearch, naming the query, when FTS5 cannot parse it."""
        where, params = _narrowing(narrow)
        sql = (
            "SELECT i.id, i.saved_at, coalesce(i.title, i.extracted_title, i.url, '') AS title,"
            " i.url, i.kind, i.state, i.read_at IS NOT NULL AS read,"
            f" snippet(item_index, -1, '{MARK_START}', '{MARK_END}', '…', {SNIPPET_WORDS}) AS snippet"
            " FROM item_index JOIN items i ON i.id = item_index.rowid"
            f" WHERE item_index MATCH ? AND rank MATCH '{RANK}' {where}"
            " ORDER BY rank, i.id LIMIT ?"
        )
        deadline = time.monotonic() + SEARCH_SECONDS
        self.conn.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
        try:
            rows = self.conn.execute(sql, [query, *params, limit]).fetchall()
        except sqlite3.OperationalError as exc:
            if str(exc) == "interrupted":
                raise SearchTooSlow(
                    f"search query {_printable(query[:80])!r}: stopped after"
                    f" {SEARCH_SECONDS:g} s; use fewer or more precise words"
                ) from exc
            if any(words in str(exc) for words in _QUERY_TROUBLE):
                raise BadSearch(f"search query {query!r}: {_printable(str(exc))}") from exc
            raise store_error(exc, None) from exc
        finally:
            self.conn.set_progress_handler(None, 0)
        return [_hit(row) for row in rows]

    def apply_star(self, intent: ItemStarred) -> bool:
        """The item starred or not; False when there is no item with that id."""
        item_id = intent.item_id
        with self.write() as conn:
            if conn.execute("SELECT 1 FROM items WHERE id = ?", (item_id,)).fetchone() is None:
                return False
            if intent.starred:
                conn.execute(
                    "INSERT INTO item_stars (item_id, starred_at) VALUES (?, ?)"
                    " ON CONFLICT(item_id) DO NOTHING",
                    (item_id, iso(intent.at)),
                )
            else:
                conn.execute("DELETE FROM item_stars WHERE item_id = ?", (item_id,))
        return True

    def starred_items(self, limit: int, *, text_chars: int) -> list[Item]:
        """The items starred, most recently starred first (the openings of their pages)."""
        return self._items(
            "JOIN item_stars t ON t.item_id = i.id ORDER BY t.starred_at DESC, i.id LIMIT ?",
            (limit,),
            text_chars=text_chars,
        )

    def starred_ids(self) -> set[int]:
        return {int(row[0]) for row in self._query("SELECT item_id FROM item_stars")}

    def read_items(self, limit: int, *, text_chars: int) -> list[Item]:
        """The items marked read, most recently read first (the openings of their pages)."""
        return self._items(
            "WHERE i.read_at IS NOT NULL ORDER BY i.read_at DESC, i.id LIMIT ?",
            (limit,),
            text_chars=text_chars,
        )


def _narrowing(narrow: SearchFilter) -> tuple[str, list[Any]]:
    clauses: list[tuple[str, Sequence[Any]]] = []
    if narrow.start is not None:
        clauses.append(("i.saved_at >= ?", [iso(narrow.start)]))
    if narrow.end is not None:
        clauses.append(("i.saved_at < ?", [iso(narrow.end)]))
    if narrow.source is not None:
        clauses.append(
            (
                "EXISTS (SELECT 1 FROM item_sources x JOIN sources o ON o.id = x.source_id"
                " WHERE x.item_id = i.id AND o.name = ?)",
                [narrow.source],
            )
        )
    if narrow.kind is ItemKind.NEWSLETTER:  # the letters, and the stories they brought
        clauses.append(
            (
                "(i.kind = ? OR EXISTS (SELECT 1 FROM item_newsletters n WHERE n.item_id = i.id))",
                [narrow.kind.value],
            )
        )
    elif narrow.kind is not None:
        clauses.append(("i.kind = ?", [narrow.kind.value]))
    if narrow.state is not None:
        clauses.append(("i.state = ?", [narrow.state.value]))
    if narrow.unread:
        clauses.append(("i.read_at IS NULL", []))
    where = "".join(f" AND {clause}" for clause, _ in clauses)
    return where, [param for _, params in clauses for param in params]


def _printable(text: str) -> str:
    """SQLite quotes the query's characters as they are: a control character is escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _hit(row: sqlite3.Row) -> SearchHit:
    return SearchHit(
        id=row["id"],
        saved_at=datetime.fromisoformat(row["saved_at"]),
        title=row["title"],
        url=row["url"],
        host=urlsplit(row["url"]).hostname if row["url"] else None,
        kind=ItemKind(row["kind"]),
        state=ItemState(row["state"]),
        read=bool(row["read"]),
        snippet=" ".join((row["snippet"] or "").split()),
    )
