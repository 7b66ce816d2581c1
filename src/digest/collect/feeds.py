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
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urljoin, urlsplit

import feedparser

from digest.collect import REDATED
from digest.collect.importers.common import plain_text
from digest.config import FetchConfig, SourceConfig
from digest.errors import DigestError, FetchError, SourceError
from digest.fetch import Fetcher, FetchResult, check_status, describe_error
from digest.lifecycle import Backoff, is_due, next_attempt_at
from digest.models import FeedState, ItemKind, SavedItem, Stage, StageReport
from digest.store import Store, item_key
from digest.tasks import run_together

MAX_CONTEXT_CHARS = 2000
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


@dataclass(frozen=True)
class FeedPoll:
    entries: list[SavedItem]
    url: str  # where to poll next: the new URL after a permanent redirect
    etag: str | None
    last_modified: str | None
    not_modified: bool = False
    gone: bool = False
    skipped: int = 0  # entries without a usable link
    truncated: bool = False  # larger than fetch.max_bytes: the entries before the cap read


# -- one feed --------------------------------------------------------------


async def poll_feed(fetcher: Fetcher, state: FeedState) -> FeedPoll:
    """Poll one feed conditionally; FetchError or SourceError when it cannot be read."""
    headers = {
        "Accept": "application/atom+xml, application/rss+xml, application/feed+json,"
        " application/xml;q=0.9, */*;q=0.8"
    }
    if state.etag:
        headers["If-None-Match"] = state.etag
    if state.last_modified:
        headers["If-Modified-Since"] = state.last_modified
    result = await fetcher.get(state.url, headers, truncate=True)
    url = result.permanent_redirect or state.url
    if result.status == 304:
        etag = result.headers.get("etag") or state.etag
        modified = result.headers.get("last-modified") or state.last_modified
        return FeedPoll([], url, etag, modified, not_modified=True)
    if result.status == 410:
        return FeedPoll([], url, state.etag, state.last_modified, gone=True)
    check_status(result)
    if result.truncated:
        result = replace(result, content=whole_entries(result))
    entries, skipped = await asyncio.to_thread(parse_feed, result)  # feedparser is CPU-bound
    return FeedPoll(
        entries,
        url,
        result.headers.get("etag"),
        result.headers.get("last-modified"),
        skipped=skipped,
        truncated=result.truncated,
    )


def whole_entries(result: FetchResult) -> bytes:
    """A feed body cut at the size cap, up to the end of its last whole entry; SourceError
    when there is none (or the feed is JSON, which cannot be read in part)."""
    end = max(result.content.rfind(b"</item>") + 7, result.content.rfind(b"</entry>") + 8)
    if end < 8 or _looks_like_json(result):
        raise SourceError(
            f"feed {result.url!r}: larger than fetch.max_bytes ({len(result.content)} bytes)"
            " and no whole entry before that; raise the cap"
        )
    return result.content[:end]


def parse_feed(result: FetchResult) -> tuple[list[SavedItem], int]:
    """The entries of a fetched feed body, and how many had no usable link."""
    if _looks_like_json(result):
        return _parse_json_feed(result.content, result.final_url)
    return _parse_xml_feed(result)


def _looks_like_json(result: FetchResult) -> bool:
    content_type = result.headers.get("content-type", "").lower()
    return "json" in content_type or result.content.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"


def _parse_xml_feed(result: FetchResult) -> tuple[list[SavedItem], int]:
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
    if unusable or (not parsed.entries and not parsed.version):
        problem = parsed.get("bozo_exception")
        reason = describe_error(problem) if problem else "no RSS, Atom or JSON Feed found"
        raise SourceError(f"feed {result.url!r}: not a feed ({reason})")
    return kept, len(items) - len(kept)


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
    return SavedItem(
        url=url,
        title=_clean(title),
        saved_at=_from_struct_time(moment),
        context=plain_text(summary, MAX_CONTEXT_CHARS) if summary else None,
        kind=ItemKind.LINK,
    )


def _parse_json_feed(body: bytes, base: str) -> tuple[list[SavedItem], int]:
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
    return [item for item in items if item], sum(item is None for item in items)


def _json_item(raw: dict[str, Any], base: str) -> SavedItem | None:
    url = _absolute_link(raw.get("url") or raw.get("external_url"), base)
    if url is None:
        return None
    summary = raw.get("summary") or raw.get("content_text") or raw.get("content_html")
    title = raw.get("title")
    return SavedItem(
        url=url,
        title=_clean(title) if isinstance(title, str) else None,
        saved_at=_from_iso(raw.get("date_published") or raw.get("date_modified")),
        context=plain_text(summary, MAX_CONTEXT_CHARS) if isinstance(summary, str) else None,
        kind=ItemKind.LINK,
    )


def _absolute_link(link: object, base: str) -> str | None:
    if not isinstance(link, str) or not link.strip():
        return None
    url = urljoin(base, link.strip())
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.netloc else None


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
) -> StageReport:
    """Poll every due feed concurrently; one feed failing never stops the others."""
    due = [
        (source_id, source)
        for source_id, source in feeds
        if not store.feed_state(source_id).gone
        and is_due(store.source_next_attempt(source_id), now)
    ]
    outcomes = [_Outcome() for _ in due]  # in the order of the config, whatever ends first

    async def collect_one(index: int, source_id: int, source: SourceConfig) -> None:
        outcomes[index] = await _collect_one(store, fetcher, source_id, source, config, now)

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
        poll = await poll_feed(fetcher, state)
    except DigestError as exc:
        return _Outcome(failure=_record_failure(store, source_id, source, state, exc, config, now))
    entries = [replace(e, topic=e.topic or source.topic) for e in poll.entries]
    entries, left = newest_new(store, entries, config.max_items_per_feed)
    saved = store.save_feed_poll(
        source_id,
        entries,
        url=poll.url,
        etag=None if left else poll.etag,  # no 304 next time: the rest are still to be taken
        last_modified=None if left else poll.last_modified,
        now=now,
        gone=poll.gone,
        skipped=None if poll.not_modified else poll.skipped,
    )
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
    if poll.truncated:
        info.append(
            f"feed {source.name!r} is larger than fetch.max_bytes: only the entries before"
            " the cap were read; raise the cap to read them all"
        )
    if poll.url != state.url:
        info.append(f"feed {source.name!r} moved permanently to {poll.url}; update the config")
    if poll.skipped and poll.skipped != state.skipped:  # once per change, not every poll
        info.append(f"feed {source.name!r}: {poll.skipped} entries without a link skipped")
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
    failures = store.source_failures(source_id) + 1
    when = next_attempt_at(
        failures,
        now,
        Backoff(config.retry_base_s, config.retry_max_s, config.max_attempts),
        retry_after_s=error.retry_after if isinstance(error, FetchError) else None,
        permanent=isinstance(error, FetchError) and error.permanent,
    ) or now + timedelta(seconds=config.retry_max_s)
    store.record_source_failure(source_id, str(error), now, when)
    moment = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"feed {source.name!r} ({state.url}): {error}; will retry after {moment}"
