"""The life of an item, decided in one place on plain data (after lemon24/reader's update
"decider"): what is due for a fetch or a note at `now`, what an outcome changes, and what a
week shows; and the same for a source's polls and a digest's deliveries. The reader's
marks (read, starred), edits of sources and what the collect stage saw of each file are
intents too, so that every state change is one the store applies as told. Nothing here reads
the time, a file or the database: the stages pass the items and `now` in and hand the
intents returned to the store, which applies them as told.

States move only along TRANSITIONS:

    any state  --fetched-->           fetched   (a page came back, article or not)
    any state  --fetch failed-->      failed    (retried with backoff, or given up)
    fetched    --noted on text-->     noted     (notes and posts: from new as well)
    noted      --links followed-->    fetched   (a post's note is due again)
    a note from saved context only (a link not read) leaves the state as it is.

A page that was no article (a Quality) is `fetched` with a next attempt: it is checked again
with backoff. A failed fetch is retried with backoff until `max_attempts` (fewer for a
permanent error); a failed item with no next attempt is given up and keeps its note.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from digest.errors import FailureKind
from digest.models import WALLS as WALLS
from digest.models import (
    DeliveryStatus,
    Extracted,
    FileReading,
    Item,
    Note,
    Period,
    SavedItem,
    SourceStatus,
    Usage,
)
from digest.models import ItemKind as ItemKind
from digest.models import ItemState as ItemState
from digest.models import NoteBasis as NoteBasis
from digest.models import Quality as Quality


class Event(StrEnum):
    """What happens to an item; TRANSITIONS says which state it leads to."""

    FETCHED = "fetched"  # a page came back and was extracted (an article or not)
    FETCH_FAILED = "fetch failed"
    NOTED_ON_TEXT = "noted on text"  # a final note from the item's own text
    NOTED_ON_CONTEXT = "noted on context"  # a note from what was saved with a link not read
    LINKS_FOLLOWED = "links followed"  # a post's links were read: its note is due again


_S, _E = ItemState, Event
TRANSITIONS: Final[Mapping[tuple[ItemState, Event], ItemState]] = {
    (_S.NEW, _E.FETCHED): _S.FETCHED,
    (_S.FETCHED, _E.FETCHED): _S.FETCHED,
    (_S.FAILED, _E.FETCHED): _S.FETCHED,
    (_S.NOTED, _E.FETCHED): _S.FETCHED,
    (_S.NEW, _E.FETCH_FAILED): _S.FAILED,
    (_S.FETCHED, _E.FETCH_FAILED): _S.FAILED,
    (_S.FAILED, _E.FETCH_FAILED): _S.FAILED,
    (_S.NOTED, _E.FETCH_FAILED): _S.FAILED,
    (_S.NEW, _E.NOTED_ON_TEXT): _S.NOTED,  # notes and posts: their text came with them
    (_S.FETCHED, _E.NOTED_ON_TEXT): _S.NOTED,
    (_S.NOTED, _E.NOTED_ON_TEXT): _S.NOTED,
    (_S.FAILED, _E.NOTED_ON_TEXT): _S.NOTED,
    (_S.NEW, _E.NOTED_ON_CONTEXT): _S.NEW,
    (_S.FETCHED, _E.NOTED_ON_CONTEXT): _S.FETCHED,
    (_S.FAILED, _E.NOTED_ON_CONTEXT): _S.FAILED,
    (_S.NOTED, _E.NOTED_ON_CONTEXT): _S.NOTED,
    (_S.NEW, _E.LINKS_FOLLOWED): _S.NEW,
    (_S.FETCHED, _E.LINKS_FOLLOWED): _S.FETCHED,
    (_S.FAILED, _E.LINKS_FOLLOWED): _S.FAILED,
    (_S.NOTED, _E.LINKS_FOLLOWED): _S.FETCHED,
}


def next_state(state: ItemState, event: Event) -> ItemState:
    return TRANSITIONS[state, event]


# -- retries -------------------------------------------------------------------

PERMANENT_FAILURE_LIMIT = 3  # a 404 may be a passing mistake; three in a row is not
NOTE_RETRY_BASE_S = 1800.0  # a failed note is asked for again after 30 min, then 1 h … 1 day
NOTE_RETRY_MAX_S = 86400.0


@dataclass(frozen=True)
class Backoff:
    """base, 2×base, 4×base … capped at max_s; given up after max_attempts in a row."""

    base_s: float
    max_s: float
    max_attempts: int


def backoff_delay(failures: int, *, base_s: float, max_s: float) -> timedelta:
    """base, 2×base, 4×base … capped; `failures` counts this one too."""
    return timedelta(seconds=min(base_s * 2 ** max(failures - 1, 0), max_s))


def next_attempt_at(
    failures: int,
    now: datetime,
    backoff: Backoff,
    *,
    retry_after_s: float | None = None,
    permanent: bool = False,
) -> datetime | None:
    """When to try again after the `failures`-th failure in a row, or None to give up."""
    limit = (
        min(PERMANENT_FAILURE_LIMIT, backoff.max_attempts) if permanent else backoff.max_attempts
    )
    if failures >= limit:
        return None
    delay = backoff_delay(failures, base_s=backoff.base_s, max_s=backoff.max_s)
    if retry_after_s is not None:
        delay = max(delay, timedelta(seconds=min(retry_after_s, backoff.max_s)))
    return now + delay


def is_due(next_attempt: datetime | None, now: datetime) -> bool:
    return next_attempt is None or next_attempt <= now


# -- fetching ----------------------------------------------------------------------

# The states the store reads fetch candidates in, besides items with a next attempt set.
FETCH_STATES: Final = (ItemState.NEW, ItemState.FAILED)


def due_for_fetch(item: Item, now: datetime, *, retry: bool = False) -> bool:
    """A link not fetched yet, whose last fetch failed and is due again, or whose page was
    no article (a wall, a stub) and is due to be checked again; with `retry`, every failed
    one now, whatever its backoff (the user asked)."""
    if item.kind is not ItemKind.LINK or item.url is None:
        return False
    recheck = item.quality is not None and item.next_attempt_at is not None
    if item.state not in FETCH_STATES and not recheck:
        return False
    return retry or (not item.gave_up and is_due(item.next_attempt_at, now))


def items_due_for_fetch(items: Iterable[Item], now: datetime, *, retry: bool = False) -> list[Item]:
    return [item for item in items if due_for_fetch(item, now, retry=retry)]


@dataclass(frozen=True)
class FetchSucceeded:
    """Store the page's text; a page that was no article is checked again at next_attempt_at."""

    item_id: int
    extracted: Extracted
    text_hash: str
    at: datetime
    state: ItemState
    next_attempt_at: datetime | None


