"""`digest status`: what the store knows about sources, items, failures, runs and LLM usage."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from digest.store import Store
from digest.urls import for_display

ATTENTION = ("unknown", "rejected", "failed", "pending")
HINTS = {
    "unknown": "may or may not have arrived; if not, `digest resend --week {period}`",
    "rejected": "the server refused it; fix the cause, then `digest resend --week {period}`",
    "failed": "retried on the next run",
    "pending": "a run is sending it, or died while sending (shown as unknown on the next run)",
}


def gather_status(store: Store) -> dict[str, Any]:
    return {
        "sources": store.list_sources(),
        "items": store.item_counts_by_state(),
        "failed_items": store.failed_items(),
        "deliveries_needing_attention": [
            delivery.__dict__ for delivery in store.deliveries(ATTENTION)
        ],
        "runs": store.recent_runs(),
        "llm": store.llm_usage() | store.llm_usage_by(),
    }


def render_status(data: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(for_display(json.dumps(data, indent=2, default=str)) + "\n")
        return
    console = Console(soft_wrap=False)
    console.print(
        _table(
            "Sources",
            data["sources"],
            ["name", "kind", "status", "items", "last_checked_at", "last_error"],
        )
    )
    items = data["items"]
    console.print(
        "Items: " + (", ".join(f"{count} {state}" for state, count in items.items()) or "none")
    )
    if data["failed_items"]:
        console.print(
            _table(
                "Failed items",
                data["failed_items"],
                ["id", "url", "attempts", "next_attempt_at", "error"],
            )
        )
    if data["deliveries_needing_attention"]:
        console.print(_deliveries_table(data["deliveries_needing_attention"]))
    runs = [run | {"stats": json.dumps(run["stats"])} for run in data["runs"]]
    console.print(_table("Recent runs", runs, ["id", "command", "started_at", "status", "stats"]))
    llm = data["llm"]
    console.print(
        f"LLM: {llm['calls']} calls, {llm['tokens_in']} tokens in, {llm['tokens_out']} out, "
        f"${llm['cost_usd']:.4f}"
    )
    for group, key in (("runs", "run_id"), ("weeks", "week"), ("models", "model")):
        if llm[group]:
            rows = [row | {"cost_usd": f"${row['cost_usd']:.4f}"} for row in llm[group]]
            columns = [key, "calls", "tokens_in", "tokens_out", "cost_usd"]
            console.print(_table(f"LLM usage by {key.removesuffix('_id')}", rows, columns))


def _deliveries_table(deliveries: list[dict[str, Any]]) -> Table:
    rows = [
        row | {"what to do": HINTS[row["status"]].format(period=row["period"])}
        for row in deliveries
    ]
    columns = ["period", "channel", "status", "attempts", "error", "what to do"]
    return _table("Deliveries needing attention", rows, columns)


def _table(title: str, rows: list[dict[str, Any]], columns: list[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column.replace("_", " "), overflow="fold")
    for row in rows:
        table.add_row(*("" if row.get(c) is None else for_display(str(row[c])) for c in columns))
    return table
