"""Why a page was not read, in a reader's words, and one line for a run with no network (pure).

Fetch errors are recorded as `fetch failed: 'url': <why>`; the digest says what that means
for the reader ("the host could not be reached") and when the page is tried again.
"""

from __future__ import annotations

import re

from digest.models import Item, NoteBasis, StageReport
from digest.text import without_links

# (pattern in the recorded error, what it means for the reader); the first match wins
_ERROR_REASONS = (
    (re.compile(r"cannot resolve|Name or service not known|getaddrinfo", re.I), "host unreachable"),
    (re.compile(r"refused|ConnectError|Connection reset", re.I), "connection refused"),
    (re.compile(r"timeout|timed out|took longer", re.I), "the site did not answer in time"),
    (re.compile(r"HTTP (401|402|403)\b"), "access denied or paywalled"),
    (re.compile(r"HTTP (404|410)\b"), "page not found"),
    (re.compile(r"HTTP 429\b"), "the site asked us to slow down"),
    (re.compile(r"HTTP 5\d\d\b"), "the site had an error"),
    (re.compile(r"too large|larger than", re.I), "the page is too large"),
)
# Item.quality: why a fetched page was not the article
QUALITY_REASONS = {
    "blocked": "the page was a bot check",
    "consent": "the page was a consent wall",
    "login": "the page asked for a login",
    "paywalled": "the page was a paywall",
    "thin": "the page had too little text",
}
_UNRESOLVED = _ERROR_REASONS[0][0]
MIN_SAVED_WORDS = 3  # fewer words saved with a link say nothing the title does not


def reason(item: Item) -> str | None:
    """Why the item's page is not read, or None when it was read (or is not a link)."""
    if item.quality in QUALITY_REASONS:
        return QUALITY_REASONS[item.quality or ""]
    if not item.url or not item.error:
        return None
    return fetch_reason(item.error)


def fetch_reason(error: str) -> str:
    """What a recorded fetch error means for a reader: "host unreachable", "page not found"."""
    for pattern, why in _ERROR_REASONS:
        if pattern.search(error):
            return why
    return "the page could not be fetched"


def unread_line(item: Item) -> str | None:
    """'Page not read yet: host unreachable; to be tried again later.' or None."""
    why = reason(item)
    if why is None:
        return None
    if item.quality in QUALITY_REASONS and not item.error:
        return f"Page not read: {why}; shown from what was saved with it."  # checked again later
    when = "not tried again" if item.gave_up else "to be tried again later"
    return f"Page not read yet: {why}; {when}."


def without_unresolved(report: StageReport, noun: str) -> StageReport:
    """A report whose failures are all unresolvable hosts, with nothing done, becomes one line:
    the run had no network; the pages are left for a later run."""
    failures = report.failures
    if report.done or not failures or not all(_UNRESOLVED.search(line) for line in failures):
        return report
    retry = "`digest now --retry` tries them at once" if noun == "pages" else "polled next time"
    line = f"no network: {len(failures)} {noun} left for a later run ({retry})"
    return StageReport(
        report.stage, 0, [line], report.info, part=report.part, failed_units=len(failures)
    )


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
