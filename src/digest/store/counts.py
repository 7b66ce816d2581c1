"""What `digest status` counts: items by state, quality and read, and the items to look at."""

from __future__ import annotations

import sqlite3
from typing import Any

from digest.lifecycle import NotFetched
from digest.models import ItemKind, ItemState
from digest.store.base import POSTS_TO_FOLLOW, StoreBase
from digest.store.records import ItemToLookAt


class CountsStore(StoreBase):
    def item_counts(self, source: str | None = None) -> dict[str, dict[str, int]]:
        """Items by state, by quality verdict and by read state (of one source's items)."""
        where, params = _of_source(source)
        counts: dict[str, dict[str, int]] = {}
        for group, column in (
            ("state", "i.state"),
            ("quality", "i.quality"),
            ("read", "CASE WHEN i.read_at IS NULL THEN 'unread' ELSE 'read' END"),
        ):
            rows = self._query(
                f"SELECT {column} AS value, count(*) FROM items i WHERE {where}"
                f" {'AND i.quality IS NOT NULL' if group == 'quality' else ''}"
                " GROUP BY value ORDER BY value",
                params,
            )
            counts[group] = {row[0]: row[1] for row in rows}
        return counts

    def not_fetched(self, source: str | None = None) -> NotFetched:
        """Links whose page no run has fetched yet (new, never tried or left for want of a
        network), and posts whose links no run has followed: what the fetch stage takes."""
        where, params = _of_source(source)
        pages, posts = self._query(
            f"SELECT count(*) FILTER (WHERE i.kind = ? AND i.state = ? AND i.url IS NOT NULL),"
            f" count(*) FILTER (WHERE i.kind = ? AND {POSTS_TO_FOLLOW})"
            f" FROM items i WHERE {where}",
            [ItemKind.LINK, ItemState.NEW, ItemKind.POST, *params],
        )[0]
        return NotFetched(int(pages), int(posts))

    def items_to_look_at(
        self, *, failed_only: bool, source: str | None, limit: int | None
    ) -> tuple[int, list[ItemToLookAt]]:
        """Failed items, items whose note failed, and (unless `failed_only`) items whose
        page was no article: the total and the first `limit` (None: all), oldest first."""
        where, params = _of_source(source)
        where += " AND (i.state = ? OR i.note_error IS NOT NULL"
        where += "" if failed_only else " OR i.quality IS NOT NULL"
        params = [*params, ItemState.FAILED]
        where += ")"
        total = self._query(f"SELECT count(*) FROM items i WHERE {where}", params)[0][0]
        rows = self._query(
            "SELECT i.id, i.url, i.state, i.quality, i.read_at, i.attempts, i.next_attempt_at,"
            " i.error, i.error_kind, i.error_status, i.note_attempts, i.note_next_attempt_at,"
            " i.note_error,"
            " (SELECT group_concat(s.name, ', ') FROM item_sources x"
            "  JOIN sources s ON s.id = x.source_id WHERE x.item_id = i.id) AS sources"
            f" FROM items i WHERE {where} ORDER BY i.id LIMIT ?",
            [*params, -1 if limit is None else limit],
        )
        return int(total), [_to_look_at(row) for row in rows]


def _of_source(source: str | None) -> tuple[str, list[Any]]:
    """A WHERE clause over `items i`: every item, or those collected from `source`."""
    if source is None:
        return "1", []
    return (
        "EXISTS (SELECT 1 FROM item_sources x JOIN sources s ON s.id = x.source_id"
        " WHERE x.item_id = i.id AND s.name = ?)",
        [source],
    )


def _to_look_at(row: sqlite3.Row) -> ItemToLookAt:
    sources = tuple(row["sources"].split(", ")) if row["sources"] else ()
    return ItemToLookAt(**(dict(row) | {"sources": sources}))
