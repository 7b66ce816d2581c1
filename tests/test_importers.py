"""The file importers: journal, list, urls and bookmarks, on fixtures shaped like real files."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.collect.files import describe
from digest.collect.formats import ImportResult
from digest.collect.importers import supported_formats
from digest.errors import ImportFormatError
from digest.models import ItemKind, SavedItem
from digest.store import Store
from importing import find_importer, import_file
from stores import store_at

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
ZONE = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 1, 12, 9, 0, tzinfo=UTC)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def parse(name: str, forced: str | None = None, text: str | None = None) -> ImportResult:
    content = fixture(name) if text is None else text
    return find_importer(content, forced).parse(content, zone=ZONE)


def line_of(name: str, fragment: str) -> int:
    lines = fixture(name).split("\n")
    return next(i for i, line in enumerate(lines, start=1) if fragment in line)


def exact_line(name: str, text: str) -> int:
    return fixture(name).split("\n").index(text) + 1


def by_url(result: ImportResult, url: str) -> list[SavedItem]:
    return [item for item in result.items if item.url == url]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = store_at(tmp_path / "digest.db")
    yield opened
    opened.close()


# -- journal ---------------------------------------------------------------------


def test_journal_items_are_dated_by_their_day_heading_at_local_midnight() -> None:
    result = parse("til.md")
    (item,) = by_url(result, "https://www.youtube.com/watch?v=3jJ1GhGkLY0")
    assert item.saved_at == datetime(2026, 1, 9, tzinfo=ZONE)
    assert item.title == "Creating our Own Kubernetes & Docker | Modal"


def test_journal_front_matter_is_not_imported() -> None:
    result = parse("til.md")
    texts = [item.context or item.title or "" for item in result.items]
    assert not any("Today I Learned" in text or "summary:" in text for text in texts)
    assert all(item.line and item.line > 5 for item in result.items)


def test_journal_unpadded_date_heading_is_understood() -> None:
    (item,) = by_url(parse("til.md"), "https://github.com/srush/Tensor-Puzzles")
    assert item.saved_at == datetime(2025, 11, 7, tzinfo=ZONE)


def test_journal_subheading_gives_the_topic_until_the_next_day() -> None:
    result = parse("til.md")
    (worry,) = by_url(result, "https://worrydream.com/")
    assert worry.topic == "Media for Thinking the Unthinkable"
    (first_of_day,) = by_url(result, "https://yingru.notion.site/When-Speed-Kills-Stability")
    assert first_of_day.topic is None
    (after_blank,) = by_url(result, "https://github.com/srush/Tensor-Puzzles")
    assert after_blank.topic == "Numpy/Pandas/Python internals"


def test_journal_link_title_spanning_two_lines_is_joined() -> None:
    (item,) = by_url(parse("til.md"), "https://arxiv.org/pdf/2507.04786")
    assert item.title == (
        "Demystifying NCCL: An In-depth Analysis of GPU Communication Protocols and Algorithms"
    )
    assert item.line == line_of("til.md", "[Demystifying NCCL")


def test_a_journal_heading_with_an_open_bracket_does_not_swallow_the_next_link() -> None:
    text = "# Notes [draft\n- [Paged attention](https://example.org/paged)\n"
    result = parse("til.md", forced="journal", text=text)
    assert [(item.url, item.topic, item.line) for item in result.items] == [
        ("https://example.org/paged", "Notes [draft", 2)
    ]


def test_journal_bare_url_and_dash_url_lines_are_links_without_title() -> None:
    result = parse("til.md")
    (dashed,) = by_url(result, "https://yingru.notion.site/When-Speed-Kills-Stability")
    (bare,) = by_url(result, "http://joschu.net/blog/kl-approx.html")
    assert dashed.title is None and bare.title is None
    assert bare.saved_at == dashed.saved_at == datetime(2025, 10, 27, tzinfo=ZONE)


def test_journal_text_without_url_becomes_a_note_with_its_topic() -> None:
    notes = [item for item in parse("til.md").items if item.url is None]
    assert [(n.kind, n.context, n.topic) for n in notes] == [
        (ItemKind.NOTE, "DST Book", "Media for Thinking the Unthinkable")
    ]
    assert notes[0].saved_at == datetime(2025, 11, 12, tzinfo=ZONE)


def test_journal_malformed_urls_are_rejected_with_their_line_numbers() -> None:
    rejected = {(r.line, r.reason) for r in parse("til.md").rejected}
    assert rejected == {
        (line_of("til.md", "htp//bad"), "not an absolute URL"),
        (exact_line("til.md", "http://"), "URL has no host"),
    }


def test_journal_items_before_any_day_heading_are_undated() -> None:
    text = "# Links\n- [Early](https://example.org/early)\n\n## 2025-11-03\n- https://example.org/later\n"
    result = parse("", forced="journal", text=text)
    assert [item.saved_at for item in result.items] == [None, datetime(2025, 11, 3, tzinfo=ZONE)]


def test_journal_repeated_links_are_all_emitted() -> None:
    urls = [item.url for item in parse("til.md").items]
    assert urls.count("https://tomasz.janczuk.org/2018/03/serverless.html") == 2
    assert urls.count("https://gwern.net/scaling-hypothesis") == 2


def test_journal_link_saved_twice_keeps_its_earliest_date_in_the_store(store: Store) -> None:
    report = import_file(
        store, FIXTURES / "til.md", source_id=store.ensure_source("t", "import"), zone=ZONE, now=NOW
    )
    assert report.format == "journal"
    (item,) = [i for i in store.all_items() if i.url == "https://gwern.net/scaling-hypothesis"]
    assert item.saved_at == datetime(2025, 11, 7, tzinfo=ZONE)


def test_arxiv_abs_and_pdf_of_one_paper_are_one_item_in_the_store(store: Store) -> None:
    import_file(
        store, FIXTURES / "til.md", source_id=store.ensure_source("t", "import"), zone=ZONE, now=NOW
    )
    papers = [item for item in store.all_items() if item.key == "https://arxiv.org/abs/2001.00888"]
    assert len(papers) == 1
    assert papers[0].saved_at == datetime(2025, 11, 7, tzinfo=ZONE)


def test_journal_import_counts_new_duplicates_notes_and_rejections(store: Store) -> None:
    report = import_file(
        store, FIXTURES / "til.md", source_id=store.ensure_source("t", "import"), zone=ZONE, now=NOW
    )
    assert (report.new, report.duplicates, report.notes, len(report.rejected)) == (11, 3, 1, 2)
    assert describe(report)[0] == (
        f"{FIXTURES / 'til.md'}: format journal: 11 new, 3 duplicates, 1 note without URL,"
        " 2 lines not understood"
    )
    assert describe(report)[1].startswith(f"  line {line_of('til.md', 'htp//bad')}: ")


# -- list ------------------------------------------------------------------------


def test_list_entries_without_url_are_notes_under_their_topic_line() -> None:
    result = parse("learning_list.txt")
    first = result.items[0]
    assert (first.kind, first.url, first.title, first.context, first.topic, first.saved_at) == (
        ItemKind.NOTE,
        None,
        "Static Polymorphism",
        "Static Polymorphism",
        "C++",
        None,
    )
    topics = {item.title: item.topic for item in result.items}
    assert topics["LMSys"] == "Inference Engine blogs"
    assert topics["Attention Sinks"] == "SpecDec"


def test_list_entry_with_a_dash_comment_is_titled_by_its_first_part() -> None:
    result = parse("learning_list.txt")
    (entry,) = [i for i in result.items if (i.title or "").startswith("Acquire")]
    assert entry.title == "Acquire / Release Semantics and Memory Ordering"
    assert entry.context is not None and entry.context.endswith("acquire-release semantics are.")


def test_list_long_prose_lines_after_a_short_entry_attach_to_it_as_comments() -> None:
    result = parse("learning_list.txt")
    (entry,) = [i for i in result.items if i.title == "Zero Redundancy DP"]
    assert entry.context is not None
    lines = entry.context.split("\n")
    assert lines[0] == "Zero Redundancy DP"
    assert lines[1].startswith("A nice new way of thinking")
    assert lines[2].startswith("Flow: on first generation")
    assert not any(
        (i.context or "").startswith("A nice new way") for i in result.items[1:] if i is not entry
    )


def test_list_entry_with_url_is_a_link_titled_by_its_text() -> None:
    result = parse("learning_list.txt")
    (link,) = [i for i in result.items if i.url == "https://example.org/flash-attention"]
    assert (link.kind, link.title, link.topic) == (
        ItemKind.LINK,
        "Flash attention walkthrough",
        "Stuff that still needs to be read",
    )
    (bare,) = [
        i for i in result.items if i.url == "https://accelerated-computing.academy/fall25/lectures/"
    ]
    assert bare.title is None


def test_list_title_and_description_lines_are_reported_as_skipped_not_dropped() -> None:
    result = parse("learning_list.txt")
    skipped = {r.text for r in result.skipped}
    assert "Learning list" in skipped
    assert any(text.startswith("These are blogs") for text in skipped)
    assert "General Paper List:" in skipped
    understood = len(result.items) + len(result.skipped)
    comments = 2
    topics = 4
    assert understood + comments + topics == len(fixture("learning_list.txt").splitlines())


# -- urls ------------------------------------------------------------------------


def test_url_list_keeps_urls_ignores_comments_and_rejects_other_lines() -> None:
    result = parse("reading.urls")
    assert [(i.url, i.title) for i in result.items] == [
        ("https://blog.ezyang.com/2019/05/pytorch-internals/", None),
        ("https://www.jmeiners.com/think-in-math/", "Think in math"),
    ]
    assert [(r.line, r.reason) for r in result.rejected] == [
        (line_of("reading.urls", "not a url"), "not a URL"),
        (exact_line("reading.urls", "http://"), "URL has no host"),
    ]


# -- bookmarks -------------------------------------------------------------------


def test_chrome_bookmarks_take_the_innermost_folder_as_topic() -> None:
    result = parse("chrome_bookmarks.html")
    topics = {item.url: item.topic for item in result.items}
    assert topics == {
        "https://blog.vllm.ai/2025/10/28/Kimi-K2-Accuracy.html": None,  # the bar is no topic
        "https://modal.com/blog/reverse-engineer-flash-attention-4": "GPU",
        "https://www.thonking.ai/p/strangely-matrix-multiplications": None,
    }


def test_bookmark_titles_are_html_unescaped() -> None:
    titles = [item.title for item in parse("chrome_bookmarks.html").items]
    assert titles[:2] == [
        "Kimi K2 & vLLM: debugging tool calls",
        "Flash Attention 4 — reverse engineered",
    ]


def test_bookmark_add_date_in_seconds_or_microseconds_gives_the_same_moment() -> None:
    result = parse("firefox_bookmarks.html")
    (pin,) = by_url(result, "https://fasterthanli.me/articles/pin-and-suffering")  # microseconds
    (gwern,) = by_url(result, "https://gwern.net/scaling-hypothesis")  # seconds
    assert pin.saved_at == gwern.saved_at == datetime(2024, 11, 12, tzinfo=UTC)


def test_a_bookmark_with_a_bad_add_date_is_kept_undated_and_reported() -> None:
    text = (
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n"
        '<DT><A HREF="https://example.org/kept" ADD_DATE="soon">Kept</A>\n</DL><p>\n'
    )

    result = find_importer(text).parse(text, zone=ZONE)

    (item,) = result.items
    (problem,) = result.rejected
    assert (item.url, item.saved_at) == ("https://example.org/kept", None)
    assert (problem.line, problem.reason) == (3, "bad ADD_DATE 'soon'; item kept, undated")


def test_firefox_nested_folders_tags_and_descriptions() -> None:
    result = parse("firefox_bookmarks.html")
    (pin,) = by_url(result, "https://fasterthanli.me/articles/pin-and-suffering")
    (gwern,) = by_url(result, "https://gwern.net/scaling-hypothesis")
    (slow,) = by_url(result, "https://jakevdp.github.io/blog/2014/05/09/why-python-is-slow/")
    assert (pin.topic, pin.context) == ("Rust", "Why async Rust needs Pin <3")
    assert (gwern.topic, gwern.context) == ("Reading", None)  # the Rust folder has closed
    assert slow.topic == "python"  # toolbar is no topic: the first tag is


def test_non_web_bookmarks_are_skipped_and_counted(store: Store) -> None:
    chrome = parse("chrome_bookmarks.html")
    firefox = parse("firefox_bookmarks.html")
    assert [(r.text, r.reason.split(":")[0]) for r in chrome.skipped] == [
        ("Bookmarklet", "not a web link (javascript"),
        ("Settings", "not a web link (chrome"),
    ]
    assert firefox.skipped[0].line == line_of("firefox_bookmarks.html", "place:")
    report = import_file(
        store,
        FIXTURES / "chrome_bookmarks.html",
        source_id=store.ensure_source("t", "import"),
        zone=ZONE,
        now=NOW,
    )
    assert (report.new, len(report.skipped)) == (3, 2)
    assert "2 skipped" in describe(report)[0]


# -- sniffing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("til.md", "journal"),
        ("til_older.md", "journal"),
        ("learning_list.txt", "list"),
        ("reading.urls", "urls"),
        ("chrome_bookmarks.html", "bookmarks"),
        ("firefox_bookmarks.html", "bookmarks"),
    ],
)
def test_sniffing_picks_the_format_from_the_content(name: str, expected: str) -> None:
    assert find_importer(fixture(name)).name == expected


def test_unknown_format_error_names_the_file_and_lists_the_supported_formats(
    store: Store, tmp_path: Path
) -> None:
    odd = tmp_path / "odd.dat"
    odd.write_text("hello\nworld\n")
    with pytest.raises(ImportFormatError) as raised:
        import_file(store, odd, source_id=store.ensure_source("t", "import"), zone=ZONE, now=NOW)
    message = str(raised.value)
    assert str(odd) in message and "\n" not in message
    assert all(name in message for name in ("journal", "list", "urls", "bookmarks"))
    assert set(supported_formats()) >= {"journal", "list", "urls", "bookmarks"}


def test_forcing_an_unknown_format_lists_the_supported_ones() -> None:
    with pytest.raises(ImportFormatError, match="supported: .*journal"):
        find_importer("https://example.org\n", "pocket-xml")


TITLED_ENTRIES = """\
Serving notes
- SGLang - Faster Decoding
- Tile Kernels - a clear walk through tiling with good pictures
- PagedAttention - The authors pair the paper with a short visual guide
- The eviction section is interesting
"""


def test_a_capitalised_rest_after_a_dash_stays_in_the_title() -> None:
    result = parse("list.txt", forced="list", text=TITLED_ENTRIES)
    titles = [item.title for item in result.items]
    assert titles == ["SGLang - Faster Decoding", "Tile Kernels", "PagedAttention"]


def test_a_remark_joins_its_entry_as_a_sentence_of_its_own() -> None:
    result = parse("list.txt", forced="list", text=TITLED_ENTRIES)
    assert result.items[-1].context == (
        "PagedAttention - The authors pair the paper with a short visual guide.\n"
        "The eviction section is interesting"
    )
