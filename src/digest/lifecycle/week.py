"""What a week shows (and why an item has no note), its deliveries, the reader's marks and
the highlights that come round again."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from digest.models import DeliveryStatus, Item, ItemState, Period


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
