"""The Atom feed of the digests, `<data_dir>/digests/feed.xml`, for any feed reader.

One entry per period, newest first; its id is stable (derived from the period) and
its `updated` time is that of the revision it holds, so a new revision updates the
entry in place. Each delivery rewrites only its own period's entry and keeps the
others as they were, so the links in old entries keep the allowlist they were
rendered with. Same content, same bytes: nothing is written when nothing changed.
"""

from __future__ import annotations

import logging
import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path

from digest.atomic import write_atomic
from digest.config import Config
from digest.deliver.html import html_fragment
from digest.errors import DeliveryError
from digest.models import Period

ATOM = "http://www.w3.org/2005/Atom"
# What XML 1.0 cannot carry (most C0 controls, lone surrogates, U+FFFE/U+FFFF): one such
# character in a title would make the whole file unreadable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
FEED_ENTRIES = 20
log = logging.getLogger("digest")

ET.register_namespace("", ATOM)


def feed_path(config: Config) -> Path:
    return config.digests_dir / "feed.xml"


def update_feed(
    config: Config,
    period: Period,
    markdown: str,
    *,
    updated: datetime,
    allowed_urls: Collection[str],
) -> bool:
    """Put this period's digest into the feed; True when the file changed."""
    path = feed_path(config)
    base = _feed_base(config)
    entries = {_text(entry, "id"): entry for entry in _existing_entries(path)}
    entry = _entry(config, period, markdown, updated, allowed_urls)
    entries[_text(entry, "id")] = entry
    newest = sorted(entries.values(), key=lambda e: (_text(e, "updated"), _text(e, "id")))
    data = _serialise(base, newest[::-1][:FEED_ENTRIES])
    if path.exists() and path.read_bytes() == data:
        return False
    write_atomic(path, data.decode("utf-8"))
    return True


def _feed_base(config: Config) -> str:
    """What makes this feed's ids its own: its public URL, else its data folder."""
    return config.output.public_url.rstrip("/") or f"file://{config.digests_dir}"


def entry_id(config: Config, period: Period) -> str:
    """The week's id in the feed (the podcast feed's guid for the same week too)."""
    return _uuid_urn(f"{_feed_base(config)}/{period.label}")


def _uuid_urn(name: str) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, name).urn


def _entry(
    config: Config,
    period: Period,
    markdown: str,
    updated: datetime,
    allowed_urls: Collection[str],
) -> ET.Element:
    entry = ET.Element(f"{{{ATOM}}}entry")
    _sub(entry, "id", entry_id(config, period))
    _sub(entry, "title", f"Digest for {period.label}")
    _sub(entry, "updated", _rfc3339(updated))
    link = config.output.public_url.rstrip("/") + f"/{period.label}.md"
    if not config.output.public_url:
        link = (config.digests_dir / f"{period.label}.md").as_uri()
    ET.SubElement(entry, f"{{{ATOM}}}link", rel="alternate", href=xml_text(link))
    content = _sub(entry, "content", html_fragment(markdown, allowed_urls))
    content.set("type", "html")
    return entry


def _serialise(base: str, entries: list[ET.Element]) -> bytes:
    feed = ET.Element(f"{{{ATOM}}}feed")
    _sub(feed, "id", _uuid_urn(f"{base}/feed.xml"))
    _sub(feed, "title", "digest: weekly digests")
    _sub(feed, "updated", max(_text(entry, "updated") for entry in entries))
    author = ET.SubElement(feed, f"{{{ATOM}}}author")
    _sub(author, "name", "digest")
    if base.startswith("http"):
        ET.SubElement(feed, f"{{{ATOM}}}link", rel="self", href=f"{base}/feed.xml")
    feed.extend(entries)
    ET.indent(feed)
    data: bytes = ET.tostring(feed, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def _existing_entries(path: Path) -> list[ET.Element]:
    """The entries of the feed file; one that cannot be read is never replaced (its earlier
    weeks would be lost): DeliveryError names it and says what to do."""
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        return []
    except (ET.ParseError, OSError) as exc:
        raise DeliveryError(
            f"{path}: not readable as a feed ({exc}); left as it is:"
            " repair it, or move it away to start the feed afresh"
        ) from exc
    return root.findall(f"{{{ATOM}}}entry")


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
