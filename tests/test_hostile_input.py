"""Hostile feeds and files: absurd dates, huge titles, half-written lines, too many entries."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from digest.cli.base import SCREENFUL, print_reports
from digest.collect import bigfiles
from digest.collect.feeds import collect_feeds
from digest.collect.inbox import collect_file_source
from digest.config import FetchConfig, SourceConfig
from digest.fetch.client import Fetcher
from digest.models import Stage, StageReport
from digest.store import Store
from importing import import_file
from loopback import LoopbackServer, Response
from stores import store_at

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)
RSS = "application/rss+xml"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = store_at(tmp_path / "digest.db")
    yield opened
    opened.close()


def rss(entries: list[tuple[str, str, str]]) -> str:
    items = "".join(
        f"<item><title>{title}</title><link>{link}</link><pubDate>{date}</pubDate></item>"
        for title, link, date in entries
    )
    return (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>{items}</channel></rss>'
    )


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
    journal.write_text(
        "## 2099-01-01\n- [x](https://j.test/x)\n## 2026-11-17\n- [y](https://j.test/y)\n"
    )
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


def backdate(path: Path, seconds: int) -> None:
    """Set the file's mtime `seconds` back, as a writer that stopped that long ago."""
    then = time.time_ns() - seconds * 10**9
    os.utime(path, ns=(then, then))


def collect_inbox(store: Store, inbox: Path) -> StageReport:
    source = SourceConfig(name="inbox", kind="file", path=inbox)
    source_id = store.ensure_source("inbox", "file", path=str(inbox))
    return collect_file_source(store, source, source_id, ZoneInfo("UTC"), NOW)


@pytest.fixture(params=["small", "streamed"])
def file_size_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways a file source is read: whole, and streamed as a big file is."""
    if request.param == "streamed":
        monkeypatch.setattr(bigfiles, "STREAM_BYTES", 16)
    return str(request.param)


def test_a_line_left_unfinished_for_seconds_waits_until_it_is_finished(
    tmp_path: Path, store: Store, file_size_kind: str
) -> None:
    inbox = tmp_path / "inbox.md"
    inbox.write_text("- [first](https://part.example/first)\n- [s](https://part.example/seco")
    backdate(inbox, 3)  # the writer paused three seconds mid-line

    collect_inbox(store, inbox)
    assert sorted(saved_at(store)) == ["https://part.example/first"]
    with inbox.open("a") as file:
        file.write("nd)\n")
    backdate(inbox, 3)
    report = collect_inbox(store, inbox)

    assert sorted(saved_at(store)) == ["https://part.example/first", "https://part.example/second"]
    assert report.done == 1


def test_an_unfinished_line_still_growing_is_held_back_at_every_collect(
    tmp_path: Path, store: Store, file_size_kind: str
) -> None:
    inbox = tmp_path / "inbox.urls"
    inbox.write_text("https://grow.example/first\nhttps://grow.example/se")
    backdate(inbox, 60)
    collect_inbox(store, inbox)
    with inbox.open("a") as file:
        file.write("co")  # more of the line, still no line end: the file changed
    backdate(inbox, 30)
    collect_inbox(store, inbox)
    assert sorted(saved_at(store)) == ["https://grow.example/first"]
    with inbox.open("a") as file:
        file.write("nd\n")
    collect_inbox(store, inbox)

    assert sorted(saved_at(store)) == ["https://grow.example/first", "https://grow.example/second"]


def test_a_settled_file_without_a_final_newline_is_read_whole_when_found_unchanged(
    tmp_path: Path, store: Store, file_size_kind: str
) -> None:
    inbox = tmp_path / "inbox.md"
    inbox.write_text("- [first](https://done.example/first)\n- [last](https://done.example/last)")
    backdate(inbox, 3600)

    first = collect_inbox(store, inbox)
    assert sorted(saved_at(store)) == ["https://done.example/first"]
    second = collect_inbox(store, inbox)  # as it was: the writer is done with the last line
    third = collect_inbox(store, inbox)

    assert sorted(saved_at(store)) == ["https://done.example/first", "https://done.example/last"]
    assert (first.done, second.done, third.done) == (1, 1, 0)
    assert third.info == []


def test_a_file_of_only_an_unfinished_line_is_read_when_found_unchanged(
    tmp_path: Path, store: Store
) -> None:
    inbox = tmp_path / "inbox.urls"
    inbox.write_text("https://only.example/line")
    backdate(inbox, 3600)
    collect_inbox(store, inbox)
    assert saved_at(store) == {}
    collect_inbox(store, inbox)
    assert sorted(saved_at(store)) == ["https://only.example/line"]


def test_digest_import_reads_a_file_whole_even_just_written(tmp_path: Path, store: Store) -> None:
    path = tmp_path / "links.urls"
    path.write_text("https://whole.example/a\nhttps://whole.example/b")  # no line end, just now
    report = import_file(
        store, path, source_id=store.ensure_source("i", "file"), zone=ZoneInfo("UTC"), now=NOW
    )
    assert report.new == 2
    assert sorted(saved_at(store)) == ["https://whole.example/a", "https://whole.example/b"]


# -- a feed of 50,000 entries --------------------------------------------------

# The peak is read from VmHWM, not ru_maxrss: Linux carries ru_maxrss across fork and exec,
# so a child of a large pytest process would report the parent's size as its own.
MEASURE_COLLECT = """
import sys
from digest.cli import main
sys.argv = ["digest", "collect", "--config", sys.argv[1]]
try:
    main()
