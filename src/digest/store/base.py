"""The connection, its transactions and error translation; the row types shared by the parts."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from digest.errors import DiskError, StoreConflict, StoreError, StoreLocked
from digest.models import DeliveryStatus

if TYPE_CHECKING:
    from sqlite_utils import Database

BATCH = 500
# a post (over `items i`) whose links no run has followed yet: the fetch stage follows them
POSTS_TO_FOLLOW = "i.links != '[]' AND i.fetched_at IS NULL"


def iso(moment: datetime) -> str:
    """Times are stored as UTC ISO-8601 text, so that they sort as text."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def from_iso(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


@dataclass(frozen=True)
class SaveReport:
    new: int = 0
    duplicates: int = 0
    redated: int = 0  # dates that could not be right, replaced by the time first seen


@dataclass(frozen=True)
class DeliveryRecord:
    id: int
    period: str
    channel: str
    content_hash: str
    status: DeliveryStatus
    attempts: int
    error: str | None


@dataclass(frozen=True)
class DigestRecord:
    """One recorded revision of a period's digest."""

    period: str
    revision: int
    content_hash: str
    path: str
    created_at: datetime


class StoreBase:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.conn.row_factory = sqlite3.Row

    @cached_property
    def db(self) -> Database:
        """sqlite-utils over the connection, for the migrations (it imports numpy: made on use)."""
        from sqlite_utils import Database

        return Database(self.conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken with BEGIN IMMEDIATE so a busy writer waits.

        A deferred transaction that reads and then writes fails at once with
        "database is locked" whatever the busy timeout; an immediate one waits.
        """
        if self.conn.in_transaction:  # nested: join the outer transaction
            yield self.conn
            return
        with _translated_errors():
            self.conn.execute("BEGIN IMMEDIATE")
        try:
            with _translated_errors():
                yield self.conn
        except BaseException:
            self.conn.rollback()
            raise
        with _translated_errors():
            self.conn.execute("COMMIT")

    def integrity_problems(self) -> list[str]:
        """What SQLite's integrity_check finds; empty when the database is sound."""
        rows = self._query("PRAGMA integrity_check")
        return [] if [row[0] for row in rows] == ["ok"] else [str(row[0]) for row in rows]

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with _translated_errors():
            return self.conn.execute(sql, params).fetchall()


@contextmanager
def _translated_errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.OperationalError as exc:
        raise store_error(exc, None) from exc
    except sqlite3.IntegrityError as exc:
        raise StoreConflict(f"database conflict: {exc}") from exc


def store_error(exc: sqlite3.OperationalError, path: Path | None) -> StoreError:
    """The error for the user, told by SQLite's result code (its primary part: the low byte
    of an extended code such as SQLITE_BUSY_SNAPSHOT), not by the words of its message."""
    where = f" {path}" if path else ""
    code = getattr(exc, "sqlite_errorcode", -1) & 0xFF
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreLocked(f"database{where} is locked by another process; try again later")
    if code == sqlite3.SQLITE_FULL or (code == sqlite3.SQLITE_IOERR and _no_space_left(path)):
        return DiskError(f"database{where} error: {exc}; the disk is full: free some space")
    if code == sqlite3.SQLITE_READONLY:
        return DiskError(f"database{where} error: {exc}; make it writable and run again")
    return StoreError(f"database{where} error: {exc}")


def _no_space_left(path: Path | None) -> bool:
    """Whether the disk of `path` is full (SQLite reports a failed WAL write as an I/O error)."""
    try:
        return path is not None and shutil.disk_usage(path.parent).free == 0
    except OSError:
        return False
