"""The only package that speaks SQL: opens, migrates and wraps the SQLite database.

`Store` is one object over one connection; its methods live in parts by subject
(sources, items and notes, links, runs and deliveries), all on `StoreBase`'s transactions.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from digest.errors import StoreError
from digest.migrations import migrations
from digest.store.base import (
    DeliveryRecord,
    DigestRecord,
    SaveReport,
    from_iso,
    iso,
    store_error,
)
from digest.store.items import item_key
from digest.store.links import LinksStore
from digest.store.runs import RunsStore
from digest.store.sources import SourcesStore

__all__ = [
    "DeliveryRecord",
    "DigestRecord",
    "SaveReport",
    "Store",
    "from_iso",
    "item_key",
    "iso",
    "open_store",
]


class Store(SourcesStore, RunsStore, LinksStore):
    pass


def ensure_folder(folder: Path) -> None:
    """Create `folder` (the data folder) if need be; StoreError in one line if it cannot be."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the data folder {folder}: {exc.strerror or exc};"
            " set [digest] data_dir to a folder you can write"
        ) from exc


def open_store(path: Path, *, busy_timeout_s: float = 10.0) -> Store:
    """Open (creating if need be) and migrate the database at `path`."""
    ensure_folder(path.parent)
    try:
        conn = sqlite3.connect(path, timeout=busy_timeout_s)
    except sqlite3.OperationalError as exc:
        raise store_error(exc, path) from exc
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        store = Store(conn)
        migrations.apply(store.db)
    except sqlite3.OperationalError as exc:
        conn.close()
        raise store_error(exc, path) from exc
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"database {path} is unusable: {exc}") from exc
    return store
