"""Reading time: words over a documented reading speed."""

from __future__ import annotations

from digest.models import Item

# Adults' silent reading of non-fiction in English: 238 words a minute on average
# (Brysbaert 2019, a meta-analysis of 190 studies); a round, slightly slower figure.
WORDS_PER_MINUTE = 230


def reading_minutes(text: str | None) -> int:
    """Minutes to read `text`, rounded, at least 1 for any text; 0 for none."""
    words = len(text.split()) if text else 0
    return max(1, round(words / WORDS_PER_MINUTE)) if words else 0


def item_minutes(item: Item) -> int:
    """An item's page as read (the store's count of its words, else its text's); 0 for a
    link whose page was not read."""
    if item.words is not None:
        return max(1, round(item.words / WORDS_PER_MINUTE)) if item.words else 0
    return reading_minutes(item.text)


def minutes_read(minutes: int) -> str:
    return f"{minutes} min read"
