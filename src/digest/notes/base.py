"""What every summariser takes and gives: the request, the protocol, the record of an LLM call."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Protocol

from digest.models import Note, NoteBasis, WeekSummary

# The longest key point of any note: a model's longer point is cut to it, and a longer
# sentence is no point for the offline summariser (which never cuts one).
MAX_KEY_POINT_CHARS = 200


@dataclass(frozen=True)
class NoteRequest:
    """One item to summarise: `text` is the page, or what was saved with it (see `basis`)."""

    item_id: int
    title: str | None
    url: str | None
    text: str
    basis: NoteBasis
    known_tags: tuple[str, ...] = ()
    # content stems of the other articles noted in the same run: a note must not be about them
    others: tuple[frozenset[str], ...] = ()


@dataclass(frozen=True)
class CallRecord:
    """One LLM call, successful or not, for the llm_calls table."""

    model: str
    purpose: str  # "note", "note-repair", "week-summary", "week-summary-repair"
    tokens_in: int
    tokens_out: int
    duration_s: float
    ok: bool
    cost_usd: float = 0.0
    item_id: int | None = None  # None for the week summary
    # the request reached the server, which may have worked on it (a timeout, a 5xx): it
    # counts against llm.max_attempts; not when nothing listened, when it was refused before
    # any work (429, 401/403/404), or when it only named a parameter the server does not take
    # and the request was changed and sent again
    sent: bool = True


class Summarizer(Protocol):
    model: str
    summary_model: str  # the week summary's
    prompt_version: str

    async def note(self, request: NoteRequest, *, calls_allowed: int | None = None) -> Note:
        """A note on one item in at most `calls_allowed` requests sent (each retry and the
        repair is one, see CallRecord.sent; None: llm.max_retries retries and one repair);
        raises UnusableAnswer when the model answered nothing usable, another SummarizeError
        when it could not answer, LLMUnavailable to stop the stage."""
        ...

    async def week_summary(
        self, period_label: str, notes: list[tuple[int, str, Note]]
    ) -> WeekSummary:
        """Themes of (item_id, title, note) triples, each statement citing item ids."""
        ...

    def planned_tokens(self, request: NoteRequest) -> int | None:
        """Input tokens the note's call would take; None if it makes no LLM call."""
        ...

    def planned_week_tokens(self, note_count: int) -> int | None:
        """Input tokens of a week summary over that many notes, at most; None: no LLM call."""
        ...

    def take_problems(self) -> list[str]:
        """The prompt files that failed since the last call (one line each): the built-in
        prompt stood in for them."""
        ...

    async def aclose(self) -> None:
        """Release connections; the summariser must not be used afterwards."""
        ...


def note_cache_key(text: str, summarizer: Summarizer, *, model: str | None = None) -> str:
    """The same text through the same model and prompt gives the same key."""
    text_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    payload = json.dumps([text_hash, model or summarizer.model, summarizer.prompt_version])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
