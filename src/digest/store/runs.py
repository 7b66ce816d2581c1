"""Runs and their LLM calls: what each run did and what the model cost."""

from __future__ import annotations

import json
import sqlite3
from datetime import date, datetime
from typing import Any

from digest.store.base import StoreBase, iso
from digest.store.records import LLMTotals, LLMUsageBy, RunRecord

_SUMS = ("calls", "tokens_in", "tokens_out", "cost_usd")


class RunsStore(StoreBase):
    def start_run(self, command: str, now: datetime) -> int:
        """A new run; the caller holds the run lock, so a run still 'running' died (a kill
        -9, a power cut) and is recorded 'interrupted'."""
        with self.write() as conn:
            conn.execute("UPDATE runs SET status = 'interrupted' WHERE status = 'running'")
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
        """Calls, tokens and cost per run (the last `runs` that called), per week the notes are
        for (an item's ISO week, UTC; the week summary's period) and per model, newest first."""
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
        # the week the notes are for: a note's call by its item's saved date, a week summary's
        # by its run's period, else the day of the call
        by_day = self._query(
            "SELECT CASE WHEN c.item_id IS NULL THEN json_extract(r.stats, '$.period') END"
            " AS period, coalesce(date(i.saved_at), date(c.at)) AS day,"
            f" {totals.replace('sum(', 'sum(c.')} FROM llm_calls c"
            " LEFT JOIN items i ON i.id = c.item_id LEFT JOIN runs r ON r.id = c.run_id"
            " GROUP BY period, day"
        )
        weeks: dict[str, LLMTotals] = {}
        for row in by_day:
            year, week, _ = date.fromisoformat(row["day"]).isocalendar()
            label = row["period"] or f"{year}-W{week:02d}"
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

    def record_fetch(self, run_id: int, done: int, *, offline: bool) -> None:
        """The run's fetch, recorded as soon as it is over (finish_run writes all the run's
        stats later): the same run's digest says when the network was down."""
        with self.write() as conn:
            conn.execute(
                "UPDATE runs SET stats = json_set(coalesce(stats, '{}'), '$.fetch', ?,"
                " '$.offline', json(?)) WHERE id = ?",
                (done, "true" if offline else "false", run_id),
            )

    def last_fetch_offline(self) -> datetime | None:
        """When the last run that fetched found no network, or None (it had one)."""
        rows = self._query(
            "SELECT started_at, json_extract(stats, '$.offline') AS offline FROM runs"
            " WHERE json_extract(stats, '$.fetch') IS NOT NULL ORDER BY id DESC LIMIT 1"
        )
        if not rows or not rows[0]["offline"]:
            return None
        return datetime.fromisoformat(rows[0]["started_at"])

    def recent_runs(self, limit: int = 5) -> list[RunRecord]:
        rows = self._query(
            "SELECT id, command, started_at, finished_at, status, stats FROM runs"
            " ORDER BY id DESC LIMIT ?",
            (limit,),
        )
        return [RunRecord(**(dict(row) | {"stats": json.loads(row["stats"])})) for row in rows]


def _totals(row: sqlite3.Row) -> LLMTotals:
    return LLMTotals(
        int(row["calls"]), int(row["tokens_in"]), int(row["tokens_out"]), float(row["cost_usd"])
    )
