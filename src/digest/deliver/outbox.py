"""Deliver a composed digest: atomic file writes, the append-only log, the feeds, SMTP, the
item notes of a vault; exactly-once records.

Every channel is keyed by (period, channel, content hash) in the store. A delivery is
recorded as pending (and committed) before it is attempted and marked sent after,
so the same content is never delivered twice on a channel, and a send whose outcome
is unknown is recorded as such and never resent on its own.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from email.message import EmailMessage
from pathlib import Path

from digest.atomic import fsync_dir, open_append, write_atomic
from digest.audio.script import Script
from digest.compose.digest import content_hash, format_period
from digest.config import Config
from digest.deliver.atom import FeedIds, found_ids, new_tag, update_feed
from digest.deliver.html import MailTemplate, render_email
from digest.deliver.logdiff import changes_entry, last_full_text
from digest.deliver.mail import DeliveryUnknown, SmtpReplyError, send_email
from digest.deliver.podcast import episode_link, publish_episode
from digest.deliver.vault import notes_hash, write_item_notes
from digest.errors import DeliveryError, bugs_recorded
from digest.lifecycle import DeliveryBegun, DeliveryEnded, backoff_delay
from digest.models import DeliveryStatus, Item, Period
from digest.store import Store
from digest.store.base import DeliveryRecord

log = logging.getLogger("digest")
# A pause between retries; a true result (threading.Event.wait once set) means stop retrying.
Sleep = Callable[[float], bool | None]


# A mail in these states is not sent again on its own (`digest resend` sends it).
_NOT_RESENT = (DeliveryStatus.SENT, DeliveryStatus.UNKNOWN, DeliveryStatus.REJECTED)
# These count as mailed: a week mailed before is not a first mail.
_MAILED = (DeliveryStatus.SENT, DeliveryStatus.UNKNOWN, DeliveryStatus.PENDING)


@dataclass
class DeliveryOutcome:
    period: str
    path: Path
    revision: int | None  # None: this content was recorded before
    delivered: list[str] = field(default_factory=list)  # channels delivered this time
    failures: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # channels left out on purpose, and why
    info: list[str] = field(default_factory=list)  # what a channel made: time and size


# -- files -------------------------------------------------------------------


def log_entry(period: str, revision: int, digest_hash: str, markdown: str) -> str:
    """One revision block of the log; its marker line names the period, revision and hash."""
    marker = f"<!-- digest {period} revision {revision} sha256:{digest_hash} -->"
    return f"\n---\n\n{marker}\n\n{markdown.rstrip(chr(10))}\n"


def append_log(log_path: Path, entry: str) -> None:
    """Append `entry` to the log and fsync; nothing is appended if the entry is already there.

    A crash between this append and recording it in the store must not double the
    entry on the next run. Earlier bytes of the log are never rewritten.
    """
    marker = next((line for line in entry.splitlines() if line.startswith("<!-- digest ")), None)
    if marker is None:
        raise ValueError("a log entry needs its '<!-- digest ... -->' marker line")
    # a log the user edited in another encoding is still appended to (its bytes are kept)
    earlier = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
    if _contains_entry(earlier, marker, entry):
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    created = not log_path.exists()
    with open_append(log_path) as log:
        log.write(entry)
        log.flush()
        os.fsync(log.fileno())
    if created:
        fsync_dir(log_path.parent)


def _contains_entry(log_text: str, marker: str, entry: str) -> bool:
    """The marker as a line of its own and the whole entry: a torn append does not count."""
    return marker in log_text.splitlines() and entry.lstrip("\n") in log_text


# -- email -------------------------------------------------------------------


def message_id_for(period: str, digest_hash: str) -> str:
    """Derived from the content, so a retry of the same digest carries the same Message-ID."""
    return f"<digest-{period}-{digest_hash[:16]}@digest.local>"


def full_copy_location(config: Config, period: Period) -> str:
    """Where the whole digest can be read: under [output] public_url if set, else its path."""
    if config.output.public_url:
        return f"{config.output.public_url.rstrip('/')}/{period.label}.md"
    return str(config.digests_dir / f"{period.label}.md")


# -- the whole delivery ------------------------------------------------------


@dataclass(frozen=True)
class _Job:
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

    @property
    def digest_hash(self) -> str:
        return content_hash(self.markdown)

    @property
    def log_key(self) -> str:
        """What the log's records are keyed by: a revision is logged when it changes."""
        return self.reader_view or self.digest_hash


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
    job = _Job(store, config, period, markdown, allowed_urls, now, sleep, reader_view, audio, items)
    path = digest_path(config, period)
    changed = _write_digest_file(path, markdown)
    revision = store.record_digest(period.label, job.digest_hash, str(path), now)
    outcome = DeliveryOutcome(period.label, path, revision, ["file"] if changed else [])
    if empty and not config.digest.publish_empty:
        outcome.held.append(
            f"{period.label} is empty: its file is written; nothing is logged, added to the"
            " feed or mailed (digest.publish_empty)"
        )
        return outcome
    _isolated(_deliver_log, job, outcome)
    _isolated(_deliver_feed, job, outcome)
    if audio is not None:
        _isolated(_deliver_podcast, job, outcome)
    if config.email.enabled:
        held = _why_not_mailed(job)
        if held:
            outcome.held.append(held)
        else:
            _isolated(_deliver_email, job, outcome)
    if config.output.notes_dir is not None:
        _isolated(_deliver_notes, job, outcome)
    return outcome


