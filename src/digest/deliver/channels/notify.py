"""A short message of the week pushed through Apprise ([notify] urls): its title, the week
in brief in a few lines, how many items and how long to read, and its link.

Each URL is a channel of its own in the outbox ("notify:" and a hash of the URL, never
the URL): sent once per revision, or once when the week is over (as email.send says),
retried with doubling pauses and on the next run, one URL's failure never stopping
another's. A send whose outcome is unknown (a run stopped during it) is not resent.

Apprise does its own networking. Before a send, the host the URL names (for services
hosted where the user says: json://, ntfy://host, gotify://, matrix://, mailto://…) is
resolved, and a private address is refused unless fetch.allow_private_addresses allows
it; services at a fixed public address (tgram://, discord://…) are not checked. The
check is made once before the send: a name that resolves elsewhere a moment later is
not caught (the URLs are the user's own config, not what anyone shared).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
from dataclasses import dataclass
from ipaddress import ip_address
from typing import TYPE_CHECKING

from digest.config import ENV_PREFIX, NotifyConfig
from digest.deliver.channel import DeliveryOutcome, Job, begun, ended, settled
from digest.deliver.channels.email import full_copy_location, why_not_sent
from digest.deliver.plaintext import short_text
from digest.errors import bugs_recorded
from digest.fetch.guard import AddressPolicy
from digest.lifecycle import backoff_delay
from digest.models import DeliveryStatus
from digest.reading_time import minutes_read
from digest.runtime.logs import redact

if TYPE_CHECKING:
    from apprise.plugins.base import NotifyBase

log = logging.getLogger("digest")
BRIEF_LINES = 4  # of the week in brief, in the message
BRIEF_CHARS = 600


@dataclass(frozen=True)
class Target:
    """One [notify] URL: its channel name, how it is shown, and what must never be."""

    number: int  # its place in [notify] urls, from 1
    url: str | None  # None: its environment variable is not set
    shown: str

    @property
    def channel(self) -> str:
        digest = hashlib.sha256((self.url or self.shown).encode()).hexdigest()
        return f"notify:{digest[:12]}"

    @property
    def secrets(self) -> list[str]:
        """The URL and every part of it longer than 3 characters that its shown form hides;
        none when it hides nothing (masking it then would leave a failure naming no channel)."""
        if not self.url or self.url == self.shown:
            return []
        parts = self.url.replace("?", "/").replace("@", "/").replace(":", "/").split("/")
        return [self.url, *(part for part in parts if len(part) > 3 and part not in self.shown)]


def targets(config: NotifyConfig) -> list[Target]:
    found = []
    for number, written in enumerate(config.urls, 1):
        if written.startswith(ENV_PREFIX):
            name = written.removeprefix(ENV_PREFIX)
            url = os.environ.get(name) or None
            found.append(Target(number, url, f"${name}" if url is None else _shown(url)))
        else:
            found.append(Target(number, written, _shown(written)))
    return found


def _shown(url: str) -> str:
    """The URL with Apprise's own privacy mask (tokens as `1...4`), without its options."""
    plugin = _plugin(url)
    if plugin is None:
        return f"{url.split('://', 1)[0]}://***"
    return str(plugin.url(privacy=True)).split("?", 1)[0]  # type: ignore[no-untyped-call]


def _plugin(url: str) -> NotifyBase | None:
    import apprise  # noqa: PLC0415 (a second to import: only when a message goes out)

    plugin = apprise.Apprise.instantiate(url, suppress_exceptions=True)
    return plugin if plugin else None


def message(job: Job) -> tuple[str, str]:
    """Title and body: the week in brief in a few lines, the count and time, the link."""
    edition, label = job.edition, job.period.label
    title = f"Digest for {label}"
    lines = [edition.dates] if edition else []
    if edition and not job.empty:
        lines += _cut(short_text(edition.brief)[:BRIEF_LINES])
    count = len(job.items)
    things = "item" if count == 1 else "items"
    minutes = sum(topic.minutes for topic in edition.topics) if edition else 0
    lines.append(f"{count} {things} · {minutes_read(minutes)}")
    if job.config.output.public_url:
        lines.append(full_copy_location(job.config, job.period))
    return title, "\n".join(lines)


