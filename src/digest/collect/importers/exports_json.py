"""JSON exports of bookmark services, each recognised by the keys of its records.

- pinboard: [{href, description (the title), extended (the note), time, tags "a b"}]
- omnivore: [{url, title, description, savedAt, labels}]
- karakeep (Hoarder): {"bookmarks": [{createdAt, title, tags, note,
  content: {type: link / text / asset, url / text}}]}; asset bookmarks are skipped
- linkwarden: {"collections": [{name, links: [{url, name, description,
  createdAt, tags: [{name}]}]}]}, a bare list of collections, or {"links": [...]}
  whose links name their {"collection": {name}}
- hackernews: [{id, title, url, time / created_at, text}] or Algolia's {"hits": [...]};
  an Ask HN post without url links to its item page; its text (HTML) is kept as context
- github-stars: the API's starred repos, [{full_name, html_url, …}] or
  [{starred_at, repo: {...}}] (the star+json media type)

Social saves (Mastodon, X/Twitter, Reddit) are in exports_social.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo

from digest.collect.formats import ImportResult, register
from digest.collect.importers._json import (
    JsonExport,
    LinkFields,
    Record,
    as_list,
    first_of,
    keys,
    nested,
    reject,
    text_of,
)
from digest.collect.importers.common import (
    add_item,
    html_text_and_links,
    join_context,
    pick_topic,
    record_time,
    snippet,
    split_tags,
)
from digest.models import ItemKind, Rejected, SavedItem

HN_ITEM = "https://news.ycombinator.com/item?id="


class Pinboard(JsonExport):
    name = "pinboard"
    description = "Pinboard JSON export ([{href, description, extended, time, tags}])"
    markers = keys("href", "extended")
    fields = LinkFields(
        url=("href",), title=("description",), time="time", tags="tags", context=("extended",)
    )
    stream_prefixes = ("item",)


class Omnivore(JsonExport):
    name = "omnivore"
    description = "Omnivore export ([{url, title, description, savedAt, labels}])"
    markers = keys("savedAt", "url")
    fields = LinkFields(
        url=("url", "originalArticleUrl"),
        title=("title",),
        time="savedAt",
        tags="labels",
        context=("description",),
    )
    stream_prefixes = ("item",)


class Karakeep(JsonExport):
    name = "karakeep"
    description = 'Karakeep/Hoarder export ({"bookmarks": [{createdAt, title, content, …}]})'
    markers = keys("bookmarks", "content", "createdAt")
    stream_prefixes = ("bookmarks.item",)

    def records(self, data: Any) -> Iterator[Any] | None:
        return iter(data["bookmarks"]) if isinstance(data, dict) and "bookmarks" in data else None

    def add(self, result: ImportResult, record: Record, number: int, zone: ZoneInfo) -> None:
        content = nested(record, "content")
        kind = content.get("type")
        if kind not in ("link", "text"):
            if not kind:
                return reject(result, number, record, "no content")
            reason = f"an uploaded file ({kind} bookmark), not a link"
            return result.skipped.append(Rejected(number, snippet(record), reason))
        url = text_of(content, "url") if kind == "link" else None
        if kind == "link" and url is None:
            return reject(result, number, record, "link bookmark without a url")
        item = SavedItem(
            url=url,
            title=text_of(record, "title") or text_of(content, "title"),
            saved_at=record_time(result, record.get("createdAt"), zone, line=number, raw=record),
            topic=pick_topic(split_tags(record.get("tags"))),
            context=join_context(text_of(record, "note"), text_of(content, "text", "description")),
            kind=ItemKind.LINK if url else ItemKind.NOTE,
            line=number,
        )
        add_item(result, item, raw=record)


class Linkwarden(JsonExport):
    name = "linkwarden"
    description = 'Linkwarden backup ({"collections": [{name, links: [...]}]} and older shapes)'
    markers = keys("links", "url")
    fields = LinkFields(
        url=("url",),
        title=("name", "title"),
        time="createdAt",
        tags="tags",
        context=("description",),
    )

    def sniff(self, head: str) -> int:
        score = super().sniff(head)
        return score if score and ('"collections"' in head or '"collection"' in head) else 0

    # A collection's links, and its name (read before its links, as Linkwarden writes it).
    stream_prefixes = (
        "collections.item.name",
        "collections.item.links.item",
        "item.name",
        "item.links.item",
        "links.item",
    )

    def streamed(self, found: Iterator[tuple[str, Any]]) -> Iterator[Any]:
        collection = None
        for prefix, value in found:
            if prefix.endswith(".name"):
                collection = value if isinstance(value, str) else None
            elif prefix == "links.item" or not isinstance(value, dict):
                yield value
            else:
                yield {**value, "_collection": collection}

    def records(self, data: Any) -> Iterator[Any] | None:
        collections = as_list(data, "collections")
        if collections and all(isinstance(c, dict) and "links" in c for c in collections):
            return _collection_links(collections)
        links = as_list(data, "links")
        return iter(links) if links or isinstance(data, dict) and "links" in data else None

    def add(self, result: ImportResult, record: Record, number: int, zone: ZoneInfo) -> None:
        folder = nested(record, "collection").get("name") or record.get("_collection")
        self.add_link(
            result, record, number, zone, folder=folder if isinstance(folder, str) else None
        )


def _collection_links(collections: list[Any]) -> Iterator[Any]:
    for collection in collections:
        for link in as_list(collection.get("links")):
            yield (
                {**link, "_collection": collection.get("name")} if isinstance(link, dict) else link
            )


class HackerNews(JsonExport):
    name = "hackernews"
    description = "Hacker News favourites ([{id, title, url, time}] or Algolia hits)"
    markers = keys("(?:id|objectID)", "(?:title|story_title)")
    stream_prefixes = ("item", "hits.item", "favorites.item", "items.item")

    def sniff(self, head: str) -> int:
        score = super().sniff(head)
        hn = "news.ycombinator.com" in head or '"objectID"' in head or '"descendants"' in head
        return score if score and hn else 0

    def records(self, data: Any) -> Iterator[Any] | None:
        found = as_list(data, "hits", "favorites", "items")
        return iter(found) if found or isinstance(data, list) else None

    def add(self, result: ImportResult, record: Record, number: int, zone: ZoneInfo) -> None:
        if _is_comment(record):
            return self.add_comment(result, record, number, zone)
        story = text_of(record, "id", "objectID", "story_id")
        url = text_of(record, "url", "story_url") or (HN_ITEM + story if story else None)
        if url is None:
            return reject(result, number, record, "neither url nor id")
        when = first_of(record, "time", "created_at_i", "created_at", "saved_at")
        item = SavedItem(
            url=url,
            title=text_of(record, "title", "story_title"),
            saved_at=record_time(result, when, zone, line=number, raw=record),
            context=join_context(
                html_text_and_links(text_of(record, "text", "story_text") or "")[0],
                f"Hacker News discussion: {HN_ITEM}{story}" if story else None,
            ),
            line=number,
        )
        add_item(result, item, raw=record)

    def add_comment(
        self, result: ImportResult, record: Record, number: int, zone: ZoneInfo
    ) -> None:
        """A favourited comment is a post of its own, at its own page: never the story's item
        (the Algolia hit carries the story's url and title beside the comment's)."""
        comment = text_of(record, "objectID", "id")
        if comment is None:
            return reject(result, number, record, "a comment without an id")
        text, links = html_text_and_links(text_of(record, "comment_text", "text") or "")
        author = text_of(record, "author", "by")
        on = text_of(record, "story_title")
        title = f"Comment by {author or 'someone'}" + (f" on: {on}" if on else "")
        story_url = text_of(record, "story_url")
        when = first_of(record, "time", "created_at_i", "created_at", "saved_at")
        item = SavedItem(
            url=HN_ITEM + comment,
            title=title,
            saved_at=record_time(result, when, zone, line=number, raw=record),
            context=text or None,
            kind=ItemKind.POST,
            links=(*links, *([story_url] if story_url else [])),
            line=number,
        )
        add_item(result, item, raw=record)


def _is_comment(record: Record) -> bool:
    tags = record.get("_tags")
    return (
        record.get("type") == "comment"
        or "comment_text" in record
        or (isinstance(tags, list) and "comment" in tags)
    )


class GitHubStars(JsonExport):
    name = "github-stars"
    description = "GitHub starred repositories (API JSON, with or without starred_at)"
    markers = keys("full_name", "html_url")
    stream_prefixes = ("item",)

    def add(self, result: ImportResult, record: Record, number: int, zone: ZoneInfo) -> None:
        repo = nested(record, "repo", default=record)
        url = text_of(repo, "html_url")
        if url is None:
            return reject(result, number, record, "no html_url")
        topics = repo.get("topics") if isinstance(repo.get("topics"), list) else []
        item = SavedItem(
            url=url,
            title=text_of(repo, "full_name"),
            saved_at=record_time(result, record.get("starred_at"), zone, line=number, raw=record),
            topic=pick_topic(split_tags(topics), text_of(repo, "language")),
            context=text_of(repo, "description"),
            line=number,
        )
        add_item(result, item, raw=record)


for _importer in (Pinboard(), Omnivore(), Karakeep(), Linkwarden(), HackerNews(), GitHubStars()):
    register(_importer)
