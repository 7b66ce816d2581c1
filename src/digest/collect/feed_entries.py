"""A fetched feed body's entries as items: RSS, Atom (feedparser, DTDs and entity
declarations stripped first) and JSON Feed; a large XML feed parsed a part at a time, and
entries that share one link told apart by their guid or enclosure."""

from __future__ import annotations

import io
import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urljoin

import feedparser

from digest.collect.feedparts import feed_parts
from digest.collect.importers.common import plain_text
from digest.errors import SourceError
from digest.fetch.client import FetchResult, describe_error
from digest.models import ItemKind, SavedItem
from digest.text import shorten
from digest.urls import WebURL, normalize_url, parse_url

# feedparser asks chardet when a feed's declared encoding fails; chardet's time grows with the
# square of some bodies (a 41 KB one: minutes, 1 MB: hours), holding the run. Without it
# feedparser falls back to UTF-8, then windows-1252: text a reader can still make out.
feedparser.encodings.lazy_chardet_encoding = None

MAX_CONTEXT_CHARS = 2000
UNUSABLE_LINKS_SHOWN = 3  # entries without a usable link: this many of their links are named
FEED_PART_BYTES = 1_000_000  # larger XML feeds are parsed a part of about this size at a time


JSON_FEED_VERSION = "https://jsonfeed.org/version/1"  # 1 and 1.1 both start so
_WIDE_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\xfe\xff", "utf-16"),
    (b"\xff\xfe", "utf-16"),
)
# CDATA sections and comments are kept; DOCTYPE (with its internal subset) and
# ENTITY declarations are cut, each to its end or, unterminated, to the end of the body.
_DECLARATIONS = (
    r"(<!\[CDATA\[.*?(?:\]\]>|\Z))|(<!--.*?(?:-->|\Z))"
    r"|<!(?:DOCTYPE|ENTITY)(?:[^\[>\"']|\"[^\"]*(?:\"|\Z)|'[^']*(?:'|\Z)"
    r"|\[(?:[^\]\"']|\"[^\"]*(?:\"|\Z)|'[^']*(?:'|\Z))*(?:\]|\Z))*(?:>|\Z)"
)
_DECLARATIONS_BYTES = re.compile(_DECLARATIONS.encode(), re.S | re.I)
_DECLARATIONS_TEXT = re.compile(_DECLARATIONS, re.S | re.I)


@dataclass(frozen=True)
class FeedEntries:
    """A feed body's entries as items, how many had no usable link, how many were merged."""

    items: list[SavedItem]
    skipped: int = 0
    merged: int = 0
    unusable_links: tuple[str, ...] = ()  # the first few links that were not web links
    site: str | None = None  # the feed's own web page, when it names one


def parse_feed_in_parts(result: FetchResult) -> FeedEntries:
    """parse_feed over a large XML feed a part at a time: memory stays that of one part.
    (Entries of different parts that share a link are not told apart by guid.)"""
    if len(result.content) <= FEED_PART_BYTES or looks_like_json(result):
        return parse_feed(result)
    items: list[SavedItem] = []
    skipped = merged = 0
    unusable: tuple[str, ...] = ()
    site = None
    for part in feed_parts(result.content, FEED_PART_BYTES):
        parsed = parse_feed(replace(result, content=part))
        items += parsed.items
        skipped += parsed.skipped
        merged += parsed.merged
        unusable = (*unusable, *parsed.unusable_links)[:UNUSABLE_LINKS_SHOWN]
        site = site or parsed.site
    return FeedEntries(items, skipped, merged, unusable, site)


def parse_feed(result: FetchResult) -> FeedEntries:
    """The entries of a fetched feed body, and how many had no usable link."""
    if looks_like_json(result):
        return _parse_json_feed(result.content, result.final_url)
    return _parse_xml_feed(result)


def looks_like_json(result: FetchResult) -> bool:
    content_type = result.headers.get("content-type", "").lower()
    return "json" in content_type or result.content.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"


