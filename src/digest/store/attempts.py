"""Note attempts recorded on items, and what each LLM server and model was found to accept."""

from __future__ import annotations

from datetime import datetime

from digest.lifecycle import NoteAttempts, NoteFailed
from digest.store.base import StoreBase, from_iso, iso


class AttemptsStore(StoreBase):
    def note_attempts(self, note_key: str) -> NoteAttempts:
        """The attempts for `note_key` (text, model, prompt version) on any item."""
        rows = self._query(
            "SELECT max(note_attempts), max(note_failures), max(note_next_attempt_at)"
            " FROM items WHERE note_key = ?",
            (note_key,),
        )
        sends, failures, next_attempt_at = rows[0]
        return NoteAttempts(sends or 0, failures or 0, from_iso(next_attempt_at))

    def record_note_failure(self, intent: NoteFailed) -> None:
        """Record a failed attempt for the intent's note key on its items."""
        with self.write() as conn:
            conn.executemany(
                "UPDATE items SET note_key = ?, note_attempts = ?, note_failures = ?,"
                " note_error = ?, note_next_attempt_at = ? WHERE id = ?",
                [
                    (
                        intent.note_key,
                        intent.sends,
                        intent.failures,
                        intent.error,
                        iso(intent.next_attempt_at) if intent.next_attempt_at else None,
                        item_id,
                    )
                    for item_id in intent.item_ids
                ],
            )

    def retry_notes(self) -> int:
        """Forget note attempts (`digest summarize --retry`): the items are asked for again.
        How many items had some."""
        with self.write() as conn:
            cursor = conn.execute(
                "UPDATE items SET note_attempts = 0, note_failures = 0, note_error = NULL,"
                " note_next_attempt_at = NULL, note_key = NULL"
                " WHERE note_attempts > 0 OR note_failures > 0"
            )
            return cursor.rowcount

    def response_formats(self, base_url: str) -> dict[str, str]:
        """By model: the response format the server at `base_url` took."""
        rows = self._query(
            "SELECT model, response_format FROM llm_formats WHERE base_url = ?", (base_url,)
        )
        return {str(model): str(response_format) for model, response_format in rows}

    def save_response_format(
        self, base_url: str, model: str, response_format: str, now: datetime
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO llm_formats (base_url, model, response_format, checked_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (base_url, model) DO UPDATE SET"
                " response_format = excluded.response_format, checked_at = excluded.checked_at",
                (base_url, model, response_format, iso(now)),
            )
