"""Deliver a composed digest: atomic file writes, the append-only log, SMTP, exactly-once records.

Every channel is keyed by (period, channel, content hash) in the store. A delivery is
recorded as pending (and committed) before it is attempted and marked sent after,
so the same content is never delivered twice on a channel, and a send whose outcome
is unknown is recorded as such and never resent on its own.
"""

from __future__ import annotations

import email.utils
import html
import os
import re
import smtplib
import socket
import ssl
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from pathlib import Path

import nh3
from markdown_it import MarkdownIt

from digest.compose import content_hash
from digest.config import Config, EmailConfig
from digest.errors import DeliveryError
from digest.models import Period
from digest.store import Store

ALLOWED_TAGS = frozenset(
    {"p", "h1", "h2", "h3", "ul", "ol", "li", "a", "strong", "em", "code", "pre", "blockquote"}
    | {"br"}
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_BODY_STYLE = (
    "font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; font-size: 16px;"
    " line-height: 1.5; color: #222; max-width: 42em; margin: 0 auto; padding: 1em;"
)


class DeliveryUnknown(DeliveryError):
    """The connection dropped after the message was sent but before the server's final reply."""


@dataclass
class DeliveryOutcome:
    period: str
    path: Path
    revision: int | None  # None: this content was recorded before
    delivered: list[str] = field(default_factory=list)  # channels delivered this time
    failures: list[str] = field(default_factory=list)


# -- files -------------------------------------------------------------------


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(text.encode("utf-8"))
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


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
    if log_path.exists() and _contains_entry(log_path.read_text(encoding="utf-8"), marker, entry):
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    created = not log_path.exists()
    with log_path.open("a", encoding="utf-8", newline="") as log:
        log.write(entry)
        log.flush()
        os.fsync(log.fileno())
    if created:
        _fsync_dir(log_path.parent)


def _contains_entry(log_text: str, marker: str, entry: str) -> bool:
    """The marker as a line of its own and the whole entry: a torn append does not count."""
    return marker in log_text.splitlines() and entry.lstrip("\n") in log_text


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- email -------------------------------------------------------------------


def message_id_for(period: str, digest_hash: str) -> str:
    """Derived from the content, so a retry of the same digest carries the same Message-ID."""
    return f"<digest-{period}-{digest_hash[:16]}@digest.local>"


def render_email(
    markdown: str,
    *,
    config: EmailConfig,
    period: Period,
    message_id: str,
    date: datetime | None = None,
) -> EmailMessage:
    """A multipart/alternative message: the markdown as text/plain, sanitised HTML beside it."""
    subject = email_subject(config.subject, period)
    message = EmailMessage(policy=SMTP_POLICY)
    try:
        message["Subject"] = subject
        message["From"] = config.sender
        message["To"] = ", ".join(config.to)
        message["Message-ID"] = message_id
        message["Date"] = email.utils.format_datetime(date) if date else email.utils.formatdate()
    except ValueError as exc:  # CR/LF or worse in an address from the config
        raise DeliveryError(f"email: bad header value in config: {exc}") from exc
    message["MIME-Version"] = "1.0"
    message.set_content(markdown, cte="quoted-printable")
    message.add_alternative(markdown_to_html(markdown, title=subject), subtype="html",
                            cte="quoted-printable")  # fmt: skip
    return message


def email_subject(template: str, period: Period) -> str:
    """config.subject with {period} filled in, on one line whatever the template held."""
    try:
        subject = template.format(period=period.label)
    except (KeyError, IndexError, ValueError) as exc:
        raise DeliveryError(f"email.subject: cannot fill in {template!r}: {exc!r}") from exc
    return " ".join(_CONTROL.sub(" ", subject).split())


def markdown_to_html(markdown: str, *, title: str) -> str:
    """The digest as HTML: only basic tags, links only to http(s), in a small styled page."""
    renderer = MarkdownIt("commonmark", {"html": False}).disable("image")
    body = nh3.clean(
        renderer.render(markdown),
        tags=set(ALLOWED_TAGS),
        attributes={"a": {"href"}},
        url_schemes={"http", "https"},
        url_relative="deny",
        strip_comments=True,
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head>\n"
        f'<body style="{_BODY_STYLE}">\n{body}</body></html>\n'
    )


def send_email(message: EmailMessage, config: EmailConfig) -> None:
    """Send over SMTP as configured: DeliveryError, or DeliveryUnknown if the outcome is unknown."""
    where = f"mail to smtp://{config.host}:{config.port} failed"
    try:
        _send(message, config)
    except DeliveryUnknown as exc:
        raise DeliveryUnknown(f"{where}: {exc}") from exc
    except DeliveryError as exc:
        raise DeliveryError(f"{where}: {exc}") from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"{where}: {_reason(exc, config)}") from exc


