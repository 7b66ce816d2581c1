"""The store: migrations, one item per canonical URL, write locking."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlite_utils import Database

from digest.errors import StoreConflict, StoreLocked
from digest.migrations import migrations
from digest.models import Extracted, SavedItem
from digest.store import open_store

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)


def test_a_blank_database_gets_every_migration(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")

    applied = [m.name for m in migrations.applied(store.db)]
    assert applied == [m.name for m in migrations._migrations]
    assert {"items", "sources", "notes", "deliveries", "week_summaries"} <= set(
        store.db.table_names()
    )
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_database_of_the_first_schema_is_migrated_and_keeps_its_items(tmp_path: Path) -> None:
    path = tmp_path / "digest.db"
    db = Database(sqlite3.connect(path))
    migrations.apply(db, stop_before="m002_week_summaries")
    db.conn.execute(
        "INSERT INTO items (key, url, kind, saved_at, collected_at)"
        " VALUES ('https://a.example/', 'https://a.example/', 'link', '2026-11-18T00:00:00+00:00',"
        " '2026-11-18T00:00:00+00:00')"
    )
    db.conn.commit()
    db.conn.close()

    store = open_store(path)

    assert "week_summaries" in store.db.table_names()
    assert [item.url for item in store.all_items()] == ["https://a.example/"]


def test_an_item_saved_twice_keeps_its_earliest_save_and_both_sources(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    feed = store.ensure_source("feed", "feed", url="https://f.example/rss")
    journal = store.ensure_source("journal", "file", path="/tmp/til.md")
    store.save_items(
        feed, [SavedItem("https://A.example:443/p?utm_source=x#top", "Feed title", NOW)], NOW
    )

    report = store.save_items(
        journal, [SavedItem("https://a.example/p", "Journal title", NOW - timedelta(days=2))], NOW
    )

    (item,) = store.all_items()
    assert (report.new, report.duplicates) == (0, 1)
    assert item.saved_at == NOW - timedelta(days=2)
    assert item.title == "Journal title"  # the earliest save's title
    assert item.url == "https://A.example:443/p?utm_source=x#top"  # as first saved, for display
    assert sorted(item.sources) == ["feed", "journal"]


def test_a_week_read_without_page_text_holds_everything_else(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    feed = store.ensure_source("feed", "feed", url="https://f.example/rss")
    store.save_items(feed, [SavedItem("https://a.example/p", "Title", NOW, topic="Rust")], NOW)
    (saved,) = store.all_items()
    store.record_fetched(saved.id, Extracted("The page's long text."), "hash", NOW)
    week = (NOW - timedelta(days=1), NOW + timedelta(days=1))

    (full,) = store.items_saved_between(*week)
    (light,) = store.items_saved_between(*week, page_text=False)

    assert full.text == "The page's long text." and light.text is None
    assert light == replace(full, text=None, linked_text=None)


def test_items_without_url_are_kept_once_by_their_text(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    source = store.ensure_source("list", "file", path="/tmp/list.txt")
    note = SavedItem(None, context="A book with  no link")

    store.save_items(source, [note, SavedItem(None, context="A book with no link")], NOW)

    assert store.count_items() == 1


def test_a_writer_held_past_the_busy_timeout_is_reported_as_locked(tmp_path: Path) -> None:
    path = tmp_path / "digest.db"
    open_store(path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sqlite3, sys, time
                conn = sqlite3.connect({str(path)!r}, isolation_level=None)
                conn.execute("BEGIN IMMEDIATE")
                print("held", flush=True)
                time.sleep(5)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store = open_store(path, busy_timeout_s=0.2)
        with pytest.raises(StoreLocked, match="locked by another process"):
            store.ensure_source("x", "feed", url="https://x.example/")
    finally:
        holder.kill()
        holder.wait()


def test_an_attempt_on_a_failed_delivery_is_pending_until_it_ends(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    first = store.begin_delivery("2026-W47", "email", "abc", NOW)
    store.finish_delivery(first.id, "failed", NOW, error="451 try later")

    retry = store.begin_delivery("2026-W47", "email", "abc", NOW)

    # A crash now must leave a record that is never resent on its own.
    assert (retry.status, retry.error, retry.attempts) == ("pending", None, 2)


def test_a_uniqueness_conflict_is_a_store_error_naming_the_constraint(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    store.ensure_source("inbox", "file", path="/tmp/inbox")

    with pytest.raises(StoreConflict, match="sources.name"), store.write() as conn:
        conn.execute("INSERT INTO sources (name, kind, created_at) VALUES ('inbox', 'feed', 'now')")
