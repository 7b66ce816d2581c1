"""Feed lists: OPML files imported as feed sources, and every feed source as OPML.

`digest import feeds.opml` adds each feed of the list as a feed source kept in the
database (origin "opml"), unless a source with the same canonical URL is known already,
from the config or the database. An imported feed is polled like a configured one for as
long as the config does not declare the same name or URL; a configured one wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from digest.collect.formats import FEED_LIST_FORMATS
from digest.collect.importers.common import url_problem
from digest.collect.importers.opml import Feed, export_opml, parse_opml
from digest.config import SourceConfig
from digest.errors import ImportFormatError
from digest.fetch.access import basic_login
from digest.models import Rejected
from digest.store import Store
from digest.store.records import ImportedFeed, SourceListing
from digest.urls import for_display, normalize_url

OPML = FEED_LIST_FORMATS[0]
ORIGIN = "opml"


@dataclass(frozen=True)
class FeedList:
    """An OPML file read and parsed, not imported yet."""

    path: Path
    feeds: list[Feed]


@dataclass
class FeedListReport:
    """What importing one feed list did."""

    path: Path
    added: int = 0
    known: int = 0
    rejected: list[Rejected] = field(default_factory=list)  # outlines whose URL is unusable

    def describe(self) -> list[str]:
        lines = [
            f"{self.path}: format {OPML}: {_plural(self.added, 'feed')} added,"
            f" {self.known} already known"
        ]
        lines += [f"  feed {r.text!r}: {r.reason}" for r in self.rejected]
        return lines


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def read_feed_list(path: Path, text: str) -> FeedList:
    try:
        return FeedList(path, parse_opml(text))
    except ImportFormatError as exc:
        raise ImportFormatError(exc.reason, path=path) from exc


def import_feed_list(
    store: Store, feed_list: FeedList, declared: Sequence[SourceConfig], now: datetime
) -> FeedListReport:
    """Add the list's feeds not known yet as database feed sources, each under a free name."""
    report = FeedListReport(feed_list.path)
    rows = store.list_sources()  # removed sources are not known: importing brings them back
    names = {row.name for row in rows} | {source.name for source in declared}
    known = {feed_key(row.location) for row in rows if row.kind == "feed"}
    known |= {feed_key(s.url) for s in declared if s.kind == "feed" and s.url}
    for name, url, category, site in feed_list.feeds:
        if (problem := url_problem(url)) is not None:
            report.rejected.append(Rejected(None, name, f"{problem}: {url}"))
        elif feed_key(url) in known:
            report.known += 1
        else:
            unique = _free_name(name, names)
            store.add_imported_feed(
                unique, url.strip(), topic=category, origin=ORIGIN, now=now, html_url=site
            )
            names.add(unique)
            known.add(feed_key(url))
            report.added += 1
    return report


def imported_feed_sources(
    store: Store, declared: Sequence[SourceConfig]
) -> list[tuple[int, SourceConfig]]:
    """The database's imported feeds that the config does not declare (by name or URL) and
    that are not paused: the ones to poll."""
    return [
        (row.id, SourceConfig(name=row.name, kind="feed", url=row.url, topic=row.topic))
        for row in _imported(store, declared)
        if not row.paused
    ]


def _imported(store: Store, declared: Sequence[SourceConfig]) -> list[ImportedFeed]:
    names = {source.name for source in declared}
    urls = {feed_key(s.url) for s in declared if s.kind == "feed" and s.url}
    return [
        row
        for row in store.imported_feeds()
        if row.name not in names
        and feed_key(row.url) not in urls
        and url_problem(row.url or "") is None  # saved by an older, laxer check: not polled
    ]


def feeds_as_opml(
    store: Store, declared: Sequence[SourceConfig], *, include_secrets: bool = False
) -> str:
    """Every feed source, configured then imported (paused ones too), as an OPML 2.0
    document. Passwords and tokens in the URLs are shown as `***` unless
    `include_secrets`, which also puts a basic `auth`'s login into its feed's URL (tokens,
    headers and cookies have no place in OPML)."""
    sites = store.site_links()
    configured = [
        Feed(s.name, _exported_url(s, include_secrets), s.topic, sites.get(s.name))
        for s in declared
        if s.kind == "feed" and s.url
    ]
    imported = [
        Feed(
            row.name,
            row.url if include_secrets else for_display(row.url),
            row.topic,
            row.html_url,
        )
        for row in _imported(store, declared)
    ]
    return export_opml([*configured, *imported])


def _exported_url(source: SourceConfig, include_secrets: bool) -> str:
    url = source.url or ""
    if not include_secrets:
        return for_display(url)
    if (login := basic_login(source)) is not None:
        user, password = login
        parts = urlsplit(_without_login(url))
        userinfo = f"{quote(user, safe='')}:{quote(password, safe='')}@"
        return urlunsplit(parts._replace(netloc=userinfo + parts.netloc))
    return url


def _without_login(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def feed_key(url: str | None) -> str:
    """What tells two feed URLs apart: the canonical form, else the text."""
    try:
        return normalize_url(url or "")
    except ValueError:
        return (url or "").strip()


def _free_name(name: str, taken: set[str]) -> str:
    """`name`, or `name (2)`, `name (3)`… when a source already has it."""
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name} ({number})"
    return candidate


def all_sources(store: Store, declared: Sequence[SourceConfig]) -> list[dict[str, Any]]:
    """Every source for `digest sources list`: the config's in its order, then the others
    the database holds, each with where it comes from, its status and its item count."""
    rows = {row.name: row for row in store.list_sources()}
    listed = []
    for source in declared:
        row = rows.pop(source.name, None)
        location = source.url or source.imap_location or str(source.path)
        entry = _listed(source.name, source.kind, "config", location, row)
        listed.append(entry | {"status": "paused"} if source.paused else entry)
    for row in rows.values():
        listed.append(_listed(row.name, row.kind, _origin(row), row.location, row))
    return listed


def _listed(
    name: str, kind: str, origin: str, location: str | None, row: SourceListing | None
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "origin": origin,
        "status": row.status if row else "not collected yet",
        "items": row.items if row else 0,
        "location": location or "",
    }


def _origin(row: SourceListing) -> str:
    if row.origin != "config":
        return row.origin
    return _CLI_SOURCES.get(row.kind, "no longer in the config")


_CLI_SOURCES = {"manual": "digest add", "import": "digest import"}
