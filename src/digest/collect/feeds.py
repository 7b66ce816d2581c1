"""The feed collector: conditional polls of RSS, Atom and JSON Feed, entries saved as links.

Polite polling: ETag and Last-Modified sent back, 304 saves nothing, 301/308 chains
are remembered, 410 stops polling. Parsing is defensive: DTDs and entity
declarations are stripped before feedparser sees the body.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urljoin

import feedparser

from digest.collect import REDATED
from digest.collect.feedparts import feed_parts
from digest.collect.importers.common import plain_text, storable
from digest.config import FetchConfig, SourceConfig
from digest.errors import DigestError, FetchError, SourceError, unit_bug
from digest.fetch.access import PUBLIC, Access, access_hint, source_access
from digest.fetch.client import Fetcher, FetchResult, check_status, describe_error
from digest.lifecycle import Backoff, feed_failed, feed_polled, is_due
from digest.models import FeedState, ItemKind, SavedItem, Stage, StageReport
from digest.runtime.tasks import run_together
from digest.store import Store, item_key
from digest.text import shorten
from digest.urls import WebURL, normalize_url, parse_url

# feedparser asks chardet when a feed's declared encoding fails; chardet's time grows with the
# square of some bodies (a 41 KB one: minutes, 1 MB: hours), holding the run. Without it
# feedparser falls back to UTF-8, then windows-1252: text a reader can still make out.
feedparser.encodings.lazy_chardet_encoding = None

MAX_CONTEXT_CHARS = 2000
UNUSABLE_LINKS_SHOWN = 3  # entries without a usable link: this many of their links are named
FEED_PART_BYTES = 1_000_000  # larger XML feeds are parsed a part of about this size at a time
_UNDATED = datetime.max.replace(tzinfo=UTC)  # sorts an undated entry with the newest
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
_ENTRY_OPEN = re.compile(rb"<(?:item|entry)[\s>/]")  # an RSS item or Atom entry opening


@dataclass(frozen=True)
class FeedPoll:
    entries: list[SavedItem]
    url: str  # where to poll next: the new URL after a permanent redirect
    etag: str | None
    last_modified: str | None
    not_modified: bool = False
    gone: bool = False
    skipped: int = 0  # entries without a usable link
    unusable_links: tuple[str, ...] = ()  # a few of their links, as given, for the report
    partial: str | None = None  # why only some entries were read (size cap, cut off)
    merged: int = 0  # entries saved as one with another entry (same link, no guid/enclosure)
    site: str | None = None  # the feed's own web page (its htmlUrl in OPML)


@dataclass(frozen=True)
class FeedEntries:
    """A feed body's entries as items, how many had no usable link, how many were merged."""

    items: list[SavedItem]
    skipped: int = 0
    merged: int = 0
    unusable_links: tuple[str, ...] = ()  # the first few links that were not web links
    site: str | None = None  # the feed's own web page, when it names one


# -- one feed --------------------------------------------------------------


async def poll_feed(fetcher: Fetcher, state: FeedState, access: Access = PUBLIC) -> FeedPoll:
    """Poll one feed conditionally; FetchError or SourceError when it cannot be read."""
    headers = {
        **access.headers,
        "Accept": "application/atom+xml, application/rss+xml, application/feed+json,"
        " application/xml;q=0.9, */*;q=0.8",
    }
    if state.etag:
        headers["If-None-Match"] = state.etag
    if state.last_modified:
        headers["If-Modified-Since"] = state.last_modified
    result = await fetcher.get(
        state.url, headers, truncate=True, credentials=access.credentials, userinfo=True
    )
    url = result.permanent_redirect or state.url
    if result.status == 304:
        etag = result.headers.get("etag") or state.etag
        modified = result.headers.get("last-modified") or state.last_modified
        return FeedPoll([], url, etag, modified, not_modified=True)
    if result.status == 410:
        return FeedPoll([], url, state.etag, state.last_modified, gone=True)
    check_status(result)
    validators = result.headers.get("etag"), result.headers.get("last-modified")
    partial = None
    if result.truncated:
        partial = f"larger than fetch.max_bytes ({len(result.content)} bytes)"
    elif ends_inside_an_entry(result):
        partial = "the document ends inside an entry (cut off)"
        validators = None, None  # no 304 next time: the whole feed is still to be read
    if partial:
        result = replace(result, content=whole_entries(result, partial))
    parsed = await asyncio.to_thread(parse_feed_in_parts, result)  # feedparser is CPU-bound
    return FeedPoll(
        parsed.items,
        url,
        *validators,
        skipped=parsed.skipped,
        unusable_links=parsed.unusable_links,
        merged=parsed.merged,
        partial=partial and f"{partial}: only the {len(parsed.items)} whole entries before it read",
        site=parsed.site,
    )