def _parse_xml_feed(result: FetchResult) -> FeedEntries:
    headers = {"content-location": result.final_url}
    if content_type := result.headers.get("content-type"):
        headers["content-type"] = content_type
    parsed = feedparser.parse(
        io.BytesIO(strip_declarations(result.content)), response_headers=headers
    )
    items = [feed_entry_item(entry, result.final_url) for entry in parsed.entries]
    kept = [item for item in items if item]
    # an empty feed is fine; a document of no feed type, or a broken one with nothing usable, not
    unusable = parsed.bozo and not kept and not parsed.feed.get("title")
    if unusable or (not parsed.entries and not parsed.get("version")):
        problem = parsed.get("bozo_exception")
        reason = describe_error(problem) if problem else "no RSS, Atom or JSON Feed found"
        raise SourceError(f"feed {result.url!r}: not a feed ({reason})")
    identities = [_entry_identity(entry, result.final_url) for entry in parsed.entries]
    keyed = _keyed(items, identities, [entry.get("link") for entry in parsed.entries])
    return replace(keyed, site=_absolute_link(parsed.feed.get("link"), result.final_url))


def strip_declarations(body: bytes) -> bytes:
    """The body without <!DOCTYPE ...> (internal subset included) and <!ENTITY ...>."""
    for bom, codec in _WIDE_BOMS:
        if body.startswith(bom):
            text = body.decode(codec, "replace")
            return _DECLARATIONS_TEXT.sub(lambda m: m[1] or m[2] or "", text).encode(codec)
    return _DECLARATIONS_BYTES.sub(lambda m: m[1] or m[2] or b"", body)


def feed_entry_item(entry: Any, base: str) -> SavedItem | None:
    """A feedparser entry as a link item (None without an http(s) link), `base` resolving it."""
    url = _absolute_link(entry.get("link"), base)
    if url is None:
        return None
    detail = entry.get("title_detail") or {}
    title = entry.get("title")
    if title and "html" in str(detail.get("type", "")):
        title = plain_text(title)
    content = entry.get("content") or [{}]
    summary = entry.get("summary") or content[0].get("value")
    moment = entry.get("published_parsed") or entry.get("updated_parsed")
    terms = [tag.get("term") for tag in entry.get("tags") or () if isinstance(tag, dict)]
    transcript = entry.get("podcast_transcript") or {}  # <podcast:transcript url="…">
    return SavedItem(
        url=url,
        title=_clean(title),
        saved_at=_from_struct_time(moment),
        topic=_category(terms),
        context=plain_text(summary, MAX_CONTEXT_CHARS) if summary else None,
        kind=ItemKind.LINK,
        transcript=_absolute_link(transcript.get("url"), base)
        if isinstance(transcript, dict)
        else None,
    )


def _category(terms: Sequence[object]) -> str | None:
    """The entry's first category (RSS <category>, Atom category term, JSON Feed tag): the
    feed's own grouping, the section the entry is listed under."""
    named = (" ".join(term.split()) for term in terms if isinstance(term, str))
    return next((name for name in named if name), None)


def _parse_json_feed(body: bytes, base: str) -> FeedEntries:
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise SourceError(f"feed {base!r}: not a feed (JSON: {exc})") from exc
    version = document.get("version") if isinstance(document, dict) else None
    if not isinstance(version, str) or not version.startswith(JSON_FEED_VERSION):
        raise SourceError(f"feed {base!r}: not a feed (JSON without a JSON Feed version)")
    raw_items = document.get("items")
    if not isinstance(raw_items, list):
        raise SourceError(f"feed {base!r}: not a feed (JSON Feed without items)")
    items = [_json_item(raw, base) if isinstance(raw, dict) else None for raw in raw_items]
    identities = [
        _json_identity(raw, base) if isinstance(raw, dict) else (None, None) for raw in raw_items
    ]
    links = [
        raw.get("url") or raw.get("external_url") if isinstance(raw, dict) else None
        for raw in raw_items
    ]
    keyed = _keyed(items, identities, links)
    return replace(keyed, site=_absolute_link(document.get("home_page_url"), base))