@dataclass(frozen=True)
class FetchFailed:
    """Keep the item, count the attempt; no next attempt means fetching it is given up."""

    item_id: int
    error: str
    state: ItemState
    next_attempt_at: datetime | None
    kind: FailureKind = FailureKind.OTHER
    status: int | None = None  # the HTTP status, for FailureKind.HTTP


def fetch_succeeded(
    item: Item,
    extracted: Extracted,
    text_hash: str,
    now: datetime,
    backoff: Backoff,
    *,
    item_id: int | None = None,
) -> FetchSucceeded:
    """The page came back: a page that was no article is fetched again later, with backoff
    counted over the item's attempts. `item_id` when the page went to another item (a
    shortened link merged into the item saved at its target)."""
    recheck = next_attempt_at(item.attempts + 1, now, backoff) if extracted.quality else None
    return FetchSucceeded(
        item_id=item.id if item_id is None else item_id,
        extracted=extracted,
        text_hash=text_hash,
        at=now,
        state=next_state(item.state, Event.FETCHED),
        next_attempt_at=recheck,
    )


def fetch_failed(
    item: Item,
    error: str,
    now: datetime,
    backoff: Backoff,
    *,
    retry_after_s: float | None = None,
    permanent: bool = False,
    final: bool = False,
    kind: FailureKind = FailureKind.OTHER,
    status: int | None = None,
) -> FetchFailed:
    """The fetch failed: retried with backoff (at least what the server asked), or given up
    (at once when `final`: what was there is not worth fetching again)."""
    when = (
        None
        if final
        else next_attempt_at(
            item.failures + 1, now, backoff, retry_after_s=retry_after_s, permanent=permanent
        )
    )
    state = next_state(item.state, Event.FETCH_FAILED)
    return FetchFailed(item.id, error, state, when, kind, status)


@dataclass(frozen=True)
class LinksFollowed:
    """Store where a post's links led and what those pages said (`error`: why some could
    not be read), in the post's next state."""

    item_id: int
    links: tuple[str, ...]
    linked_text: str | None
    error: str | None
    at: datetime
    state: ItemState