def ends_inside_an_entry(result: FetchResult) -> bool:
    """Whether an XML feed body stops after an entry opened and before it closed."""
    if _looks_like_json(result):
        return False
    opened = [match.start() for match in _ENTRY_OPEN.finditer(result.content)]
    return bool(opened) and opened[-1] > max(
        result.content.rfind(b"</item>"), result.content.rfind(b"</entry>")
    )


def whole_entries(result: FetchResult, partial: str) -> bytes:
    """A feed body read in `partial` (cut at the size cap, or cut off), up to the end of its
    last whole entry; SourceError when there is none (or the feed is JSON, which cannot be
    read in part)."""
    end = max(result.content.rfind(b"</item>") + 7, result.content.rfind(b"</entry>") + 8)
    if end < 8 or _looks_like_json(result):
        raise SourceError(
            f"feed {result.url!r}: {partial}, and no whole entry before that"
            + ("; raise the cap" if result.truncated else "")
        )
    return result.content[:end]


def parse_feed_in_parts(result: FetchResult) -> FeedEntries:
    """parse_feed over a large XML feed a part at a time: memory stays that of one part.
    (Entries of different parts that share a link are not told apart by guid.)"""
    if len(result.content) <= FEED_PART_BYTES or _looks_like_json(result):
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
    if _looks_like_json(result):
        return _parse_json_feed(result.content, result.final_url)
    return _parse_xml_feed(result)