def _isolated(
    channel: Callable[[_Job, DeliveryOutcome], None], job: _Job, outcome: DeliveryOutcome
) -> None:
    """Deliver one channel; a bug in it is recorded as its failure and the others go on
    (digest's own errors, a full disk or a locked store among them, still end the run)."""
    name = channel.__name__.removeprefix("_deliver_")
    with bugs_recorded(f"{name} delivery of {job.period.label}", outcome.failures):
        channel(job, outcome)


def _why_not_mailed(job: _Job) -> str | None:
    """Under email.send = "once": a week is mailed when it is over, and only once."""
    if job.config.email.send == "every_revision":
        return None
    label = job.period.label
    if job.now < job.period.end:
        return (
            f"{label} is mailed once, when the week is over: the daemon's weekly job or"
            f' `digest now --week {label}` then mails it (email.send = "once")'
        )
    mailed = job.store.deliveries(_MAILED)
    earlier = any(record.period == label and record.channel == "email" for record in mailed)
    if earlier and job.store.delivery(label, "email", job.digest_hash) is None:
        return f"{label} was mailed before; this revision is in the files and the feed"
    return None


def write_draft(config: Config, period: Period, markdown: str) -> Path:
    """Rewrite the period's digest file as the week fills: no revision, no log, no mail."""
    path = digest_path(config, period)
    _write_digest_file(path, markdown)
    return path


def digest_path(config: Config, period: Period) -> Path:
    return config.digests_dir / f"{period.label}.md"


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
    job = _Job(store, config, period, markdown, allowed_urls, now, sleep)
    outcome = DeliveryOutcome(period.label, Path(latest.path), latest.revision)
    _send_recorded(job, outcome)
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


def _write_digest_file(path: Path, markdown: str) -> bool:
    """Write the digest atomically; True when its content changed."""
    try:
        changed = not path.exists() or path.read_text(encoding="utf-8") != markdown
        if changed:
            write_atomic(path, markdown)
    except OSError as exc:
        raise DeliveryError(f"cannot write digest {path}: {exc.strerror or exc}") from exc
    return changed


def _deliver_log(job: _Job, outcome: DeliveryOutcome) -> None:
    store, label, digest_hash = job.store, job.period.label, job.digest_hash
    if _logged(store, label, job.log_key):
        return
    if _logged(store, label, digest_hash):  # logged by a digest that keyed the log so
        _ended(job, _begun(job, "log", job.log_key), DeliveryStatus.SENT)
        return
    revision = store.digest_revision(label, digest_hash)
    assert revision is not None, "record_digest runs before the channels"
    record = _begun(job, "log", job.log_key)
    log_path = job.config.log_path
    try:
        append_log(log_path, _log_block(job, revision))
    except OSError as exc:
        error = f"cannot append to log {log_path}: {exc.strerror or exc}"
        _ended(job, record, DeliveryStatus.FAILED, error=error)
        outcome.failures.append(error)
        return
    store.save_logged_text(label, job.markdown, job.now)
    _ended(job, record, DeliveryStatus.SENT)
    outcome.delivered.append("log")


def _log_block(job: _Job, revision: int) -> str:
    """The week's text when the log has none of it yet, else what changed since (dated by
    the revision's record, so that a run retrying a torn append writes the same block)."""
    label, digest_hash = job.period.label, job.digest_hash
    whole = log_entry(label, revision, digest_hash, job.markdown)
    before = job.store.logged_text(label)
    if before is None and job.config.log_path.exists():  # a log from before, or a lost store
        earlier = job.config.log_path.read_text(encoding="utf-8", errors="replace")
        if whole.lstrip("\n") in earlier:  # appended by a run that died before recording it
            return whole
        before = last_full_text(earlier, label)
    if before is None:
        return whole
    digest = job.store.digest_record(label, digest_hash)
    at = (digest.created_at if digest else job.now).astimezone(job.config.digest.zone)
    return changes_entry(label, revision, digest_hash, before, job.markdown, at)


