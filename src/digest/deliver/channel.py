"""What every output channel shares: the digest on its way out (Job), what its delivery
did (DeliveryOutcome), the protocol a channel keeps, and its record in the outbox.

A channel that sends (the log, the podcast, mail, the vault's notes) is keyed by
(period, channel, content key) in the store: recorded as pending (and committed) before
it is attempted and marked after, so the same content is never delivered twice on it.
A channel that rewrites a file to the same bytes (the digest file, the feed) is
idempotent by its content and needs no record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from digest.audio.script import Script
from digest.compose.entries import Topic
from digest.config import Config
from digest.lifecycle import DeliveryBegun, DeliveryEnded
from digest.models import DeliveryStatus, Item, Period
from digest.store import Store
from digest.store.base import DeliveryRecord

# A pause between retries; a true result (threading.Event.wait once set) means stop retrying.
Sleep = Callable[[float], bool | None]


def content_hash(markdown: str) -> str:
    """What a digest's records are keyed by: the same bytes are the same digest."""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


@dataclass
class DeliveryOutcome:
    period: str
    path: Path
    revision: int | None  # None: this content was recorded before
    delivered: list[str] = field(default_factory=list)  # channels delivered this time
    failures: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # channels left out on purpose, and why
    info: list[str] = field(default_factory=list)  # what a channel made: time and size


@dataclass(frozen=True)
class Edition:
    """The week as a whole, for the channels that retell it rather than send its markdown."""

    dates: str  # "16–22 November 2026"
    brief: str  # the week in brief, markdown
    topics: Sequence[Topic] = ()  # its sections as listed


@dataclass(frozen=True)
class Job:
    """One digest on its way out, with what every channel needs."""

    store: Store
    config: Config
    period: Period
    markdown: str
    allowed_urls: Collection[str]
    now: datetime
    sleep: Sleep
    reader_view: str | None = None  # what a reader sees (compose.digest.reader_view)
    audio: Script | None = None  # the week's script, when [audio] is enabled
    items: Sequence[Item] = ()  # the week's items, for their notes in [output] notes_dir
    empty: bool = False  # a week with no items
    edition: Edition | None = None

    @property
    def digest_hash(self) -> str:
        return content_hash(self.markdown)


class Channel(Protocol):
    """One output of a digest. `wanted` says whether the config asks for it at all;
    `deliver` does it at most once per content and says so in `outcome` (failures listed,
    never raised; only digest's own fatal errors pass through)."""

    name: str
    carries_empty: bool  # delivered for a week with no items even without publish_empty

    def wanted(self, job: Job) -> bool: ...

    def deliver(self, job: Job, outcome: DeliveryOutcome) -> None: ...


def sent_before(job: Job, channel: str, key: str) -> bool:
    record = job.store.delivery(job.period.label, channel, key)
    return record is not None and record.status is DeliveryStatus.SENT


STOPPED_WHILE_SENDING = "an earlier run stopped while sending; outcome unknown, not resent"


def settled(job: Job, outcome: DeliveryOutcome, channel: str, what: str) -> bool:
    """Whether this content needs no attempt on `channel`, a channel that sends: sent,
    refused, or its outcome unknown. A send a stopped run left pending is recorded as
    unknown now, and said (`what` names it): it may have arrived, so it is not resent."""
    record = job.store.delivery(job.period.label, channel, job.digest_hash)
    if record is None or record.status is DeliveryStatus.FAILED:
        return False
    if record.status is DeliveryStatus.PENDING:
        ended(job, record, DeliveryStatus.UNKNOWN, error=STOPPED_WHILE_SENDING)
        outcome.failures.append(f"{what} for {job.period.label}: {STOPPED_WHILE_SENDING}")
    return True


def begun(job: Job, channel: str, key: str) -> DeliveryRecord:
    return job.store.apply_delivery(DeliveryBegun(job.period.label, channel, key, job.now))


def ended(
    job: Job,
    record: DeliveryRecord,
    status: DeliveryStatus,
    *,
    error: str | None = None,
    message_id: str | None = None,
) -> None:
    job.store.apply_delivery(DeliveryEnded(record.id, status, job.now, error, message_id))


def failed(job: Job, outcome: DeliveryOutcome, record: DeliveryRecord, error: str) -> None:
    """The attempt failed: recorded (retried on a later run) and listed."""
    ended(job, record, DeliveryStatus.FAILED, error=error)
    outcome.failures.append(error)