def links_followed(
    post: Item, links: Iterable[str], linked_text: str | None, error: str | None, now: datetime
) -> LinksFollowed:
    """A post whose links were followed: noted before, its note is due again."""
    state = next_state(post.state, Event.LINKS_FOLLOWED)
    return LinksFollowed(post.id, tuple(links), linked_text, error, now, state)


# -- notes ---------------------------------------------------------------------------

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


# -- sources -----------------------------------------------------------------------


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


# -- letters ---------------------------------------------------------------------------


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


# -- file readings -------------------------------------------------------------------


@dataclass(frozen=True)
class FileSeen:
    """What a file was when last read: its stat, the wall-clock time of that stat, the
    SHA-256 of the `size` bytes read, how many complete lines they had, and how many bytes
    of an unfinished last line were held back after them."""

    path: str
    size: int
    mtime_ns: int
    inode: int
    device: int
    checked_ns: int
    fingerprint: str
    lines_read: int
    at: datetime
    held: int = 0


@dataclass(frozen=True)
class ReadingEnded:
    """All the items of a reading of `path` are saved: it is the file's reading now, and
    the items only an earlier reading in another format gave are removed."""

    path: str
    reading: FileReading
    source_id: int
    at: datetime


@dataclass(frozen=True)
class ReadingVoided:
    """The file changed while it was read: what that reading gave is replaced by the next."""

    path: str


@dataclass(frozen=True)
class FilesGone:
    """Files no longer there: their states, readings and lines are forgotten (their items
    stay saved: a file leaving the inbox unsaves nothing)."""

    paths: tuple[str, ...]


FileIntent = FileSeen | ReadingEnded | ReadingVoided | FilesGone


# -- deliveries ----------------------------------------------------------------------


@dataclass(frozen=True)
class DeliveryBegun:
    """A channel's delivery of one content, recorded as pending (and committed) before the
    attempt, whatever it was before: a run that dies during the attempt leaves a record
    that is never resent on its own."""

    period: str
    channel: str
    content_hash: str
    at: datetime


@dataclass(frozen=True)
class DeliveryEnded:
    """What the attempt came to."""

    delivery_id: int
    status: DeliveryStatus
    at: datetime
    error: str | None = None
    message_id: str | None = None


# -- the reader's marks -----------------------------------------------------------


@dataclass(frozen=True)
class ItemRead:
    """The reader read an item (`digest read`): the first time counts."""

    ref: int | str  # the item's id, or its URL in any of its forms
    at: datetime


def item_read(ref: str, now: datetime) -> ItemRead:
    """`ref` as `digest read` takes it: an id (digits) or a URL."""
    return ItemRead(int(ref) if ref.isdigit() else ref, now)


@dataclass(frozen=True)
class ItemStarred:
    """Star (or, `starred` False, unstar) an item: the ranking learns from stars."""

    item_id: int
    at: datetime
    starred: bool = True


# -- the week ----------------------------------------------------------------------


def in_week(item: Item, period: Period) -> bool:
    """A week shows the items saved in it, noted or not."""
    return period.start <= item.saved_at < period.end


def why_no_note(item: Item, *, page_unread: bool = False, reason: str | None = None) -> str:
    """Why an item is shown without a note from its page: `page_unread` when its note only
    stands in for a page that was not read, for `reason` (host unreachable, paywalled…)."""
    if item.state is ItemState.NEW and item.url and item.note is None:
        return "page not fetched"
    if item.state is ItemState.FAILED or page_unread:
        return f"page not fetched ({reason})" if reason else "page not fetched"
    return "waiting for a note (the LLM was unavailable or the budget spent)"


# -- highlights ------------------------------------------------------------------------

RESURFACE_WEEKS: Final = (1, 3, 8, 21, 55)  # after saving: a spaced schedule, as for recall
RESURFACED_PER_WEEK: Final = 3


def resurfacing_due(
    highlighted_at: datetime, shown_at: datetime | None, read_at: datetime | None, now: datetime
) -> datetime | None:
    """When the highlight's latest step up to `now` came (RESURFACE_WEEKS after it was
    saved), if it has not been shown since; None when it is not due, or when its item was
    read after it was saved (it is fresh in mind)."""
    if read_at is not None and read_at > highlighted_at:
        return None
    steps = [highlighted_at + timedelta(weeks=weeks) for weeks in RESURFACE_WEEKS]
    reached = [step for step in steps if step <= now]
    if not reached or (shown_at is not None and shown_at >= reached[-1]):
        return None
    return reached[-1]
