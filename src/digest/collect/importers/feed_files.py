"""`feed`: a saved RSS or Atom file, the public shape of several "saved" lists.

- Hacker News favourites, as hnrss.org serves them (`/favorites?id=USER`): an RSS item
  per story, its link the story and its description the discussion.
- GitHub stars in the public activity feed (`github.com/USER.atom`): entries whose id is
  `tag:github.com,2008:WatchEvent/…` ("alice starred owner/repo") are the stars; the
  feed's other events (pushes, issues…) are skipped with that reason.
- Any other feed file: each entry with a web link is an item.

Entries are numbered from 1 in file order (an XML feed's lines say nothing of entries);
the time is the entry's published (else updated) time.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any
from zoneinfo import ZoneInfo

from digest.collect.formats import ImportResult, register
from digest.errors import ImportFormatError
from digest.models import Rejected, SavedItem
from digest.text import shorten

_FEED_ROOT = re.compile(
    r"^\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*<(?:rss|feed|rdf:RDF)[\s>]", re.DOTALL
)
_GITHUB_EVENT = re.compile(r"^tag:github\.com,2008:(?P<event>\w+Event)/")
_STARRED = re.compile(r"\bstarred\s+(?P<repo>\S+/\S+)\s*$")


class FeedFile:
    name = "feed"
    description = "saved RSS/Atom file (hnrss.org favourites, GitHub USER.atom stars, any feed)"
    appendable = False  # entries are numbered, not lines

    def sniff(self, head: str) -> int:
        return 90 if _FEED_ROOT.match(head.lstrip("\ufeff")) else 0

    def parse(self, text: str, *, zone: ZoneInfo) -> ImportResult:
        # Here, not at the top: the feed collector brings feedparser and the HTTP client,
        # which loading the registry for any other format should not pay for.
        import feedparser

        from digest.collect.feed_entries import feed_entry_item, strip_declarations

        parsed = feedparser.parse(strip_declarations(text.encode("utf-8")))
        if not parsed.get("version"):
            problem = parsed.get("bozo_exception") or "no RSS or Atom entries"
            raise ImportFormatError(f"not a feed file: {problem}")
        result = ImportResult()
        for number, entry in enumerate(parsed.entries, 1):
            _add_entry(result, entry, feed_entry_item(entry, ""), number)
        return result


def _add_entry(result: ImportResult, entry: Any, item: SavedItem | None, number: int) -> None:
    title = str(entry.get("title") or "")
    event = _GITHUB_EVENT.match(str(entry.get("id") or ""))
    if event and event["event"] != "WatchEvent":
        reason = f"GitHub activity, not a star ({event['event']})"
        result.skipped.append(Rejected(number, shorten(title, 80), reason))
        return
    if item is None:
        result.rejected.append(Rejected(number, shorten(title or "(untitled)", 80), "no web link"))
        return
    starred = _STARRED.search(title) if event else None
    repo = starred["repo"] if starred else None
    result.items.append(replace(item, title=repo or item.title, line=number))


register(FeedFile())
