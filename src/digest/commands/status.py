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
from datetime import datetime, timedelta
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from digest.config import NO_SOURCES, NO_SOURCES_FIX
from digest.errors import FailureKind
from digest.lifecycle.fetching import FETCH_WHEN_ONLINE
from digest.store import Store
from digest.store.records import ItemToLookAt, LLMTotals, LLMUsageBy, RunRecord, SourceListing
from digest.text import for_terminal
from digest.unfetched import QUALITY_REASONS, fetch_reason
from digest.urls import for_display

SCHEMA = "digest-status"
SCHEMA_VERSION = 1
LISTED_BY_DEFAULT = 20  # items to look at; --all lists every one
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$")
KEEP_WHOLE = 25  # columns up to this wide are cut only when cutting the wider ones is not enough
SHRUNK_MIN = 8  # a column is cut no narrower than this, unless told (never than its header)
ATTENTION = ("unknown", "rejected", "failed", "pending")
HINTS = {
    "unknown": "may or may not have arrived; if not, `digest resend --week {period}`",
    "rejected": "the server refused it; fix the cause, then `digest resend --week {period}`",
    "failed": "retried on the next run",
    "pending": "a run is sending it, or died while sending (shown as unknown on the next run)",
}


def _hint(channel: str, status: str, period: str) -> str:
    if channel != "email" and status == "unknown":  # `digest resend` sends the mail only
        return "may or may not have arrived; not sent again on its own"
    return HINTS[status].format(period=period)


@dataclass(frozen=True)
class StatusQuery:
    list_all: bool = False  # every item to look at, not the first LISTED_BY_DEFAULT
    failed_only: bool = False  # failed items only, not those kept with a quality verdict
    source: str | None = None  # only this source and its items
    # when the live holder of the run lock took it (runtime.lock.live_holder_started): a
    # run still 'running' that started before is shown 'interrupted'; None: none runs now
    live_run_since: datetime | None = None
    fresh: bool = False  # no source in the config or the store, nothing saved: say what to do


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
        "next_step": f"{NO_SOURCES}: {NO_SOURCES_FIX}" if query.fresh else None,
        "items": _item_totals(store.item_counts(query.source)),
        "network": _network(store, query.source),
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
                "what_to_do": _hint(delivery.channel, delivery.status, delivery.period),
            }
            for delivery in store.deliveries(ATTENTION)
        ],
        "runs": [_run(run, query.live_run_since) for run in store.recent_runs()],
        "llm": _llm(store.llm_usage(), store.llm_usage_by()),
    }


def _run(run: RunRecord, live_since: datetime | None) -> dict[str, Any]:
    """A run as status shows it: one still 'running' with no live process behind it died."""
    shown = asdict(run)
    if run.status == "running":
        started = datetime.fromisoformat(run.started_at)
        alive = live_since is not None and started >= live_since - timedelta(seconds=2)
        shown["status"] = "running" if alive else "interrupted"
    return shown


