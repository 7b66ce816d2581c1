"""The composer: golden files and the digest's promises (every item once, valid links, topics).

Golden files live in tests/golden/<case>/: items.json (period, time zone, week summary and
items) and expected.md, compared byte for byte. To regenerate after an intended change:

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_compose.py

then read the diff of expected.md before committing it.
"""

from __future__ import annotations

import json
import os
import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from markdown_it import MarkdownIt

from digest.compose.digest import EMPTY_WEEK, compose, digest_context, reader_view
from digest.compose.entries import SAVED_CONTEXT_MARKER
from digest.compose.footer import Provenance
from digest.deliver.channel import content_hash
from digest.errors import FailureKind
from digest.models import (
    Item,
    ItemKind,
    ItemState,
    ModelUsage,
    Note,
    NoteBasis,
    Statement,
    Usage,
    WeekSummary,
)
from digest.periods import parse_week
from digest.unfetched import pretend_note

GOLDEN = Path(__file__).parent / "golden"
ZONE = ZoneInfo("Europe/Berlin")
PERIOD = parse_week("2026-W47", ZONE)
NO_SUMMARY = WeekSummary(())


def make_item(
    id: int,
    url: str | None,
    title: str | None = None,
    *,
    topic: str | None = None,
    note: Note | None = None,
    kind: ItemKind = ItemKind.LINK,
    context: str | None = None,
    state: ItemState = ItemState.NOTED,
    saved_at: datetime | None = None,
    error: str | None = None,
    next_attempt_at: datetime | None = None,
    error_kind: FailureKind | None = None,
    error_status: int | None = None,
) -> Item:
    return Item(
        id=id,
        key=url or f"note:{id}",
        url=url,
        title=title,
        kind=kind,
        saved_at=saved_at or PERIOD.start + timedelta(hours=id),
        topic=topic,
        context=context,
        state=state,
        attempts=0,
        error=error,
        error_kind=error_kind,
        error_status=error_status,
        next_attempt_at=next_attempt_at,
        text=None,
        note=note,
    )


def load_case(folder: Path) -> tuple[str, list[Item], WeekSummary, ZoneInfo]:
    data = json.loads((folder / "items.json").read_text(encoding="utf-8"))
    zone = ZoneInfo(data["timezone"])
    summary = data["week_summary"]
    week_summary = WeekSummary(
        tuple(Statement(text, tuple(cites)) for text, cites in summary["statements"]),
        tuple(summary["must_read"]),
    )
    return data["period"], [_item(raw) for raw in data["items"]], week_summary, zone


def _item(raw: dict[str, Any]) -> Item:
    note = raw.get("note")
    return make_item(
        raw["id"],
        raw.get("url"),
        raw.get("title"),
        topic=raw.get("topic"),
        kind=ItemKind(raw.get("kind", "link")),
        context=raw.get("context"),
        state=ItemState(raw.get("state", "noted")),
        saved_at=datetime.fromisoformat(raw["saved_at"]),
        error=raw.get("error"),
        error_kind=FailureKind(raw["error_kind"]) if raw.get("error_kind") else None,
        error_status=raw.get("error_status"),
        next_attempt_at=datetime.fromisoformat(raw["next_attempt_at"])
        if raw.get("next_attempt_at")
        else None,
        note=None
        if note is None
        else Note(
            summary=note["summary"],
            key_points=tuple(note.get("key_points", ())),
            tags=tuple(note.get("tags", ())),
            basis=NoteBasis(note.get("basis", "full text")),
        ),
    )


def links(markdown: str) -> list[tuple[str, str]]:
    """(text, href) of every link a CommonMark renderer finds."""
    html = MarkdownIt("commonmark").render(markdown)
    return [(text, href) for href, text in re.findall(r'<a href="([^"]*)">(.*?)</a>', html)]


