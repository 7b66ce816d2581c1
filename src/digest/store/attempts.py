"""Note attempts recorded on items, and what each LLM server and model was found to accept."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from digest.store.base import StoreBase, iso


class AttemptsStore(StoreBase):
    def record_note_failure(
        self,
        item_ids: Sequence[int],
        note_key: str,
        *,
        answers: int,
        error: str,
        next_attempt_at: datetime | None,
    ) -> None:
        """Count `answers` (model answers that were not usable) against `note_key`, starting
        over when the items' last attempts were for another key; record the error."""
        with self.write() as conn:
            conn.executemany(
                "UPDATE items SET"
                " note_attempts = CASE WHEN note_key IS ? THEN note_attempts ELSE 0 END + ?,"
                " note_failures = CASE WHEN note_key IS ? THEN note_failures ELSE 0 END + 1,"
                " note_key = ?, note_error = ?, note_next_attempt_at = ? WHERE id = ?",
                [
                    (
                        note_key,
                        answers,
                        note_key,
                        note_key,
                        error,
                        iso(next_attempt_at) if next_attempt_at else None,
                        item_id,
                    )
                    for item_id in item_ids
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