def _looks_like_json(result: FetchResult) -> bool:
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
    return SavedItem(
        url=url,
        title=_clean(title),
        saved_at=_from_struct_time(moment),
        topic=_category(terms),
        context=plain_text(summary, MAX_CONTEXT_CHARS) if summary else None,
        kind=ItemKind.LINK,
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


# -- the stage -------------------------------------------------------------


@dataclass
class _Outcome:
    new: int = 0
    failure: str | None = None
    info: list[str] = field(default_factory=list)


async def collect_feeds(
    store: Store,
    fetcher: Fetcher,
    feeds: Sequence[tuple[int, SourceConfig]],
    config: FetchConfig,
    now: datetime,
    on_new: Callable[[int], None] = lambda new_items: None,
) -> StageReport:
    """Poll every due feed concurrently; one feed failing never stops the others. `on_new`
    hears how many new items each feed gave as soon as they are stored."""
    due = [
        (source_id, source)
        for source_id, source in feeds
        if not store.feed_state(source_id).gone
        and is_due(store.source_next_attempt(source_id), now)
    ]
    outcomes = [_Outcome() for _ in due]  # in the order of the config, whatever ends first

    async def collect_one(index: int, source_id: int, source: SourceConfig) -> None:
        outcomes[index] = await _collect_one(store, fetcher, source_id, source, config, now)
        on_new(outcomes[index].new)

    await run_together(collect_one(i, *feed) for i, feed in enumerate(due))
    report = StageReport(Stage.COLLECT, part="feeds")
    for outcome in outcomes:
        report.done += outcome.new
        report.info.extend(outcome.info)
        if outcome.failure:
            report.failures.append(outcome.failure)
    return report


async def _collect_one(
    store: Store,
    fetcher: Fetcher,
    source_id: int,
    source: SourceConfig,
    config: FetchConfig,
    now: datetime,
) -> _Outcome:
    state = store.feed_state(source_id)
    try:
        poll = await poll_feed(fetcher, state, source_access(source))
    except FetchError as exc:
        if exc.status in (401, 403) and exc.permanent:  # not a bot wall's challenge
            exc = FetchError(
                f"{exc.reason}; {access_hint(source)}",
                url=exc.url,
                permanent=True,
                status=exc.status,
            )
        return _Outcome(failure=_record_failure(store, source_id, source, state, exc, config, now))
    except DigestError as exc:
        return _Outcome(failure=_record_failure(store, source_id, source, state, exc, config, now))
    except Exception as exc:  # a bug: this feed fails and is retried later, the others go on
        error = SourceError(unit_bug(f"feed {state.url!r}", exc))
        return _Outcome(
            failure=_record_failure(store, source_id, source, state, error, config, now)
        )
    entries = [storable(replace(e, topic=e.topic or source.topic)) for e in poll.entries]
    entries, left = newest_new(store, entries, config.max_items_per_feed)
    polled = feed_polled(
        source_id,
        entries,
        now,
        url=poll.url,
        etag=None if left else poll.etag,  # no 304 next time: the rest are still to be taken
        last_modified=None if left else poll.last_modified,
        gone=poll.gone,
        partial=poll.partial,
        skipped=None if poll.not_modified else poll.skipped,
        site=poll.site,
    )
    saved = store.apply_feed_poll(polled)
    info = _news(source, state, poll, saved.redated)
    if left:
        info.append(
            f"feed {source.name!r}: {left} more new entries than the {config.max_items_per_feed}"
            " taken per collect (fetch.max_items_per_feed); the next collects take them"
        )
    return _Outcome(new=saved.new, info=info)


def newest_new(store: Store, entries: list[SavedItem], limit: int) -> tuple[list[SavedItem], int]:
    """The entries already known, and the `limit` newest of the others (undated ones count
    as newest, in the feed's order); and how many new ones were left for later."""
    keys = [item_key(entry) for entry in entries]
    known = store.known_keys(keys)
    fresh = [entry for entry, key in zip(entries, keys, strict=True) if key not in known]
    if len(fresh) <= limit:
        return entries, 0
    fresh.sort(key=lambda entry: entry.saved_at or _UNDATED, reverse=True)
    old = [entry for entry, key in zip(entries, keys, strict=True) if key in known]
    return old + fresh[:limit], len(fresh) - limit


def _news(source: SourceConfig, state: FeedState, poll: FeedPoll, redated: int) -> list[str]:
    info = []
    if redated:
        info.append(f"feed {source.name!r}: {redated} entries {REDATED}")
    if poll.partial:
        info.append(f"feed {source.name!r} read in part: {poll.partial}")
    if poll.url != state.url:
        info.append(f"feed {source.name!r} moved permanently to {poll.url}; update the config")
    if poll.skipped and poll.skipped != state.skipped:  # once per change, not every poll
        examples = ", ".join(repr(link) for link in poll.unusable_links)
        shown = f" (not web links: {examples})" if examples else ""
        info.append(
            f"feed {source.name!r}: {poll.skipped} entries without a usable link skipped{shown}"
        )
    if poll.merged:
        info.append(
            f"feed {source.name!r}: {poll.merged} entries share a link (and have no guid or"
            " enclosure) with another entry: saved as one"
        )
    if poll.gone:
        info.append(
            f"feed {source.name!r} is gone (HTTP 410); no longer polled, remove it from the config"
        )
    return info


def _record_failure(
    store: Store,
    source_id: int,
    source: SourceConfig,
    state: FeedState,
    error: DigestError,
    config: FetchConfig,
    now: datetime,
) -> str:
    """Record the failure with its next attempt; a feed is never given up, only slowed down."""
    failed = feed_failed(
        source_id,
        store.source_failures(source_id),
        str(error),
        now,
        Backoff(config.retry_base_s, config.retry_max_s, config.max_attempts),
        retry_after_s=error.retry_after if isinstance(error, FetchError) else None,
        permanent=isinstance(error, FetchError) and error.permanent,
    )
    store.apply_source(failed)
    assert failed.next_attempt_at is not None, "a feed is never given up"
    moment = failed.next_attempt_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"feed {source.name!r} ({state.url}): {error}; will retry after {moment}"
