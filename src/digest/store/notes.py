"""Notes and week summaries: saved once under their cache key, with what they cost."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from digest.lifecycle import NoteAttached
from digest.models import ModelUsage, Note, Usage
from digest.store.base import StoreBase, iso
from digest.store.item_rows import note_from_row
from digest.text import clean, for_reader


class NotesStore(StoreBase):
    def cached_note(self, cache_key: str) -> Note | None:
        rows = self._query("SELECT * FROM notes WHERE cache_key = ?", (cache_key,))
        return note_from_row(rows[0]) if rows else None

    def attach_note(self, intent: NoteAttached) -> None:
        """Store the note under its cache key, with what it cost, and make it the item's note
        in the state the lifecycle decided; a final note ends the note attempts."""
        note, usage = intent.note, intent.usage or Usage()
        with self.write() as conn:
            conn.execute(
                "INSERT INTO notes (cache_key, model, prompt_version, summary, key_points, tags,"
                " basis, created_at, tokens_in, tokens_out, cost_usd)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(cache_key) DO NOTHING",
                (
                    intent.cache_key,
                    note.model,
                    note.prompt_version,
                    for_reader(note.summary),
                    json.dumps([for_reader(point) for point in note.key_points]),
                    json.dumps([clean(tag) for tag in note.tags]),
                    note.basis.value,
                    iso(intent.at),
                    usage.tokens_in,
                    usage.tokens_out,
                    usage.cost_usd,
                ),
            )
            conn.execute(
                "UPDATE items SET note_id = (SELECT id FROM notes WHERE cache_key = ?),"
                " state = ? WHERE id = ?",
                (intent.cache_key, intent.state.value, intent.item_id),
            )
            if intent.final:  # the note attempts are over
                conn.execute(
                    "UPDATE items SET note_failures = 0, note_error = NULL,"
                    " note_next_attempt_at = NULL WHERE id = ?",
                    (intent.item_id,),
                )

    def cached_week_summary(self, cache_key: str) -> tuple[str, Usage] | None:
        """The week summary saved under this key (as saved: JSON) and what it cost."""
        rows = self._query(
            "SELECT text, tokens_in, tokens_out, cost_usd FROM week_summaries WHERE cache_key = ?",
            (cache_key,),
        )
        if not rows:
            return None
        text, tokens_in, tokens_out, cost_usd = rows[0]
        return str(text), Usage(tokens_in, tokens_out, cost_usd)

    def save_week_summary(
        self, cache_key: str, period: str, text: str, now: datetime, *, model: str, usage: Usage
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO week_summaries (cache_key, period, text, created_at, model,"
                " tokens_in, tokens_out, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(cache_key) DO NOTHING",
                (
                    cache_key,
                    period,
                    text,
                    iso(now),
                    model,
                    usage.tokens_in,
                    usage.tokens_out,
                    usage.cost_usd,
                ),
            )

    def note_usage_between(
        self, start: datetime, end: datetime, *, leaving_out: Sequence[int] = ()
    ) -> list[ModelUsage]:
        """For the distinct notes of the items saved in [start, end), but those of the items
        `leaving_out`: per (model, prompt version), how many notes and what they cost when
        they were made."""
        rows = self._query(
            "SELECT model, prompt_version, count(*) AS notes, sum(tokens_in) AS tokens_in,"
            " sum(tokens_out) AS tokens_out, sum(cost_usd) AS cost_usd FROM notes"
            " WHERE id IN (SELECT note_id FROM items WHERE saved_at >= ? AND saved_at < ?"
            f" AND id NOT IN ({', '.join('?' * len(leaving_out))}))"
            " GROUP BY model, prompt_version ORDER BY model, prompt_version",
            (iso(start), iso(end), *leaving_out),
        )
        return [
            ModelUsage(
                row["model"],
                row["prompt_version"],
                row["notes"],
                Usage(row["tokens_in"], row["tokens_out"], row["cost_usd"]),
            )
            for row in rows
        ]

    def known_tags(self) -> list[str]:
        tags: dict[str, int] = {}
        for (raw,) in self._query("SELECT tags FROM notes"):
            for tag in json.loads(raw):
                tags[tag] = tags.get(tag, 0) + 1
        return sorted(tags, key=lambda tag: (-tags[tag], tag))
