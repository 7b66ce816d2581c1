"""Saving a file's items in batches: every new item inserted in the order read, each
line recorded against the item it was saved as, whatever number of parameters the
SQLite library takes in one statement (999 before SQLite 3.32)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.collect.files import import_files
from stores import store_at

NOW = datetime(2026, 5, 20, tzinfo=UTC)


@pytest.mark.parametrize("parameters", [999, 32766])
def test_a_big_file_saves_every_item_in_order_with_its_line(
    tmp_path: Path, parameters: int
) -> None:
    lines = ["## 2026-05-18"] + [
        f"- [Post {n}](https://a{n % 7}.example/p/{n})" for n in range(1200)
    ]
    lines += ["- [Post 5 again](https://a5.example/p/5)"]  # a duplicate: its last line counts
    path = tmp_path / "journal.md"
    path.write_text("\n".join(lines) + "\n")
    store = store_at(tmp_path / "digest.db")
    store.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, parameters)
    [report] = import_files(store, [path], zone=ZoneInfo("UTC"), now=NOW)
    rows = store.conn.execute("SELECT id, url FROM items ORDER BY id").fetchall()
    assert [url for _, url in rows] == [f"https://a{n % 7}.example/p/{n}" for n in range(1200)]
    assert getattr(report, "new", None) == 1200
    recorded = store.conn.execute(
        "SELECT item_id, line FROM file_items WHERE path = ?", (str(path),)
    ).fetchall()
    lines_of = {item_id: line for item_id, line in recorded}
    assert len(recorded) == len(lines_of) == 1200  # one line an item
    by_url = {url: lines_of[item_id] for item_id, url in rows}
    assert by_url["https://a1.example/p/1"] == 3
    assert by_url["https://a5.example/p/5"] == 1202
    (sources,) = store.conn.execute("SELECT count(DISTINCT item_id) FROM item_sources").fetchone()
    assert sources == 1200
    store.close()
