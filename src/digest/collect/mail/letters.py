"""One mail message as digest reads it: who sent it, its subject and date, its bodies decoded
whatever charset they claim (pure: bytes in, a Letter out)."""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.header import decode_header
from email.message import Message
from email.utils import getaddresses, parsedate_to_datetime

MAX_BODY_BYTES = 5_000_000  # a part larger than this is not read (an attachment, not a letter)


@dataclass(frozen=True)
class Letter:
    key: str  # the Message-ID, else a hash of the message: what makes it read once
    sender: str  # the sender's display name, else their address
    address: str  # the sender's address, lower-cased
    list_id: str | None  # the List-Id header, lower-cased
    subject: str
    date: datetime | None  # aware
    html: str | None
    plain: str | None

    def matches(self, senders: Sequence[str], lists: Sequence[str]) -> bool:
        """Whether the letter passes a source's filter: sent by one of `senders` (an address,
        or a domain matching its subdomains too) or on one of `lists` (part of the List-Id);
        no filter passes every letter."""
        if not senders and not lists:
            return True
        domain = self.address.rpartition("@")[2]
        by_sender = any(
            self.address == wanted.lower()
            or domain == wanted.lower().lstrip("@")
            or domain.endswith("." + wanted.lower().lstrip("@"))
            for wanted in senders
        )
        on_list = self.list_id is not None and any(
            wanted.lower() in self.list_id for wanted in lists
        )
        return by_sender or on_list


def letter_of(message: Message) -> Letter:
    """The letter `message` holds. Never raises on a strange charset or header: what cannot
    be decoded is replaced, so one odd message still reads."""
    name, address = _sender(message)
    message_id = header_text(message.get("Message-ID")).strip()
    html, plain = _bodies(message)
    list_id = header_text(message.get("List-Id")).strip().lower() or None
    return Letter(
        key=message_id or _fallback_key(message),
        sender=name or address or "(unknown sender)",
        address=address,
        list_id=list_id,
        subject=" ".join(header_text(message.get("Subject")).split()) or "(no subject)",
        date=_date(header_text(message.get("Date"))),
        html=html,
        plain=plain,
    )


def _fallback_key(message: Message) -> str:
    """A letter without a Message-ID is known by a hash of its headers."""
    headers = "\n".join(f"{name}: {value}" for name, value in message.items())
    return "sha256:" + hashlib.sha256(headers.encode(errors="replace")).hexdigest()[:32]


def header_text(value: object) -> str:
    """A header decoded from its RFC 2047 words, whatever charsets they name."""
    if value is None:
        return ""
    parts = []
    for chunk, charset in decode_header(str(value)):
        parts.append(chunk if isinstance(chunk, str) else decoded(chunk, charset))
    return "".join(parts)


def decoded(data: bytes, charset: str | None) -> str:
    """`data` in `charset` (UTF-8 when none is named, Windows-1252 when the one named is
    unknown), bytes that do not fit replaced."""
    name = (charset or "utf-8").strip().strip('"').lower()
    try:
        codecs.lookup(name)
    except LookupError:
        name = "cp1252"
    return data.decode(name, errors="replace")


def _sender(message: Message) -> tuple[str, str]:
    found = getaddresses([header_text(message.get("From"))])
    name, address = found[0] if found else ("", "")
    return " ".join(name.split()).strip("\"'"), address.strip().lower()


def _date(text: str) -> datetime | None:
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _bodies(message: Message) -> tuple[str | None, str | None]:
    """The first text/html and the first text/plain part that is not an attachment."""
    html = plain = None
    for part in message.walk():
        if part.is_multipart() or part.get_content_disposition() == "attachment":
            continue
        kind = part.get_content_type()
        if kind not in ("text/html", "text/plain"):
            continue
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes) or len(payload) > MAX_BODY_BYTES:
            continue
        text = decoded(payload, part.get_content_charset())
        if kind == "text/html" and html is None:
            html = text
        elif kind == "text/plain" and plain is None:
            plain = text
    return html, plain
