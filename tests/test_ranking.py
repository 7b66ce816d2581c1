"""Ranking by the reader's interests and history: a week of news from four subjects."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.compose.digest import compose
from digest.compose.ranking import History, rank_items
from digest.lifecycle import ItemStarred, ReadingEnded
from digest.models import FileReading, Item, Period, SavedItem, WeekSummary
from digest.store import open_store
from weekitems import week_item

MONDAY = datetime(2026, 11, 16, tzinfo=UTC)
PERIOD = Period("2026-W47", MONDAY, MONDAY + timedelta(days=7))
NEWS = {
    "football": [
        "Late penalty sends United through to the cup semi-final",
        "Striker signs a four-year contract after scoring twenty league goals",
        "Goalkeeper saves two penalties as the derby ends in a shoot-out",
        "Manager sacked after five defeats in a row at the bottom of the table",
        "Champions League draw pairs the holders with last season's finalists",
    ],
    "cooking": [
        "A slow-braised beef stew with red wine and thyme",
        "How to bake a sourdough loaf with a crisp crust",
        "Five weeknight pasta sauces from pantry staples",
        "The secret to fluffy pancakes is resting the batter",
        "Roasting vegetables at high heat for caramelised edges",
    ],
    "gardening": [
        "When to prune roses and fruit trees in winter",
        "Compost heaps: balancing green and brown material",
        "Planting tulip bulbs before the first frost",
        "Keeping slugs off lettuce without chemicals",
        "Raised beds for a small vegetable garden",
    ],
    "computing": [
        "A new GPU kernel doubles matrix multiplication throughput",
        "Compilers that vectorise loops automatically",
        "Rust memory safety without a garbage collector",
        "Database indexes explained with B-trees",
        "Serving large language models with continuous batching",
    ],
}

STARRED = [
    ("Grandmother's apple pie", "butter, flour, sugar and apples baked in the oven for an hour."),
    ("Onions", "frying them slowly in a pan until golden makes any sauce or soup taste richer."),
]


def week() -> list[Item]:
    """Subjects interleaved, so that the order of saving says nothing about them."""
    titles = [title for row in zip(*NEWS.values(), strict=True) for title in row]
    return [
        week_item(n, MONDAY, title=title, text=title + ".") for n, title in enumerate(titles, 1)
    ]


def subject(item: Item) -> str:
    return next(name for name, titles in NEWS.items() if item.title in titles)


def precision_at_5(items: list[Item], wanted: str) -> float:
    return sum(subject(item) == wanted for item in items[:5]) / 5


def test_a_stated_interest_puts_its_subject_first_and_says_so() -> None:
    items = week()
    ranking = rank_items(items, ["football"])
    ordered = ranking.ordered(items)
    assert precision_at_5(ordered, "football") >= 0.8
    top = ordered[0]
    assert subject(top) == "football"
    assert ranking.why[top.id] == "matches your interest 'football'"
    assert all(subject(i) == "football" for i in items if i.id in ranking.must_read)


def test_starred_items_from_before_pull_their_like_up() -> None:
    items = week()
    starred = [
        week_item(100 + n, MONDAY - timedelta(days=7), title=title, text=f"{title}: {text}")
        for n, (title, text) in enumerate(STARRED)
    ]
    ranking = rank_items(items, [], History(starred=starred))
    ordered = ranking.ordered(items)
    assert precision_at_5(ordered, "cooking") >= 0.8
    starred_titles = [title for title, _ in STARRED]
    why = ranking.why[ordered[0].id]
    assert why.startswith('like "') and why.endswith('", which you starred'), why
    assert why.removeprefix('like "').split('", which')[0] in starred_titles
    assert len(ranking.why) < len(items) / 2  # said for the strong matches only


def test_with_no_interest_and_no_history_the_order_stays() -> None:
    items = week()
    ranking = rank_items(items, [])
    assert ranking.ordered(items) == items
    assert (ranking.must_read, ranking.why) == ((), {})


def test_a_pinned_item_comes_first_whatever_its_score() -> None:
    items = week()
    gardening = next(item for item in items if subject(item) == "gardening")
    ranking = rank_items(items, ["football"], pinned=[gardening.id])
    assert ranking.ordered(items)[0] == gardening
    assert ranking.must_read[0] == gardening.id


def test_the_digest_lists_by_interest_with_why_and_must_read() -> None:
    items = week()
    markdown = compose(
        PERIOD,
        items,
        WeekSummary(()),
        zone=ZoneInfo("UTC"),
        ranking=rank_items(items, ["football"]),
    )
    first = markdown.split("\n- **")[1]
    assert any(title in first for title in NEWS["football"])
    assert "*matches your interest 'football'*" in first
    assert "**Must read:**" in markdown


def test_stars_are_kept_and_taken_off_in_the_store(tmp_path: Path) -> None:
    with open_store(tmp_path / "digest.db") as store:
        source = store.ensure_source("inbox", "file", path="/inbox", now=MONDAY)
        store.save_items(source, [SavedItem(f"https://a.example/{n}") for n in (1, 2)], MONDAY)
        assert store.apply_star(ItemStarred(2, MONDAY)) and store.apply_star(
            ItemStarred(1, MONDAY + timedelta(hours=1))
        )
        assert not store.apply_star(ItemStarred(99, MONDAY))
        assert [i.id for i in store.starred_items(10, text_chars=0)] == [1, 2]
        store.apply_star(ItemStarred(1, MONDAY, starred=False))
        assert [i.id for i in store.starred_items(10, text_chars=0)] == [2]


def test_an_item_of_the_week_the_reader_starred_comes_first_and_is_not_like_itself() -> None:
    items = week()
    gardening = [item for item in items if subject(item) == "gardening"]
    ranking = rank_items(items, ["football"], History(starred=gardening[:2]))
    assert ranking.ordered(items)[:2] == gardening[:2]
    assert ranking.why[gardening[0].id] == "you starred it"
    assert ranking.must_read[:2] == (gardening[0].id, gardening[1].id)
    read = rank_items(items, [], History(read=gardening[:1]))
    assert gardening[0].id not in read.why  # not like itself: no other item read


def test_a_starred_item_a_new_reading_of_its_file_removes_takes_its_star(tmp_path: Path) -> None:
    with open_store(tmp_path / "digest.db") as store:
        source = store.ensure_source("inbox", "file", path="/inbox", now=MONDAY)
        as_list = FileReading("urls", False, "one URL a line")
        item = SavedItem("https://a.example/1", line=1)
        store.save_file_items("/inbox/a.txt", as_list, source, [item], MONDAY)
        store.apply_file(ReadingEnded("/inbox/a.txt", as_list, source, MONDAY))
        assert store.apply_star(ItemStarred(1, MONDAY))
        journal = FileReading("journal", True, "day headings")
        store.apply_file(ReadingEnded("/inbox/a.txt", journal, source, MONDAY))
        assert store.all_items() == []
        assert store.starred_items(10, text_chars=0) == []
