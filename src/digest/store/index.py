"""Keeping the search index current while a batch of new items is saved (see m022a)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

_COLUMNS = "title, text, note, context, tags, host"


@contextmanager
def indexed_at_the_end(conn: sqlite3.Connection, first_new: int) -> Iterator[None]:
    """Inside one write transaction: items inserted from id `first_new` on are indexed when
    the block ends, in one statement, instead of one trigger run each."""
    conn.execute("INSERT INTO item_index_deferred (first_new) VALUES (?)", (first_new,))
    yield
    conn.execute("DELETE FROM item_index_deferred")
    conn.execute(
        f"INSERT INTO item_index (rowid, {_COLUMNS}) SELECT id, {_COLUMNS} FROM item_search"
        " WHERE id >= ?",
        (first_new,),
    )
