"""Plain frozen records passed between the pipeline stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Final

from digest.errors import FailureKind
from digest.urls import for_display

# The item lifecycle's states and what a page can be (lifecycle/ decides the moves)


class ItemKind(StrEnum):
    LINK = "link"  # a URL to fetch and summarise
    NOTE = "note"  # text the user saved without a URL
    POST = "post"  # a saved post: its text is the content, its links are context
    NEWSLETTER = "newsletter"  # a letter from the mailbox: its text came with it, no fetch


class ItemState(StrEnum):
    NEW = "new"  # collected, not fetched yet
    FETCHED = "fetched"  # text extracted, no note from it yet
    FAILED = "failed"  # last fetch failed; retried later with backoff
    NOTED = "noted"  # has a note made from its full text


class NoteBasis(StrEnum):
    FULL_TEXT = "full text"
    EXCERPT = "excerpt"  # part of the text: a long page condensed to its central passages
    SAVED_CONTEXT = "saved context"  # title, journal line, feed summary: the page was not read
    POST_TEXT = "post text"


class Quality(StrEnum):
    """What a fetched page was instead of the article (Extracted.quality, Item.quality)."""

    BLOCKED = "blocked"
    CONSENT = "consent"
    LOGIN = "login"
    PAYWALLED = "paywalled"
    THIN = "thin"


# Pages in front of the article: their title names the wall ("Before you continue"), not it
WALLS: Final = frozenset({Quality.BLOCKED, Quality.CONSENT, Quality.LOGIN, Quality.PAYWALLED})


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
    transcript: str | None = None  # a podcast episode's transcript, read at collect


@dataclass(frozen=True)
class Highlight:
    """A passage the user highlighted, with the note they wrote beside it (collect/highlights.py)."""

    text: str
    item: SavedItem  # the page or book it is from
    note: str | None = None
    location: str | None = None
    highlighted_at: datetime | None = None
    line: int | None = None


@dataclass(frozen=True)
class StoredHighlight:
    """A highlight as stored, with what the digest says of its item."""

    id: int
    item_id: int
    text: str
    note: str | None
    highlighted_at: datetime
    source: str  # the item's title: the book or the page it is from
    url: str | None
    shown_week: str | None
    shown_at: datetime | None
    read_at: datetime | None  # the item's


@dataclass(frozen=True)
class Rejected:
    """A line or entry an importer could not understand; reported, never silently dropped."""

    line: int | None
    text: str
    reason: str


@dataclass(frozen=True)
class FileReading:
    """How a file is read: its format, whether its content made that clear (a clear reading
    is kept as the file grows), and why, in words for the import report."""

    format: str
    clear: bool
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
    features: TextFeatures | None = None  # what compose reads of the item with this page


@dataclass(frozen=True)
class TextFeatures:
    """What compose reads of an item's text, computed once (features.py) and stored:
    no compose tokenises a page again. Arrays as bytes, so this module needs no numpy."""

    text_hash: str  # of the text they were computed from (and of how): stale when it changes
    tokens: int  # WordLlama tokens in the text
    vector: bytes  # float32: the sum of their embeddings (the mean is what the text is about)
    terms: bytes  # int64, ascending: hashes of its content words (text.words) ...
    counts: bytes  # int32: ... and how often each is used
    phrases: bytes  # int64, ascending: hashes of the words and pairs that may name a section


# The model name of what the built-in (offline) summariser writes: notes and week summaries.
OFFLINE_MODEL: Final = "offline"


@dataclass(frozen=True)
class Note:
    summary: str
    key_points: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    basis: NoteBasis = NoteBasis.FULL_TEXT
    model: str = OFFLINE_MODEL
    prompt_version: str = ""

    @property
    def extractive(self) -> bool:
        """Sentences picked from the text by the offline summariser, not written by a model."""
        return self.prompt_version.startswith("extractive")

    @property
    def by_model(self) -> bool:
        """Written by a language model, not the offline summariser."""
        return self.model != OFFLINE_MODEL and not self.extractive


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
class ModelUsage:
    """Notes (or the week summary) made by one model with one prompt, and what they cost."""

    model: str
    prompt_version: str
    count: int
    usage: Usage


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
    model: str = OFFLINE_MODEL


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
    read_at: datetime | None = None  # marked read with `digest read`
    note_key: str | None = None  # the note cache key the note attempts below were for
    note_attempts: int = 0  # requests sent for note_key, over all runs (llm.max_attempts)
    note_failures: int = 0  # failed note attempts in a row: what the backoff counts
    note_error: str | None = None
    note_next_attempt_at: datetime | None = None
    language: str | None = None  # the page's, as extracted ("en", "de-AT")
    error_kind: FailureKind | None = None  # what kind of failure `error` was (None: before m024)
    error_status: int | None = None  # its HTTP status
    features: TextFeatures | None = None  # of features.feature_text(item), when stored
    newsletters: tuple[str, ...] = ()  # the letters it came in: "Changelog Weekly"
    words: int | None = None  # of the whole page's text (the store counts them); None: no text

    @property
    def gave_up(self) -> bool:
        """A failed item with no next attempt: fetching it was given up; it keeps its note."""
        return self.state is ItemState.FAILED and self.next_attempt_at is None

    @property
    def page_title(self) -> str | None:
        """The fetched page's own title; never a wall's ("Sign in to continue reading")."""
        return None if self.quality in WALLS else self.extracted_title

    @property
    def display_title(self) -> str:
        shown_url = for_display(self.url) if self.url else None  # the title of last resort
        return self.title or self.page_title or shown_url or (self.context or "")[:80]


@dataclass(frozen=True)
class FeedState:
    """What we remember about a feed between polls."""

    source_id: int
    url: str
    etag: str | None = None
    last_modified: str | None = None
    gone: bool = False
    skipped: int = 0  # entries without a link when the feed was last read


class SourceStatus(StrEnum):
    """How a source stood when last read (`digest sources`, `digest status`)."""

    OK = "ok"
    PARTIAL = "partial"  # a feed read in part: its error says why
    GONE = "gone"  # a feed answered 410: no longer polled
    FAILING = "failing"  # tried again at its next attempt


class DeliveryStatus(StrEnum):
    """Where one channel's delivery of one digest content stands (deliver/outbox.py)."""

    PENDING = "pending"  # recorded before the attempt: a run that died leaves it so
    SENT = "sent"
    UNKNOWN = "unknown"  # a send whose outcome cannot be known: never resent on its own
    FAILED = "failed"  # retried by a later run
    REJECTED = "rejected"  # refused for good (a 5xx reply): only `digest resend` sends it


