"""Saved social posts exported as JSON: Mastodon bookmarks, X/Twitter bookmarks, Reddit saves.

A saved post is kept as a post (kind POST): its URL is the post's own address,
its text the content to summarise, and the links in it are `links`. The time is
the post's creation time: none of these exports records when it was saved.

- mastodon: the API's statuses, [{id, url, uri, created_at, content (HTML),
  account: {acct}, card: {url, title}}]; a boost is read as the boosted status.
- mastodon-archive: the archive's bookmarks.json, {"type": "OrderedCollection",
  "orderedItems": ["https://host/users/x/statuses/id", …]}: links to the statuses
  (Settings → Export's bookmarks.csv, one URI a line, is read as a list of URLs);
  `/users/x/statuses/id` and the API's `/@x/id` have one canonical form (urls/key.py),
  so the same post saved both ways is one item.
- twitter: [{id / tweet_id, full_text / text, created_at, screen_name or
  user.screen_name, url, expanded urls}], bare or inside
  `window.YTD.bookmark.part0 = [...]`; the official archive lists only tweet
  ids, so those posts have no text.
- reddit: saved things [{kind: t3 / t1, data: {...}}], bare or in listings
  {"data": {"children": [...]}}; a link post is a link item with its subreddit
  as topic and the thread as context; a self post or a comment is a post.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import SplitResult, urlsplit
from zoneinfo import ZoneInfo

from digest.collect.formats import ImportResult, register
from digest.collect.importers._json import (
    JsonExport,
    Record,
    as_list,
    keys,
    nested,
    reject,
    text_of,
)
from digest.collect.importers.common import (
    add_item,
    html_text_and_links,
    join_context,
    record_time,
    trim_title,
    urls_in,
)
from digest.models import ItemKind, SavedItem

REDDIT = "https://www.reddit.com"
_TWEET_HOSTS = frozenset(
    {"twitter.com", "x.com", "www.twitter.com", "www.x.com", "mobile.twitter.com"}
)


def _distinct(links: list[str], *, besides: str | None) -> tuple[str, ...]:
    return tuple(link for link in dict.fromkeys(links) if link and link != besides)


class Mastodon(JsonExport):
    name = "mastodon"
    description = "Mastodon bookmarks or favourites (API JSON statuses)"
    markers = keys("acct", "content", "uri")
    stream_prefixes = ("item",)

    def add(self, result: ImportResult, record: Record, number: int, zone: ZoneInfo) -> None:
        status = nested(record, "reblog", default=record)
        url = text_of(status, "url", "uri")
        if url is None:
            return reject(result, number, record, "no url or uri")
        text, links = html_text_and_links(str(status.get("content") or ""))
        card = nested(status, "card")
        account = nested(status, "account")
        author = text_of(account, "acct", "username") or "someone"
        item = SavedItem(
            url=url,
            title=trim_title(f"@{author}: {text or text_of(card, 'title') or '(no text)'}"),
            saved_at=record_time(result, status.get("created_at"), zone, line=number, raw=record),
            context=join_context(text_of(status, "spoiler_text"), text),
            kind=ItemKind.POST,
            links=_distinct([*links, text_of(card, "url") or ""], besides=url),
            line=number,
        )
        add_item(result, item, raw=record)


class MastodonArchive(JsonExport):
    """The archive's `bookmarks.json` (or `likes.json`): an ActivityPub OrderedCollection
    whose `orderedItems` are the statuses' URIs, with no text or time."""

    name = "mastodon-archive"
    description = "Mastodon archive bookmarks.json / likes.json (OrderedCollection of URIs)"
    markers = (*keys("orderedItems"), re.compile(r'"OrderedCollection"'))
    score = 92
    stream_prefixes = ("orderedItems.item",)

    def streamed(self, found: Iterator[tuple[str, Any]]) -> Iterator[Any]:
        return ({"uri": value} if isinstance(value, str) else value for _, value in found)

    def records(self, data: Any) -> Iterator[Any] | None:
        found = as_list(data, "orderedItems")
        if not found and not isinstance(data, dict):
            return None
        return ({"uri": entry} if isinstance(entry, str) else entry for entry in found)

    def add(self, result: ImportResult, record: Record, number: int, zone: ZoneInfo) -> None:
        url = text_of(record, "uri", "id", "url")
        if url is None:
            return reject(result, number, record, "no status URI")
        add_item(result, SavedItem(url=url, line=number), raw=record)


class Twitter(JsonExport):
    name = "twitter"
    description = "X/Twitter bookmarks (archive bookmark.js or exporter JSON)"
    score = 88
    stream_prefixes = ("item", "bookmarks.item", "tweets.item", "data.item")

    def streamed(self, found: Iterator[tuple[str, Any]]) -> Iterator[Any]:
        return (_unwrap_tweet(entry) for entry in super().streamed(found))

    def sniff(self, head: str) -> int:
        if head.lstrip().startswith("window.YTD."):
            return 95
        found = keys("(?:tweet_?[iI]d|id_str)", "(?:full_text|screen_name)")
        return super().sniff(head) if all(p.search(head) for p in found) else 0

    def records(self, data: Any) -> Iterator[Any] | None:
        found = as_list(data, "bookmarks", "tweets", "data")
        if not found and not isinstance(data, list):
            return None
        return (_unwrap_tweet(entry) for entry in found)

    def add(self, result: ImportResult, record: Record, number: int, zone: ZoneInfo) -> None:
        url = _tweet_url(record)
        if url is None:
            return reject(result, number, record, "no tweet id or url")
        text = text_of(record, "full_text", "text", "content")
        author = _screen_name(record)
        links = [link for link in [*_expanded_urls(record), *urls_in(text or "")] if _not_tco(link)]
        name = f"@{author}: " if author else ""
        item = SavedItem(
            url=url,
            title=trim_title(f"{name}{text}") if text else f"{name}post {url.rsplit('/', 1)[-1]}",
            saved_at=record_time(result, record.get("created_at"), zone, line=number, raw=record),
            context=text,
            kind=ItemKind.POST,
            links=_distinct(links, besides=url),
            line=number,
        )
        add_item(result, item, raw=record)


