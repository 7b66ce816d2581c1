"""Named schema steps, applied in order by store.open_store; never edit a step once released.

The steps are registered here and handed to sqlite-utils' Migrations only when one is
pending: importing sqlite-utils loads numpy, a fifth of a second that a command on a
migrated store (`digest status`) need not pay. Which steps are applied is read with sqlite3.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, TypeVar

from digest.text import for_reader
from digest.urls import same_page_key

if TYPE_CHECKING:
    from sqlite_utils import Database, Migrations

MIGRATION_SET = "digest"
MIGRATIONS_TABLE = "_sqlite_migrations"  # sqlite-utils' record of the applied steps

Step = TypeVar("Step", bound=Callable[["Database"], None])
_steps: list[tuple[str, Callable[[Database], None], bool]] = []


def step(name: str, *, transactional: bool = True) -> Callable[[Step], Step]:
    """Register a schema step under `name`, after the ones registered before it."""

    def register(function: Step) -> Step:
        _steps.append((name, function, transactional))
        return function

    return register


def known_steps() -> list[str]:
    """The names of every step this code knows, in order (all pending on an empty database)."""
    return [name for name, _, _ in _steps]


def applied_steps(conn: sqlite3.Connection) -> list[str]:
    """The names of the steps applied to the database of `conn`, in the order applied."""
    table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (MIGRATIONS_TABLE,)
    ).fetchone()
    if table is None:
        return []
    rows = conn.execute(
        f"SELECT name FROM {MIGRATIONS_TABLE} WHERE migration_set = ? ORDER BY rowid",
        (MIGRATION_SET,),
    )
    return [row[0] for row in rows]


def pending_steps(conn: sqlite3.Connection) -> list[str]:
    applied = set(applied_steps(conn))
    return [name for name in known_steps() if name not in applied]


def unknown_steps(conn: sqlite3.Connection) -> list[str]:
    """Steps applied to the database that this code does not know: a newer digest wrote it."""
    known = set(known_steps())
    return [name for name in applied_steps(conn) if name not in known]


@cache
def migration_set() -> Migrations:
    """The steps as sqlite-utils' Migrations (imported here, when one is to be applied)."""
    from sqlite_utils import Migrations

    migrations = Migrations(MIGRATION_SET)
    for name, function, transactional in _steps:
        migrations(name=name, transactional=transactional)(function)
    return migrations


@step(name="m001_initial")
def m001_initial(db: Database) -> None:
    _execute_each(
        db,
        """
        CREATE TABLE sources (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            url TEXT,
            fetch_url TEXT,
            path TEXT,
            etag TEXT,
            last_modified TEXT,
            status TEXT NOT NULL DEFAULT 'ok',
            last_error TEXT,
            failures INTEGER NOT NULL DEFAULT 0,
            next_attempt_at TEXT,
            last_checked_at TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE notes (
            id INTEGER PRIMARY KEY,
            cache_key TEXT NOT NULL UNIQUE,
            model TEXT NOT NULL,
            prompt_version TEXT NOT NULL,
            summary TEXT NOT NULL,
            key_points TEXT NOT NULL DEFAULT '[]',
            tags TEXT NOT NULL DEFAULT '[]',
            basis TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            url TEXT,
            kind TEXT NOT NULL,
            title TEXT,
            topic TEXT,
            context TEXT,
            links TEXT NOT NULL DEFAULT '[]',
            saved_at TEXT NOT NULL,
            collected_at TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'new',
            attempts INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            next_attempt_at TEXT,
            text TEXT,
            text_hash TEXT,
            extracted_title TEXT,
            author TEXT,
            published TEXT,
            language TEXT,
            extractor TEXT,
            final_url TEXT,
            fetched_at TEXT,
            note_id INTEGER REFERENCES notes(id)
        );
        CREATE INDEX items_saved_at ON items(saved_at);
        CREATE INDEX items_state ON items(state);
        CREATE TABLE item_sources (
            item_id INTEGER NOT NULL REFERENCES items(id),
            source_id INTEGER NOT NULL REFERENCES sources(id),
            saved_at TEXT NOT NULL,
            PRIMARY KEY (item_id, source_id)
        ) WITHOUT ROWID;
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            command TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL DEFAULT 'running',
            stats TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE llm_calls (
            id INTEGER PRIMARY KEY,
            run_id INTEGER REFERENCES runs(id),
            model TEXT NOT NULL,
            purpose TEXT NOT NULL,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            duration_s REAL NOT NULL DEFAULT 0,
            ok INTEGER NOT NULL DEFAULT 1,
            at TEXT NOT NULL
        );
        CREATE TABLE digests (
            id INTEGER PRIMARY KEY,
            period TEXT NOT NULL,
            revision INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            path TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (period, content_hash)
        );
        CREATE TABLE deliveries (
            id INTEGER PRIMARY KEY,
            period TEXT NOT NULL,
            channel TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            status TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            message_id TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (period, channel, content_hash)
        );
        CREATE TABLE file_states (
            path TEXT PRIMARY KEY,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            fingerprint TEXT NOT NULL,
            lines_read INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT NOT NULL
        );
        """,
    )


