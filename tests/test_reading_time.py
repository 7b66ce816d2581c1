"""Reading time: words over 230 a minute, for each read item, its section and the week; the
store counts a page's words whole although compose reads only its opening; rules and export."""

from __future__ import annotations

import zipfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.commands.export import export_row
from digest.compose.digest import compose
from digest.compose.entries import group_by_topic
from digest.config import Config, DigestSection, EpubConfig, RuleConfig
from digest.deliver.channel import Edition
from digest.deliver.outbox import deliver_digest
from digest.features import TEXT_CHARS
from digest.lifecycle import FetchSucceeded
from digest.models import Extracted, ItemState, Note, NoteBasis, SavedItem, WeekSummary
from digest.periods import parse_week
from digest.reading_time import WORDS_PER_MINUTE, reading_minutes
from digest.rules import apply_rules
from digest.store import open_store
from weekitems import week_item

ZONE = ZoneInfo("UTC")
W47 = parse_week("2026-W47", ZONE)
NOW = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)


def words(count: int, word: str = "word") -> str:
    return " ".join([word] * count)


def test_minutes_round_and_a_short_text_takes_one() -> None:
    assert reading_minutes(None) == 0 and reading_minutes("  ") == 0
    assert reading_minutes("one") == 1
    assert reading_minutes(words(WORDS_PER_MINUTE * 4 + 100)) == 4


def test_the_digest_shows_each_read_item_its_section_and_the_week() -> None:
    note = Note("A note on it.", tags=("rust",))
    items = [
        week_item(1, W47.start, title="Long read", text=words(2300), note=note),
        week_item(2, W47.start, title="Short read", text=words(200, "other"), note=note),
        week_item(
            3,
            W47.start,
            title="Not read",
            note=Note("From the journal.", tags=("rust",), basis=NoteBasis.SAVED_CONTEXT),
        ),
    ]
    markdown = compose(W47, items, WeekSummary(()), zone=ZONE)

    assert "- **[Long read](https://site.example/1)** · 10 min read\n" in markdown
    assert "- **[Short read](https://site.example/2)** · 1 min read\n" in markdown
    assert "- **[Not read](https://site.example/3)**\n" in markdown
    assert "*3 items · 11 min read*" in markdown
    assert "*11 min read in all.*" in markdown.split("## rust")[0]
    [topic] = group_by_topic(items)
    assert topic.minutes == 11


def test_every_section_of_a_week_with_a_reading_time_says_its_items_alike() -> None:
    # a section of pages not fetched yet, or of notes, reads as one with a reading time
    read = Note("A note on it.", tags=("rust",))
    items = [
        week_item(1, W47.start, title="Long read", text=words(2300), note=read),
        week_item(2, W47.start, title="Short read", text=words(200, "other"), note=read),
        *(
            week_item(n, W47.start, title=f"Later {n}", topic="later", state=ItemState.NEW)
            for n in (3, 4)
        ),
        *(
            week_item(n, W47.start, url=None, title=f"Idea {n}", topic="ideas", context="Idea")
            for n in (5, 6)
        ),
    ]
    markdown = compose(W47, items, WeekSummary(()), zone=ZONE)

    sections = {part.split("\n", 1)[0]: part for part in markdown.split("\n## ")[1:]}
    assert "\n*2 items · 11 min read*\n" in sections["rust"]
    assert "\n*2 items · pages not fetched*\n" in sections["later"]
    assert "\n*2 items*\n" in sections["ideas"]


def test_the_store_counts_the_whole_page_and_the_book_holds_it(tmp_path: Path) -> None:
    page = "First paragraph opens it.\n\n" + words(3000) + "\n\nThe very last sentence."
    assert len(page) > TEXT_CHARS
    config = Config(digest=DigestSection(data_dir=tmp_path / "data"), epub=EpubConfig(enabled=True))
    with open_store(config.db_path) as store:
        source = store.ensure_source("inbox", "file", path="/inbox", now=NOW)
        store.save_items(
            source, [SavedItem("https://long.example/p", title="Long", saved_at=NOW)], NOW
        )
        (item,) = store.all_items()
        extracted = Extracted(page, title="Long")
        store.apply_fetch(FetchSucceeded(item.id, extracted, "h", NOW, ItemState.FETCHED, None))

        (opening,) = store.items_saved_between(W47.start, W47.end, text_chars=TEXT_CHARS)
        assert opening.text is not None and len(opening.text) == TEXT_CHARS
        assert opening.words == 3008 == len(page.split())  # counted whole, in SQLite
        assert export_row(store.all_items()[0])["reading_minutes"] == 13

        topic = group_by_topic([replace(opening, note=Note("A long page."))])  # noted: read
        deliver_digest(
            store,
            config,
            W47,
            "# Digest\n",
            NOW,
            items=[opening],
            edition=Edition("dates", "", topic),
        )
    with zipfile.ZipFile(config.digests_dir / "2026-W47.epub") as book:
        chapter = book.read("OEBPS/section-1.xhtml").decode()
    assert "The very last sentence." in chapter and "13 min read" in chapter


def test_rules_match_by_reading_time() -> None:
    rules = [
        RuleConfig(name="long reads", min_minutes=5, section="Long reads"),
        RuleConfig(name="no snippets", max_minutes=0.5, mute=True),
    ]
    items = [
        week_item(1, W47.start, text=words(2000)),  # 8.7 minutes
        week_item(2, W47.start, text=words(500)),
        week_item(3, W47.start, text=words(50)),
    ]
    outcome = apply_rules(rules, items)
    assert [item.id for item in outcome.muted] == [3]
    assert [(item.id, item.topic) for item in outcome.shown] == [(1, "Long reads"), (2, None)]