def _unwrap_tweet(entry: Any) -> Any:
    """Archive entries are {"bookmark": {"tweetId": …}} or {"tweet": {…}}; others are bare."""
    if isinstance(entry, dict) and len(entry) == 1:
        inner = next(iter(entry.values()))
        if isinstance(inner, dict):
            return inner
    return entry


def _screen_name(record: Record) -> str | None:
    for holder in ("user", "author", "core"):
        nested = record.get(holder)
        if isinstance(nested, dict) and (name := text_of(nested, "screen_name", "username")):
            return name
    return text_of(record, "screen_name", "username", "user_screen_name")


def _tweet_url(record: Record) -> str | None:
    given = text_of(record, "url", "tweet_url")
    if given and _parts(given).hostname in _TWEET_HOSTS:
        return given
    tweet_id = text_of(record, "tweet_id", "tweetId", "id_str", "rest_id", "id")
    if tweet_id is None:
        return given
    author = _screen_name(record)
    return (
        f"https://x.com/{author}/status/{tweet_id}"
        if author
        else f"https://x.com/i/web/status/{tweet_id}"
    )


def _expanded_urls(record: Record) -> list[str]:
    found: list[str] = []
    entities = nested(record, "entities")
    for holder in (record.get("expanded_urls"), record.get("urls"), entities.get("urls")):
        for entry in as_list(holder):
            if isinstance(entry, dict):
                entry = entry.get("expanded_url") or entry.get("url")
            link = entry
            if isinstance(link, str):
                found.append(link)
    return found


def _parts(url: str) -> SplitResult:
    """`url` split, or an empty split for text urlsplit refuses (an unclosed "[::1"): such a
    value is then reported by the URL check of the item it lands in, never raised."""
    try:
        return urlsplit(url)
    except ValueError:
        return urlsplit("")


def _not_tco(link: str) -> bool:
    return _parts(link).hostname != "t.co"


class Reddit(JsonExport):
    name = "reddit"
    description = "Reddit saved posts and comments (API/data-export JSON things or listings)"
    markers = keys("kind", "permalink")
    # things, listings of things, or one listing
    stream_prefixes = ("item", "data.children.item")

    def streamed(self, found: Iterator[tuple[str, Any]]) -> Iterator[Any]:
        for _, value in found:
            yield from _flatten_listings(value if isinstance(value, list) else [value])

    def records(self, data: Any) -> Iterator[Any] | None:
        things = [data] if isinstance(data, dict) else as_list(data)
        if not things:
            return None if not isinstance(data, list) else iter(())
        return _flatten_listings(things)

    def add(self, result: ImportResult, record: Record, number: int, zone: ZoneInfo) -> None:
        data = nested(record, "data", default=record)
        permalink = text_of(data, "permalink")
        if permalink is None:
            return reject(result, number, record, "no permalink")
        thread = REDDIT + permalink if permalink.startswith("/") else permalink
        item = _reddit_item(record.get("kind"), data, thread)
        when = record_time(result, data.get("created_utc"), zone, line=number, raw=record)
        add_item(result, replace(item, saved_at=when, line=number), raw=record)


def _flatten_listings(things: list[Any]) -> Iterator[Any]:
    for thing in things:
        inner = thing.get("data") if isinstance(thing, dict) else None
        if isinstance(inner, dict) and isinstance(inner.get("children"), list):
            yield from inner["children"]
        else:
            yield thing


def _reddit_item(kind: object, data: Record, thread: str) -> SavedItem:
    subreddit = text_of(data, "subreddit")
    if kind == "t1" or "body" in data and "title" not in data:
        on = text_of(data, "link_title")
        return SavedItem(
            url=thread,
            title=trim_title(f"Comment on: {on}" if on else text_of(data, "body")),
            topic=subreddit,
            context=text_of(data, "body"),
            kind=ItemKind.POST,
            links=tuple(urls_in(text_of(data, "body") or "")),
        )
    url = text_of(data, "url", "url_overridden_by_dest")
    to_itself = not url or url.startswith("/") or _parts(url).path == _parts(thread).path
    if data.get("is_self") or to_itself:
        text = text_of(data, "selftext")
        return SavedItem(
            url=thread,
            title=text_of(data, "title"),
            topic=subreddit,
            context=text,
            kind=ItemKind.POST,
            links=tuple(urls_in(text or "")),
        )
    return SavedItem(
        url=url,
        title=text_of(data, "title"),
        topic=subreddit,
        context=join_context(text_of(data, "selftext"), f"Reddit discussion: {thread}"),
    )


for _importer in (Mastodon(), MastodonArchive(), Twitter(), Reddit()):
    register(_importer)