def _execute_each(db: Database, script: str) -> None:
    # executescript() would COMMIT first and break the migration's transaction.
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


@step(name="m002_week_summaries")
def m002_week_summaries(db: Database) -> None:
    # The week summary is cached like a note: by (the notes it summarises, model, prompt version).
    db.execute(
        "CREATE TABLE week_summaries (cache_key TEXT PRIMARY KEY, period TEXT NOT NULL,"
        " text TEXT NOT NULL, created_at TEXT NOT NULL)"
    )


@step(name="m003_read_at")
def m003_read_at(db: Database) -> None:
    # `digest read ID|URL` marks an item read; unread items from earlier weeks form the backlog.
    db.execute("ALTER TABLE items ADD COLUMN read_at TEXT")
    db.execute("CREATE INDEX items_unread ON items(saved_at) WHERE read_at IS NULL")


@step(name="m004_linked_text")
def m004_linked_text(db: Database) -> None:
    # What a post's links led to (title and first paragraph of each), material for its note.
    db.execute("ALTER TABLE items ADD COLUMN linked_text TEXT")


@step(name="m005_llm_usage")
def m005_llm_usage(db: Database) -> None:
    # What each note and week summary cost when it was made, so that a digest's provenance
    # footer is the same on every rerun; and which item each LLM call was for.
    _execute_each(
        db,
        """
        ALTER TABLE notes ADD COLUMN tokens_in INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE notes ADD COLUMN tokens_out INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE notes ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
        ALTER TABLE week_summaries ADD COLUMN model TEXT NOT NULL DEFAULT 'offline';
        ALTER TABLE week_summaries ADD COLUMN tokens_in INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE week_summaries ADD COLUMN tokens_out INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE week_summaries ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
        ALTER TABLE llm_calls ADD COLUMN item_id INTEGER;
        CREATE INDEX llm_calls_at ON llm_calls(at)
        """,
    )


@step(name="m006_item_quality")
def m006_item_quality(db: Database) -> None:
    # What the last fetch got when it was no article: blocked, consent, login, paywalled, thin.
    db.execute("ALTER TABLE items ADD COLUMN quality TEXT")


@step(name="m007_file_identity_and_source_origin")
def m007_file_identity_and_source_origin(db: Database) -> None:
    # A file is skipped unread while its stat (size, mtime, inode, device) is the one we
    # recorded, unless its mtime was too close to that read to be trusted (checked_ns).
    # A source comes from the config, or from an imported OPML feed list (polled too).
    _execute_each(
        db,
        """
        ALTER TABLE file_states ADD COLUMN inode INTEGER;
        ALTER TABLE file_states ADD COLUMN device INTEGER;
        ALTER TABLE file_states ADD COLUMN checked_ns INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE sources ADD COLUMN origin TEXT NOT NULL DEFAULT 'config';
        ALTER TABLE sources ADD COLUMN topic TEXT
        """,
    )


