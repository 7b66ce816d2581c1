"""The schema a freshly migrated database has, as SQL. schema.sql beside this file is its
snapshot, read by people and checked by tests/test_schema.py; after a new migration:

    .venv/bin/python -m digest.store.schema      (rewrites schema.sql from a fresh database)
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from digest.store import open_store

SNAPSHOT = Path(__file__).with_name("schema.sql")
HEADER = (
    "-- The schema of a freshly migrated database: `python -m digest.store.schema` writes it.\n\n"
)
_ORDER = "CASE type WHEN 'table' THEN 0 WHEN 'view' THEN 1 WHEN 'index' THEN 2 ELSE 3 END"


def schema_sql(conn: sqlite3.Connection) -> str:
    """Every table, view, index and trigger the migrations made, in a fixed order; not
    SQLite's own, nor the shadow tables the full-text index's virtual table makes itself."""
    shadow = {row[1] for row in conn.execute("PRAGMA table_list") if row[2] == "shadow"}
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"
        f" AND name NOT LIKE 'sqlite_%' ORDER BY {_ORDER}, name"
    )
    return HEADER + "".join(f"{sql};\n\n" for name, sql in rows if name not in shadow)


def fresh_schema() -> str:
    with tempfile.TemporaryDirectory() as folder, open_store(Path(folder) / "digest.db") as store:
        return schema_sql(store.db.conn)


if __name__ == "__main__":
    SNAPSHOT.write_text(fresh_schema(), encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