def _send(message: EmailMessage, config: EmailConfig) -> None:
    smtp = _connect(config)
    try:
        _authenticate(smtp, config)
        _transmit(smtp, message, config)
    finally:
        _close(smtp)


def _connect(config: EmailConfig) -> smtplib.SMTP:
    if config.security == "ssl":
        context = _tls_context(config)
        return smtplib.SMTP_SSL(config.host, config.port, timeout=config.timeout_s, context=context)
    smtp = smtplib.SMTP(config.host, config.port, timeout=config.timeout_s)
    try:
        if config.security == "starttls":
            smtp.ehlo()
            if not smtp.has_extn("starttls"):
                raise DeliveryError("the server does not offer STARTTLS (security = 'starttls')")
            smtp.starttls(context=_tls_context(config))
            smtp.ehlo()
    except BaseException:
        smtp.close()
        raise
    return smtp


def _tls_context(config: EmailConfig) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(config.ca_file) if config.ca_file else None)


def _authenticate(smtp: smtplib.SMTP, config: EmailConfig) -> None:
    if not config.username:
        return
    if config.security == "none":
        raise DeliveryError("refusing to send the password without TLS (security = 'none')")
    password = config.password
    if password is None:
        raise DeliveryError(f"no SMTP password: set ${config.password_env}")
    try:
        smtp.login(config.username, password)
    except smtplib.SMTPAuthenticationError as exc:
        raise DeliveryError(f"login as {config.username!r} refused ({exc.smtp_code})") from exc


def _transmit(smtp: smtplib.SMTP, message: EmailMessage, config: EmailConfig) -> None:
    """MAIL, RCPT and DATA by hand, so that a drop after the body was sent is told apart."""
    smtp.ehlo_or_helo_if_needed()
    _expect(smtp.mail(config.sender), (250,), "MAIL FROM")
    for recipient in config.to:
        _expect(smtp.rcpt(recipient), (250, 251), f"RCPT TO {recipient}")
    _expect(smtp.docmd("DATA"), (354,), "DATA")
    try:
        smtp.send(_dot_stuffed(message.as_bytes(policy=SMTP_POLICY)))
        reply = smtp.getreply()
    except (smtplib.SMTPServerDisconnected, OSError) as exc:
        raise DeliveryUnknown(
            f"connection lost after the message was sent ({_reason(exc, config)});"
            " outcome unknown, not resent"
        ) from exc
    _expect(reply, (250,), "end of DATA")


def _expect(reply: tuple[int, bytes], codes: tuple[int, ...], step: str) -> None:
    code, text = reply
    if code not in codes:
        raise DeliveryError(f"{step} answered {code} {_one_line(text.decode('utf-8', 'replace'))}")


def _dot_stuffed(data: bytes) -> bytes:
    data = re.sub(rb"(?m)^\.", b"..", data)
    if not data.endswith(b"\r\n"):
        data += b"\r\n"
    return data + b".\r\n"


def _close(smtp: smtplib.SMTP) -> None:
    try:
        smtp.quit()
    except (smtplib.SMTPException, OSError):
        smtp.close()