@dataclass(frozen=True)
class Period:
    """An ISO week in the configured time zone, with its bounds as aware datetimes."""

    label: str  # "2026-W47"
    start: datetime
    end: datetime  # exclusive


class Stage(StrEnum):
    """The pipeline's stages, in order: the CLI runs them, progress lines and run records
    name them."""

    COLLECT = "collect"
    FETCH = "fetch"  # fetch and extract
    NOTES = "notes"
    DRAFT = "draft"  # compose the period's file only, no delivery
    DELIVER = "deliver"  # compose and deliver


@dataclass
class StageReport:
    """What one stage did: a count, and a one-line message per failure, for the CLI and the runs table."""

    stage: Stage
    part: str | None = field(default=None, kw_only=True)  # "feeds", "files": of the stage
    done: int = 0
    failures: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)  # news worth a line: "feed X is gone (410)"
    # units that failed, when `failures` says it in fewer lines ("no network: 6 pages left")
    failed_units: int | None = field(default=None, kw_only=True)
    # saves a source could not read this run (a folder that cannot be listed, a file that
    # cannot be read): the run needs attention (exit 3)
    left_behind: int = field(default=0, kw_only=True)
    offline: bool = field(default=False, kw_only=True)  # no network: nothing could be fetched
    left: int = field(default=0, kw_only=True)  # not tried for want of a network: not failed

    @property
    def failed(self) -> int:
        return len(self.failures) if self.failed_units is None else self.failed_units

    @property
    def counts(self) -> str:
        """ "3 done, 1 failed", and what a run without a network left: "…, 5 left for later
        (offline)"."""
        left = f", {self.left} left for later (offline)" if self.left else ""
        return f"{self.done} done, {self.failed} failed{left}"

    @property
    def name(self) -> str:
        """ "collect feeds", "fetch": what the CLI and the runs table call it."""
        return f"{self.stage} {self.part}" if self.part else str(self.stage)
