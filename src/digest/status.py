"""`digest status`: what the store knows about sources, items, failures, runs and LLM usage.

`gather_status` builds the versioned document that `--json` prints (described in
docs/status-json.md; its keys are ours, not the database's columns); `render_status`
draws the same document as tables that fit the terminal, truncating rather than wrapping.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from digest.store import Store
from digest.store.records import ItemToLookAt, LLMTotals, LLMUsageBy, SourceListing
from digest.urls import for_display

SCHEMA = "digest-status"
SCHEMA_VERSION = 1
LISTED_BY_DEFAULT = 20  # items to look at; --all lists every one
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$")
KEEP_WHOLE = 25  # table cells up to this wide are never cut short
SHRUNK_MIN = 8
ATTENTION = ("unknown", "rejected", "failed", "pending")
HINTS = {
    "unknown": "may or may not have arrived; if not, `digest resend --week {period}`",
    "rejected": "the server refused it; fix the cause, then `digest resend --week {period}`",
    "failed": "retried on the next run",
    "pending": "a run is sending it, or died while sending (shown as unknown on the next run)",
}


@dataclass(frozen=True)
class StatusQuery:
    list_all: bool = False  # every item to look at, not the first LISTED_BY_DEFAULT
    failed_only: bool = False  # failed items only, not those kept with a quality verdict
    source: str | None = None  # only this source and its items


def gather_status(store: Store, query: StatusQuery = StatusQuery()) -> dict[str, Any]:
    """The status document (schema version SCHEMA_VERSION)."""
    sources = [row for row in store.list_sources() if query.source in (None, row.name)]
    total, rows = store.items_to_look_at(
        failed_only=query.failed_only,
        source=query.source,
        limit=None if query.list_all else LISTED_BY_DEFAULT,
    )
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "filters": {"source": query.source, "failed_only": query.failed_only},
        "sources": [_source(row) for row in sources],
        "items": _item_totals(store.item_counts(query.source)),
        "items_to_look_at": {
            "total": total,
            "listed": len(rows),
            "items": [_item(r) for r in rows],
        },
        "deliveries_needing_attention": [
            {
                "period": delivery.period,
                "channel": delivery.channel,
                "status": delivery.status,
                "attempts": delivery.attempts,
                "error": delivery.error,
                "what_to_do": HINTS[delivery.status].format(period=delivery.period),
            }
            for delivery in store.deliveries(ATTENTION)
        ],
        "runs": [asdict(run) for run in store.recent_runs()],
        "llm": _llm(store.llm_usage(), store.llm_usage_by()),
    }


def _source(row: SourceListing) -> dict[str, Any]:
    return {
        "name": row.name,
        "kind": row.kind,
        "origin": row.origin,
        "location": row.location,
        "status": row.status,
        "items": row.items,
        "last_checked_at": row.last_checked_at,
        "failures_in_a_row": row.failures,
        "last_error": row.last_error,
    }


def _item_totals(counts: dict[str, dict[str, int]]) -> dict[str, Any]:
    return {
        "total": sum(counts["state"].values()),
        "by_state": counts["state"],
        "by_quality": counts["quality"],
        "read": counts["read"].get("read", 0),
        "unread": counts["read"].get("unread", 0),
    }


def _item(row: ItemToLookAt) -> dict[str, Any]:
    return {
        "id": row.id,
        "url": row.url,
        "sources": list(row.sources),
        "state": row.state,
        "quality": row.quality,
        "read": row.read_at is not None,
        "attempts": row.attempts,
        "next_attempt_at": row.next_attempt_at,
        "error": row.error,
        "note_attempts": row.note_attempts,
        "note_next_attempt_at": row.note_next_attempt_at,
        "note_error": row.note_error,
    }


def _llm(totals: LLMTotals, groups: LLMUsageBy) -> dict[str, Any]:
    return asdict(totals) | {
        "by_run": [{"run_id": run} | asdict(t) for run, t in groups.runs],
        "by_week": [{"week": week} | asdict(t) for week, t in groups.weeks],
        "by_model": [{"model": model} | asdict(t) for model, t in groups.models],
    }


# -- for people -----------------------------------------------------------------


def render_status(data: dict[str, Any], *, as_json: bool, console: Console | None = None) -> None:
    if as_json:
        sys.stdout.write(for_display(json.dumps(data, indent=2, default=str)) + "\n")  # one write
        return
    console = console or Console(soft_wrap=False, highlight=False)
    columns = ["name", "kind", "status", "items", "last_checked_at", "last_error", "location"]
    console.print(_table("Sources", data["sources"], columns, console.width))
    console.print(_items_line(data["items"]))
    _print_items_to_look_at(console, data["items_to_look_at"])
    if deliveries := data["deliveries_needing_attention"]:
        columns = ["period", "channel", "status", "attempts", "error"]
        console.print(_table("Deliveries needing attention", deliveries, columns, console.width))
        for delivery in deliveries:  # prose, so it may wrap: the fix must be readable whole
            console.print(f"{delivery['period']} {delivery['channel']}: {delivery['what_to_do']}")
    runs = [run | {"stats": _stats_text(run["stats"])} for run in data["runs"]]
    columns = ["id", "command", "started_at", "status", "stats"]
    console.print(_table("Recent runs", runs, columns, console.width))
    _print_llm(console, data["llm"])


def _items_line(items: dict[str, Any]) -> str:
    states = ", ".join(f"{count} {state}" for state, count in items["by_state"].items())
    line = f"Items: {items['total']}" + (f" ({states})" if states else "")
    if items["by_quality"]:
        verdicts = ", ".join(f"{count} {verdict}" for verdict, count in items["by_quality"].items())
        line += f"; no article: {verdicts}"
    return line + f"; {items['read']} read, {items['unread']} unread"


def _print_items_to_look_at(console: Console, block: dict[str, Any]) -> None:
    if not block["total"]:
        return
    rows = [
        item
        | {
            "read": "read" if item["read"] else "unread",
            "next_attempt_at": item["next_attempt_at"] or item["note_next_attempt_at"],
            "why": item["error"]
            or (item["note_error"] and f"note: {item['note_error']}")
            or item["quality"],
        }
        for item in block["items"]
    ]
    columns = ["id", "state", "read", "next_attempt_at", "url", "why"]
    title = f"Items to look at: {block['total']}"
    console.print(_table(title, rows, columns, console.width))
    if (more := block["total"] - block["listed"]) > 0:
        console.print(f"… and {more} more (--all lists them, --json for scripts)")


def _print_llm(console: Console, llm: dict[str, Any]) -> None:
    console.print(
        f"LLM: {llm['calls']} calls, {llm['tokens_in']} tokens in, {llm['tokens_out']} out, "
        f"${llm['cost_usd']:.4f}"
    )
    for group, key in (("by_run", "run_id"), ("by_week", "week"), ("by_model", "model")):
        if llm[group]:
            rows = [row | {"cost_usd": f"${row['cost_usd']:.4f}"} for row in llm[group]]
            columns = [key, "calls", "tokens_in", "tokens_out", "cost_usd"]
            title = f"LLM usage by {key.removesuffix('_id')}"
            console.print(_table(title, rows, columns, console.width))


def _stats_text(stats: dict[str, Any]) -> str:
    return ", ".join(f"{key} {value}" for key, value in stats.items())


def _table(title: str, rows: list[dict[str, Any]], columns: list[str], width: int) -> Table:
    """One row per line within `width`: long cells (URLs, errors) are cut short with an
    ellipsis, short ones (ids, states, dates) are kept whole."""
    headers = [column.replace("_", " ") for column in columns]
    cells = [["" if row.get(c) is None else _one_line(row[c]) for c in columns] for row in rows]
    natural = [max([len(h), *(len(line[i]) for line in cells)]) for i, h in enumerate(headers)]
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
    )
    room = width - 3 * (len(columns) - 1)  # between columns: padding, a blank rule, padding
    for header, column_width in zip(headers, _fit(natural, room), strict=True):
        table.add_column(header, width=column_width, no_wrap=True, overflow="ellipsis")
    for line in cells:
        table.add_row(*line)
    return table


def _fit(natural: list[int], room: int) -> list[int]:
    """Column widths within `room`: columns up to KEEP_WHOLE wide stay whole, longer ones
    share what is left evenly (a column needing less than its share gives the rest on)."""
    if sum(natural) <= room:
        return natural
    widths = list(natural)
    long = sorted(
        (i for i, width in enumerate(natural) if width > KEEP_WHOLE), key=natural.__getitem__
    )
    left = room - sum(width for i, width in enumerate(natural) if i not in long)
    for done, i in enumerate(long):
        widths[i] = max(SHRUNK_MIN, min(natural[i], left // (len(long) - done)))
        left -= widths[i]
    return widths


def _one_line(value: object) -> str:
    text = " ".join(for_display(str(value)).split())
    if _TIMESTAMP.match(text):  # stored as ISO 8601 UTC; to the minute is enough to read
        return datetime.fromisoformat(text).strftime("%Y-%m-%d %H:%M")
    return text