@step(name="m008_item_failures")
def m008_item_failures(db: Database) -> None:
    # Failed fetches in a row, reset by a success: what retry policy counts (`attempts`
    # counts every fetch, re-checks of walls and stubs included).
    db.execute("ALTER TABLE items ADD COLUMN failures INTEGER NOT NULL DEFAULT 0")
    db.execute("UPDATE items SET failures = attempts WHERE state = 'failed'")


@step(name="m009_item_aliases")
def m009_item_aliases(db: Database) -> None:
    # The keys a shortened link had before it was settled under the page it led to: an
    # item collected again under such a key merges into that item instead of coming back.
    db.execute(
        "CREATE TABLE item_aliases (key TEXT PRIMARY KEY,"
        " item_id INTEGER NOT NULL REFERENCES items(id)) WITHOUT ROWID"
    )


@step(name="m010_feed_skipped_entries")
def m010_feed_skipped_entries(db: Database) -> None:
    # How many entries without a link the feed had when last read: the collect report
    # says so once per change, not on every poll.
    db.execute("ALTER TABLE sources ADD COLUMN skipped_entries INTEGER NOT NULL DEFAULT 0")


@step(name="m011_note_attempts")
def m011_note_attempts(db: Database) -> None:
    # Note attempts are recorded on the item as fetch failures are: answers received for the
    # note key (text, model, prompt version) they were for, which llm.max_attempts caps over
    # all runs; failures in a row, the last error and when to try again. And the response
    # format each (server, model) took, so that later runs do not probe again.
    _execute_each(
        db,
        """
        ALTER TABLE items ADD COLUMN note_key TEXT;
        ALTER TABLE items ADD COLUMN note_attempts INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE items ADD COLUMN note_failures INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE items ADD COLUMN note_error TEXT;
        ALTER TABLE items ADD COLUMN note_next_attempt_at TEXT;
        CREATE INDEX items_note_key ON items(note_key) WHERE note_key IS NOT NULL;
        CREATE TABLE llm_formats (
            base_url TEXT NOT NULL,
            model TEXT NOT NULL,
            response_format TEXT NOT NULL,
            checked_at TEXT NOT NULL,
            PRIMARY KEY (base_url, model)
        ) WITHOUT ROWID
        """,
    )


@step(name="m012_same_page_keys")
def m012_same_page_keys(db: Database) -> None:
    # http and https, with or without a trailing slash: one page, one key (urls.same_page_key).
    # An item whose new key another item holds already keeps its old key; what is saved
    # from now on joins the other.
    rows = db.execute("SELECT id, key FROM items WHERE key NOT LIKE 'note:%'").fetchall()
    for item_id, key in rows:
        if (new := same_page_key(key)) != key:
            db.execute("UPDATE OR IGNORE items SET key = ? WHERE id = ?", (new, item_id))


@step(name="m013_items_autoincrement", transactional=False)
def m013_items_autoincrement(db: Database) -> None:
    # Item ids are never reused: an id once shown in a digest or a run record keeps meaning
    # that item even after it is merged away. SQLite adds AUTOINCREMENT only by rebuilding
    # the table; the rebuild copies the live table's own schema (every column and index any
    # earlier migration added). Foreign keys are off during the rebuild (SQLite allows that
    # only outside a transaction) and checked before it commits.
    enforced = db.conn.execute("PRAGMA foreign_keys").fetchone()[0]
    db.conn.execute("PRAGMA foreign_keys = OFF")
    try:
        with db.atomic():
            _rebuild_with_autoincrement(db, "items")
            if broken := db.conn.execute("PRAGMA foreign_key_check").fetchall():
                raise sqlite3.IntegrityError(f"items rebuilt with broken references: {broken[:3]}")
    finally:
        db.conn.execute(f"PRAGMA foreign_keys = {'ON' if enforced else 'OFF'}")


