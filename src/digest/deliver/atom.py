"""The Atom feed of the digests, `<data_dir>/digests/feed.xml`, for any feed reader.

One entry per period, the newest week first. Ids are minted once (a `tag:` URI, see
`feed_ids`) and stored, so they never change, whatever [output] public_url becomes; an
older feed file's ids are taken over. An entry is `published` at its week's end (at its
first revision while the week is not over: never in the future) and `updated` at the time
of the revision it holds, so a new revision updates the entry in place. Without public_url the feed carries no links (a file:// one would lead nowhere
in a reader) and says how to get them; with it, each entry links to its week and the
feed to itself. Each delivery rewrites only its own period's entry and keeps the others
as they were, so the links in old entries keep the allowlist they were rendered with.
Same content, same bytes: nothing is written when nothing changed.
"""

from __future__ import annotations

import logging
import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from digest.atomic import write_atomic
from digest.config import Config
from digest.deliver.html import html_fragment
from digest.errors import DeliveryError
from digest.models import Period

ATOM = "http://www.w3.org/2005/Atom"
# What XML 1.0 cannot carry (most C0 controls, lone surrogates, U+FFFE/U+FFFF): one such
# character in a title would make the whole file unreadable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
FEED_ENTRIES = 20  # the newest weeks
TITLE_PREFIX = "Digest for "
NO_LINKS = (
    "Weekly digests. Set [output] public_url to the address this folder is served at:"
    " each week then links to its page, and the feed to itself."
)
log = logging.getLogger("digest")

ET.register_namespace("", ATOM)


def feed_path(config: Config) -> Path:
    return config.digests_dir / "feed.xml"


@dataclass(frozen=True)
class FeedIds:
    """The feed's id and the id of one week's entry."""

    feed: str
    entry: str


@dataclass(frozen=True)
class FoundIds:
    """The ids a feed file already gives: its own, and each week's (by entry title)."""

    feed: str | None = None
    entries: dict[str, str] = field(default_factory=dict)


def update_feed(
    config: Config,
    period: Period,
    markdown: str,
    *,
    updated: datetime,
    allowed_urls: Collection[str],
    ids: FeedIds,
) -> bool:
    """Put this period's digest into the feed; True when the file changed."""
    path = feed_path(config)
    entries = {_text(entry, "id"): entry for entry in existing_elements(path, f"{{{ATOM}}}entry")}
    published = _published(period, updated, entries.get(ids.entry))
    entry = _entry(config, period, markdown, (published, updated), allowed_urls, ids.entry)
    entries[ids.entry] = entry
    newest = sorted(entries.values(), key=_week_end, reverse=True)
    data = _serialise(config, ids.feed, newest[:FEED_ENTRIES])
    if path.exists() and path.read_bytes() == data:
        return False
    write_atomic(path, data.decode("utf-8"))
    return True


def new_tag(config: Config, now: datetime) -> str:
    """A tag: URI (RFC 4151) no other feed has: the public host if any, today, a random part."""
    authority = urlsplit(config.output.public_url).hostname or "localhost"
    return f"tag:{authority},{now.astimezone(UTC):%Y-%m-%d}:digest-{uuid.uuid4().hex}"


def found_ids(config: Config) -> FoundIds:
    """The ids of the feed file as it is (none when it is missing or unreadable)."""
    try:
        root = ET.parse(feed_path(config)).getroot()
    except (ET.ParseError, OSError):
        return FoundIds()
    entries = {
        _text(entry, "title").removeprefix(TITLE_PREFIX): _text(entry, "id")
        for entry in root.findall(f"{{{ATOM}}}entry")
    }
    return FoundIds(_text(root, "id") or None, entries)


def _week_end(entry: ET.Element) -> tuple[str, str]:
    """What orders the weeks (RFC 3339 in UTC sorts as text); an entry written before
    <published> was, by its update."""
    return _text(entry, "published") or _text(entry, "updated"), _text(entry, "updated")


def _published(period: Period, updated: datetime, earlier: ET.Element | None) -> str:
    """When the week's entry was published: the end of the week, or the first revision of a
    week not over yet (never a time in the future); kept from the entry's first writing."""
    first = _rfc3339(min(period.end, updated))
    kept = _text(earlier, "published") if earlier is not None else ""
    return kept if kept and kept <= first else first


def _entry(
    config: Config,
    period: Period,
    markdown: str,
    dates: tuple[str, datetime],  # published (RFC 3339), updated
    allowed_urls: Collection[str],
    entry_id: str,
) -> ET.Element:
    entry = ET.Element(f"{{{ATOM}}}entry")
    _sub(entry, "id", entry_id)
    _sub(entry, "title", f"{TITLE_PREFIX}{period.label}")
    _sub(entry, "published", dates[0])
    _sub(entry, "updated", _rfc3339(dates[1]))
    if public := config.output.public_url.rstrip("/"):
        link = f"{public}/{period.label}.md"
        ET.SubElement(entry, f"{{{ATOM}}}link", rel="alternate", href=xml_text(link))
    content = _sub(entry, "content", html_fragment(markdown, allowed_urls))
    content.set("type", "html")
    return entry


def _serialise(config: Config, feed_id: str, entries: list[ET.Element]) -> bytes:
    feed = ET.Element(f"{{{ATOM}}}feed")
    _sub(feed, "id", feed_id)
    _sub(feed, "title", "digest: weekly digests")
    _sub(feed, "updated", max(_text(entry, "updated") for entry in entries))
    author = ET.SubElement(feed, f"{{{ATOM}}}author")
    _sub(author, "name", "digest")
    if public := config.output.public_url.rstrip("/"):
        ET.SubElement(feed, f"{{{ATOM}}}link", rel="self", href=xml_text(f"{public}/feed.xml"))
    else:
        _sub(feed, "subtitle", NO_LINKS)
    feed.extend(entries)
    ET.indent(feed)
    data: bytes = ET.tostring(feed, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def existing_elements(path: Path, found_at: str, what: str = "feed") -> list[ET.Element]:
    """The elements at `found_at` in the feed file at `path` (none when it is missing); one
    that cannot be read is never replaced (its earlier weeks would be lost): DeliveryError
    names it and says what to do."""
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        return []
    except (ET.ParseError, OSError) as exc:
        raise DeliveryError(
            f"{path}: not readable as a {what} ({exc}); left as it is:"
            " repair it, or move it away to start the feed afresh"
        ) from exc
    return root.findall(found_at)


def xml_text(text: str) -> str:
    """`text` without the characters XML cannot carry."""
    return _NOT_XML.sub("", text)


def _sub(parent: ET.Element, tag: str, text: str) -> ET.Element:
    element = ET.SubElement(parent, f"{{{ATOM}}}{tag}")
    element.text = xml_text(text)
    return element


def _text(element: ET.Element, tag: str) -> str:
    return element.findtext(f"{{{ATOM}}}{tag}") or ""


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