def sections(markdown: str) -> list[tuple[str, str]]:
    """(heading, body) of each topic section, the body without its surrounding blank lines."""
    parts = re.split(r"^## (.+)\n", markdown, flags=re.M)[3:]  # after the week's summary
    return [
        (name, body.strip("\n") + "\n") for name, body in zip(parts[::2], parts[1::2], strict=True)
    ]


def entry(title: str, url: str, *blocks: str, site: str | None = None) -> str:
    """One item as the composer lays it out: the linked title (with the site's name after a
    link whose page was not read), then each block as a paragraph."""
    named = f" · {site}" if site else ""
    return "".join([f"- **[{title}]({url})**{named}\n", *(f"\n  {block}\n" for block in blocks)])


@pytest.mark.parametrize("case", sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()))
def test_output_matches_golden_file(case: str) -> None:
    label, items, week_summary, zone = load_case(GOLDEN / case)
    markdown = compose(parse_week(label, zone), items, week_summary, zone=zone)
    expected = GOLDEN / case / "expected.md"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        expected.write_bytes(markdown.encode("utf-8"))
    assert markdown.encode("utf-8") == expected.read_bytes()


def test_identical_input_in_any_order_gives_identical_bytes() -> None:
    _, items, week_summary, zone = load_case(GOLDEN / "mixed_week")
    first = compose(PERIOD, items, week_summary, zone=zone)
    shuffled = list(items)
    random.Random(7).shuffle(shuffled)
    second = compose(PERIOD, shuffled, week_summary, zone=zone)
    assert first == second
    assert content_hash(first) == content_hash(second)
    assert re.fullmatch(r"[0-9a-f]{64}", content_hash(first))


def test_heading_names_the_period_and_its_days() -> None:
    markdown = compose(PERIOD, [], NO_SUMMARY, zone=ZONE)
    assert markdown.startswith("# Digest for 2026-W47\n\n16–22 November 2026\n")


def test_items_are_grouped_by_topic_then_first_tag_then_other() -> None:
    items = [
        make_item(
            1, "https://a.example/", "A", topic="Rust", note=Note("note a", tags=("python",))
        ),
        make_item(2, "https://b.example/", "B", note=Note("note b", tags=("rust", "db"))),
        make_item(3, "https://c.example/", "C", note=Note("note c")),
        make_item(4, "https://d.example/", "D"),
    ]
    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE)
    assert sections(markdown) == [
        (
            "Rust",
            entry("A", "https://a.example/", "note a")
            + "\n"
            + entry("B", "https://b.example/", "note b"),
        ),
        (
            "Other",
            entry("C", "https://c.example/", "note c")
            + "\n"
            + entry("D", "https://d.example/", "*(page not fetched)*", site="d.example"),
        ),
    ]


def test_topics_are_ordered_by_size_then_name() -> None:
    items = [
        make_item(1, "https://1.example/", topic="zeta"),
        make_item(2, "https://2.example/", topic="alpha"),
        make_item(3, "https://3.example/", topic="mid"),
        make_item(4, "https://4.example/", topic="mid"),
    ]
    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE)
    headings = re.findall(r"^## (.+)$", markdown, flags=re.M)
    assert headings == ["The week", "mid", "alpha", "zeta"]


def test_every_item_appears_exactly_once() -> None:
    items = [
        make_item(i, f"https://site.example/{i}", f"Item {i}", topic=f"t{i % 3}") for i in range(12)
    ]
    markdown = compose(PERIOD, items + items[:4], NO_SUMMARY, zone=ZONE)
    found = links(markdown)
    assert sorted(href for _, href in found) == sorted(item.url or "" for item in items)
    assert len(found) == 12


def test_titles_with_brackets_stay_valid_links() -> None:
    title = "[Show HN] a ]( tricky ) title with `code` and <b>tags</b> *stars*"
    item = make_item(1, "https://example.org/page", title, note=Note("s"))
    markdown = compose(PERIOD, [item], NO_SUMMARY, zone=ZONE)
    [(text, href)] = links(markdown)
    assert href == "https://example.org/page"
    assert text == "[Show HN] a ]( tricky ) title with `code` and &lt;b&gt;tags&lt;/b&gt; *stars*"


