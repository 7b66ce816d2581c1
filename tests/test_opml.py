from __future__ import annotations

from pathlib import Path

import pytest

from digest.collect.importers.opml import export_opml, is_opml, parse_opml
from digest.errors import ImportFormatError

FIXTURE = Path(__file__).parent / "fixtures" / "exports" / "feeds.opml"


def test_nested_outlines_become_categories() -> None:
    assert parse_opml(FIXTURE.read_text()) == [
        ("vLLM blog", "https://blog.vllm.ai/feed.xml", "Tech/AI"),
        ("LWN", "https://lwn.net/headlines/rss", "Tech"),
        ("Simon Willison & friends", "https://simonwillison.net/atom/everything/", None),
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
    sources: list[tuple[str, str, str | None]] = [
        ('Tom & Jerry\'s "feed" <best>', "https://example.org/feed?a=1&b=2", None),
        ("Plain", "https://plain.example/rss", None),
    ]
    text = export_opml(sources)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0">')
    assert is_opml(text)
    assert parse_opml(text) == sources


def test_export_keeps_categories_so_import_reads_the_same_topics() -> None:
    sources: list[tuple[str, str, str | None]] = [
        ("Loose", "https://loose.example/rss", None),
        ("Models", "https://models.example/rss", "Tech/AI"),
        ("Kernels", "https://kernels.example/rss", "Tech"),
        ("More models", "https://more.example/rss", "Tech/AI"),
        ("Bread", "https://bread.example/rss", "Food & drink"),
    ]

    assert sorted(parse_opml(export_opml(sources)), key=str) == sorted(sources, key=str)


def test_export_of_no_sources_is_still_valid_opml() -> None:
    assert parse_opml(export_opml([])) == []