@step(name="m014_file_held_tail")
def m014_file_held_tail(db: Database) -> None:
    # The bytes of an unfinished last line (no line end) held back at the last read: read
    # only once a later collect finds the file as it was (size and mtime), the writer done.
    db.execute("ALTER TABLE file_states ADD COLUMN held INTEGER NOT NULL DEFAULT 0")


def _rebuild_with_autoincrement(db: Database, table: str) -> None:
    conn = db.conn
    (create,) = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    if "AUTOINCREMENT" in create.upper():
        return
    rebuilt, replaced = re.subn(
        r"\bid\s+INTEGER\s+PRIMARY\s+KEY\b",
        "id INTEGER PRIMARY KEY AUTOINCREMENT",
        create,
        count=1,
        flags=re.IGNORECASE,
    )
    if replaced != 1:
        raise ValueError(f"table {table}: no 'id INTEGER PRIMARY KEY' column to rebuild")
    name = rf"^CREATE TABLE\s+[\"`\[]?{table}[\"`\]]?"
    rebuilt = re.sub(name, f"CREATE TABLE {table}_rebuilt", rebuilt)
    companions = [
        sql
        for (sql,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger')"
            " AND sql IS NOT NULL ORDER BY type, name",
            (table,),
        )
    ]
    conn.execute(rebuilt)
    conn.execute(f"INSERT INTO {table}_rebuilt SELECT * FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE {table}_rebuilt RENAME TO {table}")
    for sql in companions:
        conn.execute(sql)


@step(name="m018_file_readings")
def m018_file_readings(db: Database) -> None:
    # How each file was read (its format, why, and whether the content made that clear), and
    # which items each line of it gave: a file keeps its reading as it grows, a post that
    # grows updates its item, and a new reading in another format replaces the earlier items.
    _execute_each(
        db,
        """
        CREATE TABLE file_readings (
            path TEXT PRIMARY KEY,
            format TEXT NOT NULL,
            clear INTEGER NOT NULL,
            reason TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE file_items (
            path TEXT NOT NULL,
            line INTEGER NOT NULL,
            item_id INTEGER NOT NULL REFERENCES items(id),
            format TEXT NOT NULL,
            PRIMARY KEY (path, line, item_id)
        ) WITHOUT ROWID;
        CREATE INDEX file_items_item ON file_items(item_id);
        """,
    )


@step(name="m019_text_for_readers")
def m019_text_for_readers(db: Database) -> None:
    # Text stored before the one cleaner (text.for_reader): bidi, zero-width and control
    # characters, and URL passwords quoted in it, leave what is already stored too.
    db.conn.create_function("for_reader", 1, _for_reader_or_null, deterministic=True)
    db.conn.create_function("for_reader_list", 1, _for_reader_list, deterministic=True)
    for column in ("title", "extracted_title", "author", "topic", "context", "text"):
        db.execute(f"UPDATE items SET {column} = for_reader({column}) WHERE {column} IS NOT NULL")
    db.execute(
        "UPDATE notes SET summary = for_reader(summary), key_points = for_reader_list(key_points)"
    )


SQLValue = str | bytes | int | float | None


def _for_reader_or_null(value: SQLValue) -> SQLValue:
    return for_reader(value) if isinstance(value, str) else value


def _for_reader_list(value: SQLValue) -> SQLValue:
    """A JSON list of texts (a note's key points), each for_reader's; anything else as is."""
    try:
        texts = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return value
    if not isinstance(texts, list):
        return value
    return json.dumps([for_reader(text) if isinstance(text, str) else text for text in texts])


