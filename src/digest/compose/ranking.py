"""Each section's items ordered by what the reader cares about, and why (pure, offline).

What the reader cares about: the `interests` of the config, the items they starred and those
they marked read. An item's relevance is its embedding's cosine similarity (WordLlama, as for
the offline sections: no model call) to its closest interest, or to the few starred (or read)
items it is most like, whichever is higher. Pinned items come first whatever their score.
Items of the week the reader starred come right after the pins. With no interests, no
history and no pins, nothing is reordered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from digest.features import embed, features_of, meanings
from digest.models import Item
from digest.text import shorten

RELEVANT = 0.2  # a similarity from here ranks an item up (unrelated news articles: 0.04 median)
# ... and says why only within this of the week's best match of the same kind (interests,
# stars, reads): with a close match in the week, an item that merely shares a word or two
# with the interest ("AI", "guide") is not said to match it
WHY_MARGIN = 0.1
WHY_TITLE_CHARS = 60
LIKE = 3  # an item is compared with the mean of its LIKE closest starred (or read) items
READ_WEIGHT = 0.8  # read is a weaker sign than starred
MUST_READ = 3  # "Must read" offline: the week's top items, pins first
HISTORY = 200  # the most recent starred and read items the ranking learns from


@dataclass(frozen=True)
class History:
    """What the reader did: starred and read items, most recent first."""

    starred: Sequence[Item] = ()
    read: Sequence[Item] = ()


@dataclass(frozen=True)
class Ranking:
    """Where each item goes (a lower rank first; items not ranked keep their order), the
    week's must-reads and, for items that are relevant, why."""

    rank: dict[int, float] = field(default_factory=dict)
    must_read: tuple[int, ...] = ()
    why: dict[int, str] = field(default_factory=dict)
    pinned: tuple[int, ...] = ()

    def ordered(self, items: Sequence[Item]) -> list[Item]:
        """`items` best first; a stable sort, so equal ranks keep the order they came in."""
        if not self.rank:
            return list(items)
        return sorted(items, key=lambda item: self.rank.get(item.id, 0.0))


def rank_items(
    items: Sequence[Item],
    interests: Sequence[str],
    history: History = History(),
    pinned: Sequence[int] = (),
) -> Ranking:
    """The week's `items` ranked by relevance to the reader (see the module's docstring)."""
    week = list(items)
    pins = tuple(dict.fromkeys(i for i in pinned if i in {item.id for item in week}))
    if not week or not (interests or history.starred or history.read):
        return Ranking({i: -2.0 for i in pins}, pins, pinned=pins)
    scores, reasons = _scores(week, interests, history)
    starred = {item.id for item in history.starred}
    rank = {item.id: -float(score) for item, score in zip(week, scores, strict=True)}
    why = {item.id: reason for item, reason in zip(week, reasons, strict=True) if reason}
    for item in week:
        if item.id in starred:  # after the pins, before the rest (a similarity is ≥ -1)
            rank[item.id], why[item.id] = -1.5, "you starred it"
    rank |= {i: -2.0 - n / (len(pins) + 1) for n, i in enumerate(pins)}
    best = sorted((i for i, score in rank.items() if -score >= RELEVANT), key=rank.__getitem__)
    must_read = tuple(dict.fromkeys([*pins, *best]))[: max(MUST_READ, len(pins))]
    return Ranking(rank, must_read, why, pins)


def _scores(
    week: Sequence[Item], interests: Sequence[str], history: History
) -> tuple[np.ndarray[Any, Any], list[str | None]]:
    """Per item: its relevance, and in a few words why: the interest or the starred (or
    read) item it is closest to, only for a strong match (see WHY_MARGIN). An item the
    reader starred or read is compared with the others, never with itself."""
    vectors = meanings(features_of(week))
    signals: list[tuple[np.ndarray[Any, Any], list[str]]] = []
    if interests:
        similar = vectors @ embed(interests).T
        best = similar.argmax(axis=1)
        named = [f"matches your interest {interests[n]!r}" for n in best]
        signals.append((similar.max(axis=1), named))
    for done, weight, verb in (
        (history.starred, 1.0, "starred"),
        (history.read, READ_WEIGHT, "read"),
    ):
        if done:
            done = done[:HISTORY]
            similar = vectors @ meanings(features_of(done)).T
            itself = np.equal.outer([item.id for item in week], [item.id for item in done])
            similar[itself] = -1.0  # the least similar there is
            closest = -np.sort(-similar, axis=1)[:, :LIKE]
            nearest = [done[n] for n in similar.argmax(axis=1)]
            said = [f'like "{_short_title(item)}", which you {verb}' for item in nearest]
            signals.append((weight * closest.mean(axis=1), said))
    stacked = np.vstack([score for score, _ in signals])
    strongest = stacked.argmax(axis=0)
    scores = stacked.max(axis=0)
    cutoffs = np.maximum(RELEVANT, stacked.max(axis=1) - WHY_MARGIN)
    reasons = [
        signals[k][1][n] if stacked[k, n] >= cutoffs[k] else None for n, k in enumerate(strongest)
    ]
    return scores, reasons


def _short_title(item: Item) -> str:
    return shorten(" ".join(item.display_title.split()), WHY_TITLE_CHARS)