def _network(store: Store, source: str | None) -> dict[str, Any]:
    """Whether the last fetch had a network, and what no run has fetched yet: the pages,
    and the posts whose links are not followed (said as the fetch stage says it)."""
    offline_at = store.last_fetch_offline()
    waiting = store.not_fetched(source)
    what: str | None = None
    if offline_at is not None and waiting.total:
        what = FETCH_WHEN_ONLINE
    elif waiting.total:
        what = "the next run fetches them"
    return {
        "offline_at": offline_at.isoformat() if offline_at else None,
        "pages_not_fetched": waiting.pages,
        "posts_links_not_followed": waiting.posts,
        "not_fetched": waiting.describe() if waiting.total else None,
        "what_to_do": what,
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
        "error_kind": row.error_kind,
        "error_status": row.error_status,
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
    if data["next_step"]:  # prose, so it may wrap
        console.print(f"{data['next_step'][0].upper()}{data['next_step'][1:]}", markup=False)
    console.print(_items_line(data["items"]))
    if line := _network_line(data["network"]):
        console.print(line)
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


def _network_line(network: dict[str, Any]) -> str | None:
    waiting = network["not_fetched"]
    if not waiting:
        return None
    if network["offline_at"]:
        at = _one_line(network["offline_at"])
        return f"No network at the last fetch ({at}): {waiting}; {network['what_to_do']}"
    return f"{waiting[0].upper()}{waiting[1:]}: {network['what_to_do']}"


def _print_items_to_look_at(console: Console, block: dict[str, Any]) -> None:
    if not block["total"]:
        return
    whys = [_why(item) for item in block["items"]]
    rows = [
        item
        | {
            "read": "read" if item["read"] else "unread",
            "next_attempt_at": item["next_attempt_at"] or item["note_next_attempt_at"],
            "why": why[1],
        }
        for item, why in zip(block["items"], whys, strict=True)
    ]
    columns = ["id", "state", "read", "next_attempt_at", "why", "url"]
    title = f"Items to look at: {block['total']}"
    # every reason whole, and an ellipsis after it when the error follows
    floors = {"url": 0, "why": max(len(reason) + (cell != reason) for reason, cell in whys)}
    console.print(_table(title, rows, columns, console.width, floors))
    if (more := block["total"] - block["listed"]) > 0:
        console.print(f"… and {more} more (--all lists them, --json for scripts)")


def _why(item: dict[str, Any]) -> tuple[str, str]:
    """Why an item is listed: the reason in a reader's words ("host unreachable"), and the
    cell, which goes on with the error short of the URL it names (the URL has its column)."""
    if error := item["error"]:
        kind = FailureKind(item["error_kind"]) if item["error_kind"] else None
        why, culprit = fetch_reason(kind, item["error_status"]), f"{item['url']!r}: "
        return why, f"{why} — {error.split(culprit, 1)[-1]}"
    if item["note_error"]:
        return "note:", f"note: {item['note_error']}"
    verdict = QUALITY_REASONS.get(item["quality"], item["quality"] or "")
    return verdict, verdict


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


def _table(
    title: str,
    rows: list[dict[str, Any]],
    columns: list[str],
    width: int,
    floors: dict[str, int] | None = None,
) -> Table:
    """One row per line within `width`: long cells (URLs, errors) are cut short with an
    ellipsis, short ones (ids, states, dates) are kept whole if they can be; no column is
    cut below its header, nor below its `floors` width (SHRUNK_MIN unless given)."""
    headers = [column.replace("_", " ") for column in columns]
    cells = [["" if row.get(c) is None else _one_line(row[c]) for c in columns] for row in rows]
    natural = [max([len(h), *(len(line[i]) for line in cells)]) for i, h in enumerate(headers)]
    least = [
        min(wide, max(len(header), (floors or {}).get(column, SHRUNK_MIN)))
        for column, header, wide in zip(columns, headers, natural, strict=True)
    ]
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
    )
    room = width - 3 * (len(columns) - 1)  # between columns: padding, a blank rule, padding
    for header, column_width in zip(headers, _fit(natural, least, room), strict=True):
        table.add_column(header, width=column_width, no_wrap=True, overflow="ellipsis")
    for line in cells:
        table.add_row(*line)
    return table


def _fit(natural: list[int], least: list[int], room: int) -> list[int]:
    """Column widths within `room`, none below its `least`: columns wider than KEEP_WHOLE
    are cut first, the widest first; only when that is not enough, the others too."""
    widths = list(natural)
    long = [i for i, width in enumerate(natural) if width > KEEP_WHOLE]
    for group in (long, list(range(len(natural)))):
        if sum(widths) > room:
            _level(widths, least, group, room)
    return widths


def _level(widths: list[int], least: list[int], group: list[int], room: int) -> None:
    """Cut the widest columns of `group` to the one width at which the table fits `room`
    (narrower ones stay, none goes below its `least`); what is left over goes back to them."""
    fixed = sum(width for i, width in enumerate(widths) if i not in group)

    def cut(level: int) -> dict[int, int]:
        return {i: max(least[i], min(widths[i], level)) for i in group}

    level = max((widths[i] for i in group), default=0)
    while level > 0 and fixed + sum(cut(level).values()) > room:
        level -= 1
    new = cut(level)
    spare = room - fixed - sum(new.values())
    for i in group:
        if spare > 0 and new[i] < widths[i]:
            new[i], spare = new[i] + 1, spare - 1
        widths[i] = new[i]


def _one_line(value: object) -> str:
    text = for_terminal(" ".join(str(value).split()))
    if _TIMESTAMP.match(text):  # stored as ISO 8601 UTC; to the minute is enough to read
        return datetime.fromisoformat(text).strftime("%Y-%m-%d %H:%M")
    return text
