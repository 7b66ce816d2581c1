"""The week as an EPUB ([epub] enabled): digests/YYYY-Www.epub rewritten when it changes,
and mailed as an attachment to [epub] send_to (an e-reader's address) through the SMTP
settings, once per revision."""

from __future__ import annotations

import email.utils
from datetime import UTC
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from pathlib import Path

from digest.atomic import write_atomic
from digest.config import EmailConfig
from digest.deliver.channel import DeliveryOutcome, Job, begun, ended, failed, settled
from digest.deliver.epub import MEDIA_TYPE, Book, epub_bytes
from digest.deliver.mail import DeliveryUnknown, send_email
from digest.deliver.message import clean_header
from digest.errors import DeliveryError
from digest.models import DeliveryStatus

MAIL_CHANNEL = "epub-mail"


def epub_path(job: Job) -> Path:
    return job.config.digests_dir / f"{job.period.label}.epub"


def book_of(job: Job) -> Book:
    """The week's book, its items with their pages' whole text (compose read only the
    opening of each)."""
    edition, period = job.edition, job.period
    record = job.store.digest_record(period.label, job.digest_hash)
    revised = record.created_at if record else job.now
    whole = {item.id: item for item in job.store.items_saved_between(period.start, period.end)}
    return Book(
        period.label,
        edition.dates if edition else "",
        edition.brief if edition else "",
        edition.topics if edition else (),
        [whole.get(item.id, item) for item in job.items],
        revised.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


class EpubChannel:
    name = "epub"
    carries_empty = False

    def wanted(self, job: Job) -> bool:
        return job.config.epub.enabled

    def deliver(self, job: Job, outcome: DeliveryOutcome) -> None:
        path, book = epub_path(job), epub_bytes(book_of(job))
        try:
            if not path.exists() or path.read_bytes() != book:
                write_atomic(path, book)
                outcome.delivered.append(self.name)
        except OSError as exc:
            outcome.failures.append(f"cannot write {path}: {exc.strerror or exc}")
            return
        if job.config.epub.send_to:
            _mail(job, outcome, path.name, book)


def _mail(job: Job, outcome: DeliveryOutcome, name: str, book: bytes) -> None:
    to = job.config.epub.send_to
    if settled(job, outcome, MAIL_CHANNEL, f"{name} to {to}"):
        return
    record = begun(job, MAIL_CHANNEL, job.digest_hash)
    try:
        send_email(_message(job, name, book), _smtp_to(job))
    except DeliveryUnknown as exc:  # it may have arrived: not sent again on its own
        ended(job, record, DeliveryStatus.UNKNOWN, error=str(exc))
        outcome.failures.append(f"{name} to {to}: {exc}")
        return
    except DeliveryError as exc:
        failed(job, outcome, record, f"{name} to {job.config.epub.send_to}: {exc}")
        return
    ended(job, record, DeliveryStatus.SENT)
    outcome.delivered.append(MAIL_CHANNEL)


def _smtp_to(job: Job) -> EmailConfig:
    return job.config.email.model_copy(update={"to": [job.config.epub.send_to]})


def _message(job: Job, name: str, book: bytes) -> EmailMessage:
    smtp = job.config.email
    message = EmailMessage(policy=SMTP_POLICY)
    try:
        message["Subject"] = f"Digest for {job.period.label}"
        message["From"] = clean_header(smtp.sender)
        message["To"] = clean_header(job.config.epub.send_to)
    except ValueError as exc:
        raise DeliveryError(f"epub: bad address in config: {exc}") from exc
    message["Date"] = email.utils.format_datetime(job.now)
    message["Message-ID"] = f"<digest-{job.period.label}-{job.digest_hash[:16]}.epub@digest.local>"
    message.set_content(f"The digest of {job.period.label} as an EPUB book: {name}.")
    maintype, subtype = MEDIA_TYPE.split("/")
    message.add_attachment(book, maintype=maintype, subtype=subtype, filename=name)
    return message
