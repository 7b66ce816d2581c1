"""An item's states, the events that move it (TRANSITIONS), and the backoff of retries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from digest.models import ItemState


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


PERMANENT_FAILURE_LIMIT = 3  # a 404 may be a passing mistake; three in a row is not


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
