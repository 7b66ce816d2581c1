"""Which stored items the backlog sections show, and which URLs a digest may link to."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from digest.compose.digest import Backlog
from digest.compose.entries import post_links
from digest.config import Config
from digest.lifecycle import RESURFACED_PER_WEEK, resurfacing_due
from digest.models import Item, Period, StoredHighlight
from digest.periods import year_earlier
from digest.store import Store
from digest.urls import without_userinfo


def backlog_for(
    store: Store, config: Config, period: Period, items: Sequence[Item] = ()
) -> Backlog:
    """The unread items from before `period` (oldest first, a few) and last year's same week,
    each only when the config asks for it; the highlights due to come back this week (marked
    so once the digest is written: deliver.outbox.record_resurfaced), and those of the
    week's `items`."""
    settings = config.digest
    year_ago: list[Item] = []
    if settings.one_year_ago:
        earlier = year_earlier(period, settings.zone)
        year_ago = store.items_saved_between(earlier.start, earlier.end, text_chars=0)
    wanted = settings.backlog_unread
    # items also shown under "One year ago" are left out of "Still unread": fetch that many more
    unread = store.unread_saved_before(period.start, wanted + len(year_ago)) if wanted else []
    return Backlog(
        unread=unread,
        year_ago=year_ago,
        unread_limit=wanted or None,
        highlights=tuple(resurfaced(store, period)),
        highlighted=store.highlights_of([item.id for item in items]),
    )


def resurfaced(store: Store, period: Period) -> list[StoredHighlight]:
    """A few highlights due by the end of `period` (lifecycle.resurfacing_due), longest
    waiting first; those it brought back already stay on a later revision of it."""
    due = []
    for highlight in store.highlight_candidates():
        step = resurfacing_due(
            highlight.highlighted_at, highlight.shown_at, highlight.read_at, period.end
        )
        read_since = highlight.read_at is not None and highlight.read_at > highlight.highlighted_at
        if highlight.shown_week == period.label and not read_since:
            due.append((period.start, highlight))
        elif step is not None and (highlight.shown_week or "") < period.label:
            due.append((step, highlight))
    chosen = [highlight for _, highlight in sorted(due, key=lambda pair: pair[0])]
    return chosen[:RESURFACED_PER_WEEK]


def linkable_urls(items: Iterable[Item], backlog: Backlog) -> set[str]:
    """The stored URLs a digest of `items` and `backlog` shows, as it links them (without the
    `***@` a saved link's login is stored as); the HTML links to no others."""
    items = list(items)
    posts = {url for item in items for url in post_links(item)}
    stored = {item.url for item in (*items, *backlog.unread, *backlog.year_ago) if item.url}
    stored |= {highlight.url for highlight in backlog.highlights if highlight.url}
    return {without_userinfo(url) for url in posts | stored}
