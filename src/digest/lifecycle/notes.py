"""What is due for a note, how many model calls it may still take, and what an attempt changes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from digest.lifecycle.states import Event, backoff_delay, is_due, next_state
from digest.models import Item, ItemKind, ItemState, Note, Usage

NOTE_RETRY_BASE_S = 1800.0  # a failed note is asked for again after 30 min, then 1 h … 1 day
NOTE_RETRY_MAX_S = 86400.0
# The states the store reads note candidates in, besides items without a note.
NOTE_STATES: Final = (ItemState.NEW, ItemState.FETCHED)


def due_for_note(item: Item) -> bool:
    """No note yet or a stand-in, or text that arrived after the note; never a link not
    fetched yet (its page may still come)."""
    if item.kind is ItemKind.LINK and item.state is ItemState.NEW:
        return False
    has_own_text = item.kind is not ItemKind.LINK and item.state is ItemState.NEW
    return item.note is None or item.state is ItemState.FETCHED or has_own_text


def context_renews_note(
    kind: ItemKind, quality: str | None, has_text: bool, context: str | None, new_context: str
) -> bool:
    """New saved context for a link whose page gave no article: its note is due again."""
    renewable = kind is ItemKind.LINK and (quality is not None or not has_text)
    return renewable and new_context not in (context or "")


PROMPT_FILE_MARK = "+file-"  # a prompt version ends so with the hash of [llm] prompt_file


def renote_for_model(item: Item, model: str, prompt_version: str, *, refresh: bool = False) -> bool:
    """Noted by another model or prompt version: noted again when a digest needs it. A
    change of the prompt file alone applies to new notes, and to old ones on `refresh`."""
    if item.note is None:
        return False
    if refresh:
        return (item.note.model, item.note.prompt_version) != (model, prompt_version)
    built_in = _built_in(item.note.prompt_version)
    return (item.note.model, built_in) != (model, _built_in(prompt_version))


def _built_in(prompt_version: str) -> str:
    return prompt_version.split(PROMPT_FILE_MARK)[0]


@dataclass(frozen=True)
class NoteAttempts:
    """What the note attempts for one note key came to, over every item that has that key."""

    sends: int = 0  # requests sent (answered, timed out or failed): none gave a note
    failures: int = 0  # failed attempts in a row
    next_attempt_at: datetime | None = None


def note_calls_left(attempts: NoteAttempts, max_attempts: int, now: datetime) -> int:
    """How many LLM calls a note may still take now: none while a failed attempt waits out
    its backoff, none once `max_attempts` requests were sent for its key."""
    if not is_due(attempts.next_attempt_at, now):
        return 0
    return max(max_attempts - attempts.sends, 0)


@dataclass(frozen=True)
class NoteAttached:
    """Make `note` the item's note; a final one ends the note attempts, a stand-in (not
    final) leaves the item due for another note."""

    item_id: int
    cache_key: str
    note: Note
    at: datetime
    state: ItemState
    final: bool
    usage: Usage | None = None


@dataclass(frozen=True)
class NoteFailed:
    """A failed note attempt for `note_key`, recorded on every item that shares its text."""

    item_ids: tuple[int, ...]
    note_key: str
    sends: int  # requests sent for the key so far (each may have been paid for)
    failures: int  # in a row
    error: str
    next_attempt_at: datetime | None  # None: no attempt left (llm.max_attempts sent)


def note_attached(
    item: Item,
    cache_key: str,
    note: Note,
    now: datetime,
    *,
    final: bool,
    usage: Usage | None = None,
) -> NoteAttached:
    on_text = final and (item.state is ItemState.FETCHED or item.kind is not ItemKind.LINK)
    event = Event.NOTED_ON_TEXT if on_text else Event.NOTED_ON_CONTEXT
    return NoteAttached(item.id, cache_key, note, now, next_state(item.state, event), final, usage)


def note_failed(
    item_ids: Iterable[int],
    note_key: str,
    before: NoteAttempts,
    sends: int,
    error: str,
    now: datetime,
    max_attempts: int,
) -> NoteFailed:
    """After `before`, one more failed attempt that sent `sends` requests to the model; the
    next one after a backoff, if `max_attempts` leaves one."""
    failures, total = before.failures + 1, before.sends + sends
    delay = backoff_delay(failures, base_s=NOTE_RETRY_BASE_S, max_s=NOTE_RETRY_MAX_S)
    next_at = now + delay if total < max_attempts else None
    return NoteFailed(tuple(item_ids), note_key, total, failures, error, next_at)