finally:
    with open("/proc/self/status") as status:
        peak_kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    print(f"peak {peak_kib // 1024} MB", file=sys.stderr)
"""


@pytest.mark.slow
def test_a_50000_entry_feed_gives_the_newest_200_in_bounded_memory_and_few_lines(
    tmp_path: Path, server: LoopbackServer
) -> None:
    entries = [(f"Entry {n}", f"https://many.test/{n}", day_second(n)) for n in range(50_000)]
    server.routes["/feed"] = Response(200, rss(entries), content_type=RSS)
    config = tmp_path / "digest.toml"
    config.write_text(
        f'[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "many"\nkind = "feed"\n'
        f'url = "{server.url("/feed")}"\n\n[fetch]\nallow_private_addresses = true\ntimeout_s = 120\n'
    )

    run = subprocess.run(
        [sys.executable, "-c", MEASURE_COLLECT, str(config)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip

    assert run.returncode == 0, run.stderr
    assert len(run.stderr.splitlines()) < 10, run.stderr
    assert int(run.stderr.rsplit("peak ", 1)[1].split()[0]) < 300
    assert "49800 more new entries than the 200 taken per collect" in run.stderr
    with sqlite3.connect(tmp_path / "data" / "digest.db") as db:
        urls = {row[0] for row in db.execute("SELECT url FROM items")}
    assert len(urls) == 200
    assert "https://many.test/49999" in urls and "https://many.test/49800" in urls  # newest


def day_second(n: int) -> str:
    """A pubDate on 17 November 2026, `n` seconds after midnight (wrapping at a day)."""
    return f"Tue, 17 Nov 2026 {n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d} GMT"


@pytest.mark.slow
def test_the_entries_left_over_are_taken_by_the_next_collects(
    server: LoopbackServer, store: Store
) -> None:
    entries = [(f"Entry {n}", f"https://more.test/{n}", day_second(n)) for n in range(500)]
    server.routes["/feed"] = Response(
        200, rss(entries), content_type=RSS, headers={"ETag": '"same"'}
    )

    reports = [collect(store, server.url("/feed"), max_items_per_feed=200) for _ in range(4)]

    assert [report.done for report in reports] == [200, 200, 100, 0]
    assert "300 more new entries" in reports[0].info[-1]
    assert "if-none-match" not in server.requests[1].headers  # no 304 while entries are left
    assert server.requests[3].headers.get("if-none-match") == '"same"'
    assert {item.url for item in store.all_items()} == {
        f"https://more.test/{n}" for n in range(500)
    }


def test_stderr_lines_per_stage_collapse_past_a_screenful(
    capsys: pytest.CaptureFixture[str],
) -> None:
    failures = [f"fetch failed: 'https://x.test/{n}': HTTP 500" for n in range(50_000)]

    print_reports([StageReport(Stage.FETCH, 25, failures)])

    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "fetch: 25 done, 50000 failed"
    assert len(lines) == 1 + SCREENFUL + 1
    assert lines[-1] == "  ! … and 49,980 more, see `digest status`"


def test_a_feed_over_the_size_cap_gives_the_whole_entries_before_the_cap(
    server: LoopbackServer, store: Store
) -> None:
    entries = [(f"Entry {n}", f"https://big.test/{n}", day_second(n)) for n in range(1000)]
    body = rss(entries)
    server.routes["/feed"] = Response(200, body, content_type=RSS)
    cap = 40_000
    whole = body[:cap].count("</item>")

    report = collect(store, server.url("/feed"), max_bytes=cap, max_items_per_feed=5000)

    assert report.done == whole and report.failures == []
    assert any("larger than fetch.max_bytes" in line for line in report.info)
    assert all(item.title and item.title.startswith("Entry ") for item in store.all_items())


def test_a_json_feed_over_the_size_cap_is_a_failure_naming_the_cap(
    server: LoopbackServer, store: Store
) -> None:
    items = [{"id": str(n), "url": f"https://j.test/{n}"} for n in range(2000)]
    server.routes["/feed"] = Response(
        200,
        json.dumps({"version": "https://jsonfeed.org/version/1.1", "items": items}),
        content_type="application/feed+json",
    )

    report = collect(store, server.url("/feed"), max_bytes=20_000)

    assert "larger than fetch.max_bytes" in report.failures[0]
