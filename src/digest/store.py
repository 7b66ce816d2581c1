"""The only module that speaks SQL: opens, migrates and wraps the SQLite database."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from digest.errors import StoreError, StoreLocked
from digest.migrations import migrations
from digest.models import (
    Extracted,
    FeedState,
    Item,
    ItemKind,
    ItemState,
    Note,
    NoteBasis,
    SavedItem,
)
from digest.urls import normalize_url

BATCH = 500


def iso(moment: datetime) -> str:
    """Times are stored as UTC ISO-8601 text, so that they sort as text."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def from_iso(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


@dataclass(frozen=True)
class SaveReport:
    new: int = 0
    duplicates: int = 0


@dataclass(frozen=True)
class DeliveryRecord:
    id: int
    period: str
    channel: str
    content_hash: str
    status: str  # pending | sent | unknown | failed
    attempts: int
    error: str | None


class Store:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.conn.row_factory = sqlite3.Row
        self.db = Database(conn)

    def close(self) -> None:
        self.conn.close()

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
            yield self.conn
        except BaseException:
            self.conn.rollback()
            raise
        with _translated_errors():
            self.conn.execute("COMMIT")

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with _translated_errors():
            return self.conn.execute(sql, params).fetchall()

    # -- sources ---------------------------------------------------------

    def ensure_source(
        self, name: str, kind: str, *, url: str | None = None, path: str | None = None
    ) -> int:
        """The id of the named source, created or updated to the config's location."""
        with self.write() as conn:
            row = conn.execute(
                "SELECT id, url, path FROM sources WHERE name = ?", (name,)
            ).fetchone()
            if row is None:
                cursor = conn.execute(
                    "INSERT INTO sources (name, kind, url, path, created_at) VALUES (?, ?, ?, ?, ?)",
                    (name, kind, url, path, iso(datetime.now(UTC))),
                )
                return int(cursor.lastrowid or 0)
            if kind == "feed" and row["url"] != url:
                # the config now names another feed: forget the old one's poll state
                conn.execute(
                    "UPDATE sources SET url = ?, fetch_url = NULL, etag = NULL, last_modified = NULL,"
                    " status = 'ok', last_error = NULL, failures = 0, next_attempt_at = NULL"
                    " WHERE id = ?",
                    (url, row["id"]),
                )
            elif kind == "file" and row["path"] != path:
                conn.execute("UPDATE sources SET path = ? WHERE id = ?", (path, row["id"]))
            return int(row["id"])

    def feed_state(self, source_id: int) -> FeedState:
        row = self._query(
            "SELECT id, coalesce(fetch_url, url) AS url, etag, last_modified, status FROM sources"
            " WHERE id = ?",
            (source_id,),
        )[0]
        return FeedState(
            source_id=row["id"],
            url=row["url"],
            etag=row["etag"],
            last_modified=row["last_modified"],
            gone=row["status"] == "gone",
        )

    def save_feed_poll(
        self,
        source_id: int,
        entries: Iterable[SavedItem],
        *,
        url: str,
        etag: str | None,
        last_modified: str | None,
        now: datetime,
        gone: bool = False,
    ) -> SaveReport:
        """A feed's entries and its new cache validators, committed together."""
        with self.write() as conn:
            report = self.save_items(source_id, entries, now)
            conn.execute(
                "UPDATE sources SET fetch_url = ?, etag = ?, last_modified = ?, status = ?,"
                " last_error = NULL, failures = 0, next_attempt_at = NULL, last_checked_at = ?"
                " WHERE id = ?",
                (url, etag, last_modified, "gone" if gone else "ok", iso(now), source_id),
            )
        return report

    def record_source_success(self, source_id: int, now: datetime) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE sources SET status = 'ok', last_error = NULL, failures = 0,"
                " next_attempt_at = NULL, last_checked_at = ? WHERE id = ?",
                (iso(now), source_id),
            )

    def record_source_failure(
        self, source_id: int, error: str, now: datetime, next_attempt_at: datetime | None
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE sources SET status = 'failing', last_error = ?, failures = failures + 1,"
                " next_attempt_at = ?, last_checked_at = ? WHERE id = ?",
                (error, iso(next_attempt_at) if next_attempt_at else None, iso(now), source_id),
            )

    def source_failures(self, source_id: int) -> int:
        return int(self._query("SELECT failures FROM sources WHERE id = ?", (source_id,))[0][0])

    def source_next_attempt(self, source_id: int) -> datetime | None:
        rows = self._query("SELECT next_attempt_at FROM sources WHERE id = ?", (source_id,))
        return from_iso(rows[0][0]) if rows else None

    def list_sources(self) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT s.name, s.kind, coalesce(s.url, s.path) AS location, s.status, s.last_error,"
            " s.failures, s.last_checked_at, (SELECT count(*) FROM item_sources i"
            " WHERE i.source_id = s.id) AS items FROM sources s ORDER BY s.name"
        )
        return [dict(row) for row in rows]

    # -- items -----------------------------------------------------------

    def save_items(self, source_id: int, items: Iterable[SavedItem], now: datetime) -> SaveReport:
        """Insert or merge items by key, in batches; a duplicate keeps its earliest save time."""
        new = duplicates = 0
        with self.write() as conn:
            batch: list[tuple[str, SavedItem]] = []
            for item in items:
                batch.append((item_key(item), item))
                if len(batch) >= BATCH:
                    n, d = self._save_batch(conn, source_id, batch, now)
                    new, duplicates, batch = new + n, duplicates + d, []
            if batch:
                n, d = self._save_batch(conn, source_id, batch, now)
                new, duplicates = new + n, duplicates + d
        return SaveReport(new=new, duplicates=duplicates)

    def _save_batch(
        self,
        conn: sqlite3.Connection,
        source_id: int,
        batch: list[tuple[str, SavedItem]],
        now: datetime,
    ) -> tuple[int, int]:
        keys = list(dict.fromkeys(key for key, _ in batch))
        marks = ",".join("?" * len(keys))
        existing = {
            row[0] for row in conn.execute(f"SELECT key FROM items WHERE key IN ({marks})", keys)
        }
        collected = iso(now)
        rows = [
            (
                key,
                item.url,
                item.kind.value,
                item.title,
                item.topic,
                item.context,
                json.dumps(list(item.links)),
                iso(item.saved_at) if item.saved_at else collected,
                collected,
            )
            for key, item in batch
        ]
        conn.executemany(
            "INSERT INTO items (key, url, kind, title, topic, context, links, saved_at, collected_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(key) DO UPDATE SET"
            " title = CASE WHEN excluded.saved_at < saved_at THEN coalesce(excluded.title, title)"
            "   ELSE coalesce(title, excluded.title) END,"
            " topic = CASE WHEN excluded.saved_at < saved_at THEN coalesce(excluded.topic, topic)"
            "   ELSE coalesce(topic, excluded.topic) END,"
            " saved_at = min(saved_at, excluded.saved_at),"
            " context = CASE WHEN context IS NULL THEN excluded.context"
            "   WHEN excluded.context IS NULL OR instr(context, excluded.context) > 0 THEN context"
            "   ELSE context || char(10) || excluded.context END",
            rows,
        )
        conn.executemany(
            "INSERT INTO item_sources (item_id, source_id, saved_at)"
            " SELECT id, ?, ? FROM items WHERE key = ?"
            " ON CONFLICT(item_id, source_id) DO UPDATE SET saved_at = min(saved_at, excluded.saved_at)",
            [(source_id, row[7], row[0]) for row in rows],
        )
        new = len(set(keys) - existing)
        return new, len(batch) - new

    def fetch_candidates(self) -> list[Item]:
        """Link items not fetched yet or whose last fetch failed; policy decides which are due."""
        return self._items(
            "WHERE i.state IN ('new', 'failed') AND i.url IS NOT NULL AND i.kind = 'link'"
        )

    def record_fetched(
        self, item_id: int, extracted: Extracted, text_hash: str, now: datetime
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE items SET state = 'fetched', error = NULL, next_attempt_at = NULL,"
                " attempts = attempts + 1, text = ?, text_hash = ?, extracted_title = ?, author = ?,"
                " published = ?, language = ?, extractor = ?, final_url = ?, fetched_at = ?"
                " WHERE id = ?",
                (
                    extracted.text,
                    text_hash,
                    extracted.title,
                    extracted.author,
                    extracted.published,
                    extracted.language,
                    extracted.extractor,
                    extracted.final_url,
                    iso(now),
                    item_id,
                ),
            )

    def record_fetch_failure(
        self, item_id: int, error: str, next_attempt_at: datetime | None
    ) -> None:
        """Keep the item, count the attempt; no next attempt means fetching it is given up."""
        with self.write() as conn:
            conn.execute(
                "UPDATE items SET state = 'failed', error = ?, attempts = attempts + 1,"
                " next_attempt_at = ? WHERE id = ?",
                (error, iso(next_attempt_at) if next_attempt_at else None, item_id),
            )

    def note_candidates(self) -> list[Item]:
        """Items without a note, items whose text arrived after their stand-in note, and
        notes and posts whose note was only a stand-in."""
        return self._items(
            "WHERE i.note_id IS NULL OR i.state = 'fetched' OR (i.kind != 'link' AND i.state = 'new')"
        )

    def items_saved_between(self, start: datetime, end: datetime) -> list[Item]:
        return self._items(
            "WHERE i.saved_at >= ? AND i.saved_at < ? ORDER BY i.saved_at, i.id",
            (iso(start), iso(end)),
        )

    def all_items(self) -> list[Item]:
        return self._items("ORDER BY i.saved_at, i.id")

    def count_items(self) -> int:
        return int(self._query("SELECT count(*) FROM items")[0][0])

    def _items(self, where: str, params: Sequence[Any] = ()) -> list[Item]:
        rows = self._query(
            "SELECT i.*, n.summary, n.key_points, n.tags, n.basis, n.model, n.prompt_version,"
            " (SELECT group_concat(s.name, char(31)) FROM item_sources x"
            "  JOIN sources s ON s.id = x.source_id WHERE x.item_id = i.id) AS source_names"
            f" FROM items i LEFT JOIN notes n ON n.id = i.note_id {where}",
            params,
        )
        return [_item_from_row(row) for row in rows]

    # -- notes -----------------------------------------------------------

    def cached_note(self, cache_key: str) -> Note | None:
        rows = self._query("SELECT * FROM notes WHERE cache_key = ?", (cache_key,))
        return _note_from_row(rows[0]) if rows else None

    def attach_note(
        self, item_id: int, cache_key: str, note: Note, now: datetime, *, final: bool = True
    ) -> None:
        """Store the note under its cache key and make it the item's note.

        A note that is not `final` (a stand-in after an LLM failure) leaves the item due
        for another note on the next run.
        """
        with self.write() as conn:
            conn.execute(
                "INSERT INTO notes (cache_key, model, prompt_version, summary, key_points, tags,"
                " basis, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(cache_key) DO NOTHING",
                (
                    cache_key,
                    note.model,
                    note.prompt_version,
                    note.summary,
                    json.dumps(list(note.key_points)),
                    json.dumps(list(note.tags)),
                    note.basis.value,
                    iso(now),
                ),
            )
            conn.execute(
                "UPDATE items SET note_id = (SELECT id FROM notes WHERE cache_key = ?),"
                " state = CASE WHEN ? AND (state = 'fetched' OR kind != 'link') THEN 'noted'"
                " ELSE state END WHERE id = ?",
                (cache_key, final, item_id),
            )

    def cached_week_summary(self, cache_key: str) -> str | None:
        rows = self._query("SELECT text FROM week_summaries WHERE cache_key = ?", (cache_key,))
        return str(rows[0][0]) if rows else None

    def save_week_summary(self, cache_key: str, period: str, text: str, now: datetime) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO week_summaries (cache_key, period, text, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(cache_key) DO NOTHING",
                (cache_key, period, text, iso(now)),
            )

    def known_tags(self) -> list[str]:
        tags: dict[str, int] = {}
        for (raw,) in self._query("SELECT tags FROM notes"):
            for tag in json.loads(raw):
                tags[tag] = tags.get(tag, 0) + 1
        return sorted(tags, key=lambda tag: (-tags[tag], tag))

    # -- runs and LLM calls ----------------------------------------------

    def start_run(self, command: str, now: datetime) -> int:
        with self.write() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (command, started_at) VALUES (?, ?)", (command, iso(now))
            )
            return int(cursor.lastrowid or 0)

    def finish_run(self, run_id: int, status: str, stats: dict[str, Any], now: datetime) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE runs SET finished_at = ?, status = ?, stats = ? WHERE id = ?",
                (iso(now), status, json.dumps(stats), run_id),
            )

    def record_llm_call(
        self,
        *,
        run_id: int | None,
        model: str,
        purpose: str,
        tokens_in: int,
        tokens_out: int,
        cost_usd: float,
        duration_s: float,
        ok: bool,
        now: datetime,
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO llm_calls (run_id, model, purpose, tokens_in, tokens_out, cost_usd,"
                " duration_s, ok, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    model,
                    purpose,
                    tokens_in,
                    tokens_out,
                    cost_usd,
                    duration_s,
                    int(ok),
                    iso(now),
                ),
            )

    def llm_usage(self, run_id: int | None = None) -> dict[str, Any]:
        where, params = ("WHERE run_id = ?", (run_id,)) if run_id is not None else ("", ())
        row = self._query(
            "SELECT count(*) AS calls, coalesce(sum(tokens_in), 0) AS tokens_in,"
            " coalesce(sum(tokens_out), 0) AS tokens_out, coalesce(sum(cost_usd), 0) AS cost_usd"
            f" FROM llm_calls {where}",
            params,
        )[0]
        return dict(row)

    def recent_runs(self, limit: int = 5) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT id, command, started_at, finished_at, status, stats FROM runs"
            " ORDER BY id DESC LIMIT ?",
            (limit,),
        )
        return [dict(row) | {"stats": json.loads(row["stats"])} for row in rows]

    # -- digests and deliveries -------------------------------------------

    def record_digest(self, period: str, content_hash: str, path: str, now: datetime) -> int | None:
        """A new revision number for new content, or None when this content was recorded before."""
        with self.write() as conn:
            if conn.execute(
                "SELECT 1 FROM digests WHERE period = ? AND content_hash = ?",
                (period, content_hash),
            ).fetchone():
                return None
            revision = conn.execute(
                "SELECT coalesce(max(revision), 0) + 1 FROM digests WHERE period = ?", (period,)
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO digests (period, revision, content_hash, path, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (period, revision, content_hash, path, iso(now)),
            )
            return int(revision)

    def digest_revision(self, period: str, content_hash: str) -> int | None:
        """The revision number recorded for this content of the period, if any."""
        rows = self._query(
            "SELECT revision FROM digests WHERE period = ? AND content_hash = ?",
            (period, content_hash),
        )
        return int(rows[0][0]) if rows else None

    def delivery(self, period: str, channel: str, content_hash: str) -> DeliveryRecord | None:
        rows = self._query(
            "SELECT * FROM deliveries WHERE period = ? AND channel = ? AND content_hash = ?",
            (period, channel, content_hash),
        )
        return _delivery_from_row(rows[0]) if rows else None

    def begin_delivery(
        self, period: str, channel: str, content_hash: str, now: datetime
    ) -> DeliveryRecord:
        """Record the delivery as pending before any attempt; committed before we connect."""
        with self.write() as conn:
            conn.execute(
                "INSERT INTO deliveries (period, channel, content_hash, status, created_at, updated_at)"
                " VALUES (?, ?, ?, 'pending', ?, ?) ON CONFLICT DO NOTHING",
                (period, channel, content_hash, iso(now), iso(now)),
            )
            conn.execute(
                "UPDATE deliveries SET attempts = attempts + 1, updated_at = ?"
                " WHERE period = ? AND channel = ? AND content_hash = ?",
                (iso(now), period, channel, content_hash),
            )
        record = self.delivery(period, channel, content_hash)
        assert record is not None
        return record

    def finish_delivery(
        self,
        delivery_id: int,
        status: str,
        now: datetime,
        *,
        error: str | None = None,
        message_id: str | None = None,
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE deliveries SET status = ?, error = ?, message_id = coalesce(?, message_id),"
                " updated_at = ? WHERE id = ?",
                (status, error, message_id, iso(now), delivery_id),
            )

    def deliveries(self, statuses: Sequence[str] = ()) -> list[DeliveryRecord]:
        where = f"WHERE status IN ({','.join('?' * len(statuses))})" if statuses else ""
        rows = self._query(f"SELECT * FROM deliveries {where} ORDER BY id", list(statuses))
        return [_delivery_from_row(row) for row in rows]

    # -- file sources ----------------------------------------------------

    def file_state(self, path: str) -> dict[str, Any] | None:
        rows = self._query("SELECT * FROM file_states WHERE path = ?", (path,))
        return dict(rows[0]) if rows else None

    def save_file_state(
        self,
        path: str,
        *,
        size: int,
        mtime_ns: int,
        fingerprint: str,
        lines_read: int,
        now: datetime,
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO file_states (path, size, mtime_ns, fingerprint, lines_read, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET size = excluded.size,"
                " mtime_ns = excluded.mtime_ns, fingerprint = excluded.fingerprint,"
                " lines_read = excluded.lines_read, updated_at = excluded.updated_at",
                (path, size, mtime_ns, fingerprint, lines_read, iso(now)),
            )

    # -- status ----------------------------------------------------------

    def item_counts_by_state(self) -> dict[str, int]:
        rows = self._query("SELECT state, count(*) FROM items GROUP BY state ORDER BY state")
        return {row[0]: row[1] for row in rows}

    def failed_items(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT id, url, error, attempts, next_attempt_at FROM items WHERE state = 'failed'"
            " ORDER BY id LIMIT ?",
            (limit,),
        )
        return [dict(row) for row in rows]


def open_store(path: Path, *, busy_timeout_s: float = 10.0) -> Store:
    """Open (creating if need be) and migrate the database at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, timeout=busy_timeout_s, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        store = Store(conn)
        migrations.apply(store.db)
    except sqlite3.OperationalError as exc:
        raise _store_error(exc, path) from exc
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"database {path} is unusable: {exc}") from exc
    return store


def item_key(item: SavedItem) -> str:
    """The normalised URL, or for an item without one a hash of its text."""
    if item.url:
        return normalize_url(item.url)
    text = " ".join((item.context or item.title or "").split())
    return "note:" + hashlib.sha256(text.encode()).hexdigest()[:32]


@contextmanager
def _translated_errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.OperationalError as exc:
        raise _store_error(exc, None) from exc


def _store_error(exc: sqlite3.OperationalError, path: Path | None) -> StoreError:
    where = f" {path}" if path else ""
    if "locked" in str(exc) or "busy" in str(exc):
        return StoreLocked(f"database{where} is locked by another process; try again later")
    return StoreError(f"database{where} error: {exc}")


def _item_from_row(row: sqlite3.Row) -> Item:
    note = _note_from_row(row) if row["summary"] is not None else None
    return Item(
        id=row["id"],
        key=row["key"],
        url=row["url"],
        title=row["title"],
        kind=ItemKind(row["kind"]),
        saved_at=datetime.fromisoformat(row["saved_at"]),
        topic=row["topic"],
        context=row["context"],
        state=ItemState(row["state"]),
        attempts=row["attempts"],
        error=row["error"],
        next_attempt_at=from_iso(row["next_attempt_at"]),
        text=row["text"],
        sources=tuple(row["source_names"].split("\x1f")) if row["source_names"] else (),
        note=note,
        extracted_title=row["extracted_title"],
    )


def _note_from_row(row: sqlite3.Row) -> Note:
    return Note(
        summary=row["summary"],
        key_points=tuple(json.loads(row["key_points"])),
        tags=tuple(json.loads(row["tags"])),
        basis=NoteBasis(row["basis"]),
        model=row["model"],
        prompt_version=row["prompt_version"],
    )


def _delivery_from_row(row: sqlite3.Row) -> DeliveryRecord:
    return DeliveryRecord(
        id=row["id"],
        period=row["period"],
        channel=row["channel"],
        content_hash=row["content_hash"],
        status=row["status"],
        attempts=row["attempts"],
        error=row["error"],
    )