def _cut(lines: list[str]) -> list[str]:
    kept, size = [], 0
    for line in lines:
        if size + len(line) > BRIEF_CHARS:
            kept.append(line[: max(BRIEF_CHARS - size, 0)].rstrip() + "…")
            break
        kept.append(line)
        size += len(line)
    return kept


class NotifyChannel:
    name = "notify"
    carries_empty = False

    def wanted(self, job: Job) -> bool:
        return bool(job.config.notify.urls)

    def deliver(self, job: Job, outcome: DeliveryOutcome) -> None:
        title, body = message(job)
        for target in targets(job.config.notify):
            with bugs_recorded(f"notify URL {target.number} ({target.shown})", outcome.failures):
                _deliver_one(job, outcome, target, title, body)


def _deliver_one(job: Job, outcome: DeliveryOutcome, target: Target, title: str, body: str) -> None:
    channel, label = target.channel, job.period.label
    if held := why_not_sent(job, channel, done="pushed"):
        outcome.held.append(f"notify {target.shown}: {held}")
        return
    if settled(job, outcome, channel, f"notify {target.shown}"):
        return
    record = begun(job, channel, job.digest_hash)
    problem = _send_with_retries(job, target, title, body)
    if problem is None:
        ended(job, record, DeliveryStatus.SENT)
        outcome.delivered.append(f"notify {target.shown}")
        return
    error = redact(f"notify {target.shown} for {label}: {problem}", target.secrets)
    ended(job, record, DeliveryStatus.FAILED, error=error)
    outcome.failures.append(error)


def _send_with_retries(job: Job, target: Target, title: str, body: str) -> str | None:
    """None once sent; else why not, after [notify] retries doubling pauses."""
    config = job.config.notify
    attempt = 0
    while True:
        error = _send(job, target, title, body)
        if error is None or error.startswith("refused:"):
            return error
        if attempt >= config.retries:
            tries = f"tried {attempt + 1} times" if attempt else "tried once"
            return (
                f"{error}; {tries}, retried on the next run (if it keeps failing, check that"
                f" service, or notify URL {target.number} in [notify] urls)"
            )
        pause = backoff_delay(attempt + 1, base_s=config.retry_backoff_s, max_s=3600)
        log.info("notify %s: %s; retrying in %g s", target.shown, error, pause.total_seconds())
        if job.sleep(pause.total_seconds()):
            return f"{error}; the run is stopping, retried on the next run"
        attempt += 1


def _send(job: Job, target: Target, title: str, body: str) -> str | None:
    if target.url is None:
        return f"refused: {target.shown} is not set (notify URL {target.number})"
    plugin = _plugin(target.url)
    if plugin is None:
        return f"refused: not a URL Apprise knows (notify URL {target.number})"
    if refused := _private_host(plugin, AddressPolicy(job.config.fetch.allow_private_addresses)):
        return f"refused: {refused}"
    plugin.socket_connect_timeout = plugin.socket_read_timeout = job.config.notify.timeout_s
    import apprise  # noqa: PLC0415

    apprise_log = logging.getLogger("apprise")
    apprise_log.propagate = False  # its lines carry the URL: they come back in our error
    with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as said:  # type: ignore[no-untyped-call]
        sent = plugin.notify(body=body, title=title, body_format=apprise.NotifyFormat.TEXT)
    if sent:
        return None
    lines = [line.strip() for line in said.getvalue().splitlines() if line.strip()]
    return "; ".join(lines[-2:]) or "Apprise could not send it"


def _private_host(plugin: NotifyBase, policy: AddressPolicy) -> str | None:
    """Why the host the URL names may not be reached, if it resolves to a private address."""
    if str(getattr(type(plugin), "notify_url", "")).startswith("http"):
        return None  # a service at its fixed public address
    host = str(getattr(plugin, "smtp_host", None) or plugin.host or "")
    if not _names_a_host(host):
        return None  # a token in the host's place (slack://T1/…)
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return None  # Apprise cannot reach it either, and says so
    for *_, address in found:
        ip = ip_address(str(address[0]).split("%", 1)[0])
        if not policy.allows(ip):
            return (
                f"{host} is at the private address {ip}"
                " (set fetch.allow_private_addresses to allow)"
            )
    return None


def _names_a_host(host: str) -> bool:
    try:
        ip_address(host)
    except ValueError:
        return "." in host or host == "localhost"
    return True