def test_urls_with_spaces_and_parentheses_stay_one_link() -> None:
    url = "https://en.example.org/wiki/Foo_(bar) baz<1>"
    markdown = compose(PERIOD, [make_item(1, url, "Foo")], NO_SUMMARY, zone=ZONE)
    assert links(markdown) == [("Foo", "https://en.example.org/wiki/Foo_%28bar%29%20baz%3C1%3E")]


def test_note_without_url_is_shown_as_its_text_without_a_link() -> None:
    item = make_item(
        1, None, kind=ItemKind.NOTE, context="Call Ana about [the] talk", note=Note("A call.")
    )
    markdown = compose(PERIOD, [item], NO_SUMMARY, zone=ZONE)
    assert "- **Call Ana about \\[the\\] talk**\n" in markdown
    assert "A call." not in markdown  # the whole short text is the item line
    assert links(markdown) == []


def test_notes_made_without_the_page_are_marked() -> None:
    items = [
        make_item(1, "https://a.example/", "A", note=Note("From the page.")),
        make_item(
            2, "https://b.example/", "B", note=Note("Guessed.", basis=NoteBasis.SAVED_CONTEXT)
        ),
    ]
    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE)
    assert f"  Guessed. *{SAVED_CONTEXT_MARKER}*\n" in markdown
    assert "  From the page.\n" in markdown


def test_key_points_become_sub_bullets() -> None:
    note = Note("Summary.", key_points=("first", "# not a heading"))
    markdown = compose(
        PERIOD, [make_item(1, "https://a.example/", "A", note=note)], NO_SUMMARY, zone=ZONE
    )
    assert (
        entry("A", "https://a.example/", "Summary.", "- first\n  - \\# not a heading") in markdown
    )
    html = MarkdownIt("commonmark").render(markdown)
    assert "<h1>" not in html.split("</h2>", 2)[-1]


def test_empty_week_says_so() -> None:
    markdown = compose(PERIOD, [], WeekSummary((Statement("Ignored.", (1,)),)), zone=ZONE)
    assert markdown.endswith(f"## The week\n\n{EMPTY_WEEK}\n")
    assert markdown.count("## ") == 1


def test_week_without_summary_still_has_a_sentence() -> None:
    items = [make_item(1, "https://a.example/", "A"), make_item(2, "https://b.example/", "B")]
    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE)
    assert "## The week\n\n2 items saved this week, in 1 topic.\n" in markdown


def test_period_across_a_year_names_both_years() -> None:
    zone = ZoneInfo("UTC")
    markdown = compose(parse_week("2026-W01", zone), [], NO_SUMMARY, zone=zone)
    assert "\n29 December 2025 – 4 January 2026\n" in markdown


def test_output_has_no_volatile_parts() -> None:
    item = make_item(1, "https://a.example/", "A", saved_at=datetime(2026, 11, 17, tzinfo=UTC))
    markdown = compose(PERIOD, [item], NO_SUMMARY, zone=ZONE)
    assert "<!--" not in markdown
    assert not re.search(r"\d{2}:\d{2}", markdown)


# -- what models write: checked, stripped of links, labelled ------------------------------


def test_links_in_a_models_note_are_never_rendered() -> None:
    note = Note(
        "Read [this](https://evil.example/a) or https://evil.example/b now. <img src=x>",
        key_points=("See www.evil.example/c",),
        model="m",
    )
    markdown = compose(
        PERIOD, [make_item(1, "https://a.example/", "A", note=note)], NO_SUMMARY, zone=ZONE
    )
    assert "evil.example" not in markdown
    assert links(markdown) == [("A", "https://a.example/")]
    assert "<img" not in MarkdownIt("commonmark").render(markdown)  # escaped: shown as text


