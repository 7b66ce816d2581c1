"""What is due for a fetch, and what a fetch, or following a post's links, changes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from digest.errors import FailureKind
from digest.lifecycle.states import Backoff, Event, is_due, next_attempt_at, next_state
from digest.models import Extracted, Item, ItemKind, ItemState

# What to run once the network is back, for what a run without one left (fetch, status).
FETCH_WHEN_ONLINE: Final = "`digest now --retry` fetches them once you are online"

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
class NotFetched:
    """What no run has fetched yet: links never fetched (state new) and posts whose links
    were never followed. The fetch stage of a run without a network and `digest status`
    both say it with `describe`, so that their counts agree."""

    pages: int = 0
    posts: int = 0

    @property
    def total(self) -> int:
        return self.pages + self.posts

    def describe(self) -> str:
        """ "112 pages and the links of 6 posts not fetched yet"."""
        parts = [f"{self.pages} page{'' if self.pages == 1 else 's'}"] if self.pages else []
        if self.posts:
            parts.append(f"the links of {self.posts} post{'' if self.posts == 1 else 's'}")
        return " and ".join(parts or ["0 pages"]) + " not fetched yet"


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
