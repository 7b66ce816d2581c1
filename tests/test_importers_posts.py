from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.collect.importers.posts import PostsImporter
from digest.models import ItemKind
from importing import find_importer, import_file

FIXTURE = Path(__file__).parent / "fixtures" / "posts" / "pasted.txt"
UTC = ZoneInfo("UTC")
POSTS = PostsImporter()


def titles(text: str) -> list[str | None]:
    return [item.title for item in POSTS.parse(text, zone=UTC).items]


def test_pasted_file_splits_into_one_item_per_post() -> None:
    assert titles(FIXTURE.read_text()) == [
        "Start here if you want to understand how databases store data on disk.",
        "5 free books on compilers",
        "We just shipped a tutorial that builds a key-value store in Rust, step by step.",
        "A DEVELOPER SHOWED THAT YOUR RETRY LOOP IS THE REAL CAUSE OF THE OUTAGE",
        "Day 12/100 of learning Zig",
        "someone stored a whole file inside public DNS caches",
        "Kernel Bypass Networking",
    ]


def test_every_line_belongs_to_exactly_one_post() -> None:
    text = FIXTURE.read_text()
    items = POSTS.parse(text, zone=UTC).items
    joined = "\n".join(item.context or "" for item in items)
    assert joined.splitlines() == [line.strip() for line in text.splitlines() if line.strip()]


def test_post_is_kept_as_post_keyed_by_text_with_its_links() -> None:
    first = POSTS.parse(FIXTURE.read_text(), zone=UTC).items[0]
    assert first.kind is ItemKind.POST
    assert first.url is None
    assert first.line == 1
    assert first.links == ("https://t.co/Db1Course0",)
    assert first.context is not None and "- B+ trees" in first.context


def test_numbered_link_list_stays_in_one_post() -> None:
    books = POSTS.parse(FIXTURE.read_text(), zone=UTC).items[1]
    assert books.links == (
        "https://t.co/Crafting01",
        "https://t.co/EaCSlides1",
        "https://t.co/SsaBook002",
    )


def test_closing_arrow_line_ends_its_post() -> None:
    shipped = POSTS.parse(FIXTURE.read_text(), zone=UTC).items[2]
    assert shipped.context is not None and shipped.context.endswith("Links ↓")


def test_lower_case_writer_goes_on_after_a_link() -> None:
    dns = POSTS.parse(FIXTURE.read_text(), zone=UTC).items[5]
    assert dns.context is not None and dns.context.endswith("keep asking for it.")
    assert dns.links == ("https://t.co/DnsStore01",)


def test_capitalised_line_after_a_link_starts_a_new_post() -> None:
    assert titles(
        "Read this paper.\nhttps://t.co/abc123\nThen read this one too, it is better."
    ) == [
        "Read this paper.",
        "Then read this one too, it is better.",
    ]


def test_blank_lines_and_rules_separate_posts() -> None:
    text = "first post about caching\nstill the first\n\nsecond post\n---\nthird post"
    assert titles(text) == ["first post about caching", "second post", "third post"]


def test_post_without_a_link_is_kept_with_its_text() -> None:
    item = POSTS.parse("Tips for reading papers:\n1) read the figures first\n", zone=UTC).items[0]
    assert item.links == ()
    assert item.context == "Tips for reading papers:\n1) read the figures first"


def test_long_first_line_is_trimmed_for_the_title() -> None:
    line = "word " * 60
    item = POSTS.parse(line, zone=UTC).items[0]
    assert item.title is not None and len(item.title) <= 101 and item.title.endswith("…")
    assert item.context == line.strip()


def test_empty_text_gives_no_posts_and_no_rejections() -> None:
    result = POSTS.parse("\n\n  \n", zone=UTC)
    assert result.items == [] and result.rejected == [] and result.skipped == []


def test_pasted_posts_are_recognised_by_content() -> None:
    assert find_importer(FIXTURE.read_text()).name == "posts"