def test_week_summary_citations_link_to_the_cited_items_and_unknown_ids_are_dropped() -> None:
    items = [make_item(1, "https://a.example/", "Alpha"), make_item(2, None, context="A thought")]
    week = WeekSummary(
        (
            Statement("Alpha and a thought connect [1].", (2, 7)),
            Statement("Only an unknown item.", (7,)),
            Statement("Nothing cited.", ()),
        ),
        must_read=(7, 1),
    )
    markdown = compose(PERIOD, items, week, zone=ZONE)
    section = markdown.split("## The week\n\n")[1].split("\n## ")[0]
    assert section.strip() == (
        "- Alpha and a thought connect. (*A thought*, [Alpha](https://a.example/))\n\n"
        "**Must read:** [Alpha](https://a.example/)"
    )


def test_a_week_summary_with_nothing_that_checks_out_falls_back_to_a_count() -> None:
    week = WeekSummary((Statement("Invented.", (99,)),), must_read=(98,))
    markdown = compose(PERIOD, [make_item(1, "https://a.example/", "A")], week, zone=ZONE)
    assert "1 item saved this week, in 1 topic." in markdown


def test_extractive_and_excerpt_notes_are_labelled() -> None:
    items = [
        make_item(1, "https://a.example/", "A", note=Note("S.", prompt_version="extractive-2-s3")),
        make_item(
            2, "https://b.example/", "B", note=Note("S.", basis=NoteBasis.EXCERPT, model="m")
        ),
    ]
    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE)
    assert "S. *(extractive summary)*" in markdown
    assert "S. *(from the central passages of a long page)*" in markdown


def test_the_footer_says_who_wrote_what_at_what_cost_and_what_was_skipped() -> None:
    items = [
        make_item(1, "https://a.example/", "A", note=Note("S.", model="m")),
        make_item(2, "https://b.example/", "B", state=ItemState.NEW),
    ]
    provenance = Provenance(
        notes=(ModelUsage("m", "chat-2:English", 1, Usage(1200, 80, 0.00123)),),
        week=ModelUsage("m", "chat-2:English", 1, Usage(300, 50, 0.0004)),
    )
    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE, provenance=provenance)
    footer = markdown.split("\n---\n\n")[1]
    assert footer == (
        "*Notes: 1 note by m, prompt chat-2:English (1,200 tokens in, 80 out, $0.0012).*\n\n"
        "*Week summary: m, prompt chat-2:English (300 tokens in, 50 out, $0.0004).*\n\n"
        "*LLM total: 1,500 tokens in, 130 out, $0.0016.*\n\n"
        "*2 items: 1 noted, 1 page not fetched.*\n"
    )


def test_a_tag_no_other_item_shares_does_not_name_a_section() -> None:
    items = [
        make_item(1, "https://a.example/", "A", note=Note("note a", tags=("actually", "queues"))),
        make_item(2, "https://b.example/", "B", note=Note("note b", tags=("queues",))),
        make_item(3, "https://c.example/", "C", note=Note("note c", tags=("citizenship",))),
    ]
    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE)
    assert sections(markdown) == [
        (
            "queues",
            entry("A", "https://a.example/", "note a")
            + "\n"
            + entry("B", "https://b.example/", "note b"),
        ),
        ("Other", entry("C", "https://c.example/", "note c")),
    ]
    assert "## actually" not in markdown and "## citizenship" not in markdown


def test_short_note_without_url_is_shown_once_with_only_its_comment() -> None:
    items = [
        make_item(1, None, "LMSys", kind=ItemKind.NOTE, context="LMSys", note=Note("LMSys.")),
        make_item(
            2,
            None,
            "FlashInfer",
            kind=ItemKind.NOTE,
            context="FlashInfer - Better Sampling",
            note=Note("FlashInfer. FlashInfer - Better Sampling."),
        ),
    ]
    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE)
    assert "- **LMSys**\n\n- **FlashInfer**\n\n  Better Sampling\n" in markdown


