"""The digest looked at in a real browser (Debian chromium through selenium), as a subscriber
on a phone (390 px) and on a laptop (800 px) would: the HTML mail, and the markdown as any
CommonMark renderer shows it. Skipped where chromium or chromium-driver is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from markdown_it import MarkdownIt

from browser import LAYOUT, available, chromium, viewport
from digest.compose.digest import compose
from digest.deliver.html import markdown_to_html
from digest.models import Item, ItemKind, ItemState, Note, NoteBasis, WeekSummary
from digest.periods import parse_week

pytestmark = pytest.mark.skipif(not available(), reason="needs chromium and chromium-driver")

ZONE = ZoneInfo("UTC")
PERIOD = parse_week("2026-W47", ZONE)
LONG_URL = "https://docs.example.org/" + "very-long-path-segment-without-breaks-" * 6 + "end"


def item(item_id: int, url: str | None, title: str | None, note: Note | None, **extra: Any) -> Item:
    values: dict[str, Any] = dict(
        id=item_id, key=url or f"note:{item_id}", url=url, title=title, kind=ItemKind.LINK,
        saved_at=PERIOD.start + timedelta(hours=item_id), topic="Serving", context=None,
        state=ItemState.NOTED, attempts=0, error=None, next_attempt_at=None, text=None, note=note,
    )  # fmt: skip
    return Item(**(values | extra))


WEEK = [
    item(
        1,
        "https://blog.example.com/disagg",
        "Perplexity's Disagg Prefill-Decode",
        Note(
            "Lot of good fundamentals here about splitting prefill from decode across GPUs.",
            key_points=("Prefill is compute bound.", "Decode is memory bound."),
        ),
    ),
    item(2, LONG_URL, None, Note("A page whose only title is its very long address.")),
    item(
        3,
        "https://paywalled.example.com/story",
        "Supercalifragilisticexpialidocious, the paywalled story",
        None,
        state=ItemState.FAILED,
        error="fetch failed: 'https://paywalled.example.com/story': HTTP 402",
        context="interesting take on queueing theory",
    ),
    item(
        4,
        None,
        "IN 1986 MIT FILMED a lecture series",
        Note(
            "IN 1986 MIT FILMED a lecture series. Still the best intro.", basis=NoteBasis.POST_TEXT
        ),
        kind=ItemKind.POST,
        context="IN 1986 MIT FILMED a lecture series. Still the best intro. " * 10,
    ),
]


def pages(tmp_path: Path) -> dict[str, Path]:
    markdown = compose(PERIOD, WEEK, WeekSummary(()), zone=ZONE)
    urls = [i.url for i in WEEK if i.url]
    mail = markdown_to_html(markdown, title="Your digest", allowed_urls=urls)
    plain = (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="viewport"'
        ' content="width=device-width, initial-scale=1"></head><body>'
        + MarkdownIt("commonmark", {"html": False}).render(markdown)
        + "</body></html>"
    )
    found = {}
    for name, page in (("mail", mail), ("markdown", plain)):
        found[name] = tmp_path / f"{name}.html"
        found[name].write_text(page, encoding="utf-8")
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One chromium for the module: starting one takes longer than a test."""
    with chromium() as driver:
        yield driver


@pytest.mark.parametrize("width", [390, 800])
@pytest.mark.parametrize("kind", ["mail", "markdown"])
def test_title_and_note_are_separate_blocks_and_nothing_scrolls_sideways(
    tmp_path: Path, browser: Any, width: int, kind: str
) -> None:
    page = pages(tmp_path)[kind]
    viewport(browser, width)
    browser.get(page.as_uri())
    layout = browser.execute_script(LAYOUT)
    assert layout["viewport"] == width
    assert layout["scroll"] <= width
    with_notes = [blocks for blocks in layout["items"] if len(blocks) == 2]
    assert len(with_notes) >= 3
    for (_, title_bottom, title), (note_top, _, note) in with_notes:
        assert note_top >= title_bottom, (title, note)
        assert not note.startswith(title)
    assert layout["hrefs"] and all(h.startswith(("https://", "http://")) for h in layout["hrefs"])
