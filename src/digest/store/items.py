"""Items: saved once by key (item_saves.py), fetched, read back (item_rows.py), noted (their
notes: notes.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import astuple
from datetime import datetime
from typing import Any

from digest import lifecycle
from digest.lifecycle import FetchFailed, FetchSucceeded, ItemRead
from digest.models import Item, ItemKind, SavedItem, TextFeatures
from digest.store.base import BATCH, SaveReport, StoreBase, from_iso, iso
from digest.store.item_rows import item_columns, item_from_row
from digest.store.item_saves import MAX_TITLE_CHARS, capped, clean, ref_keys, save_rows
from digest.urls import for_display


class ItemsStore(StoreBase):
    def save_items(self, source_id: int, items: Iterable[SavedItem], now: datetime) -> SaveReport:
        """Insert or merge items by key (item_saves.save_rows)."""
        with self.write() as conn:
            return save_rows(conn, source_id, items, now)

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
                    clean(extracted.text),
                    intent.text_hash,
                    capped(extracted.title, MAX_TITLE_CHARS),
                    capped(extracted.author, MAX_TITLE_CHARS),
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

    def items_without_features(self, limit: int, *, text_chars: int) -> list[Item]:
        """Up to `limit` items with a page but no features stored (fetched before the
        features were kept with the page): the starred and the read first (they rank every
        week), then the most recently saved."""
        return self._items(
            "LEFT JOIN item_features f ON f.item_id = i.id"
            " WHERE f.item_id IS NULL AND coalesce(i.text, '') != ''"
            " ORDER BY EXISTS (SELECT 1 FROM item_stars t WHERE t.item_id = i.id) DESC,"
            " i.read_at IS NOT NULL DESC, i.saved_at DESC, i.id LIMIT ?",
            (limit,),
            text_chars=text_chars,
        )

    def save_features(self, features: dict[int, TextFeatures]) -> None:
        with self.write() as conn:
            _save_features(conn, features)

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
            f"SELECT {item_columns(text_chars)}, n.summary, n.key_points, n.tags, n.basis, n.model, n.prompt_version,"
            " (SELECT group_concat(s.name, char(31)) FROM item_sources x"
            "  JOIN sources s ON s.id = x.source_id WHERE x.item_id = i.id) AS source_names,"
            " (SELECT group_concat(newsletter, char(31)) FROM item_newsletters"
            "  WHERE item_id = i.id) AS newsletters"
            f" FROM items i LEFT JOIN notes n ON n.id = i.note_id {where}",
            params,
        )
        return [item_from_row(row) for row in rows]


_FEATURES = "text_hash, tokens, vector, terms, counts, phrases"


def _save_features(conn: sqlite3.Connection, features: dict[int, TextFeatures]) -> None:
    conn.executemany(
        f"INSERT OR REPLACE INTO item_features (item_id, {_FEATURES}) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(item_id, *astuple(f)) for item_id, f in features.items()],
    )


def _iso(moment: datetime | None) -> str | None:
    return iso(moment) if moment else None
