"""Hostile feeds and files: absurd dates, huge titles, half-written lines, too many entries."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from digest.collect.feeds import collect_feeds
from digest.collect.inbox import collect_file_source
from digest.config import FetchConfig, SourceConfig
from digest.fetch import Fetcher
from digest.models import StageReport
from digest.store import Store, open_store
from loopback import LoopbackServer, Response

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)
RSS = "application/rss+xml"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(tmp_path / "digest.db")
    yield opened
    opened.close()


def rss(entries: list[tuple[str, str, str]]) -> str:
    items = "".join(
        f"<item><title>{title}</title><link>{link}</link><pubDate>{date}</pubDate></item>"
        for title, link, date in entries
    )
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>{items}</channel></rss>'


def collect(store: Store, url: str, **overrides: Any) -> StageReport:
    config = FetchConfig(
        **({"allow_private_addresses": True, "timeout_s": 10, "per_host_delay_s": 0} | overrides)
    )
    source_id = store.ensure_source("blog", "feed", url=url)

    async def run() -> StageReport:
        async with Fetcher(config) as fetcher:
            feeds = [(source_id, SourceConfig(name="blog", kind="feed", url=url))]
            return await collect_feeds(store, fetcher, feeds, config, NOW)

    return asyncio.run(run())


def saved_at(store: Store) -> dict[str, datetime]:
    return {item.url or "": item.saved_at for item in store.all_items()}


# -- dates ---------------------------------------------------------------------


def test_feed_entries_dated_in_2099_9999_or_1970_are_dated_when_first_seen(
    server: LoopbackServer, store: Store
) -> None:
    server.routes["/feed"] = Response(
        200,
        rss(
            [
                ("Future", "https://a.test/2099", "Thu, 01 Jan 2099 00:00:00 GMT"),
                ("Far future", "https://a.test/9999", "Fri, 31 Dec 9999 00:00:00 GMT"),
                ("Epoch", "https://a.test/1970", "Thu, 01 Jan 1970 00:00:00 GMT"),
                ("Today", "https://a.test/today", "Wed, 18 Nov 2026 08:00:00 GMT"),
                ("Clock skew", "https://a.test/skew", "Thu, 19 Nov 2026 08:00:00 GMT"),
            ]
        ),
        content_type=RSS,
    )

    report = collect(store, server.url("/feed"))

    dates = saved_at(store)
    assert dates["https://a.test/2099"] == dates["https://a.test/1970"] == NOW
    assert dates["https://a.test/9999"] == NOW
    assert dates["https://a.test/today"] == datetime(2026, 11, 18, 8, tzinfo=UTC)
    assert dates["https://a.test/skew"] == datetime(2026, 11, 19, 8, tzinfo=UTC)  # within a day
    assert any("3 entries dated after tomorrow or before 1995" in line for line in report.info)


def test_a_journal_day_in_2099_is_dated_when_first_seen_and_reported(
    tmp_path: Path, store: Store
) -> None:
    journal = tmp_path / "til.md"
    journal.write_text("## 2099-01-01\n- [x](https://j.test/x)\n## 2026-11-17\n- [y](https://j.test/y)\n")
    source = SourceConfig(name="inbox", kind="file", path=journal)
    source_id = store.ensure_source("inbox", "file", path=str(journal))

    report = collect_file_source(store, source, source_id, ZoneInfo("UTC"), NOW)

    assert saved_at(store)["https://j.test/x"] == NOW
    assert saved_at(store)["https://j.test/y"] == datetime(2026, 11, 17, tzinfo=UTC)
    assert "1 dated after tomorrow or before 1995" in report.info[0]


# -- sizes ---------------------------------------------------------------------


def test_a_five_million_character_title_is_cut_at_storage(
    server: LoopbackServer, store: Store
) -> None:
    title = "Spam " * 1_000_000
    server.routes["/feed"] = Response(
        200, rss([(title, "https://t.test/1", "Wed, 18 Nov 2026 08:00:00 GMT")]), content_type=RSS
    )

    collect(store, server.url("/feed"))

    [item] = store.all_items()
    assert item.title is not None and item.title.startswith("Spam Spam")
    assert len(item.title) <= 300


# -- files still being written -------------------------------------------------


def test_a_half_written_last_line_waits_for_the_next_collect(tmp_path: Path, store: Store) -> None:
    inbox = tmp_path / "inbox.md"
    inbox.write_text("- [first](https://part.example/first)\n- [s](https://part.example/seco")
    source = SourceConfig(name="inbox", kind="file", path=inbox)
    source_id = store.ensure_source("inbox", "file", path=str(inbox))

    collect_file_source(store, source, source_id, ZoneInfo("UTC"), NOW)
    assert sorted(saved_at(store)) == ["https://part.example/first"]
    with inbox.open("a") as file:
        file.write("nd)\n")
    collect_file_source(store, source, source_id, ZoneInfo("UTC"), NOW)

    assert sorted(saved_at(store)) == ["https://part.example/first", "https://part.example/second"]


def test_a_settled_file_without_a_final_newline_is_read_whole(tmp_path: Path, store: Store) -> None:
    inbox = tmp_path / "inbox.md"
    inbox.write_text("- [first](https://done.example/first)\n- [last](https://done.example/last)")
    an_hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(inbox, ns=(an_hour_ago, an_hour_ago))
    source = SourceConfig(name="inbox", kind="file", path=inbox)
    source_id = store.ensure_source("inbox", "file", path=str(inbox))

    collect_file_source(store, source, source_id, ZoneInfo("UTC"), NOW)

    assert sorted(saved_at(store)) == ["https://done.example/first", "https://done.example/last"]
