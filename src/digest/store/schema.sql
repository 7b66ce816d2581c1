-- The schema of a freshly migrated database: `python -m digest.store.schema` writes it.

CREATE TABLE "_sqlite_migrations" (
   "id" INTEGER PRIMARY KEY,
   "migration_set" TEXT,
   "name" TEXT,
   "applied_at" TEXT
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

CREATE TABLE digests (
            id INTEGER PRIMARY KEY,
            period TEXT NOT NULL,
            revision INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            path TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (period, content_hash)
        );

CREATE TABLE feed_ids (key TEXT PRIMARY KEY, id TEXT NOT NULL, created_at TEXT NOT NULL);

CREATE TABLE file_items (
            path TEXT NOT NULL,
            line INTEGER NOT NULL,
            item_id INTEGER NOT NULL REFERENCES items(id),
            format TEXT NOT NULL,
            PRIMARY KEY (path, line, item_id)
        ) WITHOUT ROWID;

CREATE TABLE file_readings (
            path TEXT PRIMARY KEY,
            format TEXT NOT NULL,
            clear INTEGER NOT NULL,
            reason TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );

CREATE TABLE file_states (
            path TEXT PRIMARY KEY,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            fingerprint TEXT NOT NULL,
            lines_read INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT NOT NULL
        , inode INTEGER, device INTEGER, checked_ns INTEGER NOT NULL DEFAULT 0, held INTEGER NOT NULL DEFAULT 0);

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

CREATE TABLE item_aliases (key TEXT PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id)) WITHOUT ROWID;

CREATE TABLE item_features (item_id INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE, text_hash TEXT NOT NULL, tokens INTEGER NOT NULL, vector BLOB NOT NULL, terms BLOB NOT NULL, counts BLOB NOT NULL, phrases BLOB NOT NULL);

CREATE VIRTUAL TABLE item_index USING fts5(title, text, note, context, tags, host, content = 'item_search', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2');

CREATE TABLE item_index_deferred (first_new INTEGER NOT NULL);

CREATE TABLE item_newsletters (
            item_id INTEGER NOT NULL REFERENCES items(id),
            newsletter TEXT NOT NULL,
            PRIMARY KEY (item_id, newsletter)
        ) WITHOUT ROWID
        ;

CREATE TABLE item_sources (
            item_id INTEGER NOT NULL REFERENCES items(id),
            source_id INTEGER NOT NULL REFERENCES sources(id),
            saved_at TEXT NOT NULL,
            PRIMARY KEY (item_id, source_id)
        ) WITHOUT ROWID;

CREATE TABLE item_stars (item_id INTEGER PRIMARY KEY REFERENCES items(id), starred_at TEXT NOT NULL);

CREATE TABLE "items" (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
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
        , read_at TEXT, linked_text TEXT, quality TEXT, failures INTEGER NOT NULL DEFAULT 0, note_key TEXT, note_attempts INTEGER NOT NULL DEFAULT 0, note_failures INTEGER NOT NULL DEFAULT 0, note_error TEXT, note_next_attempt_at TEXT, error_kind TEXT, error_status INTEGER);

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
        , item_id INTEGER);

CREATE TABLE llm_formats (
            base_url TEXT NOT NULL,
            model TEXT NOT NULL,
            response_format TEXT NOT NULL,
            checked_at TEXT NOT NULL,
            PRIMARY KEY (base_url, model)
        ) WITHOUT ROWID
        ;

CREATE TABLE logged_texts (period TEXT PRIMARY KEY, markdown TEXT NOT NULL, logged_at TEXT NOT NULL);

CREATE TABLE mail_folders (
            source_id INTEGER NOT NULL REFERENCES sources(id),
            folder TEXT NOT NULL,
            uidvalidity INTEGER NOT NULL,
            last_uid INTEGER NOT NULL,
            PRIMARY KEY (source_id, folder)
        ) WITHOUT ROWID;

CREATE TABLE mail_letters (
            source_id INTEGER NOT NULL REFERENCES sources(id),
            letter_key TEXT NOT NULL,
            newsletter TEXT NOT NULL,
            items INTEGER NOT NULL,
            read_at TEXT NOT NULL,
            PRIMARY KEY (source_id, letter_key)
        ) WITHOUT ROWID;

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
        , tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0, cost_usd REAL NOT NULL DEFAULT 0);

CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            command TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL DEFAULT 'running',
            stats TEXT NOT NULL DEFAULT '{}'
        );

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
        , origin TEXT NOT NULL DEFAULT 'config', topic TEXT, skipped_entries INTEGER NOT NULL DEFAULT 0, paused INTEGER NOT NULL DEFAULT 0, removed_at TEXT, html_url TEXT);

