"""Tags for the offline summariser: what an item is about, in words a section can be named by.

A tag is a known tag the text mentions, else a phrase of two content words that recurs, else
a content word that recurs, capitalised terms ("Obsidian", "CUDA") before plain ones. Never a
stopword, filler ("actually", "wrong", "understand"), a number or a piece of a URL ("https",
"www", "com"): those named sections like `## actually` and themes like "understand".
"""

from __future__ import annotations

import re
from collections import Counter

from digest.tagwords import is_tag_word
from digest.text import without_links

MAX_TAGS = 4
_TOKEN = re.compile(r"[^\W_][\w'’-]*")


def tags_for(text: str, known_tags: tuple[str, ...]) -> tuple[str, ...]:
    """Known tags that occur in the text first, then recurring phrases and content words."""
    text = without_links(text)
    lowered = text.lower()
    tags = [tag for tag in known_tags if _mentions(lowered, tag.lower())][:MAX_TAGS]
    for candidate in _candidates(text):
        if len(tags) >= MAX_TAGS:
            break
        if not any(_overlaps(candidate, tag.lower()) for tag in tags):
            tags.append(candidate)
    return tuple(tags)


def _candidates(text: str) -> list[str]:
    """Recurring phrases first, then recurring words, capitalised terms before plain ones."""
    tokens = [token.strip("'’-") for token in _TOKEN.findall(text)]
    kept = [token if token and is_tag_word(token) else "" for token in tokens]
    words = Counter(token.lower() for token in kept if token)
    capitalised = Counter(token.lower() for token in kept if token and token[0].isupper())
    pairs = Counter(
        f"{a.lower()} {b.lower()}" for a, b in zip(kept, kept[1:], strict=False) if a and b
    )
    phrases = sorted((p for p, n in pairs.items() if n >= 2), key=lambda p: (-pairs[p], p))
    singles = sorted(
        (w for w, n in words.items() if n >= 2),
        key=lambda w: (2 * capitalised[w] <= words[w], -words[w], -len(w), w),
    )
    return [*phrases, *singles]


def _overlaps(candidate: str, tag: str) -> bool:
    """ "models" in "language models", or "language models" over "language"."""
    return bool(set(candidate.split()) & set(tag.split()))


def _mentions(lowered_text: str, tag: str) -> bool:
    pattern = r"(?<!\w)" + r"[\s-]+".join(map(re.escape, tag.split())) + r"(?!\w)"
    return bool(tag.strip()) and re.search(pattern, lowered_text) is not None