# -- entries that share one link -------------------------------------------------------


def _keyed(
    items: list[SavedItem | None],
    identities: list[tuple[str | None, str | None]],
    given_links: list[object],
) -> FeedEntries:
    """The items; those whose link other entries share are keyed by their guid, else their
    enclosure, so a podcast whose episodes all link to its home page keeps every episode.
    Entries that still share a key are saved as one, and counted."""
    links = Counter(normalize_url(item.url) for item in items if item and item.url)
    kept: list[SavedItem] = []
    for item, (guid, enclosure) in zip(items, identities, strict=True):
        if item is None or item.url is None:
            continue
        link = normalize_url(item.url)
        if links[link] > 1 and (enclosure or guid):
            item = replace(item, key=enclosure or f"{link}#guid={guid}")
        kept.append(item)
    keys = {item.key or normalize_url(item.url or "") for item in kept}
    unusable = [
        shorten(" ".join(link.split()), 80)
        for item, link in zip(items, given_links, strict=True)
        if item is None and isinstance(link, str) and link.strip()
    ]
    return FeedEntries(
        kept,
        skipped=len(items) - len(kept),
        merged=len(kept) - len(keys),
        unusable_links=tuple(unusable[:UNUSABLE_LINKS_SHOWN]),
    )


def _entry_identity(entry: Any, base: str) -> tuple[str | None, str | None]:
    """A feedparser entry's guid and the canonical URL of its first enclosure."""
    hrefs = [e.get("href") for e in entry.get("enclosures") or [] if isinstance(e, dict)]
    return _guid(entry.get("id")), _enclosure(hrefs, base)


def _json_identity(raw: dict[str, Any], base: str) -> tuple[str | None, str | None]:
    attachments = raw.get("attachments") if isinstance(raw.get("attachments"), list) else []
    hrefs = [a.get("url") for a in attachments or [] if isinstance(a, dict)]
    return _guid(raw.get("id")), _enclosure(hrefs, base)


def _guid(value: object) -> str | None:
    text = " ".join(str(value).split()) if isinstance(value, str | int) else ""
    return text[:500] or None


def _enclosure(hrefs: list[Any], base: str) -> str | None:
    for href in hrefs:
        url = _absolute_link(href, base)
        if url is not None:
            return normalize_url(url)
    return None


def _json_item(raw: dict[str, Any], base: str) -> SavedItem | None:
    url = _absolute_link(raw.get("url") or raw.get("external_url"), base)
    if url is None:
        return None
    summary = raw.get("summary") or raw.get("content_text") or raw.get("content_html")
    title = raw.get("title")
    tags = raw.get("tags")
    return SavedItem(
        url=url,
        title=_clean(title) if isinstance(title, str) else None,
        saved_at=_from_iso(raw.get("date_published") or raw.get("date_modified")),
        topic=_category(tags if isinstance(tags, list) else []),
        context=plain_text(summary, MAX_CONTEXT_CHARS) if isinstance(summary, str) else None,
        kind=ItemKind.LINK,
    )


def _absolute_link(link: object, base: str) -> str | None:
    """`link` resolved against `base`, if it is a valid http(s) URL (urls.parse_url)."""
    if not isinstance(link, str) or not link.strip():
        return None
    try:
        url = urljoin(base, link.strip())
    except ValueError:  # a broken base or link (an unclosed IPv6 bracket): taken as it is
        url = link.strip()
    parsed = parse_url(url)
    return parsed.url if isinstance(parsed, WebURL) else None


def _from_struct_time(moment: time.struct_time | None) -> datetime | None:
    if moment is None:
        return None
    try:
        return datetime(*moment[:6], tzinfo=UTC)
    except (TypeError, ValueError):
        return None


def _from_iso(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _clean(title: str | None) -> str | None:
    return (" ".join(title.split()) or None) if title else None
