"""What the store's status and bookkeeping queries return: typed read models, never rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SourceListing:
    """A source as `digest sources list` and status show it."""

    name: str
    kind: str
    origin: str
    location: str | None
    status: str | None
    last_error: str | None
    failures: int
    last_checked_at: str | None
    items: int


@dataclass(frozen=True)
class ImportedFeed:
    """A feed source added from a feed list, not declared in the config."""

    id: int
    name: str
    url: str
    topic: str | None
    origin: str
    paused: bool = False
    html_url: str | None = None  # the feed's site, as its OPML outline gave it


@dataclass(frozen=True)
class ManagedSource:
    """A source in the store, as `digest sources pause|remove|rename` change it."""

    id: int
    name: str
    kind: str
    origin: str
    paused: bool


@dataclass(frozen=True)
class FileState:
    """What a file source was when last read (see collect/inbox.py)."""

    path: str
    size: int
    mtime_ns: int
    inode: int | None
    device: int | None
    checked_ns: int
    fingerprint: str
    lines_read: int
    updated_at: str
    held: int = 0  # bytes of an unfinished last line not read yet (after `size`)


@dataclass(frozen=True)
class ItemToLookAt:
    """A failed item, one whose note failed, or one whose page was no article, for status."""

    id: int
    url: str | None
    state: str
    quality: str | None
    read_at: str | None
    attempts: int
    next_attempt_at: str | None
    error: str | None
    error_kind: str | None  # an errors.FailureKind
    error_status: int | None
    note_attempts: int  # model calls for its current text
    note_next_attempt_at: str | None
    note_error: str | None  # why its note is a stand-in, until the model's comes
    sources: tuple[str, ...]


@dataclass(frozen=True)
class LLMTotals:
    """LLM calls, tokens and cost, over everything or one group (a run, week or model)."""

    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float


@dataclass(frozen=True)
class LLMUsageBy:
    """LLM totals per run id, per ISO week label and per model, newest or costliest first."""

    runs: tuple[tuple[int, LLMTotals], ...]
    weeks: tuple[tuple[str, LLMTotals], ...]
    models: tuple[tuple[str, LLMTotals], ...]


@dataclass(frozen=True)
class RunRecord:
    """One run of a command, as the runs table keeps it."""

    id: int
    command: str
    started_at: str
    finished_at: str | None
    status: str
    stats: dict[str, Any]  # the run's own JSON document, as it was saved
