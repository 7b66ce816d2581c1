"""The life of an item, decided in one place on plain data (after lemon24/reader's update
"decider"): what is due for a fetch or a note at `now`, what an outcome changes, and what a
week shows; and the same for a source's polls and a digest's deliveries. The reader's
marks (read, starred), edits of sources and what the collect stage saw of each file are
intents too, so that every state change is one the store applies as told. Nothing here reads
the time, a file or the database: the stages pass the items and `now` in and hand the
intents returned to the store, which applies them as told.

One API, in a module per subject: states (and retries), fetching, notes, sources (and
letters), files, week (deliveries, the reader's marks, highlights).

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

from digest.lifecycle.fetching import (
    FETCH_STATES,
    FetchFailed,
    FetchSucceeded,
    LinksFollowed,
    NotFetched,
    due_for_fetch,
    fetch_failed,
    fetch_succeeded,
    items_due_for_fetch,
    links_followed,
)
from digest.lifecycle.files import (
    FileIntent,
    FileSeen,
    FilesGone,
    ReadingEnded,
    ReadingVoided,
)
from digest.lifecycle.notes import (
    NOTE_STATES,
    PROMPT_FILE_MARK,
    NoteAttached,
    NoteAttempts,
    NoteFailed,
    context_renews_note,
    due_for_note,
    note_attached,
    note_calls_left,
    note_failed,
    renote_for_model,
)
from digest.lifecycle.sources import (
    FeedPolled,
    LetterRead,
    SourceChecked,
    SourceFailed,
    SourceIntent,
    SourcePaused,
    SourceRemoved,
    SourceRenamed,
    feed_failed,
    feed_polled,
    letter_read,
)
from digest.lifecycle.states import (
    TRANSITIONS,
    Backoff,
    Event,
    backoff_delay,
    is_due,
    next_attempt_at,
    next_state,
)
from digest.lifecycle.week import (
    RESURFACE_WEEKS,
    RESURFACED_PER_WEEK,
    DeliveryBegun,
    DeliveryEnded,
    ItemRead,
    ItemStarred,
    in_week,
    item_read,
    resurfacing_due,
    why_no_note,
)
from digest.models import (
    WALLS,
    ItemKind,
    ItemState,
    NoteBasis,
    Quality,
)

__all__ = [
    "Backoff",
    "DeliveryBegun",
    "DeliveryEnded",
    "Event",
    "FETCH_STATES",
    "FeedPolled",
    "FetchFailed",
    "FetchSucceeded",
    "FileIntent",
    "FileSeen",
    "FilesGone",
    "ItemKind",
    "ItemRead",
    "ItemStarred",
    "ItemState",
    "LetterRead",
    "LinksFollowed",
    "NOTE_STATES",
    "NoteAttached",
    "NoteAttempts",
    "NoteBasis",
    "NoteFailed",
    "NotFetched",
    "PROMPT_FILE_MARK",
    "Quality",
    "RESURFACED_PER_WEEK",
    "RESURFACE_WEEKS",
    "ReadingEnded",
    "ReadingVoided",
    "SourceChecked",
    "SourceFailed",
    "SourceIntent",
    "SourcePaused",
    "SourceRemoved",
    "SourceRenamed",
    "TRANSITIONS",
    "WALLS",
    "backoff_delay",
    "context_renews_note",
    "due_for_fetch",
    "due_for_note",
    "feed_failed",
    "feed_polled",
    "fetch_failed",
    "fetch_succeeded",
    "in_week",
    "is_due",
    "item_read",
    "items_due_for_fetch",
    "letter_read",
    "links_followed",
    "next_attempt_at",
    "next_state",
    "note_attached",
    "note_calls_left",
    "note_failed",
    "renote_for_model",
    "resurfacing_due",
    "why_no_note",
]
