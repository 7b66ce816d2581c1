"""Digests and their deliveries: each revision recorded, each channel's delivery once per content."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from digest.lifecycle import DeliveryBegun, DeliveryEnded
from digest.models import DeliveryStatus
from digest.store.base import DeliveryRecord, DigestRecord, StoreBase, iso
from digest.urls import for_display


class DeliveriesStore(StoreBase):
    def record_digest(self, period: str, content_hash: str, path: str, now: datetime) -> int | None:
        """A new revision number for new content, or None when this content was recorded before."""
        with self.write() as conn:
            if conn.execute(
                "SELECT 1 FROM digests WHERE period = ? AND content_hash = ?",
                (period, content_hash),
            ).fetchone():
                return None
            revision = conn.execute(
                "SELECT coalesce(max(revision), 0) + 1 FROM digests WHERE period = ?", (period,)
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO digests (period, revision, content_hash, path, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (period, revision, content_hash, path, iso(now)),
            )
            return int(revision)

    def logged_text(self, period: str) -> str | None:
        """The period's text as the log holds it (its first text with the changes since)."""
        rows = self._query("SELECT markdown FROM logged_texts WHERE period = ?", (period,))
        return str(rows[0][0]) if rows else None

    def save_logged_text(self, period: str, markdown: str, now: datetime) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO logged_texts (period, markdown, logged_at) VALUES (?, ?, ?)"
                " ON CONFLICT (period) DO UPDATE SET markdown = excluded.markdown,"
                " logged_at = excluded.logged_at",
                (period, markdown, iso(now)),
            )

    def digest_revision(self, period: str, content_hash: str) -> int | None:
        """The revision number recorded for this content of the period, if any."""
        rows = self._query(
            "SELECT revision FROM digests WHERE period = ? AND content_hash = ?",
            (period, content_hash),
        )
        return int(rows[0][0]) if rows else None

    def digest_record(self, period: str, content_hash: str | None = None) -> DigestRecord | None:
        """The revision of the period with this content, or its latest revision."""
        where, params = "WHERE period = ?", [period]
        if content_hash is not None:
            where, params = where + " AND content_hash = ?", [period, content_hash]
        rows = self._query(f"SELECT * FROM digests {where} ORDER BY revision DESC LIMIT 1", params)
        if not rows:
            return None
        row = rows[0]
        return DigestRecord(
            period=row["period"],
            revision=row["revision"],
            content_hash=row["content_hash"],
            path=row["path"],
            created_at=datetime.fromisoformat(row["created_at"]),
        )

    def minted_id(self, key: str, minted: str, now: datetime) -> str:
        """The feed id stored under `key`; `minted` becomes it if there is none yet."""
        with self.write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO feed_ids (key, id, created_at) VALUES (?, ?, ?)",
                (key, minted, iso(now)),
            )
            row = conn.execute("SELECT id FROM feed_ids WHERE key = ?", (key,)).fetchone()
            return str(row["id"])

    def latest_digest_period(self, up_to: str) -> str | None:
        """The latest period label, not after `up_to`, with a recorded digest (labels sort)."""
        rows = self._query("SELECT max(period) FROM digests WHERE period <= ?", (up_to,))
        return str(rows[0][0]) if rows and rows[0][0] is not None else None

    def collected_since_digest(self, period: str, start: datetime, end: datetime) -> bool:
        """Whether an item saved in [start, end) was collected after `period`'s latest revision."""
        rows = self._query(
            "SELECT 1 FROM items WHERE saved_at >= ? AND saved_at < ? AND collected_at >"
            " (SELECT max(created_at) FROM digests WHERE period = ?) LIMIT 1",
            (iso(start), iso(end), period),
        )
        return bool(rows)

    def delivery(self, period: str, channel: str, content_hash: str) -> DeliveryRecord | None:
        rows = self._query(
            "SELECT * FROM deliveries WHERE period = ? AND channel = ? AND content_hash = ?",
            (period, channel, content_hash),
        )
        return _delivery_from_row(rows[0]) if rows else None

    def apply_delivery(self, intent: DeliveryBegun | DeliveryEnded) -> DeliveryRecord:
        """The delivery as the intent leaves it; a begun one is committed before the attempt."""
        if isinstance(intent, DeliveryEnded):
            error = for_display(intent.error) if intent.error else None
            with self.write() as conn:
                conn.execute(
                    "UPDATE deliveries SET status = ?, error = ?,"
                    " message_id = coalesce(?, message_id), updated_at = ? WHERE id = ?",
                    (intent.status, error, intent.message_id, iso(intent.at), intent.delivery_id),
                )
            rows = self._query("SELECT * FROM deliveries WHERE id = ?", (intent.delivery_id,))
            return _delivery_from_row(rows[0])
        key = (intent.period, intent.channel, intent.content_hash)
        with self.write() as conn:
            conn.execute(
                "INSERT INTO deliveries (period, channel, content_hash, status, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (*key, DeliveryStatus.PENDING, iso(intent.at), iso(intent.at)),
            )
            conn.execute(
                "UPDATE deliveries SET status = ?, error = NULL, attempts = attempts + 1,"
                " updated_at = ? WHERE period = ? AND channel = ? AND content_hash = ?",
                (DeliveryStatus.PENDING, iso(intent.at), *key),
            )
        record = self.delivery(*key)
        assert record is not None
        return record

    def deliveries(self, statuses: Sequence[str] = ()) -> list[DeliveryRecord]:
        where = f"WHERE status IN ({','.join('?' * len(statuses))})" if statuses else ""
        rows = self._query(f"SELECT * FROM deliveries {where} ORDER BY id", list(statuses))
        return [_delivery_from_row(row) for row in rows]


def _delivery_from_row(row: sqlite3.Row) -> DeliveryRecord:
    return DeliveryRecord(
        id=row["id"],
        period=row["period"],
        channel=row["channel"],
        content_hash=row["content_hash"],
        status=DeliveryStatus(row["status"]),
        attempts=row["attempts"],
        error=row["error"],
    )
