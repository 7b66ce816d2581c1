"""Composing one week from a big store: time beyond start-up and the SQL it takes.

    python bench/compose.py [--items 100000] [--week-items 1000] [--repeat 7] [--unfeatured]

Fills a fresh store (in a temporary folder) with ITEMS saved links, WEEK_ITEMS of them
in one ISO week, fetched (an article of ~8,000 characters each, words drawn from a Zipf
law over a shared vocabulary and one of 12 subjects', so no two pages are alike) and
noted, the rest spread over the two years before (unread, so the backlog sections have
candidates; the week a year earlier holds some). Then times the week summary and compose
stages for that week in this process (the offline summariser; the first call writes the cached
week summary, the later ones find it), twice: with a topic on every item (as a journal
gives), and with none (as feeds, URL lists and bookmarks give: the offline sections are
found, WordLlama and k-means). Counts the SQL statements one compose runs: one per need,
none per item. Also times `digest --help` (the whole process) and lists what start-up
imports that it need not. The goals: compose < 0.3 s, start-up < 0.25 s. `--unfeatured`:
the week's pages are stored without their features (as before issue 32): compose is timed
as it makes them in memory, then after the fetch stage's catch-up stores them
(fetch.features).
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
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from digest.clock import utc_now
from digest.compose.stage import Composed, ComposeStage
from digest.config import parse_config
from digest.features import page_features
from digest.fetch.features import FEATURES_PER_RUN, fill_missing_features
from digest.lifecycle import FetchSucceeded, ItemState, NoteAttached
from digest.models import Extracted, Note, SavedItem
from digest.notes.budget import RunBudget
from digest.notes.stage import WeekSummaryStage
from digest.pipeline import resolve_period
from digest.runtime.context import RunContext, run_in_order
from digest.store import Store, open_store
from digest.store.base import iso

GOAL_COMPOSE_S = 0.3
GOAL_STARTUP_S = 0.25
HEAVY_MODULES = ("openai", "trafilatura", "lxml", "pydantic", "jinja2", "readability", "httpx")
WEEK = "2026-W20"
ARTICLE_CHARS = 8_000
SUBJECTS = 12
SYLLABLES = ("ka", "lo", "mi", "ner", "pa", "ros", "ti", "vel", "du", "sha", "gor", "fen")


def _word(number: int) -> str:
    """A made-up word per number: its base-12 digits as syllables."""
    return _word(number // 12) + SYLLABLES[number % 12] if number else ""


def articles(count: int, seed: int = 0) -> list[str]:
    """`count` pages of made-up words: 80 % from a shared Zipf vocabulary of 20,000 words,
    20 % from the page's subject's 300; sentences of 8 to 24 words, paragraphs of 5."""
    random = np.random.RandomState(seed)
    vocabulary = [_word(n + 12**2) for n in range(20_000)]
    zipf = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.1
    zipf /= zipf.sum()
    pages = []
    for n in range(count):
        subject = [vocabulary[(n % SUBJECTS) * 300 + k + 2_000] for k in range(300)]
        shared = random.choice(len(vocabulary), ARTICLE_CHARS // 5, p=zipf)
        own = random.randint(len(subject), size=len(shared))
        picks = [
            subject[o] if random.rand() < 0.2 else vocabulary[s]
            for s, o in zip(shared, own, strict=True)
        ]
        sentences, start = [], 0
        while start < len(picks):
            length = int(random.randint(8, 25))
            sentences.append(" ".join(picks[start : start + length]).capitalize() + ".")
            start += length
        page = "\n\n".join(" ".join(sentences[k : k + 5]) for k in range(0, len(sentences), 5))
        pages.append(page[:ARTICLE_CHARS])
    return pages


def fill(
    store: Store, items: int, week_items: int, week_start: datetime, *, featured: bool = True
) -> None:
    """Saved links; the week's are fetched (an article's worth of text each) and noted; with
    their features as the fetch stage stores them, unless not `featured` (a store from before
    features were stored: compose makes them)."""
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
    for item, text in zip(period, articles(len(period)), strict=True):
        page = Extracted(text=text, title=item.title, extractor="bench")
        if featured:
            page = replace(page, features=page_features(item, page))
        store.apply_fetch(
            FetchSucceeded(item.id, page, f"hash-{item.id}", now, ItemState.FETCHED, None)
        )
        note = Note(
            summary=" ".join(text.split(". ")[:3]) + ".",
            key_points=("One point.", "Another point."),
            tags=(f"tag{item.id % 30}", "bench"),
        )
        store.attach_note(
            NoteAttached(item.id, f"bench-{item.id}", note, now, ItemState.NOTED, final=True)
        )


def drop_topics(store: Store, week_start: datetime) -> None:
    """The week's items lose their topic, as items from feeds, URL lists and bookmarks have."""
    with store.write() as conn:
        conn.execute("UPDATE items SET topic = NULL WHERE saved_at >= ?", (iso(week_start),))


def time_compose(
    store: Store, config_text: str, root: Path, repeat: int
) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of each compose: the CPU time is what the load does not inflate."""
    config = parse_config(config_text, root / "digest.toml")
    budget = RunBudget(store, config, utc_now)
    period = resolve_period(config, WEEK, datetime.now(UTC))
    times, composed = [], []

    async def compose() -> None:
        # Returns nothing: asyncio.run puts SIGINT's handler back through signal.getsignal,
        # whose enum lookup builds repr(task), result included (0.5 s for a Composed of
        # 1,000 items). `digest compose` returns a run's small report, so it pays none.
        run = RunContext(store, config)
        await run_in_order(run, [WeekSummaryStage(budget, period), ComposeStage(period)])
        composed.append(run.made(Composed))

    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        asyncio.run(compose())
        times.append((time.perf_counter() - started, time.process_time() - cpu))
    print(f"composed {len(composed[-1].items)} items, {len(composed[-1].markdown)} characters")
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


def report(variant: str, times: list[tuple[float, float]]) -> None:
    walls, cpus = [wall for wall, _ in times[1:]], [cpu for _, cpu in times[1:]]
    print(
        f"compose {WEEK}, {variant}: first {times[0][0]:.3f} s wall, {times[0][1]:.3f} s CPU"
        f" (writes the week summary); then over {len(walls)}: wall median"
        f" {statistics.median(walls):.3f} s best {min(walls):.3f} s, CPU median"
        f" {statistics.median(cpus):.3f} s best {min(cpus):.3f} s (goal < {GOAL_COMPOSE_S} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--week-items", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--unfeatured", action="store_true", help="the week's pages stored without features"
    )
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
        fill(store, args.items, args.week_items, week_start, featured=not args.unfeatured)
        print(
            f"store: {store.count_items()} items, filled in {time.perf_counter() - started:.1f} s"
        )
        if args.unfeatured:
            report(
                "topics, before the fetch stage fills features",
                time_compose(store, config_text, root, args.repeat),
            )
            started = time.process_time()
            filled = fill_missing_features(store)
            print(
                f"fetch stage: features of {filled} items made and stored in"
                f" {time.process_time() - started:.1f} s CPU (at most"
                f" {FEATURES_PER_RUN:,} a run)"
            )
        times = time_compose(store, config_text, root, args.repeat)
        statements = count_statements(store, config_text, root)
        drop_topics(store, week_start)
        loose_times = time_compose(store, config_text, root, args.repeat)
        store.close()
    report("topics", times)
    report("no topics (offline sections)", loose_times)
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
