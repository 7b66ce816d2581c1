"""One story, one entry: items whose texts tell the same story, found without a model (pure).

Two items are one story when one's text is a copy of the other's (syndication: more than 85 %
of the shorter text's five-word shingles are in the longer one, as Feedly counts it) or a
rewrite of the same news (their TF-IDF vectors over the week's texts are very close).
"""

from __future__ import annotations

from collections.abc import Sequence

from digest.models import Item
from digest.text import similarities, tfidf, words

COPY_SHARE = 0.85  # share of the shorter text's shingles found in the longer one
REWRITE_COSINE = 0.6  # TF-IDF cosine of two rewrites of one piece of news
CANDIDATE_COSINE = 0.2  # below this, not even a copy inside a longer page
SHINGLE_WORDS = 5
MIN_WORDS = 40  # shorter texts (titles, one-line notes) say too little to match on
TEXT_CHARS = 5_000  # a page's opening tells its story: compose reads no more of the page


def story_text(item: Item) -> str:
    """What an item says: the opening of its page, else its note, else what was saved with it."""
    return (item.text or (item.note.summary if item.note else "") or item.context or "")[
        :TEXT_CHARS
    ]


def same_stories(items: Sequence[Item]) -> list[list[int]]:
    """Groups of indexes into `items` that tell one story, each in the items' order; an item
    alone is a group of one. Only pairs that share words are compared (a word index)."""
    bags = [words(story_text(item)) for item in items]
    shingles = [_shingles(bag) for bag in bags]
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for (i, j), similarity in sorted(similarities(tfidf(bags)).items()):
        if min(len(bags[i]), len(bags[j])) < MIN_WORDS or similarity < CANDIDATE_COSINE:
            continue
        if similarity >= REWRITE_COSINE or _copied(shingles[i], shingles[j]):
            parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values())


def _copied(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> bool:
    return len(a & b) > COPY_SHARE * min(len(a), len(b)) > 0


def _shingles(bag: list[str]) -> set[tuple[str, ...]]:
    return {tuple(bag[i : i + SHINGLE_WORDS]) for i in range(len(bag) - SHINGLE_WORDS + 1)}
