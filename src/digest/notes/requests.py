"""What a note is made from: the request for one item (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from digest.extract.quality import SHOWS_ARTICLE_TEXT
from digest.models import Item, ItemKind, NoteBasis
from digest.notes import NoteRequest


def note_request(item: Item, known_tags: Sequence[str]) -> NoteRequest:
    """The text a note is made from: the page when it is the article, else what was saved
    with it (plus what a stub or thin page showed of the article)."""
    if item.text and item.quality is None:
        text, basis = item.text, NoteBasis.FULL_TEXT
    elif item.kind == ItemKind.POST:  # with what its links led to, once followed
        text = "\n\n".join(part for part in (item.context, item.linked_text) if part)
        basis = NoteBasis.POST_TEXT
    else:
        parts = [item.title or item.page_title or "", item.context or ""]
        if item.quality in SHOWS_ARTICLE_TEXT and item.text and item.text not in parts[1]:
            parts.append(item.text)
        text, basis = (
            "\n\n".join(part for part in parts if part) or (item.url or ""),
            NoteBasis.SAVED_CONTEXT,
        )
    return NoteRequest(
        item_id=item.id,
        title=item.title or item.page_title,
        url=item.url,
        text=text,
        basis=basis,
        known_tags=tuple(known_tags),
    )
