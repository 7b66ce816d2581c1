"""The feed collector: conditional polls of RSS, Atom and JSON Feed, entries saved as links.

Polite polling: ETag and Last-Modified sent back, 304 saves nothing, 301/308 chains
are remembered, 410 stops polling. Parsing is defensive: DTDs and entity
declarations are stripped before feedparser sees the body (feed_entries.py reads it).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from digest.collect import REDATED
from digest.collect.feed_entries import looks_like_json, parse_feed_in_parts
from digest.collect.importers.common import storable
from digest.collect.transcripts import episode_transcripts
from digest.config import FetchConfig, SourceConfig
from digest.errors import DigestError, FetchError, SourceError, unit_bug
from digest.fetch.access import PUBLIC, Access, access_hint, source_access
from digest.fetch.client import Fetcher, FetchResult, check_status
from digest.lifecycle import Backoff, feed_failed, feed_polled, is_due
from digest.models import FeedState, SavedItem, Stage, StageReport
from digest.runtime.tasks import run_together
from digest.store import Store, item_key

_UNDATED = datetime.max.replace(tzinfo=UTC)  # sorts an undated entry with the newest
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
    if looks_like_json(result):
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
    if end < 8 or looks_like_json(result):
        raise SourceError(
            f"feed {result.url!r}: {partial}, and no whole entry before that"
            + ("; raise the cap" if result.truncated else "")
        )
    return result.content[:end]


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
    texts, unread = await _new_transcripts(store, fetcher, entries)
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
        texts=texts,
    )
    saved = store.apply_feed_poll(polled)
    info = _news(source, state, poll, saved.redated)
    if unread:
        info.append(
            f"feed {source.name!r}: {len(unread)} episode transcript(s) not read, noted from"
            f" the description: {unread[0]}"
        )
    if left:
        info.append(
            f"feed {source.name!r}: {left} more new entries than the {config.max_items_per_feed}"
            " taken per collect (fetch.max_items_per_feed); the next collects take them"
        )
    return _Outcome(new=saved.new, info=info)


async def _new_transcripts(
    store: Store, fetcher: Fetcher, entries: Sequence[SavedItem]
) -> tuple[dict[str, str], list[str]]:
    """The transcripts of the new episodes that link one (a known episode's was read when
    it was new)."""
    linked = [entry for entry in entries if entry.transcript]
    if not linked:
        return {}, []
    known = store.known_keys([item_key(entry) for entry in linked])
    fresh = [entry for entry in linked if item_key(entry) not in known]
    return await episode_transcripts(fetcher, fresh)


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
