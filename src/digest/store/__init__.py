"""The only package that speaks SQL: opens, migrates and wraps the SQLite database.

`Store` is one object over one connection; its methods live in parts by subject (sources,
items, notes, note attempts, file readings, links, search, runs, deliveries, the status
counts), all on `StoreBase`'s transactions. schema.sql is the schema they migrate to.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from digest.atomic import create_private
from digest.errors import StoreError, StoreTooNew
from digest.store.attempts import AttemptsStore
from digest.store.base import (
    DeliveryRecord,
    DigestRecord,
    SaveReport,
    from_iso,
    iso,
    store_error,
)
from digest.store.counts import CountsStore
from digest.store.deliveries import DeliveriesStore
from digest.store.highlights import HighlightsStore
from digest.store.item_saves import item_key, url_key
from digest.store.links import LinksStore
from digest.store.mail import MailStore
from digest.store.migrations import known_steps, migration_set, pending_steps, unknown_steps
from digest.store.notes import NotesStore
from digest.store.readings import ReadingsStore
from digest.store.runs import RunsStore
from digest.store.search import SearchFilter, SearchHit, SearchStore
from digest.store.sources import SourcesStore

__all__ = [
    "DeliveryRecord",
    "DigestRecord",
    "SaveReport",
    "SearchFilter",
    "SearchHit",
    "Store",
    "from_iso",
    "item_key",
    "iso",
    "open_store",
    "url_key",
]


class Store(
    SourcesStore,
    NotesStore,
    AttemptsStore,
    ReadingsStore,
    LinksStore,
    MailStore,
    HighlightsStore,
    SearchStore,
    RunsStore,
    DeliveriesStore,
    CountsStore,
):
    """The whole store: one class per subject."""


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
    create_private(path)  # it holds feed credentials: SQLite would make it 0644
    try:
        conn = sqlite3.connect(path, timeout=busy_timeout_s)
    except sqlite3.OperationalError as exc:
        raise store_error(exc, path) from exc
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        store = Store(conn)
        _refuse_newer(store, path)
        if pending_steps(conn):
            migration_set().apply(store.db)
    except sqlite3.OperationalError as exc:
        conn.close()
        raise store_error(exc, path) from exc
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"database {path} is unusable: {exc}") from exc
    except StoreTooNew:
        conn.close()
        raise
    return store


def open_store_read_only(path: Path, *, busy_timeout_s: float = 5.0) -> Store:
    """Open the database only to read it: never created, migrated or written."""
    if not path.is_file():
        raise StoreError(f"database {path} does not exist")
    # mode=ro still creates -wal and -shm files beside a WAL database that has none; with
    # no -wal there is nothing uncommitted to read, and immutable needs neither file.
    wal = path.with_name(path.name + "-wal")
    flag = "mode=ro" if wal.exists() else "immutable=1"
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?{flag}", uri=True, timeout=busy_timeout_s
        )
    except sqlite3.OperationalError as exc:
        raise store_error(exc, path) from exc
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"database {path} is unusable: {exc}") from exc
    return Store(conn)


def schema_differences(store: Store) -> tuple[list[str], list[str]]:
    """The migrations this version would apply, and applied ones it does not know (the
    database was used by a newer version)."""
    try:
        pending = pending_steps(store.conn)
        unknown = unknown_steps(store.conn)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"database is unusable: {exc}") from exc
    return pending, unknown


def _refuse_newer(store: Store, path: Path) -> None:
    """StoreTooNew, before anything is written, when a newer digest has migrated `path`."""
    unknown = unknown_steps(store.conn)
    if unknown:
        raise StoreTooNew(
            f"database {path} is at schema {unknown[-1]}, newer than this digest's"
            f" {known_steps()[-1]}: upgrade digest (it was not changed)"
        )
