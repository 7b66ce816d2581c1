"""File readings: what each file of a file source was when last read (its state), the format
it was read in, and the items each of its lines gave.

A file's items are recorded by the line they start on, under the reading's format. When a
line's note or post comes back with other text (the last line arrived, a post grew), the
item recorded at that line is updated in place (new key and text, its note due again)
instead of a second item appearing. When a file is read in another format, the items only
the earlier reading gave are removed once the new reading is saved.

A reading cut short because the file changed while it was read (a big file, saved a
block at a time) is voided: its lines are recorded under no format (VOID) and the file's
state forgotten, so that the next collect reads it whole, as a reading in another format,
and removes what only the voided reading gave.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from digest.lifecycle import FileIntent, FileSeen, FilesGone, ReadingEnded, ReadingVoided
from digest.models import FileReading, SavedItem
from digest.store.base import BATCH, SaveReport, iso
from digest.store.item_saves import (
    MAX_CONTEXT_CHARS,
    MAX_TITLE_CHARS,
    SavedAs,
    capped,
    item_key,
    save_rows,
)
from digest.store.items import ItemsStore
from digest.store.records import FileState


class ReadingsStore(ItemsStore):
    def file_state(self, path: str) -> FileState | None:
        rows = self._query(
            "SELECT path, size, mtime_ns, inode, device, checked_ns, fingerprint, lines_read,"
            " updated_at, held FROM file_states WHERE path = ?",
            (path,),
        )
        return FileState(**dict(rows[0])) if rows else None

    def file_reading(self, path: str) -> FileReading | None:
        rows = self._query(
            "SELECT format, clear, reason FROM file_readings WHERE path = ?", (path,)
        )
        return FileReading(rows[0][0], bool(rows[0][1]), rows[0][2]) if rows else None

    def save_file_items(
        self,
        path: str,
        reading: FileReading,
        source_id: int,
        items: Sequence[SavedItem],
        now: datetime,
    ) -> SaveReport:
        """Save the items a reading of `path` gave (see the module docstring); the items it
        updated in place count as duplicates."""
        saved_as = SavedAs()
        with self.write() as conn:
            _update_grown(conn, path, reading.format, items)
            saved = save_rows(conn, source_id, items, now, saved_as)
            _record_lines(conn, path, reading.format, items, saved_as)
        return saved

    def apply_file(self, intent: FileIntent) -> int:
        """What the collect stage saw of a file (see the module docstring); how many items
        it removed (only a reading that ended removes any)."""
        with self.write() as conn:
            match intent:
                case FileSeen():
                    _save_state(conn, intent)
                case ReadingEnded():
                    return _end_reading(conn, intent)
                case ReadingVoided(path):
                    conn.execute("UPDATE file_items SET format = ? WHERE path = ?", (VOID, path))
                    conn.execute("DELETE FROM file_states WHERE path = ?", (path,))
                case FilesGone(paths):
                    for table in ("file_items", "file_readings", "file_states"):
                        conn.executemany(
                            f"DELETE FROM {table} WHERE path = ?", [(p,) for p in paths]
                        )
        return 0

    def file_paths(self, under: str) -> list[str]:
        """The files at or below `under` the store remembers (their states, readings)."""
        bounds = (under, under + "/", under + "0")  # "0" sorts right after "/"
        rows = self._query(
            "SELECT path FROM file_states WHERE path = ? OR (path > ? AND path < ?)"
            " UNION SELECT path FROM file_readings WHERE path = ? OR (path > ? AND path < ?)",
            (*bounds, *bounds),
        )
        return sorted(row[0] for row in rows)


VOID = ""  # the format of a voided reading's lines: no reading has it

# What refers to an item, the item's own row last.
_ITEM_ROWS = (
    ("item_sources", "item_id"),
    ("item_aliases", "item_id"),
    ("item_stars", "item_id"),
    ("items", "id"),
)


def _save_state(conn: sqlite3.Connection, seen: FileSeen) -> None:
    conn.execute(
        "INSERT INTO file_states (path, size, mtime_ns, inode, device, checked_ns,"
        " fingerprint, lines_read, updated_at, held) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(path) DO UPDATE SET size = excluded.size,"
        " mtime_ns = excluded.mtime_ns, inode = excluded.inode, device = excluded.device,"
        " checked_ns = excluded.checked_ns, fingerprint = excluded.fingerprint,"
        " lines_read = excluded.lines_read, updated_at = excluded.updated_at,"
        " held = excluded.held",
        (
            seen.path,
            seen.size,
            seen.mtime_ns,
            seen.inode,
            seen.device,
            seen.checked_ns,
            seen.fingerprint,
            seen.lines_read,
            iso(seen.at),
            seen.held,
        ),
    )


def _end_reading(conn: sqlite3.Connection, ended: ReadingEnded) -> int:
    path, reading = ended.path, ended.reading
    stale = [
        row[0]
        for row in conn.execute(
            "SELECT DISTINCT item_id FROM file_items WHERE path = ? AND format != ?",
            (path, reading.format),
        )
    ]
    conn.execute("DELETE FROM file_items WHERE path = ? AND format != ?", (path, reading.format))
    removed = [item_id for item_id in stale if _only_here(conn, item_id, ended.source_id)]
    for table, column in _ITEM_ROWS:
        conn.executemany(f"DELETE FROM {table} WHERE {column} = ?", [(i,) for i in removed])
    conn.execute(
        "INSERT INTO file_readings (path, format, clear, reason, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET format = excluded.format,"
        " clear = excluded.clear, reason = excluded.reason,"
        " updated_at = excluded.updated_at",
        (path, reading.format, int(reading.clear), reading.reason, iso(ended.at)),
    )
    return len(removed)


def _only_here(conn: sqlite3.Connection, item_id: int, source_id: int) -> bool:
    """No other file's reading and no other source holds the item."""
    (others,) = conn.execute(
        "SELECT (SELECT count(*) FROM file_items WHERE item_id = ?)"
        " + (SELECT count(*) FROM item_sources WHERE item_id = ? AND source_id != ?)",
        (item_id, item_id, source_id),
    ).fetchone()
    return bool(others == 0)


