"""The store: migrations, one item per canonical URL, write locking."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlite_utils import Database
from sqlite_utils.db import Table

from digest.errors import StoreConflict, StoreLocked
from digest.lifecycle import (
    Backoff,
    DeliveryBegun,
    DeliveryEnded,
    SourceChecked,
    SourceFailed,
    fetch_succeeded,
)
from digest.models import DeliveryStatus, Extracted, SavedItem
from digest.store import open_store
from digest.store.migrations import migration_set

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)


def test_a_blank_database_gets_every_migration(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")

    applied = [m.name for m in migration_set().applied(store.db)]
    assert applied == [m.name for m in migration_set()._migrations]
    assert {"items", "sources", "notes", "deliveries", "week_summaries"} <= set(
        store.db.table_names()
    )
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_database_of_the_first_schema_is_migrated_and_keeps_its_items(tmp_path: Path) -> None:
    path = tmp_path / "digest.db"
    db = Database(sqlite3.connect(path))
    migration_set().apply(db, stop_before="m002_week_summaries")
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


BACKOFF = Backoff(base_s=60, max_s=3600, max_attempts=3)


def test_a_week_read_with_the_pages_openings_holds_everything_else(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    feed = store.ensure_source("feed", "feed", url="https://f.example/rss")
    store.save_items(feed, [SavedItem("https://a.example/p", "Title", NOW, topic="Rust")], NOW)
    (saved,) = store.all_items()
    fetched = fetch_succeeded(saved, Extracted("The page's long text."), "hash", NOW, BACKOFF)
    store.apply_fetch(fetched)
    week = (NOW - timedelta(days=1), NOW + timedelta(days=1))

    (full,) = store.items_saved_between(*week)
    (light,) = store.items_saved_between(*week, text_chars=0)
    (opening,) = store.items_saved_between(*week, text_chars=8)

    assert full.text == "The page's long text." and light.text is None
    assert light == replace(full, text=None, linked_text=None)
    assert opening == replace(full, text="The page", linked_text=None)


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
                time.sleep(300)  # held until killed: a loaded machine may take its time
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
    begun = DeliveryBegun("2026-W47", "email", "abc", NOW)
    first = store.apply_delivery(begun)
    failed = store.apply_delivery(
        DeliveryEnded(first.id, DeliveryStatus.FAILED, NOW, error="451 try later")
    )

    retry = store.apply_delivery(begun)

    assert (failed.status, failed.error) == (DeliveryStatus.FAILED, "451 try later")
    # A crash now must leave a record that is never resent on its own.
    assert (retry.status, retry.error, retry.attempts) == (DeliveryStatus.PENDING, None, 2)


def test_a_uniqueness_conflict_is_a_store_error_naming_the_constraint(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    store.ensure_source("inbox", "file", path="/tmp/inbox")

    with pytest.raises(StoreConflict, match="sources.name"), store.write() as conn:
        conn.execute("INSERT INTO sources (name, kind, created_at) VALUES ('inbox', 'feed', 'now')")


# -- migrations from the schema before, with exact columns (after simonw/llm's test_migrate) --

ITEM_COLUMNS = {
    "id": "INTEGER",
    "key": "TEXT",
    "url": "TEXT",
    "kind": "TEXT",
    "title": "TEXT",
    "topic": "TEXT",
    "context": "TEXT",
    "links": "TEXT",
    "saved_at": "TEXT",
    "collected_at": "TEXT",
    "state": "TEXT",
    "attempts": "INTEGER",
    "error": "TEXT",
    "next_attempt_at": "TEXT",
    "text": "TEXT",
    "text_hash": "TEXT",
    "extracted_title": "TEXT",
    "author": "TEXT",
    "published": "TEXT",
    "language": "TEXT",
    "extractor": "TEXT",
    "final_url": "TEXT",
    "fetched_at": "TEXT",
    "note_id": "INTEGER",
    "read_at": "TEXT",
    "linked_text": "TEXT",
    "quality": "TEXT",
    "failures": "INTEGER",
    "note_key": "TEXT",
    "note_attempts": "INTEGER",
    "note_failures": "INTEGER",
    "note_error": "TEXT",
    "note_next_attempt_at": "TEXT",
    "error_kind": "TEXT",
    "error_status": "INTEGER",
}
T = NOW.isoformat()
ITEM_INDEXES = {"items_note_key", "items_saved_at", "items_state", "items_unread"}


def schema_before_autoincrement(path: Path) -> Database:
    db = Database(sqlite3.connect(path))
    db.conn.execute("PRAGMA foreign_keys = ON")
    migration_set().apply(db, stop_before="m013_items_autoincrement")
    return db


def test_items_migrated_to_autoincrement_keep_exact_columns_indexes_and_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "digest.db"
    db = schema_before_autoincrement(path)
    later = {"error_kind", "error_status"}  # m024, after the rebuild
    assert db["items"].columns_dict.keys() == ITEM_COLUMNS.keys() - later
    source = db.table("sources").insert({"name": "inbox", "kind": "file", "created_at": T}).last_pk
    for n in (1, 2):
        db.table("items").insert(
            {"key": f"k{n}", "kind": "link", "saved_at": T, "collected_at": T, "note_key": "n"}
        )
        db.table("item_sources").insert({"item_id": n, "source_id": source, "saved_at": T})
    db.conn.commit()
    db.conn.close()

    with open_store(path) as store:
        items = store.db["items"]
        assert {c.name: c.type for c in items.columns} == ITEM_COLUMNS
        assert isinstance(items, Table)
        assert {index.name for index in items.indexes} >= ITEM_INDEXES
        assert "AUTOINCREMENT" in items.schema
        assert [(item.id, item.key, item.note_key) for item in store.all_items()] == [
            (1, "k1", "n"),
            (2, "k2", "n"),
        ]
        assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_the_rebuild_keeps_a_column_and_index_another_migration_added(tmp_path: Path) -> None:
    path = tmp_path / "digest.db"
    db = schema_before_autoincrement(path)
    db.execute("ALTER TABLE items ADD COLUMN added_elsewhere TEXT NOT NULL DEFAULT 'x'")
    db.execute("CREATE INDEX items_added_elsewhere ON items(added_elsewhere)")
    db.conn.commit()
    db.conn.close()

    with open_store(path) as store:
        items = store.db["items"]
        assert isinstance(items, Table)
        assert items.columns_dict["added_elsewhere"] is str
        assert "items_added_elsewhere" in {index.name for index in items.indexes}


def test_an_item_id_is_never_given_again_after_its_item_is_gone(tmp_path: Path) -> None:
    with open_store(tmp_path / "digest.db") as store:
        source = store.ensure_source("inbox", "file", path="/inbox", now=NOW)
        store.save_items(
            source, [SavedItem("https://a.example/1"), SavedItem("https://a.example/2")], NOW
        )
        with store.write() as conn:
            conn.execute("DELETE FROM item_sources WHERE item_id = 2")
            conn.execute("DELETE FROM items WHERE id = 2")
        store.save_items(source, [SavedItem("https://a.example/3")], NOW)

        assert [item.id for item in store.all_items()] == [1, 3]


def test_the_store_closes_when_its_block_ends(tmp_path: Path) -> None:
    with open_store(tmp_path / "digest.db") as store:
        assert store.count_items() == 0
    with pytest.raises(sqlite3.ProgrammingError):
        store.count_items()


def test_text_stored_before_the_cleaner_is_cleaned_by_its_migration(tmp_path: Path) -> None:
    path = tmp_path / "digest.db"
    db = Database(sqlite3.connect(path))
    migration_set().apply(db, stop_before="m019_text_for_readers")
    db.conn.execute(
        "INSERT INTO items (key, url, kind, title, context, saved_at, collected_at)"
        " VALUES ('https://a.example/', 'https://a.example/', 'link', 'Invoice \u202eexe.pdf',"
        " 'see http://bob:pw@h.test/x', '2026-11-18T00:00:00+00:00', '2026-11-18T00:00:00+00:00')"
    )
    db.conn.execute(
        "INSERT INTO notes (cache_key, model, prompt_version, summary, key_points, tags, basis,"
        " created_at) VALUES ('k', 'm', 'p', 'bell\x07 here', ?, '[]', 'full text', 'now')",
        (json.dumps(["zero\u200bwidth", "fine"]),),
    )
    db.conn.commit()
    db.conn.close()

    with open_store(path) as store:
        [item] = store.all_items()
        (summary, points) = store.conn.execute("SELECT summary, key_points FROM notes").fetchone()
    assert (item.title, item.context) == ("Invoice exe.pdf", "see http://***@h.test/x")
    assert (summary, json.loads(points)) == ("bell here", ["zerowidth", "fine"])


def test_a_failed_source_counts_its_failures_until_it_is_read(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    source_id = store.ensure_source("inbox", "file", path="/tmp/inbox")
    later = NOW + timedelta(hours=1)
    store.apply_source(SourceFailed(source_id, "no such folder", NOW, later))
    store.apply_source(SourceFailed(source_id, "no such folder", NOW))
    failing = (store.source_failures(source_id), store.source_next_attempt(source_id))
    [listed] = store.list_sources()
    store.apply_source(SourceChecked(source_id, later))
    [checked] = store.list_sources()
    assert failing == (2, None)
    assert (listed.status, listed.last_error) == ("failing", "no such folder")
    assert (checked.status, checked.last_error, checked.failures) == ("ok", None, 0)
