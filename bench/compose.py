"""Composing one week from a big store: time beyond start-up and the SQL it takes.

    python bench/compose.py [--items 100000] [--week-items 1000] [--repeat 5]

Fills a fresh store (in a temporary folder) with ITEMS saved links, WEEK_ITEMS of them
in one ISO week with a note each, the rest spread over the two years before (unread,
so the backlog sections have candidates; the week a year earlier holds some). Then
times `Pipeline.compose_digest` for that week in this process (the offline summariser;
the first call writes the cached week summary, the later ones find it), and counts the
SQL statements one compose runs: one per need, none per item. Also times `digest --help`
(the whole process) and lists what start-up imports that it need not.
The goals: compose < 0.3 s, start-up < 0.25 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from digest.config import parse_config
from digest.models import Extracted, Note, SavedItem
from digest.pipeline import Pipeline, resolve_period
from digest.store import Store, open_store

GOAL_COMPOSE_S = 0.3
GOAL_STARTUP_S = 0.25
HEAVY_MODULES = ("openai", "trafilatura", "lxml", "pydantic", "jinja2", "readability", "httpx")
WEEK = "2026-W20"
ARTICLE = "A paragraph of the article, as long as most are, says one more thing. " * 6 + "\n\n"


def fill(store: Store, items: int, week_items: int, week_start: datetime) -> None:
    """Saved links; the week's are fetched (an article's worth of text each) and noted."""
    source = store.ensure_source("bench", "file", path="bench.txt")
    now = week_start + timedelta(days=8)
    older = items - week_items
    spread_s = 2 * 365 * 86400
    saved = [
        SavedItem(
            url=f"https://example{n % 500}.org/post/{n}",
            title=f"Post {n} about topic {n % 40}",
            saved_at=week_start - timedelta(seconds=1 + (spread_s * n) // max(1, older)),
            topic=f"Topic {n % 12}",
        )
        for n in range(older)
    ]
    saved += [
        SavedItem(
            url=f"https://week{n % 50}.example.net/article/{n}",
            title=f"This week's article {n}",
            saved_at=week_start + timedelta(seconds=1 + n * 600),
            topic=f"Topic {n % 12}",
        )
        for n in range(week_items)
    ]
    store.save_items(source, saved, now)
    period = store.items_saved_between(week_start, week_start + timedelta(days=7))
    for item in period:
        page = Extracted(text=ARTICLE * 20, title=item.title, extractor="bench")
        store.record_fetched(item.id, page, f"hash-{item.id}", now)
        note = Note(
            summary=f"What item {item.id} says, in two sentences. And why it matters.",
            key_points=("One point.", "Another point."),
            tags=(f"tag{item.id % 30}", "bench"),
        )
        store.attach_note(item.id, f"bench-{item.id}", note, now)


def time_compose(
    store: Store, config_text: str, root: Path, repeat: int
) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of each compose: the CPU time is what the load does not inflate."""
    config = parse_config(config_text, root / "digest.toml")
    pipeline = Pipeline(config, store)
    period = resolve_period(config, WEEK, datetime.now(UTC))
    times = []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        markdown, items, _ = asyncio.run(pipeline.compose_digest(period, pipeline.summarizer()))
        times.append((time.perf_counter() - started, time.process_time() - cpu))
    print(f"composed {len(items)} items, {len(markdown)} characters of markdown")
    return times


def count_statements(store: Store, config_text: str, root: Path) -> list[str]:
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        time_compose(store, config_text, root, 1)
    finally:
        store.conn.set_trace_callback(None)
    return statements


def startup(repeat: int) -> tuple[list[float], list[str]]:
    digest = Path(sys.executable).with_name("digest")
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([str(digest), "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    probe = "import sys, digest.cli; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout.split()
    heavy = sorted({name.split(".")[0] for name in loaded} & set(HEAVY_MODULES))
    return times, heavy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--week-items", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"load averages before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config_text = (
            '[digest]\ndata_dir = "data"\nbacklog_unread = 5\none_year_ago = true\n'
            '[llm]\nprovider = "offline"\n'
        )
        config = parse_config(config_text, root / "digest.toml")
        config.db_path.parent.mkdir(parents=True, exist_ok=True)
        store = open_store(config.db_path)
        week_start = resolve_period(config, WEEK, datetime.now(UTC)).start
        started = time.perf_counter()
        fill(store, args.items, args.week_items, week_start)
        print(
            f"store: {store.count_items()} items, filled in {time.perf_counter() - started:.1f} s"
        )
        times = time_compose(store, config_text, root, args.repeat)
        statements = count_statements(store, config_text, root)
        store.close()
    walls, cpus = [wall for wall, _ in times[1:]], [cpu for _, cpu in times[1:]]
    print(
        f"compose {WEEK}: first {times[0][0]:.3f} s (writes the week summary); then over"
        f" {len(walls)}: wall median {statistics.median(walls):.3f} s best {min(walls):.3f} s,"
        f" CPU median {statistics.median(cpus):.3f} s (goal < {GOAL_COMPOSE_S} s)"
    )
    print(f"SQL statements in one compose: {len(statements)}")
    for statement in statements:
        print(f"  {' '.join(statement.split())[:150]}")
    startup_times, heavy = startup(args.repeat)
    print(
        f"digest --help: median {statistics.median(startup_times):.3f} s,"
        f" best {min(startup_times):.3f} s (goal < {GOAL_STARTUP_S} s);"
        f" heavy modules imported at start-up: {heavy or 'none'}"
    )
    print(f"load averages after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
