"""One story, one entry: a syndicated copy and a rewrite of the same news are shown once."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from zoneinfo import ZoneInfo

from digest.compose.digest import compose
from digest.compose.stories import same_stories
from digest.models import Item, ItemKind, ItemState, Note, WeekSummary
from digest.periods import parse_week

ZONE = ZoneInfo("UTC")
PERIOD = parse_week("2026-W47", ZONE)

ORIGINAL = (
    "WeWork is under investigation by the New York attorney general, who is examining whether "
    "the office-sharing company misled investors about its finances before its failed public "
    "offering. The inquiry, opened last month, focuses on statements made by former chief "
    "executive Adam Neumann and the board about losses, lease obligations and the valuation of "
    "the company. WeWork said it was cooperating fully with the investigation and declined to "
    "comment further. The company lost more than two billion dollars last year and cut "
    "thousands of jobs after its listing collapsed."
)
REWRITE = (
    "New York's attorney general has opened an investigation into WeWork, examining whether the "
    "office-sharing firm misled investors about its finances ahead of the public offering that "
    "failed. Investigators are looking at what former chief executive Adam Neumann and the board "
    "told investors about the company's losses, lease obligations and valuation. WeWork says it "
    "is cooperating fully with the investigation. The firm lost over two billion dollars last "
    "year and has cut thousands of jobs since the listing collapsed."
)
SYNDICATED = (
    "Subscribe to our newsletter for the latest business news. " + ORIGINAL + " Related: "
    "markets close higher on Friday. Share this article. Advertisement."
)
OTHER_STORY = (
    "Regus, the office-space provider, reported higher profits this quarter as companies signed "
    "longer leases for flexible offices in London, Paris and Berlin. The company said demand "
    "from small businesses grew and that it would open forty new centres next year, mostly in "
    "suburban towns where commuters now prefer to work closer to home. Its shares rose five "
    "percent after the results, while analysts warned that rising interest rates could slow "
    "the expansion and raise the cost of the buildings it rents from landlords."
)


def article(id: int, url: str, title: str, text: str) -> Item:
    return Item(
        id=id,
        key=url,
        url=url,
        title=title,
        kind=ItemKind.LINK,
        saved_at=PERIOD.start + timedelta(hours=id),
        topic=None,
        context=None,
        state=ItemState.NOTED,
        attempts=0,
        error=None,
        next_attempt_at=None,
        text=text,
        note=Note(text.split(". ")[0] + "."),
    )


WEEK = [
    article(1, "https://news.example/wework", "WeWork faces inquiry", ORIGINAL),
    article(2, "https://aggregator.example/x/1", "WeWork under investigation", SYNDICATED),
    article(3, "https://www.paper.example/wework-ag", "NY AG investigates WeWork", REWRITE),
    article(4, "https://biz.example/regus", "Regus profits rise", OTHER_STORY),
]


def test_a_syndicated_copy_and_a_rewrite_are_one_story_and_another_story_is_not() -> None:
    assert same_stories(WEEK) == [[0, 1, 2], [3]]


def test_one_story_is_shown_once_with_every_source_linked() -> None:
    markdown = compose(PERIOD, WEEK, WeekSummary(()), zone=ZONE)
    assert markdown.count("WeWork is under investigation by the New York") == 1
    assert "[WeWork faces inquiry](https://news.example/wework)" in markdown
    assert (
        "*also in: [aggregator.example](https://aggregator.example/x/1),"
        " [paper.example](https://www.paper.example/wework-ag)*"
    ) in markdown
    assert "[Regus profits rise](https://biz.example/regus)" in markdown


def test_short_texts_on_one_subject_are_not_merged() -> None:
    short = [
        replace(WEEK[0], text="WeWork inquiry.", note=None),
        replace(WEEK[2], text="WeWork inquiry.", note=None),
    ]
    assert same_stories(short) == [[0], [1]]
