"""One story, one entry: items whose texts tell the same story, found without a model (pure).

Two items are one story when one's text is a copy of the other's (syndication: more than 85 %
of the shorter text's five-word shingles are in the longer one, as Feedly counts it) or a
rewrite of the same news (their TF-IDF vectors over the week's texts are very close). The
vectors come from each item's stored word counts (features.py); only the texts of
the few pairs that come close are read again, for their shingles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from digest.features import Terms, feature_text, features_of, read, terms_of
from digest.models import Item
from digest.text import COMMON_WORD_UNITS, words

COPY_SHARE = 0.85  # share of the shorter text's shingles found in the longer one
REWRITE_COSINE = 0.6  # TF-IDF cosine of two rewrites of one piece of news
CANDIDATE_COSINE = 0.2  # below this, not even a copy inside a longer page
SHINGLE_WORDS = 5
MIN_WORDS = 40  # shorter texts (titles, one-line notes) say too little to match on
FOLDED_COLUMNS = 2048  # candidate pairs: 4 bytes a column an item (8 MB for 1,000 items)
FOLDING_SLACK = 1e-3  # float32 rounding in the folded product


def same_stories(items: Sequence[Item]) -> list[list[int]]:
    """Groups of indexes into `items` that tell one story, each in the items' order; an item
    alone is a group of one. Only pairs whose folded vectors come close are compared."""
    terms = terms_of(features_of(items))
    weights = _tfidf(terms, len(items))
    common = terms.df > max(COMMON_WORD_UNITS, len(items) // 2)
    weights[common[terms.words]] = 0.0  # in most texts: no sign of one story
    long_enough = np.bincount(terms.rows, terms.counts, minlength=len(items)) >= MIN_WORDS
    shingles: dict[int, set[tuple[str, ...]]] = {}
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in _candidates(terms, weights, np.flatnonzero(long_enough)):
        similarity = _cosine(terms, weights, i, j)
        if similarity < CANDIDATE_COSINE:
            continue
        for n in (i, j):
            if n not in shingles:
                shingles[n] = _shingles(words(read(feature_text(items[n]))))
        if similarity >= REWRITE_COSINE or _copied(shingles[i], shingles[j]):
            parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values())


def _tfidf(terms: Terms, count: int) -> np.ndarray[Any, Any]:
    """Each entry's weight: its count times its word's smoothed IDF, each text's of unit
    length (a dot product of two texts is their cosine)."""
    idf = np.log((1 + count) / (1 + terms.df)) + 1
    weights = terms.counts * idf[terms.words]
    norms = np.sqrt(np.bincount(terms.rows, weights**2, minlength=count))
    return np.asarray(weights / np.where(norms == 0, 1.0, norms)[terms.rows])


def _candidates(
    terms: Terms, weights: np.ndarray[Any, Any], kept: np.ndarray[Any, Any]
) -> list[tuple[int, int]]:
    """The pairs (i < j) of `kept` texts whose cosine may reach CANDIDATE_COSINE: every vector
    folded into FOLDED_COLUMNS columns (by its word's index), so one matrix product bounds
    every pair's cosine from above (the weights are positive: words sharing a column only
    add) in a bounded matrix."""
    position = np.full(int(terms.rows.max(initial=0)) + 1, -1)
    position[kept] = np.arange(len(kept))
    rows = position[terms.rows]
    chosen = rows >= 0
    cells = rows[chosen] * FOLDED_COLUMNS + terms.words[chosen] % FOLDED_COLUMNS
    summed = np.bincount(cells, weights[chosen], minlength=len(kept) * FOLDED_COLUMNS)
    folded = summed.astype(np.float32).reshape(len(kept), FOLDED_COLUMNS)
    above = np.triu(folded @ folded.T >= CANDIDATE_COSINE - FOLDING_SLACK, k=1)
    return [(int(kept[a]), int(kept[b])) for a, b in zip(*np.nonzero(above), strict=True)]


def _cosine(terms: Terms, weights: np.ndarray[Any, Any], i: int, j: int) -> float:
    a, b = terms.of(i), terms.of(j)
    _, in_a, in_b = np.intersect1d(
        terms.words[a], terms.words[b], assume_unique=True, return_indices=True
    )
    return float(weights[a][in_a] @ weights[b][in_b])


def _copied(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> bool:
    return len(a & b) > COPY_SHARE * min(len(a), len(b)) > 0


def _shingles(bag: list[str]) -> set[tuple[str, ...]]:
    return {tuple(bag[i : i + SHINGLE_WORDS]) for i in range(len(bag) - SHINGLE_WORDS + 1)}
