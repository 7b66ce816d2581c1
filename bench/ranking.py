"""Ranking by a stated interest: precision at 5 on weeks of news from five categories.

    python bench/ranking.py /work/shared/bench-data/summaries/bbc-dev.csv [--weeks 20]

Each "week" is 30 articles drawn at random (seeded) from the BBC development set (business,
entertainment, politics, sport, tech), saved in a random order. For each category the reader
states one interest, the category's own name ("technology" for tech), and the week is ranked
by `digest.compose.ranking.rank_items`; precision at 5 is the share of the top five that
belong to the category, averaged over WEEKS weeks per category. Beside it: the order of
saving (what the digest did before: the category's share of the week, on average), and the
ranking learnt from three starred articles of the category (from outside the week) with no
interest stated. Nothing in the ranking was tuned on this set.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from digest.compose.ranking import History, rank_items
from digest.models import Item, ItemKind, ItemState

INTERESTS = {
    "business": "business",
    "entertainment": "entertainment",
    "politics": "politics",
    "sport": "sport",
    "tech": "technology",
}
WEEK_ITEMS = 30
STARRED = 3
MONDAY = datetime(2026, 11, 16, tzinfo=UTC)


def article(n: int, document: str) -> Item:
    title, _, text = document.partition("\n")
    return Item(
        id=n,
        key=f"bbc:{n}",
        url=None,
        title=title.strip(),
        kind=ItemKind.LINK,
        saved_at=MONDAY + timedelta(minutes=n),
        topic=None,
        context=None,
        state=ItemState.FETCHED,
        attempts=1,
        error=None,
        next_attempt_at=None,
        text=text.strip(),
    )


def precision_at_5(ranked: Sequence[Item], category: str, categories: dict[int, str]) -> float:
    return sum(categories[item.id] == category for item in ranked[:5]) / 5


def mean_precision(
    articles: list[Item],
    categories: dict[int, str],
    weeks: int,
    order: Callable[[list[Item], str, random.Random], list[Item]],
) -> dict[str, float]:
    scores = {}
    for category in INTERESTS:
        random_ = random.Random(f"{category}-22")  # the same weeks for every order
        drawn = [random_.sample(articles, WEEK_ITEMS) for _ in range(weeks)]
        stars = random.Random(f"{category}-stars")
        found = [
            precision_at_5(order(week, category, stars), category, categories) for week in drawn
        ]
        scores[category] = statistics.mean(found)
    return scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path)
    parser.add_argument("--weeks", type=int, default=20)
    args = parser.parse_args()
    with args.csv.open(encoding="utf-8") as source:
        rows = list(csv.DictReader(source))
    articles = [article(n, row["document"]) for n, row in enumerate(rows, 1)]
    categories = {n: row["categories"] for n, row in enumerate(rows, 1)}

    def saved(week: list[Item], category: str, random_: random.Random) -> list[Item]:
        return week

    def interest(week: list[Item], category: str, random_: random.Random) -> list[Item]:
        return rank_items(week, [INTERESTS[category]]).ordered(week)

    def starred(week: list[Item], category: str, random_: random.Random) -> list[Item]:
        others = [a for a in articles if categories[a.id] == category and a not in week]
        history = History(starred=random_.sample(others, STARRED))
        return rank_items(week, [], history).ordered(week)

    print(f"load average before: {_load()}; {len(articles)} articles, {args.weeks} weeks each")
    print("| order | " + " | ".join(INTERESTS) + " | mean |")
    print("|---" * (len(INTERESTS) + 2) + "|")
    for name, order in (
        ("as saved (before)", saved),
        ("one stated interest", interest),
        (f"{STARRED} starred, no interest", starred),
    ):
        scores = mean_precision(articles, categories, args.weeks, order)
        cells = " | ".join(f"{scores[c]:.2f}" for c in INTERESTS)
        print(f"| {name} | {cells} | {statistics.mean(scores.values()):.3f} |")
    print(f"load average after: {_load()}")
    return 0


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
