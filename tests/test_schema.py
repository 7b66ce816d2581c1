"""The schema snapshot (src/digest/store/schema.sql) is what the migrations make, to the column."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from digest.store import open_store
from digest.store.migrations import known_steps
from digest.store.schema import SNAPSHOT, fresh_schema

REGENERATE = "run `.venv/bin/python -m digest.store.schema` and commit src/digest/store/schema.sql"


def shape(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Each table's and view's columns (name, type, not null, default, key, hidden), and
    each index's and trigger's name, by name; the full-text index's shadow tables left out."""
    listed = conn.execute("PRAGMA table_list").fetchall()
    names = [n for schema, n, kind, *_ in listed if schema == "main" and kind != "shadow"]
    tables = {
        name: [tuple(row)[1:] for row in conn.execute(f"PRAGMA table_xinfo('{name}')")]
        for name in names
        if not name.startswith("sqlite_")
    }
    others = conn.execute(
        "SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('index', 'trigger')"
    )
    return tables | {name: [(kind, table)] for kind, name, table in others}


def test_a_fresh_database_has_exactly_the_tables_and_columns_of_the_snapshot(
    tmp_path: Path,
) -> None:
    snapshot = sqlite3.connect(":memory:")
    snapshot.executescript(SNAPSHOT.read_text(encoding="utf-8"))
    with open_store(tmp_path / "digest.db") as store:
        fresh = shape(store.db.conn)
    assert fresh == shape(snapshot), f"the migrations and schema.sql differ: {REGENERATE}"
    items = {column[0] for column in fresh["items"]}
    assert {"error", "error_kind", "error_status"} <= items  # a failure stays typed
    assert "status" in {column[0] for column in fresh["deliveries"]}


def test_the_schema_snapshot_is_current() -> None:
    assert fresh_schema() == SNAPSHOT.read_text(encoding="utf-8"), REGENERATE


def test_migrations_are_applied_in_the_order_of_their_names() -> None:
    # Steps merged from parallel branches go where their names put them (name them with the
    # issue's number): an older database then meets them in the order a fresh one does.
    steps = known_steps()
    assert steps == sorted(steps)
    assert len(set(steps)) == len(steps)