def _update_grown(
    conn: sqlite3.Connection, path: str, format_name: str, items: Sequence[SavedItem]
) -> None:
    """Give the item recorded at a line the new text of the note or post starting there."""
    textual = {item.line: item for item in items if item.url is None and item.line is not None}
    if not textual:
        return
    lines = list(textual)
    recorded = [
        row
        for start in range(0, len(lines), BATCH)
        for row in conn.execute(
            "SELECT f.line, i.id, i.key, i.kind FROM file_items f JOIN items i ON i.id = f.item_id"
            f" WHERE f.path = ? AND f.format = ? AND i.url IS NULL"
            f" AND f.line IN ({', '.join('?' * len(lines[start : start + BATCH]))})",
            (path, format_name, *lines[start : start + BATCH]),
        )
    ]
    for line, item_id, key, kind in recorded:
        item = textual.get(line)
        if item is None or item.kind.value != kind or (new_key := item_key(item)) == key:
            continue
        if conn.execute("SELECT 1 FROM items WHERE key = ?", (new_key,)).fetchone():
            continue  # the new text is another item's already: saving merges into that one
        conn.execute(
            "UPDATE items SET key = ?, title = ?, context = ?, links = ?, note_id = NULL"
            " WHERE id = ?",
            (
                new_key,
                capped(item.title, MAX_TITLE_CHARS),
                capped(item.context, MAX_CONTEXT_CHARS),
                json.dumps(list(item.links)),
                item_id,
            ),
        )


def _record_lines(
    conn: sqlite3.Connection,
    path: str,
    format_name: str,
    items: Sequence[SavedItem],
    saved_as: SavedAs,
) -> None:
    """Each item's line (a key saved on several lines: its last), by the item it was saved as."""
    conn.executemany(
        "INSERT INTO file_items (path, line, item_id, format) VALUES (?, ?, ?, ?)"
        " ON CONFLICT DO UPDATE SET format = excluded.format",
        (
            (path, items[n].line or 0, saved_as.ids[n], format_name)
            for n in saved_as.by_key().values()
        ),
    )
