"""The digest as a subscriber reads it: blocks that survive any CommonMark renderer, plain text
without markdown, a post's first line shown once."""

from __future__ import annotations

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from digest.compose.backlog import linkable_urls
from digest.compose.digest import Backlog, compose
from digest.compose.entries import without_lead
from digest.deliver.html import markdown_to_html
from digest.deliver.plaintext import markdown_to_text
from digest.models import Item, ItemKind, ItemState, Note, Statement, WeekSummary
from digest.notes.requests import note_request
from digest.periods import parse_week
from weekitems import week_item

ZONE = ZoneInfo("UTC")
PERIOD = parse_week("2026-W47", ZONE)


def item(id: int, url: str | None, title: str | None, note: Note | None, **fields: object) -> Item:
    return week_item(id, PERIOD.start, url=url, title=title, note=note, **fields)


WEEK = [
    item(1, "https://a.example/p", "Disagg Prefill-Decode", Note("Lot of good fundamentals here.")),
    item(
        2,
        "https://b.example/q",
        "1) Numbered *title* - with escapes",
        Note("A note with 1) a list-like start.", key_points=("- a dash point", "Another point")),
    ),
]


def test_title_and_note_are_separate_blocks_in_commonmark() -> None:
    html = MarkdownIt("commonmark").render(compose(PERIOD, WEEK, WeekSummary(()), zone=ZONE))
    assert re.search(
        r'<p><strong><a href="https://a.example/p">Disagg Prefill-Decode</a></strong></p>\s*'
        r"<p>Lot of good fundamentals here.</p>",
        html,
    )
    assert "Prefill-Decode Lot" not in html


def test_plain_text_part_has_no_markdown_escapes_and_links_as_title_then_url() -> None:
    text = markdown_to_text(compose(PERIOD, WEEK, WeekSummary(()), zone=ZONE))
    assert "Disagg Prefill-Decode <https://a.example/p>\n\n  Lot of good fundamentals here." in text
    assert "1) Numbered *title* - with escapes <https://b.example/q>" in text
    assert "\\" not in text and "](" not in text and "**" not in text
    assert "  - - a dash point\n  - Another point" in text


def test_a_posts_first_line_is_shown_once() -> None:
    post = item(
        3,
        None,
        "IN 1986 MIT FILMED a lecture series",
        Note(
            "IN 1986 MIT FILMED a lecture series. It is still the best intro to programming in Scheme."
        ),
        kind=ItemKind.POST,
        context="IN 1986 MIT FILMED a lecture series. "
        + "It is still the best intro to programming in Scheme. " * 20,
    )
    markdown = compose(PERIOD, [post], WeekSummary(()), zone=ZONE)
    assert markdown.count("1986 MIT") == 1
    assert "- **In 1986 MIT filmed a lecture series.**" in markdown  # "FILMED" shouts
    assert "It is still the best intro to programming in Scheme." in markdown


def test_a_summary_that_merely_shares_a_first_word_keeps_it() -> None:
    opens = {"title_opens_text": True}
    assert without_lead("Rustacean news this week.", "Rust", **opens) == "Rustacean news this week."
    assert without_lead("Rust: a new release.", "Rust", **opens) == "A new release."
    assert without_lead("Rust: a new release.", "Rust") == "Rust: a new release."  # a page's


@given(st.text(max_size=300))
def test_plain_text_never_raises_and_ends_with_one_newline(markdown: str) -> None:
    text = markdown_to_text(markdown)
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_a_consent_walls_title_does_not_replace_the_items() -> None:
    walled = item(
        5,
        "https://news.example.com/story?id=7",
        None,
        Note("Saved from the feed."),
        extracted_title="Before you continue",
        quality="consent",
    )
    markdown = compose(PERIOD, [walled], WeekSummary(()), zone=ZONE)
    assert "Before you continue" not in markdown
    assert "**[news.example.com/story?id=7](https://news.example.com/story?id=7)**" in markdown


def test_a_walls_title_is_shown_nowhere_not_in_citations_must_read_or_still_unread() -> None:
    walled = item(
        5,
        "https://news.example.com/story?id=7",
        None,
        Note("Saved from the feed."),
        extracted_title="Before you continue",
        quality="consent",
    )
    titled = item(
        7,
        "https://paper.example/p",
        "Harbour vote",
        None,
        extracted_title="Subscribe to read",
        quality="paywalled",
    )
    older = item(
        8,
        "https://paper.example/login-walled",
        None,
        Note("Saved from a journal."),
        saved_at=PERIOD.start - timedelta(days=9),
        extracted_title="Sign in to continue reading",
        quality="login",
    )
    summary = WeekSummary(
        (Statement("Consent walls everywhere this week.", (5, 7)),), must_read=(5, 7)
    )

    markdown = compose(
        PERIOD, [walled, titled], summary, zone=ZONE, backlog=Backlog(unread=[older])
    )

    for wall_title in ("Before you continue", "Subscribe to read", "Sign in to continue"):
        assert wall_title not in markdown
    cited = "[news.example.com/story?id=7](https://news.example.com/story?id=7)"
    assert markdown.count(cited) == 3  # its entry, the citation, Must read
    assert markdown.count("[Harbour vote](https://paper.example/p)") == 3
    assert "[Login walled](https://paper.example/login-walled)" in markdown
    assert [wall.display_title for wall in (walled, titled, older)] == [
        "https://news.example.com/story?id=7",
        "Harbour vote",
        "https://paper.example/login-walled",
    ]


def test_a_walls_title_is_not_given_to_the_summariser_as_the_items() -> None:
    walled = item(
        9,
        "https://news.example.com/a",
        None,
        None,
        state=ItemState.FETCHED,
        context="Ferries change their timetable in December.",
        text="Before you continue to Example News, we and our partners use cookies.",
        extracted_title="Before you continue",
        quality="consent",
    )

    request = note_request(walled, ())

    assert request.title is None
    assert request.text == "Ferries change their timetable in December."


def test_a_posts_links_are_listed_and_clickable_in_the_html_mail() -> None:
    post = item(
        6,
        None,
        "Thread on KV caches",
        Note("Thread on KV caches. Worth reading for the diagrams."),
        kind=ItemKind.POST,
        links=("https://t.co/abc", "javascript:alert(1)"),
    )
    markdown = compose(PERIOD, [post], WeekSummary(()), zone=ZONE)
    assert "*links: [t.co/abc](https://t.co/abc)*" in markdown
    html = markdown_to_html(markdown, title="t", allowed_urls=linkable_urls([post], Backlog()))
    assert 'href="https://t.co/abc">t.co/abc</a>' in html and "javascript" not in html
