"""One story, one entry: items whose texts tell the same story, found without a model (pure).

Two items are one story when one's text is a copy of the other's (syndication: more than 85 %
of the shorter text's five-word shingles are in the longer one, as Feedly counts it) or a
rewrite of the same news (their TF-IDF vectors over the week's texts are very close).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from digest.compose.unread import offline_stand_in, saved_words
from digest.models import Item, ItemKind
from digest.text import COMMON_WORD_UNITS, tfidf, words

COPY_SHARE = 0.85  # share of the shorter text's shingles found in the longer one
REWRITE_COSINE = 0.6  # TF-IDF cosine of two rewrites of one piece of news
CANDIDATE_COSINE = 0.2  # below this, not even a copy inside a longer page
SHINGLE_WORDS = 5
MIN_WORDS = 40  # shorter texts (titles, one-line notes) say too little to match on
FOLDED_COLUMNS = 4096  # candidate pairs: 4 bytes a column an item (16 MB for 1,000 items)
FOLDING_SLACK = 1e-3  # float32 rounding in the folded product
TEXT_CHARS = 5_000  # a page's opening tells its story: compose reads no more of the page


def story_text(item: Item) -> str:
    """What an item says: the opening of its page (a post's own text), else its note (unless
    it only restates a link never read), else what was saved with it."""
    page = item.context if item.kind is ItemKind.POST else item.text
    note = item.note.summary if item.note and not offline_stand_in(item) else ""
    return (page or note or saved_words(item) or "")[:TEXT_CHARS]


def same_stories(items: Sequence[Item]) -> list[list[int]]:
    """Groups of indexes into `items` that tell one story, each in the items' order; an item
    alone is a group of one. Only pairs whose folded vectors come close are compared."""
    bags = [words(story_text(item)) for item in items]
    vectors = tfidf(bags)
    frequency = Counter(word for vector in vectors for word in vector)
    common = {w for w, n in frequency.items() if n > max(COMMON_WORD_UNITS, len(items) // 2)}
    shingles: dict[int, set[tuple[str, ...]]] = {}
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in _candidates(vectors, [len(bag) >= MIN_WORDS for bag in bags], common):
        similarity = _cosine(vectors[i], vectors[j], common)
        if similarity < CANDIDATE_COSINE:
            continue
        for n in (i, j):
            if n not in shingles:
                shingles[n] = _shingles(bags[n])
        if similarity >= REWRITE_COSINE or _copied(shingles[i], shingles[j]):
            parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values())


def _candidates(
    vectors: list[dict[str, float]], long_enough: list[bool], common: set[str]
) -> list[tuple[int, int]]:
    """The pairs (i < j) of long enough texts whose cosine (without the common words) may reach
    CANDIDATE_COSINE: every vector folded into FOLDED_COLUMNS columns (a word's column from
    its order of first use), so one matrix product bounds every pair's cosine from above
    (the weights are positive: words sharing a column only add) in a bounded matrix."""
    import numpy as np  # loaded on first use: importing compose stays cheap

    kept = [n for n, long in enumerate(long_enough) if long]
    columns: dict[str, int] = {}
    rows, cells, weights = [], [], []
    for row, n in enumerate(kept):
        for word, weight in vectors[n].items():
            if word not in common:
                rows.append(row)
                cells.append(columns.setdefault(word, len(columns)) % FOLDED_COLUMNS)
                weights.append(weight)
    folded = np.zeros((len(kept), FOLDED_COLUMNS), dtype=np.float32)
    np.add.at(folded, (np.array(rows, dtype=int), np.array(cells, dtype=int)), weights)
    above = np.triu(folded @ folded.T >= CANDIDATE_COSINE - FOLDING_SLACK, k=1)
    return [(kept[a], kept[b]) for a, b in zip(*np.nonzero(above), strict=True)]


def _cosine(a: dict[str, float], b: dict[str, float], common: set[str]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(value * b.get(word, 0.0) for word, value in a.items() if word not in common)


def _copied(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> bool:
    return len(a & b) > COPY_SHARE * min(len(a), len(b)) > 0


def _shingles(bag: list[str]) -> set[tuple[str, ...]]:
    return {tuple(bag[i : i + SHINGLE_WORDS]) for i in range(len(bag) - SHINGLE_WORDS + 1)}