CREATE TABLE week_summaries (cache_key TEXT PRIMARY KEY, period TEXT NOT NULL, text TEXT NOT NULL, created_at TEXT NOT NULL, model TEXT NOT NULL DEFAULT 'offline', tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0, cost_usd REAL NOT NULL DEFAULT 0);

CREATE VIEW item_search AS SELECT
    i.id AS id,
    trim(coalesce(i.title, '') || CASE WHEN i.extracted_title IS NOT NULL
        AND i.extracted_title IS NOT i.title THEN ' ' || i.extracted_title ELSE '' END) AS title,
    trim(coalesce(i.text, '') || ' ' || coalesce(i.linked_text, '')) AS text,
    CASE WHEN n.id IS NOT NULL THEN trim(n.summary || ' '
        || coalesce((SELECT group_concat(value, ' ') FROM json_each(n.key_points)), '')) END
        AS note,
    i.context AS context,
    nullif(trim(coalesce(i.topic, '') || ' ' || coalesce(CASE WHEN n.id IS NOT NULL
        THEN (SELECT group_concat(value, ' ') FROM json_each(n.tags)) END, '')), '') AS tags,
    substr(i.url, instr(i.url, '://') + 3,
        instr(substr(i.url, instr(i.url, '://') + 3) || '/', '/') - 1) AS host
FROM items i LEFT JOIN notes n ON n.id = i.note_id;

CREATE INDEX file_items_item ON file_items(item_id);

CREATE INDEX highlights_item ON highlights(item_id)
        ;

CREATE UNIQUE INDEX "idx__sqlite_migrations_migration_set_name"
    ON "_sqlite_migrations" ("migration_set", "name");

CREATE INDEX item_stars_at ON item_stars(starred_at)
        ;

CREATE INDEX items_note_key ON items(note_key) WHERE note_key IS NOT NULL;

CREATE INDEX items_read ON items(read_at) WHERE read_at IS NOT NULL;

CREATE INDEX items_saved_at ON items(saved_at);

CREATE INDEX items_state ON items(state);

CREATE INDEX items_unread ON items(saved_at) WHERE read_at IS NULL;

CREATE INDEX llm_calls_at ON llm_calls(at)
        ;

CREATE TRIGGER item_index_delete BEFORE DELETE ON items WHEN old.id < coalesce((SELECT min(first_new) FROM item_index_deferred), old.id + 1) BEGIN INSERT INTO item_index (item_index, rowid, title, text, note, context, tags, host) SELECT 'delete', id, title, text, note, context, tags, host FROM item_search WHERE id = old.id; END;

CREATE TRIGGER item_index_forget BEFORE UPDATE OF url, title, extracted_title, text, linked_text, context, note_id, topic ON items WHEN (old.url IS NOT new.url OR old.title IS NOT new.title OR old.extracted_title IS NOT new.extracted_title OR old.text IS NOT new.text OR old.linked_text IS NOT new.linked_text OR old.context IS NOT new.context OR old.note_id IS NOT new.note_id OR old.topic IS NOT new.topic) AND old.id < coalesce((SELECT min(first_new) FROM item_index_deferred), old.id + 1) BEGIN INSERT INTO item_index (item_index, rowid, title, text, note, context, tags, host) SELECT 'delete', id, title, text, note, context, tags, host FROM item_search WHERE id = old.id; END;

CREATE TRIGGER item_index_insert AFTER INSERT ON items WHEN NOT EXISTS (SELECT 1 FROM item_index_deferred) BEGIN INSERT INTO item_index (rowid, title, text, note, context, tags, host) SELECT id, title, text, note, context, tags, host FROM item_search WHERE id = new.id; END;

CREATE TRIGGER item_index_renew AFTER UPDATE OF url, title, extracted_title, text, linked_text, context, note_id, topic ON items WHEN (old.url IS NOT new.url OR old.title IS NOT new.title OR old.extracted_title IS NOT new.extracted_title OR old.text IS NOT new.text OR old.linked_text IS NOT new.linked_text OR old.context IS NOT new.context OR old.note_id IS NOT new.note_id OR old.topic IS NOT new.topic) AND old.id < coalesce((SELECT min(first_new) FROM item_index_deferred), old.id + 1) BEGIN INSERT INTO item_index (rowid, title, text, note, context, tags, host) SELECT id, title, text, note, context, tags, host FROM item_search WHERE id = new.id; END;

