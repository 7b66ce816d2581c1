"""`digest read`, `digest unread` and `digest star`: the reader's marks on saved items, by id or
saved URL; a line per item marked, then an error naming the refs that matched none."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from digest.compose.linktitles import link_title
from digest.errors import DigestError
from digest.lifecycle import ItemRead, ItemStarred
from digest.models import Item
from digest.store import Store

STARS_LISTED = 1000  # `digest star --list`: the most recent stars, at most


def mark_read(store: Store, refs: Iterable[str], now: datetime) -> Iterator[str]:
    """`digest read`: a line per item marked, then DigestError naming refs that match none."""
    unknown: list[str] = []
    for _, item in _found(store, refs, unknown):
        store.apply_read(ItemRead(item.id, now))
        yield f"read: {item.id} {item.display_title}"
    _none_found(unknown)


def mark_unread(store: Store, refs: Iterable[str]) -> Iterator[str]:
    """`digest unread`: the read mark taken back, a line per item."""
    unknown: list[str] = []
    for _, item in _found(store, refs, unknown):
        store.apply_unread(item.id)
        yield f"unread: {item.id} {item.display_title}"
    _none_found(unknown)


def mark_starred(store: Store, refs: Iterable[str], now: datetime, unstar: bool) -> Iterator[str]:
    """`digest star`: a line per item starred (or unstarred)."""
    unknown: list[str] = []
    for _, item in _found(store, refs, unknown):
        store.apply_star(ItemStarred(item.id, now, starred=not unstar))
        yield f"{'unstarred' if unstar else 'starred'}: {item.id} {item.display_title}"
    _none_found(unknown)


def list_stars(store: Store) -> Iterator[str]:
    """`digest star --list`: the starred items, most recently starred first."""
    stars = store.starred_items(STARS_LISTED, text_chars=0)
    if not stars:
        yield "no starred items (`digest star ID|URL` stars one)"
    for item in stars:
        if item.url is None:
            yield f"{item.id}  {item.display_title}"
        else:
            title = item.display_title if item.display_title != item.url else link_title(item.url)
            yield f"{item.id}  {title}  {item.url}"


def _found(store: Store, refs: Iterable[str], unknown: list[str]) -> Iterator[tuple[str, Item]]:
    for ref in refs:
        try:
            item = store.item_by_ref(int(ref) if ref.isdigit() else ref)
        except ValueError:
            item = None
        if item is None:
            unknown.append(ref)
        else:
            yield ref, item


def _none_found(unknown: list[str]) -> None:
    if unknown:
        raise DigestError(
            f"no saved item with id or URL {', '.join(map(repr, unknown))};"
            " ids are in `digest search` and `digest export`"
        )
