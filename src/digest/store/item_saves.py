"""Saving items: merged by key (a shortened link's old key followed to its item), a
duplicate keeping its earliest save, titles and context capped, no credentials kept; and
the keys an item is found by."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from digest import lifecycle
from digest.models import ItemKind, ItemState, SavedItem
from digest.store.base import BATCH, SaveReport, iso
from digest.store.index import indexed_at_the_end
from digest.text import for_reader
from digest.urls import normalize_url, same_page_key, without_userinfo

MAX_TITLE_CHARS = 300  # a title, topic or author longer than this is cut at storage
MAX_CONTEXT_CHARS = 4000  # what the user wrote with a link (a feed's summary): cut beyond
EARLIEST_DATE = datetime(1995, 1, 1, tzinfo=UTC)  # no saved link is older than the web's feeds
FUTURE_SLACK = timedelta(days=1)  # clocks and time zones; beyond that a date is wrong


@dataclass
class SavedAs:
    """Which item each of some saved items was saved as, in their order: its id, and, when it
    was saved by a shortened link's old key (an alias), that key, by its position."""

    ids: array[int] = field(default_factory=lambda: array("q"))
    aliases: dict[int, str] = field(default_factory=dict)

    def add(self, keys: list[str], saved_keys: list[str], ids: dict[str, int]) -> None:
        for key, saved_key in zip(keys, saved_keys, strict=True):
            if key != saved_key:
                self.aliases[len(self.ids)] = key
            self.ids.append(ids[saved_key])

    def by_key(self) -> dict[int | str, int]:
        """Each key's last position: a key is told by its item's id, or its alias."""
        return {self.aliases.get(n, item_id): n for n, item_id in enumerate(self.ids)}


def save_rows(
    conn: sqlite3.Connection,
    source_id: int,
    items: Iterable[SavedItem],
    now: datetime,
    saved_as: SavedAs | None = None,
) -> SaveReport:
    """Insert or merge items by key, in batches; a duplicate keeps its earliest save time.
    `saved_as`, when given, gets which item each was saved as.

    New items are told from duplicates by id: inside the write transaction every row
    inserted gets an id above the largest one before, so no per-key lookup is needed.
    """
    collected = iso(now)
    saved = redated = 0
    (before,) = conn.execute("SELECT coalesce(max(id), 0) FROM items").fetchone()
    with indexed_at_the_end(conn, _next_id(conn)):
        batch: list[tuple[str | None, ...]] = []
        for item in items:
            if item.saved_at is not None and not plausible_date(item.saved_at, now):
                item, redated = replace(item, saved_at=None), redated + 1
            batch.append(_item_row(_without_credentials(item), collected))
            if len(batch) >= BATCH:
                saved += _save_batch(conn, source_id, batch, saved_as)
                batch = []
        saved += _save_batch(conn, source_id, batch, saved_as)
    (new,) = conn.execute("SELECT count(*) FROM items WHERE id > ?", (before,)).fetchone()
    return SaveReport(new=new, duplicates=saved - new, redated=redated)


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


def capped(text: str | None, limit: int) -> str | None:
    """`text` as stored for a reader (text.for_reader), cut to `limit` characters."""
    text = clean(text)
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"


def clean(text: str | None) -> str | None:
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
    "INSERT INTO item_sources (item_id, source_id, saved_at) VALUES (?, ?, ?)"
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


def _item_row(item: SavedItem, collected: str) -> tuple[str | None, ...]:
    return (
        item_key(item),
        item.url,
        item.kind.value,
        capped(item.title, MAX_TITLE_CHARS),
        capped(item.topic, MAX_TITLE_CHARS),
        capped(item.context, MAX_CONTEXT_CHARS),
        json.dumps(list(item.links)) if item.links else "[]",
        _stamp(item.saved_at) if item.saved_at else collected,
        collected,
    )


def _save_batch(
    conn: sqlite3.Connection,
    source_id: int,
    rows: list[tuple[str | None, ...]],
    saved_as: SavedAs | None,
) -> int:
    if not rows:
        return 0
    keys = [str(row[0]) for row in rows]
    rows = _follow_aliases(conn, rows)
    # the cheap common case; rowcount, unlike total_changes, leaves out what triggers change
    inserted = _insert_new(conn, rows)
    if inserted < len(rows):
        renewed = _notes_renewed(conn, rows)
        conn.executemany(_UPSERT_ITEM, rows)
        conn.executemany("UPDATE items SET note_id = NULL WHERE id = ?", renewed)
    saved_keys = [str(row[0]) for row in rows]
    ids = _ids_of(conn, saved_keys)
    conn.executemany(
        _LINK_SOURCE,
        [(ids[key], source_id, row[7]) for key, row in zip(saved_keys, rows, strict=True)],
    )
    if saved_as is not None:
        saved_as.add(keys, saved_keys, ids)
    return len(rows)


def _insert_new(conn: sqlite3.Connection, rows: list[tuple[str | None, ...]]) -> int:
    """Insert the rows whose key is new, in order (their ids too), a statement for as many
    as SQLite takes parameters for; how many were. Items has triggers, so each statement on
    it keeps a journal of its own to undo it: one statement per row took 1.4 s more per
    100,000 rows (bench/import.py)."""
    per_statement = max(1, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // len(rows[0]))
    inserted = 0
    for start in range(0, len(rows), per_statement):
        part = rows[start : start + per_statement]
        values = ", ".join([f"({', '.join('?' * len(rows[0]))})"] * len(part))
        statement = f"{_INSERT_ITEM.partition(' VALUES')[0]} VALUES {values}"
        params = [value for row in part for value in row]
        inserted += conn.execute(f"{statement} ON CONFLICT(key) DO NOTHING", params).rowcount
    return inserted


def _ids_of(conn: sqlite3.Connection, keys: list[str]) -> dict[str, int]:
    """The ids of the items with these keys (one statement for a batch's keys)."""
    marks = ", ".join("?" * len(keys))
    return dict(conn.execute(f"SELECT key, id FROM items WHERE key IN ({marks})", keys).fetchall())


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