def offline_stand_in_note(summary: str) -> Note:
    return Note(summary, basis=NoteBasis.SAVED_CONTEXT, prompt_version="extractive-3-s3")


def test_an_unread_link_with_only_its_address_gets_no_pretend_note() -> None:
    url = "https://www.youtube.com/watch?v=33y9FMIvcWY"
    failed: dict[str, Any] = dict(
        state=ItemState.FAILED,
        error=f"fetch failed: '{url}': cannot resolve",
        error_kind=FailureKind.UNRESOLVED,
    )
    items = [
        make_item(1, url, note=offline_stand_in_note("v=33y9FMIvcWY."), context=url, **failed),
        make_item(2, "https://b.example/x", "Bees", note=offline_stand_in_note("Bees."), **failed),
        make_item(
            3,
            "https://c.example/y",
            "Cells",
            context=f"- [Cells](https://c.example/y) a clear tour of membranes\n{url}",
            note=offline_stand_in_note("Cells a clear tour of membranes."),
            **failed,
        ),
    ]

    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE)

    quiet = "*(page not fetched: host unreachable; not tried again)*"
    assert entry("YouTube video", url, quiet) in markdown
    assert entry("Bees", "https://b.example/x", quiet, site="b.example") in markdown
    cells = entry(
        "Cells", "https://c.example/y", f"A clear tour of membranes. {quiet}", site="c.example"
    )
    assert cells in markdown
    assert [pretend_note(item) for item in items] == [True, True, False]


def test_notes_without_a_link_are_notes_in_the_footer_never_pages_not_fetched() -> None:
    items = [
        make_item(
            1,
            None,
            "Static Polymorphism",
            context=LONG_NOTE,
            note=offline_stand_in_note("Templates choose the call at compile time."),
        ),
        make_item(2, "https://b.example/", "B", state=ItemState.NEW),
        make_item(3, None, "DST Book", context="DST Book", state=ItemState.NEW),  # no note
    ]
    provenance = Provenance(notes=(ModelUsage("offline", "extractive-3-s3", 1, Usage()),))

    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE, provenance=provenance)

    footer = markdown.split("\n---\n\n")[1]
    assert footer == (
        "*Notes: 1 extractive summary (offline, no LLM).*\n\n"
        "*3 items: 1 noted, 1 shown as written, 1 page not fetched.*\n"
    )


LONG_NOTE = "Static Polymorphism\n" + "Templates choose the call at compile time. " * 8


def test_the_footer_counts_only_the_notes_it_shows() -> None:
    templates = offline_stand_in_note("Templates choose the call at compile time.")
    items = [  # notes that only named their title ("LMSys."), or that restate a short note
        make_item(1, None, "LMSys", context="LMSys", note=offline_stand_in_note("")),
        make_item(2, None, "DSA", context="DSA", note=offline_stand_in_note("DSA.")),
        make_item(3, None, "Static Polymorphism", context=LONG_NOTE, note=templates),
    ]
    provenance = Provenance(notes=(ModelUsage("offline", "extractive-3-s3", 3, Usage()),))

    markdown = compose(PERIOD, items, NO_SUMMARY, zone=ZONE, provenance=provenance)

    assert "*Notes: 1 extractive summary (offline, no LLM).*" in markdown
    assert "LMSys." not in markdown and "DSA." not in markdown


def test_the_reader_view_ignores_the_footer_and_follows_the_notes() -> None:
    item = make_item(1, "https://a.example/", note=Note("First note."))
    renoted = make_item(1, "https://a.example/", note=Note("Another note."))
    costs = Provenance(notes=(ModelUsage("gpt-4o-mini", "p1", 3, Usage(100, 10, 0.01)),))

    def view(items: list[Item], provenance: Provenance | None) -> str:
        context = digest_context(PERIOD, items, NO_SUMMARY, zone=ZONE, provenance=provenance)
        return reader_view(context)

    assert view([item], None) == view([item], costs)
    assert view([item], None) != view([renoted], None)
