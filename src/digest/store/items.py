"""Items: saved once by key, fetched, noted (their notes: notes.py)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import astuple, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from digest import lifecycle
from digest.errors import FailureKind
from digest.lifecycle import FetchFailed, FetchSucceeded, ItemRead
from digest.models import (
    Item,
    ItemKind,
    ItemState,
    Note,
    NoteBasis,
    SavedItem,
    TextFeatures,
)
from digest.store.base import BATCH, SaveReport, StoreBase, from_iso, iso
from digest.store.index import indexed_at_the_end
from digest.text import for_reader
from digest.urls import for_display, normalize_url, same_page_key, without_userinfo

MAX_TITLE_CHARS = 300  # a title, topic or author longer than this is cut at storage
MAX_CONTEXT_CHARS = 4000  # what the user wrote with a link (a feed's summary): cut beyond
EARLIEST_DATE = datetime(1995, 1, 1, tzinfo=UTC)  # no saved link is older than the web's feeds
FUTURE_SLACK = timedelta(days=1)  # clocks and time zones; beyond that a date is wrong


class ItemsStore(StoreBase):
    def save_items(self, source_id: int, items: Iterable[SavedItem], now: datetime) -> SaveReport:
        """Insert or merge items by key, in batches; a duplicate keeps its earliest save time.

        New items are told from duplicates by id: inside the write transaction every row
        inserted gets an id above the largest one before, so no per-key lookup is needed.
        """
        collected = iso(now)
        saved = redated = 0
        with self.write() as conn:
            (before,) = conn.execute("SELECT coalesce(max(id), 0) FROM items").fetchone()
            with indexed_at_the_end(conn, _next_id(conn)):
                batch: list[tuple[str | None, ...]] = []
                for item in items:
                    if item.saved_at is not None and not plausible_date(item.saved_at, now):
                        item, redated = replace(item, saved_at=None), redated + 1
                    batch.append(_item_row(_without_credentials(item), collected))
                    if len(batch) >= BATCH:
                        saved += _save_batch(conn, source_id, batch)
                        batch = []
                saved += _save_batch(conn, source_id, batch)
            (new,) = conn.execute("SELECT count(*) FROM items WHERE id > ?", (before,)).fetchone()
        return SaveReport(new=new, duplicates=saved - new, redated=redated)

    def known_keys(self, keys: Sequence[str]) -> set[str]:
        """Which of `keys` are items already (or aliases of one)."""
        known: set[str] = set()
        for start in range(0, len(keys), BATCH):
            batch = keys[start : start + BATCH]
            marks = ", ".join("?" * len(batch))
            rows = self._query(
                f"SELECT key FROM items WHERE key IN ({marks})"
                f" UNION SELECT key FROM item_aliases WHERE key IN ({marks})",
                [*batch, *batch],
            )
            known.update(row[0] for row in rows)
        return known

    def fetch_candidates(self) -> list[Item]:
        """Link items in a state the lifecycle fetches from, or with a next attempt set; the
        lifecycle decides which are due (lifecycle.due_for_fetch)."""
        states = ", ".join("?" * len(lifecycle.FETCH_STATES))
        return self._items(
            f"WHERE (i.state IN ({states}) OR i.next_attempt_at IS NOT NULL)"
            " AND i.url IS NOT NULL AND i.kind = ?",
            (*lifecycle.FETCH_STATES, ItemKind.LINK),
        )

    def apply_fetches(self, intents: Sequence[FetchSucceeded | FetchFailed]) -> None:
        """What several fetches changed, in one transaction (a commit per page costs more
        than the page's own writes)."""
        with self.write():
            for intent in intents:
                self.apply_fetch(intent)

    def apply_fetch(self, intent: FetchSucceeded | FetchFailed) -> None:
        """What a fetch changed, as the lifecycle decided it."""
        with self.write() as conn:
            if isinstance(intent, FetchFailed):
                conn.execute(
                    "UPDATE items SET state = ?, error = ?, error_kind = ?, error_status = ?,"
                    " attempts = attempts + 1, failures = failures + 1, next_attempt_at = ?"
                    " WHERE id = ?",
                    (
                        intent.state.value,
                        for_display(intent.error),
                        intent.kind.value,
                        intent.status,
                        _iso(intent.next_attempt_at),
                        intent.item_id,
                    ),
                )
                return
            extracted = intent.extracted
            conn.execute(
                "UPDATE items SET state = ?, error = NULL, error_kind = NULL, error_status = NULL,"
                " next_attempt_at = ?,"
                " attempts = attempts + 1, failures = 0, text = ?, text_hash = ?, extracted_title = ?, author = ?,"
                " published = ?, language = ?, extractor = ?, final_url = ?, fetched_at = ?,"
                " quality = ? WHERE id = ?",
                (
                    intent.state.value,
                    _iso(intent.next_attempt_at),
                    _clean(extracted.text),
                    intent.text_hash,
                    _capped(extracted.title, MAX_TITLE_CHARS),
                    _capped(extracted.author, MAX_TITLE_CHARS),
                    extracted.published,
                    extracted.language,
                    extracted.extractor,
                    extracted.final_url,
                    iso(intent.at),
                    extracted.quality,
                    intent.item_id,
                ),
            )
            if extracted.features is not None:
                _save_features(conn, {intent.item_id: extracted.features})

    def features_of(self, item_ids: Sequence[int]) -> dict[int, TextFeatures]:
        """The stored features of these items (compose checks they are for the text it has)."""
        rows = self._query(
            f"SELECT item_id, {_FEATURES} FROM item_features"
            " WHERE item_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(item_ids)),),
        )
        return {row[0]: TextFeatures(*row[1:]) for row in rows}

    def note_candidates(self) -> list[Item]:
        """Items without a note or in a state the lifecycle notes from; the lifecycle decides
        which are due (lifecycle.due_for_note)."""
        states = ", ".join("?" * len(lifecycle.NOTE_STATES))
        return self._items(
            f"WHERE i.note_id IS NULL OR i.state IN ({states})", lifecycle.NOTE_STATES
        )

    def items_saved_between(
        self, start: datetime, end: datetime, *, text_chars: int | None = None
    ) -> list[Item]:
        """The items saved in [start, end), oldest first. With `text_chars`, only the opening
        of each page's `text` is read (that many characters; 0: none, None) and `linked_text`
        is left unread: composing a week needs no more (tens of kilobytes an item)."""
        return self._items(
            "WHERE i.saved_at >= ? AND i.saved_at < ? ORDER BY i.saved_at, i.id",
            (iso(start), iso(end)),
            text_chars=text_chars,
        )

    def last_item_id(self) -> int:
        """The id of the newest item (0 for none): items made later have greater ids."""
        ((last,),) = self._query("SELECT coalesce(max(id), 0) FROM items")
        return int(last)

    def saved_before(self, moment: datetime, *, after_id: int) -> tuple[int, datetime | None]:
        """How many items newer than `after_id` were saved before `moment`, and the earliest
        of their save times."""
        ((count, earliest),) = self._query(
            "SELECT count(*), min(saved_at) FROM items WHERE saved_at < ? AND id > ?",
            (iso(moment), after_id),
        )
        return count, from_iso(earliest) if earliest else None

    def all_items(self) -> list[Item]:
        return self._items("ORDER BY i.saved_at, i.id")

    def last_saved_before(self, moment: datetime, limit: int) -> list[Item]:
        """The `limit` items saved last before `moment`, newest first (without their text)."""
        return self._items(
            "WHERE i.saved_at < ? ORDER BY i.saved_at DESC, i.id LIMIT ?",
            (iso(moment), limit),
            text_chars=0,
        )

    def unread_saved_before(self, moment: datetime, limit: int) -> list[Item]:
        """The oldest items saved before `moment` and not marked read, oldest first."""
        return self._items(
            "WHERE i.saved_at < ? AND i.read_at IS NULL ORDER BY i.saved_at, i.id LIMIT ?",
            (iso(moment), limit),
        )

    def apply_read(self, intent: ItemRead) -> Item | None:
        """The item read (the first time counts); None if there is none with that id or URL
        (ValueError for what is no URL at all)."""
        item = self.item_by_ref(intent.ref)
        if item is None:
            return None
        with self.write() as conn:
            conn.execute(
                "UPDATE items SET read_at = coalesce(read_at, ?) WHERE id = ?",
                (iso(intent.at), item.id),
            )
        return self._items("WHERE i.id = ?", (item.id,))[0]

    def apply_unread(self, item_id: int) -> bool:
        """The read mark taken back; False when there is no item with that id."""
        with self.write() as conn:
            cursor = conn.execute("UPDATE items SET read_at = NULL WHERE id = ?", (item_id,))
        return cursor.rowcount > 0

    def item_by_ref(self, ref: int | str) -> Item | None:
        """The item with this id, or saved from this URL in any of its forms (with or
        without www., a trailing slash, the scheme). ValueError for what is no URL."""
        if isinstance(ref, int):
            found = self._items("WHERE i.id = ?", (ref,))
        else:
            keys = ref_keys(ref)
            marks = ", ".join("?" * len(keys))
            found = self._items(f"WHERE i.key IN ({marks}) ORDER BY i.id", keys)
        return found[0] if found else None

    def count_items(self) -> int:
        return int(self._query("SELECT count(*) FROM items")[0][0])

    def _items(
        self, where: str, params: Sequence[Any] = (), *, text_chars: int | None = None
    ) -> list[Item]:
        rows = self._query(
            f"SELECT {_item_columns(text_chars)}, n.summary, n.key_points, n.tags, n.basis, n.model, n.prompt_version,"
            " (SELECT group_concat(s.name, char(31)) FROM item_sources x"
            "  JOIN sources s ON s.id = x.source_id WHERE x.item_id = i.id) AS source_names,"
            " (SELECT group_concat(newsletter, char(31)) FROM item_newsletters"
            "  WHERE item_id = i.id) AS newsletters"
            f" FROM items i LEFT JOIN notes n ON n.id = i.note_id {where}",
            params,
        )
        return [_item_from_row(row) for row in rows]


_FEATURES = "text_hash, tokens, vector, terms, counts, phrases"


def _save_features(conn: sqlite3.Connection, features: dict[int, TextFeatures]) -> None:
    conn.executemany(
        f"INSERT OR REPLACE INTO item_features (item_id, {_FEATURES}) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(item_id, *astuple(f)) for item_id, f in features.items()],
    )


def take_own_text(
    conn: sqlite3.Connection,
    key: str,
    text: str,
    extractor: str,
    state: ItemState,
    at: datetime,
) -> None:
    """An item that came with its text (a letter, an episode's transcript) takes it as a
    fetched page's, unless it has one already; it is never fetched."""
    conn.execute(
        "UPDATE items SET state = ?, text = ?, text_hash = ?, extractor = ?,"
        " fetched_at = ? WHERE key = ? AND text IS NULL",
        (
            state.value,
            for_reader(text),
            hashlib.sha256(text.encode()).hexdigest(),
            extractor,
            iso(at),
            key,
        ),
    )


def _next_id(conn: sqlite3.Connection) -> int:
    """The id the next item inserted will get (AUTOINCREMENT: never one given before)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'items'").fetchone()
    return (int(row[0]) if row else 0) + 1


def plausible_date(moment: datetime, now: datetime) -> bool:
    """A save date can be right: not before EARLIEST_DATE, not over a day ahead of `now`."""
    return EARLIEST_DATE <= moment <= now + FUTURE_SLACK


def _capped(text: str | None, limit: int) -> str | None:
    """`text` as stored for a reader (text.for_reader), cut to `limit` characters."""
    text = _clean(text)
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"


def _clean(text: str | None) -> str | None:
    return None if text is None else for_reader(text)


_INSERT_ITEM = (
    "INSERT INTO items (key, url, kind, title, topic, context, links, saved_at, collected_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# Merging a row into itself changes nothing, so a batch with any known key is merged whole.
_UPSERT_ITEM = (
    f"{_INSERT_ITEM} ON CONFLICT(key) DO UPDATE SET"
    " url = CASE WHEN url LIKE 'http:%' AND excluded.url LIKE 'https:%' THEN excluded.url"
    "   ELSE url END,"  # one page saved as http and https: the https form kept
    " title = CASE WHEN excluded.saved_at < saved_at THEN coalesce(excluded.title, title)"
    "   ELSE coalesce(title, excluded.title) END,"
    " topic = CASE WHEN excluded.saved_at < saved_at THEN coalesce(excluded.topic, topic)"
    "   ELSE coalesce(topic, excluded.topic) END,"
    " saved_at = min(saved_at, excluded.saved_at),"
    " context = CASE WHEN context IS NULL THEN excluded.context"
    "   WHEN excluded.context IS NULL OR instr(context, excluded.context) > 0 THEN context"
    f"   ELSE substr(context || char(10) || excluded.context, 1, {MAX_CONTEXT_CHARS}) END"
)
_LINK_SOURCE = (
    "INSERT INTO item_sources (item_id, source_id, saved_at)"
    " SELECT id, ?, ? FROM items WHERE key = ?"
    " ON CONFLICT(item_id, source_id) DO UPDATE SET saved_at = min(saved_at, excluded.saved_at)"
)
_stamp = lru_cache(maxsize=4096)(iso)  # a journal's items share their day's midnight


def _without_credentials(item: SavedItem) -> SavedItem:
    """A saved link keeps no user name or password (`***@` in their place): the fetcher
    never sends them, and no output could show them."""
    urls = [item.url or "", item.key or "", *item.links]
    if not any("@" in url for url in urls):
        return item
    return replace(
        item,
        url=item.url and without_userinfo(item.url, mark=True),
        key=item.key and without_userinfo(item.key, mark=True),
        links=tuple(without_userinfo(link, mark=True) for link in item.links),
    )


def _iso(moment: datetime | None) -> str | None:
    return iso(moment) if moment else None


def _item_row(item: SavedItem, collected: str) -> tuple[str | None, ...]:
    return (
        item_key(item),
        item.url,
        item.kind.value,
        _capped(item.title, MAX_TITLE_CHARS),
        _capped(item.topic, MAX_TITLE_CHARS),
        _capped(item.context, MAX_CONTEXT_CHARS),
        json.dumps(list(item.links)) if item.links else "[]",
        _stamp(item.saved_at) if item.saved_at else collected,
        collected,
    )


def _save_batch(
    conn: sqlite3.Connection, source_id: int, rows: list[tuple[str | None, ...]]
) -> int:
    rows = _follow_aliases(conn, rows)
    # the cheap common case; rowcount, unlike total_changes, leaves out what triggers change
    inserted = conn.executemany(f"{_INSERT_ITEM} ON CONFLICT(key) DO NOTHING", rows).rowcount
    if inserted < len(rows):
        renewed = _notes_renewed(conn, rows)
        conn.executemany(_UPSERT_ITEM, rows)
        conn.executemany("UPDATE items SET note_id = NULL WHERE id = ?", renewed)
    conn.executemany(_LINK_SOURCE, [(source_id, row[7], row[0]) for row in rows])
    return len(rows)


def _notes_renewed(
    conn: sqlite3.Connection, rows: list[tuple[str | None, ...]]
) -> list[tuple[int]]:
    """The ids of stored items whose note new saved context in `rows` makes due again."""
    with_context = {row[0]: row[5] for row in rows if row[5] is not None}
    if not with_context:
        return []
    stored = conn.execute(
        "SELECT id, key, kind, quality, text IS NOT NULL, context FROM items"
        f" WHERE key IN ({', '.join('?' * len(with_context))})",
        list(with_context),
    ).fetchall()
    return [
        (item_id,)
        for item_id, key, kind, quality, has_text, context in stored
        if lifecycle.context_renews_note(
            ItemKind(kind), quality, bool(has_text), context, with_context[key]
        )
    ]


def _follow_aliases(
    conn: sqlite3.Connection, rows: list[tuple[str | None, ...]]
) -> list[tuple[str | None, ...]]:
    """Rows whose key is a settled shortened link's old key, given its item's key."""
    keys = [row[0] for row in rows]
    aliases = dict(
        conn.execute(
            "SELECT a.key, i.key FROM item_aliases a JOIN items i ON i.id = a.item_id"
            f" WHERE a.key IN ({', '.join('?' * len(keys))})",
            keys,
        ).fetchall()
    )
    if not aliases:
        return rows
    return [(aliases.get(row[0], row[0]), *row[1:]) for row in rows]


def url_key(url: str) -> str:
    """The key of the item saved from `url` (ValueError when it is no absolute URL)."""
    return same_page_key(normalize_url(url))


def ref_keys(ref: str) -> list[str]:
    """The keys an item saved from `ref` may have: as written (https:// when it has no
    scheme), and with or without www. (ValueError when it is no URL)."""
    url = ref if "://" in ref else f"https://{ref}"
    key = url_key(url)
    scheme, _, rest = key.partition("://")
    other = rest.removeprefix("www.") if rest.startswith("www.") else f"www.{rest}"
    return [key, f"{scheme}://{other}"]


def item_key(item: SavedItem) -> str:
    """The normalised URL, or for an item without one a hash of its text."""
    if item.key:
        return item.key
    if item.url:
        return url_key(item.url)
    text = " ".join((item.context or item.title or "").split())
    return "note:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _item_columns(text_chars: int | None) -> str:
    """What _item_from_row reads: every column, or with only the first `text_chars` characters
    of the page's text (tens of kilobytes an item) and none of what its links led to."""
    if text_chars is None:
        return f"i.*, {_WORDS} AS words"
    text = f"substr(i.text, 1, {int(text_chars)})" if text_chars > 0 else "NULL"
    return (
        f"{_WORDS} AS words, "
        "i.id, i.key, i.url, i.title, i.kind, i.saved_at, i.topic, i.context, i.state,"
        f" i.attempts, i.failures, i.error, i.error_kind, i.error_status, i.next_attempt_at,"
        f" {text} AS text,"
        " i.extracted_title, i.links, NULL AS linked_text, i.quality, i.read_at, i.note_key,"
        " i.note_attempts, i.note_failures, i.note_error, i.note_next_attempt_at, i.language"
    )


# The words of the whole page, counted in SQLite (its text stays there): the spaces and
# line breaks between them (a blank line between paragraphs once), plus one.
_WORDS = (
    "CASE WHEN trim(i.text) = '' THEN NULL ELSE 1 + length(i.text)"
    " - length(replace(replace(i.text, ' ', ''), char(10), ''))"
    " - (length(i.text) - length(replace(i.text, char(10, 10), ''))) / 2 END"
)


def _item_from_row(row: sqlite3.Row) -> Item:
    note = note_from_row(row) if row["summary"] is not None else None
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
        failures=row["failures"],
        error=row["error"],
        error_kind=FailureKind(row["error_kind"]) if row["error_kind"] else None,
        error_status=row["error_status"],
        next_attempt_at=from_iso(row["next_attempt_at"]),
        text=row["text"],
        sources=tuple(row["source_names"].split("\x1f")) if row["source_names"] else (),
        note=note,
        extracted_title=row["extracted_title"],
        links=tuple(json.loads(row["links"])),
        linked_text=row["linked_text"],
        quality=row["quality"],
        read_at=from_iso(row["read_at"]),
        note_key=row["note_key"],
        note_attempts=row["note_attempts"],
        note_failures=row["note_failures"],
        note_error=row["note_error"],
        note_next_attempt_at=from_iso(row["note_next_attempt_at"]),
        language=row["language"],
        newsletters=tuple(row["newsletters"].split("\x1f")) if row["newsletters"] else (),
        words=row["words"],
    )


def note_from_row(row: sqlite3.Row) -> Note:
    return Note(
        summary=row["summary"],
        key_points=tuple(json.loads(row["key_points"])),
        tags=tuple(json.loads(row["tags"])),
        basis=NoteBasis(row["basis"]),
        model=row["model"],
        prompt_version=row["prompt_version"],
    )