def _logged(store: Store, label: str, key: str) -> bool:
    record = store.delivery(label, "log", key)
    return record is not None and record.status is DeliveryStatus.SENT


def _begun(job: _Job, channel: str, key: str) -> DeliveryRecord:
    return job.store.apply_delivery(DeliveryBegun(job.period.label, channel, key, job.now))


def _ended(
    job: _Job,
    record: DeliveryRecord,
    status: DeliveryStatus,
    *,
    error: str | None = None,
    message_id: str | None = None,
) -> None:
    job.store.apply_delivery(DeliveryEnded(record.id, status, job.now, error, message_id))


def _deliver_feed(job: _Job, outcome: DeliveryOutcome) -> None:
    """Rewrite this period's entry of the Atom feed (idempotent: same content, same bytes)."""
    record = job.store.digest_record(job.period.label, job.digest_hash)
    assert record is not None, "record_digest runs before the channels"
    try:
        changed = update_feed(
            job.config,
            job.period,
            job.markdown,
            updated=record.created_at,
            allowed_urls=job.allowed_urls,
            ids=_feed_ids(job),
        )
    except OSError as exc:
        outcome.failures.append(f"cannot write feed in {job.config.digests_dir}: {exc}")
        return
    except DeliveryError as exc:
        outcome.failures.append(str(exc))
        return
    if changed:
        outcome.delivered.append("feed")


def _feed_ids(job: _Job) -> FeedIds:
    """The feed's and the week's ids, minted at their first delivery (or taken over from
    the feed file as an older digest wrote it) and stored."""
    store, now, label = job.store, job.now, job.period.label
    found = found_ids(job.config)
    tag = store.minted_id("tag", new_tag(job.config, now), now)
    feed = store.minted_id("feed", found.feed or tag, now)
    entry = store.minted_id(f"week:{label}", found.entries.get(label) or f"{tag}/{label}", now)
    return FeedIds(feed, entry)


def _deliver_podcast(job: _Job, outcome: DeliveryOutcome) -> None:
    """Speak the week into its episode and the podcast feed, once per revision."""
    store, label, digest_hash = job.store, job.period.label, job.digest_hash
    assert job.audio is not None, "called only with a script"
    record = store.delivery(label, "podcast", digest_hash)
    if record is not None and record.status is DeliveryStatus.SENT:
        return
    revision = store.digest_record(label, digest_hash)
    assert revision is not None, "record_digest runs before the channels"
    record = _begun(job, "podcast", digest_hash)
    dates = format_period(job.period, job.config.digest.zone)
    try:
        published = publish_episode(
            job.config,
            job.period,
            job.audio,
            dates=dates,
            updated=revision.created_at,
            guid=_feed_ids(job).entry,
        )
    except DeliveryError as exc:
        error = str(exc)
    except OSError as exc:
        error = f"audio: cannot write in {job.config.digests_dir}: {exc.strerror or exc}"
    else:
        _ended(job, record, DeliveryStatus.SENT)
        outcome.delivered.append("podcast")
        outcome.info.append(published.report())
        return
    _ended(job, record, DeliveryStatus.FAILED, error=error)
    outcome.failures.append(error)


def _deliver_notes(job: _Job, outcome: DeliveryOutcome) -> None:
    """A note per item in [output] notes_dir, once per content of the week's notes; files
    left alone (not ours, or edited) fail the channel, so it is tried and said again."""
    folder, zone, label = job.config.output.notes_dir, job.config.digest.zone, job.period.label
    assert folder is not None, "called only with a notes folder"
    key = notes_hash(job.period, job.items, zone)
    record = job.store.delivery(label, "notes", key)
    if record is not None and record.status is DeliveryStatus.SENT:
        return
    record = _begun(job, "notes", key)
    try:
        vault = write_item_notes(folder, job.period, job.items, zone)
    except OSError as exc:
        error = f"cannot write item notes in {folder}: {exc.strerror or exc}"
        _ended(job, record, DeliveryStatus.FAILED, error=error)
        outcome.failures.append(error)
        return
    if vault.written:
        outcome.delivered.append("notes")
    left = [
        f"{path}: not written by digest (or edited since): left as it is" for path in vault.left
    ]
    outcome.failures.extend(left)
    status = DeliveryStatus.FAILED if left else DeliveryStatus.SENT
    _ended(job, record, status, error=f"{len(left)} notes left alone: {left[0]}" if left else None)