# What `digest search` finds an item by: one row per item, made from the item and its note.
_SEARCH_DOCUMENT = """
CREATE VIEW item_search AS SELECT
    i.id AS id,
    trim(coalesce(i.title, '') || CASE WHEN i.extracted_title IS NOT NULL
        AND i.extracted_title IS NOT i.title THEN ' ' || i.extracted_title ELSE '' END) AS title,
    trim(coalesce(i.text, '') || ' ' || coalesce(i.linked_text, '')) AS text,
    CASE WHEN n.id IS NOT NULL THEN trim(n.summary || ' '
        || coalesce((SELECT group_concat(value, ' ') FROM json_each(n.key_points)), '')) END
        AS note,
    i.context AS context,
    CASE WHEN n.id IS NOT NULL THEN (SELECT group_concat(value, ' ') FROM json_each(n.tags))
        END AS tags,
    substr(i.url, instr(i.url, '://') + 3,
        instr(substr(i.url, instr(i.url, '://') + 3) || '/', '/') - 1) AS host
FROM items i LEFT JOIN notes n ON n.id = i.note_id
"""
_SEARCH_COLUMNS = "title, text, note, context, tags, host"
# The columns the document is made of: a change to any of them renews the item's index row.
_SEARCHED = ("url", "title", "extracted_title", "text", "linked_text", "context", "note_id")
_CHANGED = " OR ".join(f"old.{column} IS NOT new.{column}" for column in _SEARCHED)
_INDEX_ROW = f"INSERT INTO item_index (rowid, {_SEARCH_COLUMNS}) SELECT id, {_SEARCH_COLUMNS} FROM item_search"
_FORGET_ROW = f"INSERT INTO item_index (item_index, rowid, {_SEARCH_COLUMNS}) SELECT 'delete', id, {_SEARCH_COLUMNS} FROM item_search"


# While the store saves a batch of new items it indexes them at the end, all at once (FTS5
# writes its pending terms out at every statement, so a row at a time through a trigger costs
# several times as much): item_index_deferred then holds the first new id, and the triggers
# leave the rows from there on alone.
_SETTLED = "old.id < coalesce((SELECT min(first_new) FROM item_index_deferred), old.id + 1)"


@step(name="m022a_search_index")
def m022a_search_index(db: Database) -> None:
    # Full-text search (FTS5, porter stemming over unicode61 without diacritics) over a view
    # of each item with its note. The index holds no copy of the texts (external content):
    # to drop an item's old terms FTS5 must be given its old values, so they are read from
    # the view BEFORE a change, and the new ones indexed AFTER it.
    columns = ", ".join(_SEARCHED)
    for statement in (
        _SEARCH_DOCUMENT,
        f"CREATE VIRTUAL TABLE item_index USING fts5({_SEARCH_COLUMNS}, content = 'item_search',"
        " content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2')",
        "CREATE TABLE item_index_deferred (first_new INTEGER NOT NULL)",
        "CREATE TRIGGER item_index_insert AFTER INSERT ON items"
        " WHEN NOT EXISTS (SELECT 1 FROM item_index_deferred)"
        f" BEGIN {_INDEX_ROW} WHERE id = new.id; END",
        f"CREATE TRIGGER item_index_forget BEFORE UPDATE OF {columns} ON items"
        f" WHEN ({_CHANGED}) AND {_SETTLED} BEGIN {_FORGET_ROW} WHERE id = old.id; END",
        f"CREATE TRIGGER item_index_renew AFTER UPDATE OF {columns} ON items"
        f" WHEN ({_CHANGED}) AND {_SETTLED} BEGIN {_INDEX_ROW} WHERE id = new.id; END",
        f"CREATE TRIGGER item_index_delete BEFORE DELETE ON items WHEN {_SETTLED}"
        f" BEGIN {_FORGET_ROW} WHERE id = old.id; END",
        _INDEX_ROW,  # every item there is (FTS5's 'rebuild' fails on json_each in the view)
    ):
        db.execute(statement)


@step(name="m022b_item_stars")
def m022b_item_stars(db: Database) -> None:
    # `digest star ID`: what the reader marked worth keeping, which the ranking learns from.
    db.execute(
        "CREATE TABLE item_stars (item_id INTEGER PRIMARY KEY REFERENCES items(id),"
        " starred_at TEXT NOT NULL)"
    )


