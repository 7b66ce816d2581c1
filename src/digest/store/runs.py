"""Runs, LLM calls, digest revisions and deliveries, and the status counts."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from digest.lifecycle import DeliveryBegun, DeliveryEnded
from digest.models import DeliveryStatus, ItemState
from digest.store.base import DeliveryRecord, DigestRecord, StoreBase, iso
from digest.store.records import ItemToLookAt, LLMTotals, LLMUsageBy, RunRecord
from digest.urls import for_display

_SUMS = ("calls", "tokens_in", "tokens_out", "cost_usd")


class RunsStore(StoreBase):
    # -- runs and LLM calls ----------------------------------------------

    def start_run(self, command: str, now: datetime) -> int:
        with self.write() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (command, started_at) VALUES (?, ?)", (command, iso(now))
            )
            return int(cursor.lastrowid or 0)

    def finish_run(self, run_id: int, status: str, stats: dict[str, Any], now: datetime) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE runs SET finished_at = ?, status = ?, stats = ? WHERE id = ?",
                (iso(now), status, json.dumps(stats), run_id),
            )

    def record_llm_call(
        self,
        *,
        run_id: int | None,
        model: str,
        purpose: str,
        tokens_in: int,
        tokens_out: int,
        cost_usd: float,
        duration_s: float,
        ok: bool,
        now: datetime,
        item_id: int | None = None,
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO llm_calls (run_id, model, purpose, tokens_in, tokens_out, cost_usd,"
                " duration_s, ok, at, item_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    model,
                    purpose,
                    tokens_in,
                    tokens_out,
                    cost_usd,
                    duration_s,
                    int(ok),
                    iso(now),
                    item_id,
                ),
            )

    def llm_usage(self, run_id: int | None = None) -> LLMTotals:
        where, params = ("WHERE run_id = ?", (run_id,)) if run_id is not None else ("", ())
        row = self._query(
            "SELECT count(*) AS calls, coalesce(sum(tokens_in), 0) AS tokens_in,"
            " coalesce(sum(tokens_out), 0) AS tokens_out, coalesce(sum(cost_usd), 0) AS cost_usd"
            f" FROM llm_calls {where}",
            params,
        )[0]
        return _totals(row)

    def llm_usage_of_items(self, start: datetime, end: datetime) -> LLMTotals:
        """Every call made for the notes of the items saved in [start, end), in any run:
        repairs, failures and refused answers as well as the notes that were kept."""
        row = self._query(
            "SELECT count(*) AS calls, coalesce(sum(tokens_in), 0) AS tokens_in,"
            " coalesce(sum(tokens_out), 0) AS tokens_out, coalesce(sum(cost_usd), 0) AS cost_usd"
            " FROM llm_calls WHERE item_id IN"
            " (SELECT id FROM items WHERE saved_at >= ? AND saved_at < ?)",
            (iso(start), iso(end)),
        )[0]
        return _totals(row)

    def llm_usage_by(self, *, runs: int = 5) -> LLMUsageBy:
        """Calls, tokens and cost per run (the last `runs` that called), per ISO week (UTC) and
        per model, newest first."""
        totals = (
            "count(*) AS calls, sum(tokens_in) AS tokens_in, sum(tokens_out) AS tokens_out,"
            " sum(cost_usd) AS cost_usd"
        )
        by_run = self._query(
            f"SELECT run_id, {totals} FROM llm_calls WHERE run_id IS NOT NULL"
            " GROUP BY run_id ORDER BY run_id DESC LIMIT ?",
            (runs,),
        )
        by_model = self._query(
            f"SELECT model, {totals} FROM llm_calls GROUP BY model ORDER BY cost_usd DESC, model"
        )
        by_day = self._query(f"SELECT date(at) AS day, {totals} FROM llm_calls GROUP BY day")
        weeks: dict[str, LLMTotals] = {}
        for row in by_day:
            year, week, _ = date.fromisoformat(row["day"]).isocalendar()
            label = f"{year}-W{week:02d}"
            total = weeks.get(label, LLMTotals(0, 0, 0, 0.0))
            weeks[label] = LLMTotals(
                total.calls + row["calls"],
                total.tokens_in + row["tokens_in"],
                total.tokens_out + row["tokens_out"],
                total.cost_usd + row["cost_usd"],
            )
        return LLMUsageBy(
            runs=tuple((int(row["run_id"]), _totals(row)) for row in by_run),
            weeks=tuple((week, weeks[week]) for week in sorted(weeks, reverse=True)),
            models=tuple((str(row["model"]), _totals(row)) for row in by_model),
        )

    def recent_runs(self, limit: int = 5) -> list[RunRecord]:
        rows = self._query(
            "SELECT id, command, started_at, finished_at, status, stats FROM runs"
            " ORDER BY id DESC LIMIT ?",
            (limit,),
        )
        return [RunRecord(**(dict(row) | {"stats": json.loads(row["stats"])})) for row in rows]

    # -- digests and deliveries -------------------------------------------

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

    # -- status ----------------------------------------------------------

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


def _totals(row: sqlite3.Row) -> LLMTotals:
    return LLMTotals(
        int(row["calls"]), int(row["tokens_in"]), int(row["tokens_out"]), float(row["cost_usd"])
    )


def _to_look_at(row: sqlite3.Row) -> ItemToLookAt:
    sources = tuple(row["sources"].split(", ")) if row["sources"] else ()
    return ItemToLookAt(**(dict(row) | {"sources": sources}))


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