def _deliver_email(job: _Job, outcome: DeliveryOutcome) -> None:
    store, label = job.store, job.period.label
    record = store.delivery(label, "email", job.digest_hash)
    if record is not None and record.status in _NOT_RESENT:
        return
    if record is not None and record.status is DeliveryStatus.PENDING:  # a run died mid-send
        error = "an earlier run stopped while sending; outcome unknown, not resent"
        _ended(job, record, DeliveryStatus.UNKNOWN, error=error)
        outcome.failures.append(f"email for {label}: {error}")
        return
    _send_recorded(job, outcome)


def _send_recorded(job: _Job, outcome: DeliveryOutcome) -> None:
    """Pending (committed) before connecting; sent, unknown, failed or rejected after."""
    label, digest_hash = job.period.label, job.digest_hash
    message_id = message_id_for(label, digest_hash)
    record = _begun(job, "email", digest_hash)
    full_copy = full_copy_location(job.config, job.period)
    template = MailTemplate(job.config.output.templates_dir, job.period, full_copy)
    markdown, allowed_urls = job.markdown, list(job.allowed_urls)
    if listen := episode_link(job.config, job.period):
        markdown = f"{markdown.rstrip()}\n\n{listen.markdown}\n"
        allowed_urls += listen.urls
    render = functools.partial(
        render_email,
        markdown,
        config=job.config.email,
        period=job.period,
        message_id=message_id,
        allowed_urls=allowed_urls,
        full_copy=full_copy,
        date=job.now,
        template=template,
    )
    try:
        message = render()
    except DeliveryError as exc:
        _ended(job, record, DeliveryStatus.FAILED, error=str(exc))
        outcome.failures.append(str(exc))
        return
    if template.problem:  # sent with the built-in HTML part: reported, exit 3
        outcome.failures.append(template.problem)
    status, error = _send_with_retries(job, message, lambda: render(small=True))
    _ended(job, record, status, error=error, message_id=message_id)
    if status is DeliveryStatus.SENT:
        outcome.delivered.append("email")
    if error is not None:
        outcome.failures.append(error)


def _send_with_retries(
    job: _Job, message: EmailMessage, smaller: Callable[[], EmailMessage]
) -> tuple[DeliveryStatus, str | None]:
    """Send; a 4xx reply is retried with doubling pauses, up to [email] retries times; a
    552 to the whole message is retried once as `smaller()`. Sent with an error: some
    recipients refused it."""
    email, label = job.config.email, job.period.label
    attempt, shrunk = 0, False
    while True:
        try:
            refused = send_email(message, email)
        except SmtpReplyError as exc:
            if exc.too_large and not shrunk:
                log.warning("%s; sending the text part alone", exc)
                message, shrunk = smaller(), True
                _begun(job, "email", job.digest_hash)  # a send
                continue
            if not exc.transient:
                also = " (also as the text part alone)" if shrunk else ""
                return (
                    DeliveryStatus.REJECTED,
                    f"{exc}{also}; not retried: fix it, then `digest resend --week {label}`",
                )
            if attempt >= email.retries:
                return (
                    DeliveryStatus.FAILED,
                    f"{exc}; tried {attempt + 1} times, retried on the next run",
                )
            backoff = backoff_delay(attempt + 1, base_s=email.retry_backoff_s, max_s=math.inf)
            pause = backoff.total_seconds()  # [email] retries bounds the doublings
            log.info("%s; retrying in %g s", exc, pause)
            if job.sleep(pause):
                return (
                    DeliveryStatus.FAILED,
                    f"{exc}; not retried: the run is stopping, retried on the next run",
                )
            attempt += 1
            _begun(job, "email", job.digest_hash)
            continue
        except DeliveryUnknown as exc:
            return DeliveryStatus.UNKNOWN, str(exc)
        except DeliveryError as exc:
            return DeliveryStatus.FAILED, str(exc)
        return DeliveryStatus.SENT, _refusals(refused, label)


def _refusals(refused: dict[str, str], label: str) -> str | None:
    if not refused:
        return None
    which = ", ".join(f"{to} ({answer})" for to, answer in refused.items())
    again = " ".join(f"--to {to}" for to in refused)
    return (
        f"email for {label}: refused for {which}; the others got it;"
        f" when fixed: `digest resend --week {label} {again}`"
    )
