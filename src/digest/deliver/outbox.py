"""Deliver a composed digest on every channel (deliver.channels), each at most once per
content, and resend a week's mail on request."""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import datetime
from pathlib import Path

from digest.audio.script import Script
from digest.config import Config
from digest.deliver.channel import Channel, DeliveryOutcome, Edition, Job, Sleep, content_hash
from digest.deliver.channels import CHANNELS
from digest.deliver.channels.email import send_recorded
from digest.deliver.channels.file import digest_path, write_digest_file
from digest.errors import DeliveryError, bugs_recorded
from digest.models import Item, Period, StoredHighlight
from digest.store import Store


def deliver_digest(
    store: Store,
    config: Config,
    period: Period,
    markdown: str,
    now: datetime,
    *,
    allowed_urls: Collection[str] = (),
    sleep: Sleep = time.sleep,
    empty: bool = False,
    reader_view: str | None = None,
    audio: Script | None = None,
    items: Sequence[Item] = (),
    edition: Edition | None = None,
) -> DeliveryOutcome:
    """Write the digest file, then deliver each channel at most once per content.

    `allowed_urls` are the stored URLs the HTML (email, feed) may link to; other links
    keep their text only. Per-channel failures are recorded and listed in the outcome,
    never raised; only a digest file that cannot be written raises DeliveryError. An
    `empty` week goes to the log, the feed and the mail only with digest.publish_empty; a
    week is mailed once, when it is over, unless email.send = "every_revision". The log
    takes a revision only when `reader_view` (what a reader sees) changed, not when only
    the rendering did. `audio` is the week's script, spoken into the podcast before the
    mail (which then links the episode). `items` get a note each in [output] notes_dir.
    """
    job = Job(
        store,
        config,
        period,
        markdown,
        allowed_urls,
        now,
        sleep,
        reader_view,
        audio,
        items,
        empty,
        edition,
    )
    outcome = DeliveryOutcome(period.label, digest_path(config, period), None)
    held_empty = empty and not config.digest.publish_empty
    for channel in CHANNELS.values():
        if held_empty and not channel.carries_empty:
            continue
        if channel.wanted(job):
            _isolated(channel, job, outcome)
    if held_empty:
        outcome.held.append(
            f"{period.label} is empty: its file is written; nothing is logged, added to the"
            " feed or mailed (digest.publish_empty)"
        )
    return outcome


def _isolated(channel: Channel, job: Job, outcome: DeliveryOutcome) -> None:
    """Deliver one channel; a bug in it is recorded as its failure and the others go on
    (digest's own errors, a full disk or a locked store among them, still end the run)."""
    with bugs_recorded(f"{channel.name} delivery of {job.period.label}", outcome.failures):
        channel.deliver(job, outcome)


def write_draft(config: Config, period: Period, markdown: str) -> Path:
    """Rewrite the period's digest file as the week fills: no revision, no log, no mail."""
    path = digest_path(config, period)
    write_digest_file(path, markdown)
    return path


def record_resurfaced(store: Store, period: Period, highlights: Sequence[StoredHighlight]) -> None:
    """Note the highlights a written digest of `period` brought back: the next week moves on
    to others, a later revision of this one keeps them (compose.backlog.resurfaced)."""
    fresh = [highlight.id for highlight in highlights if highlight.shown_week != period.label]
    if fresh:
        store.highlights_shown(fresh, period.label, period.end)


def resend_email(
    store: Store,
    config: Config,
    period: Period,
    now: datetime,
    *,
    allowed_urls: Collection[str] = (),
    sleep: Sleep = time.sleep,
    to: Sequence[str] = (),
) -> DeliveryOutcome:
    """Mail the latest revision of `period` again, whatever its email record says; to
    `to` alone if given (the recipients refused last time), else to email.to.

    For the user, after an unknown or refused delivery; the attempt is recorded.
    """
    if to:
        config = config.model_copy(
            update={"email": config.email.model_copy(update={"to": list(to)})}
        )
    if not config.email.enabled:
        raise DeliveryError("resend: email is not enabled (set [email] enabled = true)")
    latest = store.digest_record(period.label)
    if latest is None:
        raise DeliveryError(
            f"resend: no digest recorded for {period.label}; run `digest now --week {period.label}`"
        )
    markdown = _read_revision(Path(latest.path), latest.content_hash, latest.revision)
    job = Job(store, config, period, markdown, allowed_urls, now, sleep)
    outcome = DeliveryOutcome(period.label, Path(latest.path), latest.revision)
    send_recorded(job, outcome)
    return outcome


def _read_revision(path: Path, digest_hash: str, revision: int) -> str:
    try:
        markdown = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DeliveryError(f"resend: cannot read {path}: {exc.strerror or exc}") from exc
    if content_hash(markdown) != digest_hash:
        raise DeliveryError(
            f"resend: {path} no longer holds revision {revision} (it was edited);"
            " run `digest compose` for that week to record it"
        )
    return markdown