@step(name="m023a_source_management")
def m023a_source_management(db: Database) -> None:
    # `digest sources pause|remove` for sources kept in the database (the config's own are
    # paused or removed in the config file). A removed source keeps its row, so that its
    # items keep their source; `html_url` is the site of a feed, kept from an OPML list.
    _execute_each(
        db,
        """
        ALTER TABLE sources ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE sources ADD COLUMN removed_at TEXT;
        ALTER TABLE sources ADD COLUMN html_url TEXT
        """,
    )


@step(name="m023b_feed_ids")
def m023b_feed_ids(db: Database) -> None:
    # The Atom feed's ids, each minted once (a tag: URI, or the id an older feed file
    # already gave) and stored, so that setting [output] public_url changes none of them.
    db.execute(
        "CREATE TABLE feed_ids (key TEXT PRIMARY KEY, id TEXT NOT NULL, created_at TEXT NOT NULL)"
    )


@step(name="m024_failure_kinds")
def m024_failure_kinds(db: Database) -> None:
    # What kind of failure an item's last fetch was, and its HTTP status, beside the error's
    # text: read as data (unfetched.py), never parsed back out of the text. Errors
    # recorded before have no kind: the reader is told the page could not be fetched.
    _execute_each(
        db,
        """
        ALTER TABLE items ADD COLUMN error_kind TEXT;
        ALTER TABLE items ADD COLUMN error_status INTEGER
        """,
    )


@step(name="m024a_history_indexes")
def m024a_history_indexes(db: Database) -> None:
    # The reader's history (the items starred and read, most recent first) is read at every
    # compose: by these indexes, not by a scan of every item (40 ms in 100,000).
    _execute_each(
        db,
        """
        CREATE INDEX items_read ON items(read_at) WHERE read_at IS NOT NULL;
        CREATE INDEX item_stars_at ON item_stars(starred_at)
        """,
    )


@step(name="m024a_item_features")
def m024a_item_features(db: Database) -> None:
    # What compose reads of an item's text (features.py: embedding sum, word and
    # phrase hashes), computed when the text is stored; `text_hash` says of which text, so
    # a row left from an older text is recomputed. Items stored before get theirs at the
    # first compose of their week.
    db.execute(
        "CREATE TABLE item_features (item_id INTEGER PRIMARY KEY"
        " REFERENCES items(id) ON DELETE CASCADE, text_hash TEXT NOT NULL,"
        " tokens INTEGER NOT NULL, vector BLOB NOT NULL, terms BLOB NOT NULL,"
        " counts BLOB NOT NULL, phrases BLOB NOT NULL)"
    )


@step(name="m031_i31_logged_texts")
def m031_i31_logged_texts(db: Database) -> None:
    # The text of each week as the log last holds it: a later revision is logged as what
    # changed since (deliver/logdiff.py), not as the whole week again.
    db.execute(
        "CREATE TABLE logged_texts (period TEXT PRIMARY KEY, markdown TEXT NOT NULL,"
        " logged_at TEXT NOT NULL)"
    )


# The journal's headings, a list's topic lines, a feed's category: the item's topic is
# searched with its note's tags (`digest search rust`, `section:Rust`, `tags:Rust`).
_TAGS_OF_NOTE = """CASE WHEN n.id IS NOT NULL THEN (SELECT group_concat(value, ' ') FROM json_each(n.tags))
        END AS tags"""
_TAGS_WITH_TOPIC = """nullif(trim(coalesce(i.topic, '') || ' ' || coalesce(CASE WHEN n.id IS NOT NULL
        THEN (SELECT group_concat(value, ' ') FROM json_each(n.tags)) END, '')), '') AS tags"""
_SEARCHED_I31 = (*_SEARCHED, "topic")
_CHANGED_I31 = " OR ".join(f"old.{column} IS NOT new.{column}" for column in _SEARCHED_I31)