def _reason(exc: BaseException, config: EmailConfig) -> str:
    if isinstance(exc, smtplib.SMTPResponseException):
        error = exc.smtp_error
        text = error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)
        return f"{exc.smtp_code} {_one_line(text)}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {exc.verify_message}"
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"no answer within {config.timeout_s:g}s"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve {config.host!r}"
    return _one_line(str(exc)) or type(exc).__name__


def _one_line(text: str) -> str:
    return " ".join(text.split())


# -- the whole delivery ------------------------------------------------------


def deliver_digest(
    store: Store, config: Config, period: Period, markdown: str, now: datetime
) -> DeliveryOutcome:
    """Write the digest file, then deliver each channel at most once per content.

    Per-channel failures are recorded and listed in the outcome, never raised; only a
    digest file that cannot be written raises DeliveryError.
    """
    digest_hash = content_hash(markdown)
    path = config.digests_dir / f"{period.label}.md"
    changed = _write_digest_file(path, markdown)
    revision = store.record_digest(period.label, digest_hash, str(path), now)
    outcome = DeliveryOutcome(period.label, path, revision, ["file"] if changed else [])
    _deliver_log(store, config, period, markdown, digest_hash, now, outcome)
    if config.email.enabled:
        _deliver_email(store, config.email, period, markdown, digest_hash, now, outcome)
    return outcome


def _write_digest_file(path: Path, markdown: str) -> bool:
    """Write the digest atomically; True when its content changed."""
    try:
        changed = not path.exists() or path.read_text(encoding="utf-8") != markdown
        write_atomic(path, markdown)
    except OSError as exc:
        raise DeliveryError(f"cannot write digest {path}: {exc.strerror or exc}") from exc
    return changed


def _deliver_log(
    store: Store,
    config: Config,
    period: Period,
    markdown: str,
    digest_hash: str,
    now: datetime,
    outcome: DeliveryOutcome,
) -> None:
    record = store.delivery(period.label, "log", digest_hash)
    if record is not None and record.status == "sent":
        return
    revision = store.digest_revision(period.label, digest_hash)
    assert revision is not None, "record_digest runs before the channels"
    record = store.begin_delivery(period.label, "log", digest_hash, now)
    try:
        append_log(config.log_path, log_entry(period.label, revision, digest_hash, markdown))
    except OSError as exc:
        error = f"cannot append to log {config.log_path}: {exc.strerror or exc}"
        store.finish_delivery(record.id, "failed", now, error=error)
        outcome.failures.append(error)
        return
    store.finish_delivery(record.id, "sent", now)
    outcome.delivered.append("log")


def _deliver_email(
    store: Store,
    config: EmailConfig,
    period: Period,
    markdown: str,
    digest_hash: str,
    now: datetime,
    outcome: DeliveryOutcome,
) -> None:
    record = store.delivery(period.label, "email", digest_hash)
    if record is not None and record.status in ("sent", "unknown"):
        return
    if record is not None and record.status == "pending":  # a run died mid-send
        error = "an earlier run stopped while sending; outcome unknown, not resent"
        store.finish_delivery(record.id, "unknown", now, error=error)
        outcome.failures.append(f"email for {period.label}: {error}")
        return
    message_id = message_id_for(period.label, digest_hash)
    record = store.begin_delivery(period.label, "email", digest_hash, now)
    try:
        message = render_email(
            markdown, config=config, period=period, message_id=message_id, date=now
        )
        send_email(message, config)
    except DeliveryUnknown as exc:
        store.finish_delivery(record.id, "unknown", now, error=str(exc), message_id=message_id)
        outcome.failures.append(str(exc))
        return
    except DeliveryError as exc:
        store.finish_delivery(record.id, "failed", now, error=str(exc), message_id=message_id)
        outcome.failures.append(str(exc))
        return
    store.finish_delivery(record.id, "sent", now, message_id=message_id)
    outcome.delivered.append("email")
