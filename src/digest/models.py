"""Plain frozen records passed between the pipeline stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class ItemKind(StrEnum):
    LINK = "link"  # a URL to fetch and summarise
    NOTE = "note"  # text the user saved without a URL
    POST = "post"  # a saved post: its text is the content, its links are context


class ItemState(StrEnum):
    NEW = "new"  # collected, not fetched yet
    FETCHED = "fetched"  # text extracted, no note yet
    FAILED = "failed"  # last fetch failed; retried later with backoff
    NOTED = "noted"  # has a note made from its full text


class NoteBasis(StrEnum):
    FULL_TEXT = "full text"
    EXCERPT = "excerpt"  # part of the text: a long page condensed to its central passages
    SAVED_CONTEXT = "saved context"  # title, journal line, feed summary: the page was not read
    POST_TEXT = "post text"


@dataclass(frozen=True)
class SavedItem:
    """What a collector or importer found: one link, note or post, not yet stored."""

    url: str | None
    title: str | None = None
    saved_at: datetime | None = None  # aware; None means "when first collected"
    topic: str | None = None
    context: str | None = None  # text saved with it: journal line, feed summary, post text
    kind: ItemKind = ItemKind.LINK
    links: tuple[str, ...] = ()  # links found inside a post
    line: int | None = None  # where in the file it came from, for reports
    # The store's key when the URL cannot be one: a feed entry whose link other entries
    # of the feed share (a podcast's home page), keyed by its guid or enclosure.
    key: str | None = None


@dataclass(frozen=True)
class Rejected:
    """A line or entry an importer could not understand; reported, never silently dropped."""

    line: int | None
    text: str
    reason: str


@dataclass(frozen=True)
class Extracted:
    """Text and metadata an extractor got out of a fetched page."""

    text: str
    title: str | None = None
    author: str | None = None
    published: str | None = None
    language: str | None = None
    extractor: str = "trafilatura"
    final_url: str | None = None
    quality: str | None = None  # not the article: blocked, consent, login, paywalled, thin


@dataclass(frozen=True)
class Note:
    summary: str
    key_points: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    basis: NoteBasis = NoteBasis.FULL_TEXT
    model: str = "offline"
    prompt_version: str = ""

    @property
    def extractive(self) -> bool:
        """Sentences picked from the text by the offline summariser, not written by a model."""
        return self.prompt_version.startswith("extractive")


@dataclass(frozen=True)
class Usage:
    """Tokens and cost of the LLM calls behind a note or a week summary."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.tokens_in + other.tokens_in,
            self.tokens_out + other.tokens_out,
            self.cost_usd + other.cost_usd,
        )


@dataclass(frozen=True)
class Statement:
    """One claim of the week summary and the ids of the items it rests on."""

    text: str
    cites: tuple[int, ...]


@dataclass(frozen=True)
class WeekSummary:
    """Themes and connections (each statement citing items), then the few must-reads."""

    statements: tuple[Statement, ...]
    must_read: tuple[int, ...] = ()
    model: str = "offline"


@dataclass(frozen=True)
class Item:
    """An item as stored."""

    id: int
    key: str  # the normalised URL, or "note:<hash>" for items without one
    url: str | None  # the URL as the user saved it (shown in the digest)
    title: str | None
    kind: ItemKind
    saved_at: datetime
    topic: str | None
    context: str | None
    state: ItemState
    attempts: int
    error: str | None
    next_attempt_at: datetime | None
    text: str | None
    sources: tuple[str, ...] = ()
    note: Note | None = None
    extracted_title: str | None = None
    quality: str | None = None  # the last fetch was no article (see Extracted.quality)
    links: tuple[str, ...] = ()  # a post's links; where they led, once followed
    linked_text: str | None = None  # a post's linked pages: "Linked: title — first paragraph"
    failures: int = 0  # failed fetches in a row: what the retry policy counts

    @property
    def gave_up(self) -> bool:
        """A failed item with no next attempt: fetching it was given up; it keeps its note."""
        return self.state is ItemState.FAILED and self.next_attempt_at is None

    @property
    def display_title(self) -> str:
        return self.title or self.extracted_title or self.url or (self.context or "")[:80]


@dataclass(frozen=True)
class FeedState:
    """What we remember about a feed between polls."""

    source_id: int
    url: str
    etag: str | None = None
    last_modified: str | None = None
    gone: bool = False


@dataclass(frozen=True)
class Period:
    """An ISO week in the configured time zone, with its bounds as aware datetimes."""

    label: str  # "2026-W47"
    start: datetime
    end: datetime  # exclusive


@dataclass
class StageReport:
    """What one stage did: a count, and a one-line message per failure, for the CLI and the runs table."""

    stage: str
    done: int = 0
    failures: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)  # news worth a line: "feed X is gone (410)"
