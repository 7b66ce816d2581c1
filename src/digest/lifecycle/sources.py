"""A source's polls (a feed read, checked, failed), the user's edits of sources, and a
mail source's letters, each read once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from digest.lifecycle.states import Backoff, Event, next_attempt_at, next_state
from digest.models import ItemState, SavedItem, SourceStatus


@dataclass(frozen=True)
class FeedPolled:
    """A feed was read (or not modified): its entries and cache validators are saved
    together and its failures forgotten; `error` says why it was read only in part."""

    source_id: int
    entries: tuple[SavedItem, ...]
    url: str
    etag: str | None
    last_modified: str | None
    at: datetime
    status: SourceStatus
    error: str | None = None
    skipped: int | None = None  # entries without a link; None: not read (not modified)
    site: str | None = None  # the feed's web page, when it names one
    # New episodes' transcripts by item key: each item takes its text as a fetched page's.
    texts: tuple[tuple[str, str], ...] = ()
    text_state: ItemState = ItemState.FETCHED


def feed_polled(
    source_id: int,
    entries: Iterable[SavedItem],
    now: datetime,
    *,
    url: str,
    etag: str | None,
    last_modified: str | None,
    gone: bool = False,
    partial: str | None = None,
    skipped: int | None = None,
    site: str | None = None,
    texts: Mapping[str, str] | None = None,
) -> FeedPolled:
    status = SourceStatus.GONE if gone else SourceStatus.PARTIAL if partial else SourceStatus.OK
    return FeedPolled(
        source_id,
        tuple(entries),
        url,
        etag,
        last_modified,
        now,
        status,
        partial,
        skipped,
        site,
        tuple((texts or {}).items()),
        next_state(ItemState.NEW, Event.FETCHED),
    )


@dataclass(frozen=True)
class SourceChecked:
    """A source was read without a problem: its failures are forgotten."""

    source_id: int
    at: datetime


@dataclass(frozen=True)
class SourceFailed:
    """A source could not be read: the failure is counted, and it is tried again at
    `next_attempt_at` (None: at the next run)."""

    source_id: int
    error: str
    at: datetime
    next_attempt_at: datetime | None = None


def feed_failed(
    source_id: int,
    failures_before: int,
    error: str,
    now: datetime,
    backoff: Backoff,
    *,
    retry_after_s: float | None = None,
    permanent: bool = False,
) -> SourceFailed:
    """A feed is never given up, only slowed down: past its attempts, it waits the longest."""
    when = next_attempt_at(
        failures_before + 1, now, backoff, retry_after_s=retry_after_s, permanent=permanent
    ) or now + timedelta(seconds=backoff.max_s)
    return SourceFailed(source_id, error, now, when)


@dataclass(frozen=True)
class SourcePaused:
    """Paused: not collected until resumed (`paused` False)."""

    source_id: int
    paused: bool


@dataclass(frozen=True)
class SourceRenamed:
    source_id: int
    name: str


@dataclass(frozen=True)
class SourceRemoved:
    """No longer listed or polled; its items keep their source."""

    source_id: int
    at: datetime


SourceIntent = SourceChecked | SourceFailed | SourcePaused | SourceRenamed | SourceRemoved


@dataclass(frozen=True)
class LetterRead:
    """A letter from a mail source, read once: the items it gave (its stories, or itself),
    the newsletter they were in, and for a letter kept whole its text, which the letter's
    item takes as a fetched page's (it is never fetched); then never read again."""

    source_id: int
    letter_key: str  # its Message-ID
    newsletter: str
    items: tuple[SavedItem, ...]
    text: str | None  # the letter's own text, for its one item
    at: datetime
    state: ItemState  # of the letter's own item, its text in hand


def letter_read(
    source_id: int,
    letter_key: str,
    newsletter: str,
    items: Iterable[SavedItem],
    text: str | None,
    now: datetime,
) -> LetterRead:
    state = next_state(ItemState.NEW, Event.FETCHED)
    return LetterRead(source_id, letter_key, newsletter, tuple(items), text, now, state)