@step(name="m031b_i31_search_topics")
def m031b_i31_search_topics(db: Database) -> None:
    assert _TAGS_OF_NOTE in _SEARCH_DOCUMENT
    columns = ", ".join(_SEARCHED_I31)
    for statement in (
        "DROP TRIGGER item_index_forget",
        "DROP TRIGGER item_index_renew",
        "DROP TRIGGER item_index_insert",
        "DROP TRIGGER item_index_delete",
        "DROP VIEW item_search",
        _SEARCH_DOCUMENT.replace(_TAGS_OF_NOTE, _TAGS_WITH_TOPIC),
        "INSERT INTO item_index (item_index) VALUES ('delete-all')",
        "CREATE TRIGGER item_index_insert AFTER INSERT ON items"
        " WHEN NOT EXISTS (SELECT 1 FROM item_index_deferred)"
        f" BEGIN {_INDEX_ROW} WHERE id = new.id; END",
        f"CREATE TRIGGER item_index_forget BEFORE UPDATE OF {columns} ON items"
        f" WHEN ({_CHANGED_I31}) AND {_SETTLED} BEGIN {_FORGET_ROW} WHERE id = old.id; END",
        f"CREATE TRIGGER item_index_renew AFTER UPDATE OF {columns} ON items"
        f" WHEN ({_CHANGED_I31}) AND {_SETTLED} BEGIN {_INDEX_ROW} WHERE id = new.id; END",
        f"CREATE TRIGGER item_index_delete BEFORE DELETE ON items WHEN {_SETTLED}"
        f" BEGIN {_FORGET_ROW} WHERE id = old.id; END",
        _INDEX_ROW,
    ):
        db.execute(statement)


@step(name="m035_newsletters")
def m035_newsletters(db: Database) -> None:
    # Mail sources (collect/mail): each letter read once per source, by its Message-ID; an
    # IMAP folder's UIDVALIDITY and the last UID read in it, so a collect asks only for
    # newer letters (a new UIDVALIDITY: the folder is read again, the Message-IDs keep it
    # right); and the newsletters an item came in ("also in: Changelog Weekly").
    _execute_each(
        db,
        """
        CREATE TABLE mail_letters (
            source_id INTEGER NOT NULL REFERENCES sources(id),
            letter_key TEXT NOT NULL,
            newsletter TEXT NOT NULL,
            items INTEGER NOT NULL,
            read_at TEXT NOT NULL,
            PRIMARY KEY (source_id, letter_key)
        ) WITHOUT ROWID;
        CREATE TABLE mail_folders (
            source_id INTEGER NOT NULL REFERENCES sources(id),
            folder TEXT NOT NULL,
            uidvalidity INTEGER NOT NULL,
            last_uid INTEGER NOT NULL,
            PRIMARY KEY (source_id, folder)
        ) WITHOUT ROWID;
        CREATE TABLE item_newsletters (
            item_id INTEGER NOT NULL REFERENCES items(id),
            newsletter TEXT NOT NULL,
            PRIMARY KEY (item_id, newsletter)
        ) WITHOUT ROWID
        """,
    )


@step(name="m035b_highlights")
def m035b_highlights(db: Database) -> None:
    # Highlights (`digest import` of Kindle clippings, Readwise CSV): each once by its item
    # and text, with the note written beside it; `shown_week` is the last week "From your
    # highlights" brought it back in, `done_at` when `digest highlight done` retired it.
    _execute_each(
        db,
        """
        CREATE TABLE highlights (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            item_id INTEGER NOT NULL REFERENCES items(id),
            text TEXT NOT NULL,
            note TEXT,
            location TEXT,
            highlighted_at TEXT NOT NULL,
            shown_week TEXT,
            shown_at TEXT,
            done_at TEXT
        );
        CREATE INDEX highlights_item ON highlights(item_id)
        """,
    )