@pytest.mark.parametrize(
    "text",
    [
        "## 2025-01-01\n- [a](https://a.example)\n- [b](https://b.example)\n",
        '{"a": 1, "b": 2, "c": 3}\n' * 3,
        "title,url,time_added\nx,https://x.example,1\ny,https://y.example,2\n",
    ],
)
def test_structured_text_is_not_taken_for_posts(text: str) -> None:
    assert POSTS.sniff(text) == 0


MERGED = Path(__file__).parent / "fixtures" / "posts" / "merged_openers.txt"


def test_openers_after_an_ended_post_start_new_posts() -> None:
    assert titles(MERGED.read_text()) == [
        "Day 5 of Tracing From Scratch we compare spans, traces & logs",
        "“never roll your own queue” is common backend advice. it's wrong. your pager proves it.",
        "How caches, lines, and prefetchers behave on a real CPU.",
        "A researcher at Acme just shared how they actually profile Quill 3 every day.",
        "We just released a course that walks you through a B-tree in Go, page by page.",
        "'Storage Engines: A Field Guide' just cited my compaction notes in its chapter on LSM trees.",
        "I don't get why so many people want to move abroad for work.",
        "Day 6 of Tracing From Scratch: sampling tips",
        "Zig 0.14 release notes just dropped!",
        "a developer noticed something about printer queues",
        "New side project.",
        "firewalls can't stop this.",
    ]


def test_splitting_merged_openers_loses_no_line() -> None:
    text = MERGED.read_text()
    joined = "\n".join(item.context or "" for item in POSTS.parse(text, zone=UTC).items)
    assert joined.splitlines() == [line.strip() for line in text.splitlines() if line.strip()]


SERIES = Path(__file__).parent / "fixtures" / "posts" / "series_and_terms.txt"


def test_post_after_a_series_post_and_after_a_summary_line_are_their_own() -> None:
    # The two merges users met: a post introducing a term after a "Day N/M" post, and a
    # post after one that ends with its TL;DR.
    assert titles(SERIES.read_text()) == [
        "Day 41/100 of Compiler Engineering",
        "Speculative Decoding Trees (SDTs) have been discussed a lot lately, especially next to ideas like…",
        "Personal Research Wikis",
        "Ada Lovelace is one of the most cited figures in computing history. Period.",
        "New weekend project.",
    ]


def test_series_and_terms_split_loses_no_line_and_keeps_links_with_their_post() -> None:
    text = SERIES.read_text()
    items = POSTS.parse(text, zone=UTC).items
    joined = "\n".join(item.context or "" for item in items)
    assert joined.splitlines() == [line.strip() for line in text.splitlines() if line.strip()]
    assert [item.links for item in items] == [(), (), (), (), ("https://t.co/VmWeekend1",)]
    assert items[3].context is not None and items[3].context.endswith("this is a must-bookmark.")


def test_a_guessed_boundary_is_reported_with_its_line() -> None:
    result = POSTS.parse(SERIES.read_text(), zone=UTC)
    assert [(n.line, n.reason.split(":")[0]) for n in result.notices] == [
        (5, "post boundary guessed (term defined)")
    ]


def test_import_report_counts_posts_apart_from_notes_without_url(tmp_path: Path) -> None:
    from datetime import UTC as utc
    from datetime import datetime

    from digest.collect.files import describe
    from digest.store import open_store

    path = tmp_path / "posts.txt"
    path.write_text(SERIES.read_text())
    store = open_store(tmp_path / "digest.db")
    now = datetime(2026, 1, 5, tzinfo=utc)
    report = import_file(
        store, path, source_id=store.ensure_source("import", "import"), zone=UTC, now=now
    )
    store.close()
    assert describe(report)[0] == (
        f"{path}: format posts: 5 new, 0 duplicates, 5 posts, 0 notes without URL,"
        " 0 lines not understood"
    )
    assert describe(report)[1] == "  post boundary guessed (term defined) at line 5"
