"""What every summariser takes and gives: the request, the protocol, the record of an LLM call."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Protocol

from digest.models import Note, NoteBasis


@dataclass(frozen=True)
class NoteRequest:
    """One item to summarise: `text` is the page, or what was saved with it (see `basis`)."""

    item_id: int
    title: str | None
    url: str | None
    text: str
    basis: NoteBasis
    known_tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallRecord:
    """One LLM call, successful or not, for the llm_calls table."""

    model: str
    purpose: str  # "note", "note-repair", "week-summary"
    tokens_in: int
    tokens_out: int
    duration_s: float
    ok: bool


class Summarizer(Protocol):
    model: str
    prompt_version: str

    async def note(self, request: NoteRequest) -> Note:
        """A note on one item; raises SummarizeError (or LLMUnavailable to stop the stage)."""
        ...

    async def week_summary(self, period_label: str, notes: list[tuple[int, str, Note]]) -> str:
        """Markdown prose on the themes of (item_id, title, note) triples, citing items as [id]."""
        ...

    async def aclose(self) -> None:
        """Release connections; the summariser must not be used afterwards."""
        ...


def note_cache_key(text: str, summarizer: Summarizer) -> str:
    """The same text through the same model and prompt gives the same key."""
    text_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    payload = json.dumps([text_hash, summarizer.model, summarizer.prompt_version])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
