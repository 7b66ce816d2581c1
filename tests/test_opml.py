from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from digest.collect.importers.opml import Feed, export_opml, is_opml, parse_opml
from digest.errors import ImportFormatError

FIXTURE = Path(__file__).parent / "fixtures" / "exports" / "feeds.opml"


def test_nested_outlines_become_categories() -> None:
    assert parse_opml(FIXTURE.read_text()) == [
        Feed("vLLM blog", "https://blog.vllm.ai/feed.xml", "Tech/AI", "https://blog.vllm.ai/"),
        Feed("LWN", "https://lwn.net/headlines/rss", "Tech"),
        Feed("Simon Willison & friends", "https://simonwillison.net/atom/everything/", None),
    ]


def test_opml_is_recognised_from_its_head() -> None:
    assert is_opml(FIXTURE.read_text()[:200])
    assert is_opml("\ufeff<!-- exported -->\n<opml version='2.0'><body/></opml>")
    assert not is_opml("<?xml version='1.0'?><rss version='2.0'></rss>")
    assert not is_opml("title,url\n")


@pytest.mark.parametrize(
    "text",
    [
        "<rss version='2.0'><channel/></rss>",
        "<opml version='2.0'><head/>",
        "<opml version='2.0'><head/></opml>",
        "not xml at all",
    ],
)
def test_non_opml_is_an_import_format_error(text: str) -> None:
    with pytest.raises(ImportFormatError):
        parse_opml(text)


def test_entity_declarations_are_refused() -> None:
    bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><opml><body/></opml>'
    with pytest.raises(ImportFormatError, match="DOCTYPE"):
        parse_opml(bomb)


def test_export_round_trips_names_and_urls_that_need_escaping() -> None:
    sources = [
        Feed('Tom & Jerry\'s "feed" <best>', "https://example.org/feed?a=1&b=2", None),
        Feed("Plain", "https://plain.example/rss", html_url="https://plain.example/?a=1&b=2"),
    ]
    text = export_opml(sources)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0">')
    assert is_opml(text)
    assert parse_opml(text) == sources


def test_export_keeps_categories_so_import_reads_the_same_topics() -> None:
    sources = [
        Feed("Loose", "https://loose.example/rss", None),
        Feed("Models", "https://models.example/rss", "Tech/AI"),
        Feed("Kernels", "https://kernels.example/rss", "Tech"),
        Feed("More models", "https://more.example/rss", "Tech/AI"),
        Feed("Bread", "https://bread.example/rss", "Food & drink"),
    ]

    assert sorted(parse_opml(export_opml(sources)), key=str) == sorted(sources, key=str)


def test_export_of_no_sources_is_still_valid_opml() -> None:
    assert parse_opml(export_opml([])) == []


def test_a_category_attribute_names_the_folder_of_a_feed_outside_any() -> None:
    text = (
        '<opml version="2.0"><body>'
        '<outline text="A" xmlUrl="https://a.example/rss" category="/Tech/AI,/Other"/>'
        '<outline text="B" xmlUrl="https://b.example/rss" category="Food"/>'
        "</body></opml>"
    )

    assert [feed.category for feed in parse_opml(text)] == ["Tech/AI", "Food"]


_WORD = (
    st.text(
        st.characters(min_codepoint=0x20, max_codepoint=0xD7FF, exclude_characters="/,"),
        min_size=1,
        max_size=12,
    )
    .map(str.strip)
    .filter(bool)
)
_FEEDS = st.lists(
    st.builds(
        Feed,
        name=_WORD,
        url=st.sampled_from(["https://a.example/rss", "https://b.example/feed?x=1&y=2"]),
        category=st.none() | st.lists(_WORD, min_size=1, max_size=3).map("/".join),
        html_url=st.none() | st.just("https://a.example/"),
    ),
    max_size=6,
)


@given(_FEEDS)
def test_any_export_reads_back_as_the_same_feeds(feeds: list[Feed]) -> None:
    assert sorted(parse_opml(export_opml(feeds)), key=repr) == sorted(feeds, key=repr)
