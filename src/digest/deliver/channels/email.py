"""The week by SMTP: once per revision, or once when the week is over (email.send);
retried on a 4xx reply; a send whose outcome is unknown is never resent on its own."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from email.message import EmailMessage

from digest.config import Config
from digest.deliver.channel import DeliveryOutcome, Job, begun, ended
from digest.deliver.mail import DeliveryUnknown, SmtpReplyError, send_email
from digest.deliver.message import MailTemplate, render_email
from digest.deliver.podcast import episode_link
from digest.errors import DeliveryError
from digest.lifecycle import backoff_delay
from digest.models import DeliveryStatus, Period

log = logging.getLogger("digest")

# A mail in these states is not sent again on its own (`digest resend` sends it).
_NOT_RESENT = (DeliveryStatus.SENT, DeliveryStatus.UNKNOWN, DeliveryStatus.REJECTED)
# These count as mailed: a week mailed before is not a first mail.
MAILED = (DeliveryStatus.SENT, DeliveryStatus.UNKNOWN, DeliveryStatus.PENDING)


def message_id_for(period: str, digest_hash: str) -> str:
    """Derived from the content, so a retry of the same digest carries the same Message-ID."""
    return f"<digest-{period}-{digest_hash[:16]}@digest.local>"


def full_copy_location(config: Config, period: Period) -> str:
    """Where the whole digest can be read: under [output] public_url if set, else its path."""
    if config.output.public_url:
        return f"{config.output.public_url.rstrip('/')}/{period.label}.md"
    return str(config.digests_dir / f"{period.label}.md")


def why_not_sent(job: Job, channel: str, done: str = "mailed") -> str | None:
    """Under email.send = "once": a week goes out when it is over, and only once."""
    if job.config.email.send == "every_revision":
        return None
    label = job.period.label
    if job.now < job.period.end:
        return (
            f"{label} is {done} once, when the week is over: the daemon's weekly job or"
            f' `digest now --week {label}` then sends it (email.send = "once")'
        )
    mailed = job.store.deliveries(MAILED)
    earlier = any(record.period == label and record.channel == channel for record in mailed)
    if earlier and job.store.delivery(label, channel, job.digest_hash) is None:
        return f"{label} was {done} before; this revision is in the files and the feed"
    return None


class EmailChannel:
    name = "email"
    carries_empty = False

    def wanted(self, job: Job) -> bool:
        return job.config.email.enabled

    def deliver(self, job: Job, outcome: DeliveryOutcome) -> None:
        held = why_not_sent(job, self.name)
        if held:
            outcome.held.append(held)
            return
        store, label = job.store, job.period.label
        record = store.delivery(label, self.name, job.digest_hash)
        if record is not None and record.status in _NOT_RESENT:
            return
        if record is not None and record.status is DeliveryStatus.PENDING:  # died mid-send
            error = "an earlier run stopped while sending; outcome unknown, not resent"
            ended(job, record, DeliveryStatus.UNKNOWN, error=error)
            outcome.failures.append(f"email for {label}: {error}")
            return
        send_recorded(job, outcome)


def send_recorded(job: Job, outcome: DeliveryOutcome) -> None:
    """Pending (committed) before connecting; sent, unknown, failed or rejected after."""
    label, digest_hash = job.period.label, job.digest_hash
    message_id = message_id_for(label, digest_hash)
    record = begun(job, "email", digest_hash)
    full_copy = full_copy_location(job.config, job.period)
    template = MailTemplate(job.config.output.templates_dir, job.period, full_copy)
    markdown, allowed_urls = job.markdown, list(job.allowed_urls)
    if job.config.output.public_url:  # a newsletter's "View online", at the top
        markdown = f"[View online]({full_copy})\n\n{markdown}"
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
        ended(job, record, DeliveryStatus.FAILED, error=str(exc))
        outcome.failures.append(str(exc))
        return
    if template.problem:  # sent with the built-in HTML part: reported, exit 3
        outcome.failures.append(template.problem)
    status, error = _send_with_retries(job, message, lambda: render(small=True))
    ended(job, record, status, error=error, message_id=message_id)
    if status is DeliveryStatus.SENT:
        outcome.delivered.append("email")
    if error is not None:
        outcome.failures.append(error)


def _send_with_retries(
    job: Job, message: EmailMessage, smaller: Callable[[], EmailMessage]
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
                begun(job, "email", job.digest_hash)  # a send
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
            begun(job, "email", job.digest_hash)
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
