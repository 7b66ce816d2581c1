"""Highlights: kept once each under their item, brought back on a spaced schedule
(lifecycle.resurfacing_due), retired by `digest highlight done`."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from digest.models import Highlight, StoredHighlight
from digest.store.base import SaveReport, from_iso, iso
from digest.store.item_saves import item_key
from digest.store.items import ItemsStore
from digest.text import for_reader


class HighlightsStore(ItemsStore):
    def save_highlights(
        self, source_id: int, highlights: Sequence[Highlight], now: datetime
    ) -> tuple[SaveReport, int]:
        """The highlights' items (merged with those saved already) and the highlights not
        known yet, committed together; the items' report and how many highlights were new."""
        with self.write() as conn:
            items = {item_key(h.item): h.item for h in highlights}
            report = self.save_items(source_id, items.values(), now)
            before = conn.total_changes
            conn.executemany(
                "INSERT OR IGNORE INTO highlights"
                " (key, item_id, text, note, location, highlighted_at)"
                " SELECT ?, id, ?, ?, ?, ? FROM items WHERE key = ?",
                [_row(highlight, now) for highlight in highlights],
            )
            new = conn.total_changes - before
        return report, new

    def highlight_candidates(self) -> list[StoredHighlight]:
        """Every highlight not retired, oldest first, with its item's title, URL and read mark."""
        rows = self._query(
            "SELECT h.id, h.item_id, h.text, h.note, h.highlighted_at, h.shown_week, h.shown_at,"
            " coalesce(i.title, i.extracted_title, i.url, '') AS source, i.url, i.read_at"
            " FROM highlights h JOIN items i ON i.id = h.item_id WHERE h.done_at IS NULL"
            " ORDER BY h.highlighted_at, h.id"
        )
        return [
            StoredHighlight(
                id=row["id"],
                item_id=row["item_id"],
                text=row["text"],
                note=row["note"],
                highlighted_at=datetime.fromisoformat(row["highlighted_at"]),
                source=row["source"],
                url=row["url"],
                shown_week=row["shown_week"],
                shown_at=from_iso(row["shown_at"]),
                read_at=from_iso(row["read_at"]),
            )
            for row in rows
        ]

    def highlights_shown(self, ids: Sequence[int], week: str, at: datetime) -> None:
        """Brought back in `week` (its due step passed by `at`): not again until the next."""
        with self.write() as conn:
            conn.executemany(
                "UPDATE highlights SET shown_week = ?, shown_at = ? WHERE id = ?",
                [(week, iso(at), highlight_id) for highlight_id in ids],
            )

    def retire_highlight(self, highlight_id: int, at: datetime) -> str | None:
        """Never brought back again; its text, None when there is no such highlight."""
        with self.write() as conn:
            conn.execute(
                "UPDATE highlights SET done_at = coalesce(done_at, ?) WHERE id = ?",
                (iso(at), highlight_id),
            )
        rows = self._query("SELECT text FROM highlights WHERE id = ?", (highlight_id,))
        return str(rows[0][0]) if rows else None

    def highlights_of(self, item_ids: Sequence[int]) -> dict[int, list[str]]:
        """Each item's highlights, in the order they were made."""
        found: dict[int, list[str]] = {}
        for start in range(0, len(item_ids), 500):
            batch = item_ids[start : start + 500]
            rows = self._query(
                "SELECT item_id, text FROM highlights"
                f" WHERE item_id IN ({', '.join('?' * len(batch))}) ORDER BY highlighted_at, id",
                batch,
            )
            for item_id, text in rows:
                found.setdefault(int(item_id), []).append(str(text))
        return found


def _row(highlight: Highlight, now: datetime) -> tuple[str | None, ...]:
    key = item_key(highlight.item)
    digest = hashlib.sha256(f"{key}\x1f{' '.join(highlight.text.split())}".encode()).hexdigest()
    return (
        digest[:32],
        for_reader(highlight.text),
        highlight.note and for_reader(highlight.note),
        highlight.location,
        iso(highlight.highlighted_at or now),
        key,
    )
