"""Letters from mail sources: which were read, where an IMAP folder was left, and the
newsletters an item came in (collect/mail)."""

from __future__ import annotations

from collections.abc import Sequence

from digest.lifecycle import LetterRead
from digest.store.base import BATCH, SaveReport, iso
from digest.store.item_saves import item_key, take_own_text
from digest.store.items import ItemsStore


class MailStore(ItemsStore):
    def letters_read(self, source_id: int, letter_keys: Sequence[str]) -> set[str]:
        """Which of `letter_keys` (Message-IDs) the source has read already."""
        found: set[str] = set()
        for start in range(0, len(letter_keys), BATCH):
            batch = letter_keys[start : start + BATCH]
            rows = self._query(
                "SELECT letter_key FROM mail_letters WHERE source_id = ?"
                f" AND letter_key IN ({', '.join('?' * len(batch))})",
                (source_id, *batch),
            )
            found.update(row[0] for row in rows)
        return found

    def apply_letter(self, intent: LetterRead) -> SaveReport:
        """The letter's items, its own text, the newsletter they came in and the letter
        marked read, committed together: a letter is read whole or not at all."""
        with self.write() as conn:
            report = self.save_items(intent.source_id, intent.items, intent.at)
            keys = [item_key(item) for item in intent.items]
            if intent.text is not None and keys:
                take_own_text(conn, keys[0], intent.text, "mail", intent.state, intent.at)
            conn.executemany(
                "INSERT OR IGNORE INTO item_newsletters (item_id, newsletter)"
                " SELECT id, ? FROM items WHERE key = ?",
                [(intent.newsletter, key) for key in keys],
            )
            conn.execute(
                "INSERT OR IGNORE INTO mail_letters"
                " (source_id, letter_key, newsletter, items, read_at) VALUES (?, ?, ?, ?, ?)",
                (intent.source_id, intent.letter_key, intent.newsletter, len(keys), iso(intent.at)),
            )
        return report

    def mail_folder(self, source_id: int, folder: str) -> tuple[int, int] | None:
        """The folder's UIDVALIDITY and the last UID read in it, None before the first read."""
        rows = self._query(
            "SELECT uidvalidity, last_uid FROM mail_folders WHERE source_id = ? AND folder = ?",
            (source_id, folder),
        )
        return (int(rows[0][0]), int(rows[0][1])) if rows else None

    def save_mail_folder(
        self, source_id: int, folder: str, uidvalidity: int, last_uid: int
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO mail_folders (source_id, folder, uidvalidity, last_uid)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (source_id, folder) DO UPDATE SET"
                " uidvalidity = excluded.uidvalidity, last_uid = excluded.last_uid",
                (source_id, folder, uidvalidity, last_uid),
            )
