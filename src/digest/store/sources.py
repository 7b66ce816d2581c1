"""Sources: what the config and OPML lists add, feeds' poll state, each source's health."""

from __future__ import annotations

from datetime import datetime

from digest.clock import utc_now
from digest.lifecycle import (
    FeedPolled,
    SourceChecked,
    SourceFailed,
    SourceIntent,
    SourcePaused,
    SourceRemoved,
    SourceRenamed,
)
from digest.models import FeedState, SourceStatus
from digest.store.base import SaveReport, from_iso, iso
from digest.store.item_saves import take_own_text
from digest.store.items import ItemsStore
from digest.store.records import ImportedFeed, ManagedSource, SourceListing
from digest.urls import for_display


class SourcesStore(ItemsStore):
    """Sources need items: a feed's entries are saved with its poll state."""

    def ensure_source(
        self,
        name: str,
        kind: str,
        *,
        url: str | None = None,
        path: str | None = None,
        now: datetime | None = None,
    ) -> int:
        """The id of the named source, created or updated to the config's location."""
        with self.write() as conn:
            row = conn.execute(
                "SELECT id, url, path FROM sources WHERE name = ?", (name,)
            ).fetchone()
            if row is not None:  # declared again after `digest sources remove`
                conn.execute(
                    "UPDATE sources SET removed_at = NULL WHERE id = ? AND removed_at IS NOT NULL",
                    (row["id"],),
                )
            if row is None:
                cursor = conn.execute(
                    "INSERT INTO sources (name, kind, url, path, created_at) VALUES (?, ?, ?, ?, ?)",
                    (name, kind, url, path, iso(now or utc_now())),
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
            elif kind != "feed" and (row["path"], row["url"]) != (path, url):
                conn.execute(
                    "UPDATE sources SET path = ?, url = ? WHERE id = ?", (path, url, row["id"])
                )
            return int(row["id"])

    def add_imported_feed(
        self,
        name: str,
        url: str,
        *,
        topic: str | None,
        origin: str,
        now: datetime,
        html_url: str | None = None,
    ) -> int:
        """A feed source kept only in the database (from an OPML list, say); its id. A
        removed source of that name comes back as this one (its items kept)."""
        with self.write() as conn:
            conn.execute(
                "INSERT INTO sources (name, kind, url, topic, origin, html_url, created_at)"
                " VALUES (?, 'feed', ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET"
                " kind = 'feed', url = excluded.url, topic = excluded.topic,"
                " origin = excluded.origin, html_url = excluded.html_url, removed_at = NULL,"
                " paused = 0, fetch_url = NULL, etag = NULL, last_modified = NULL,"
                " status = 'ok', last_error = NULL, failures = 0, next_attempt_at = NULL"
                " WHERE sources.removed_at IS NOT NULL",
                (name, url, topic, origin, html_url, iso(now)),
            )
            row = conn.execute("SELECT id FROM sources WHERE name = ?", (name,)).fetchone()
            return int(row["id"])

    def imported_feeds(self) -> list[ImportedFeed]:
        """Feed sources the config does not declare (removed ones left out)."""
        rows = self._query(
            "SELECT id, name, url, topic, origin, paused, html_url FROM sources"
            " WHERE kind = 'feed' AND origin != 'config' AND removed_at IS NULL ORDER BY id"
        )
        return [ImportedFeed(**row) for row in map(dict, rows)]

    def site_links(self) -> dict[str, str]:
        """Each feed source's web page, by name, where its feed or OPML list named one."""
        rows = self._query("SELECT name, html_url FROM sources WHERE html_url IS NOT NULL")
        return {row["name"]: row["html_url"] for row in rows}

    def managed_source(self, name: str) -> ManagedSource | None:
        """The named source as `digest sources` commands change it; None if there is none
        (or it was removed)."""
        rows = self._query(
            "SELECT id, name, kind, origin, paused FROM sources"
            " WHERE name = ? AND removed_at IS NULL",
            (name,),
        )
        return ManagedSource(**dict(rows[0])) if rows else None

    def source_name_taken(self, name: str) -> bool:
        """Whether any source, removed ones too, has this name (their items keep it)."""
        return bool(self._query("SELECT 1 FROM sources WHERE name = ?", (name,)))

    def feed_state(self, source_id: int) -> FeedState:
        row = self._query(
            "SELECT id, coalesce(fetch_url, url) AS url, etag, last_modified, status,"
            " skipped_entries FROM sources WHERE id = ?",
            (source_id,),
        )[0]
        return FeedState(
            source_id=row["id"],
            url=row["url"],
            etag=row["etag"],
            last_modified=row["last_modified"],
            gone=row["status"] == SourceStatus.GONE,
            skipped=row["skipped_entries"],
        )

    def apply_feed_poll(self, intent: FeedPolled) -> SaveReport:
        """The feed's entries and its new cache validators, committed together."""
        with self.write() as conn:
            report = self.save_items(intent.source_id, intent.entries, intent.at)
            for key, text in intent.texts:
                take_own_text(conn, key, text, "podcast-transcript", intent.text_state, intent.at)
            conn.execute(
                "UPDATE sources SET fetch_url = ?, etag = ?, last_modified = ?, status = ?,"
                " last_error = ?, failures = 0, next_attempt_at = NULL, last_checked_at = ?,"
                " skipped_entries = coalesce(?, skipped_entries),"
                " html_url = coalesce(?, html_url) WHERE id = ?",
                (
                    intent.url,
                    intent.etag,
                    intent.last_modified,
                    intent.status,
                    intent.error and for_display(intent.error),
                    iso(intent.at),
                    intent.skipped,
                    intent.site,
                    intent.source_id,
                ),
            )
        return report

    def apply_source(self, intent: SourceIntent) -> None:
        """A source's health after a read, or the reader's edit of it. A removed source's
        row stays, so that its items keep their source."""
        with self.write() as conn:
            match intent:
                case SourceChecked(source_id, at):
                    conn.execute(
                        "UPDATE sources SET status = ?, last_error = NULL, failures = 0,"
                        " next_attempt_at = NULL, last_checked_at = ? WHERE id = ?",
                        (SourceStatus.OK, iso(at), source_id),
                    )
                case SourceFailed(source_id, error, at, when):
                    conn.execute(
                        "UPDATE sources SET status = ?, last_error = ?, failures = failures + 1,"
                        " next_attempt_at = ?, last_checked_at = ? WHERE id = ?",
                        (
                            SourceStatus.FAILING,
                            for_display(error),
                            iso(when) if when else None,
                            iso(at),
                            source_id,
                        ),
                    )
                case SourcePaused(source_id, paused):
                    conn.execute(
                        "UPDATE sources SET paused = ? WHERE id = ?", (int(paused), source_id)
                    )
                case SourceRenamed(source_id, name):
                    conn.execute("UPDATE sources SET name = ? WHERE id = ?", (name, source_id))
                case SourceRemoved(source_id, at):
                    conn.execute(
                        "UPDATE sources SET removed_at = ? WHERE id = ?", (iso(at), source_id)
                    )

    def source_failures(self, source_id: int) -> int:
        return int(self._query("SELECT failures FROM sources WHERE id = ?", (source_id,))[0][0])

    def source_next_attempt(self, source_id: int) -> datetime | None:
        rows = self._query("SELECT next_attempt_at FROM sources WHERE id = ?", (source_id,))
        return from_iso(rows[0][0]) if rows else None

    def holds_saves(self) -> bool:
        """Whether any source is in the store (a feed imported, a config's source collected
        once, `digest add`'s) or any item: not a fresh installation."""
        return bool(
            self._query(
                "SELECT EXISTS (SELECT 1 FROM sources WHERE removed_at IS NULL)"
                " OR EXISTS (SELECT 1 FROM items)"
            )[0][0]
        )

    def list_sources(self) -> list[SourceListing]:
        rows = self._query(
            "SELECT s.name, s.kind, s.origin, coalesce(s.url, s.path) AS location,"
            # a feed imported from OPML has its row before its first poll
            " CASE WHEN s.paused THEN 'paused'"
            " WHEN s.kind = 'feed' AND s.last_checked_at IS NULL THEN 'not collected yet'"
            " ELSE s.status END AS status, s.last_error,"
            " s.failures, s.last_checked_at, (SELECT count(*) FROM item_sources i"
            " WHERE i.source_id = s.id) AS items FROM sources s WHERE s.removed_at IS NULL"
            " ORDER BY s.name"
        )
        return [SourceListing(**row) for row in map(dict, rows)]
