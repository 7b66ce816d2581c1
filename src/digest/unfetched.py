"""Why a page was not read, in a reader's words, and what an offline note of such a link
is worth (pure).

A failed fetch is recorded with its kind (errors.FailureKind) and HTTP status; the digest
says what that means for the reader ("the host could not be reached") and when the page is
tried again. An offline note of a link whose page was not read only restates what was saved
with it (`offline_stand_in`); one made of the title or address alone is no note at all
(`pretend_note`).
"""

from __future__ import annotations

import re

from digest.errors import FailureKind
from digest.models import Item, NoteBasis
from digest.text import without_links

# what a failure of each kind means for the reader (FailureKind.HTTP: by status, below)
_KIND_REASONS = {
    FailureKind.UNRESOLVED: "host unreachable",
    FailureKind.REFUSED: "connection refused",
    FailureKind.TIMEOUT: "the site did not answer in time",
    FailureKind.TOO_LARGE: "the page is too large",
}
_STATUS_REASONS = {
    401: "access denied or paywalled",
    402: "access denied or paywalled",
    403: "access denied or paywalled",
    404: "page not found",
    410: "page not found",
    429: "the site asked us to slow down",
}
UNFETCHED = "the page could not be fetched"
# Item.quality: why a fetched page was not the article
QUALITY_REASONS = {
    "blocked": "the page was a bot check",
    "consent": "the page was a consent wall",
    "login": "the page asked for a login",
    "paywalled": "the page was a paywall",
    "thin": "the page had too little text",
}
MIN_SAVED_WORDS = 3  # fewer words saved with a link say nothing the title does not


def reason(item: Item) -> str | None:
    """Why the item's page is not read, or None when it was read (or is not a link)."""
    if item.quality in QUALITY_REASONS:
        return QUALITY_REASONS[item.quality or ""]
    if not item.url or not item.error:
        return None
    return fetch_reason(item.error_kind, item.error_status)


def fetch_reason(kind: FailureKind | None, status: int | None) -> str:
    """What a recorded fetch failure means for a reader: "host unreachable", "page not found"."""
    if kind is FailureKind.HTTP and status is not None:
        return _STATUS_REASONS.get(status, "the site had an error" if status >= 500 else UNFETCHED)
    return _KIND_REASONS.get(kind, UNFETCHED) if kind else UNFETCHED


def unread_line(item: Item) -> str | None:
    """'Page not fetched: host unreachable; to be tried again later.' or None."""
    why = reason(item)
    if why is None:
        return None
    if item.quality in QUALITY_REASONS and not item.error:
        return f"Page not read: {why}; shown from what was saved with it."  # checked again later
    when = "not tried again" if item.gave_up else "to be tried again later"
    return f"Page not fetched: {why}; {when}."


def saved_words(item: Item) -> str | None:
    """The user's own words saved with a link (a journal line's comment, a feed's summary),
    without links and without the title; None when fewer than MIN_SAVED_WORDS are left."""
    title = _comparable(item.title or "")
    lines = [without_links(line) for line in (item.context or "").splitlines()]
    kept = " ".join(line for line in lines if _comparable(line) not in ("", title))
    return kept if len(kept.split()) >= MIN_SAVED_WORDS else None


def offline_stand_in(item: Item) -> bool:
    """An offline note of a link whose page was not read: it can only restate what was saved
    with the link, so it is no summary of the page."""
    note = item.note
    return (
        item.url is not None
        and note is not None
        and note.extractive
        and note.basis is NoteBasis.SAVED_CONTEXT
    )


def pretend_note(item: Item) -> bool:
    """An offline stand-in made of nothing but the link's title or address: no note at all."""
    return offline_stand_in(item) and saved_words(item) is None


def _comparable(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", without_links(text)).casefold().split())
