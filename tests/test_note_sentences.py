"""Offline notes made of whole prose sentences: file names, a quote closing a question and a
numbered clause stay inside their sentence; list lines never join a note with their markers;
no note is only its title (fixtures in the shapes of saved social-media posts)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from digest.collect.importers.common import urls_in, web_links
from digest.compose.digest import compose
from digest.config import LLMConfig
from digest.models import Item, ItemKind, NoteBasis, WeekSummary
from digest.notes.base import NoteRequest
from digest.notes.offline import OfflineSummarizer, segment
from digest.periods import parse_week
from digest.text import is_list_line, list_item
from weekitems import week_item

ZONE = ZoneInfo("UTC")
PERIOD = parse_week("2026-W47", ZONE)
START = datetime(2026, 11, 16, tzinfo=UTC)

WIKI_POST = (
    "I keep my research notes as a wiki, which is just a collection of .md files in a folder."
    " To turn web pages into .md files I use a clipper, and a script in build.py links them."
    " The index lives in notes.txt and nothing else."
)
NARRATIVE_POST = (
    "People said nobody could catch up with the big labs. I heard it when the lab started"
    ' ("how could a dozen people possibly compete with the giants?") and 1) it was wrong,'
    " and then 2) it was wrong again with a new round of startups. Progress is far from over."
)
LIST_POST = "\n".join(
    [
        "We built a course on writing a tokenizer from nothing, step by step.",
        "By the end you will have a tokenizer that matches the reference on every test file.",
        "The course covers:",
        "-Byte pair merges",
        "-Unicode normalisation",
        "> Speculative decoding vs. quantization tradeoffs",
        "🔹 Llama 3.2 (1B)",
        "🔹 Qwen3 (4B, 8B)",
        "3. The merge table replaces the vocabulary file entirely.",
        "It will be free for everyone during the first two weeks of the course.",
        "Links ↓",
        "More details in the report 👉",
    ]
)
SHORT_LIST_POST = "\n".join(
    [
        "Read this to get started with training systems.",
        "This is a compact overview of what matters when training models. It touches on:",
        "- hardware",
        "- memory",
        "- the experiment loop",
        "Links ↓",
    ]
)


def note_of(text: str, title: str | None = None, basis: NoteBasis = NoteBasis.FULL_TEXT) -> str:
    request = NoteRequest(item_id=1, title=title, text=text, url=None, basis=basis)
    return OfflineSummarizer(LLMConfig()).note_now(request).summary


def post(text: str) -> Item:
    """A post as the importer saves it and the offline summariser notes it."""
    title = text.splitlines()[0][:100]
    request = NoteRequest(item_id=1, title=title, text=text, url=None, basis=NoteBasis.FULL_TEXT)
    note = OfflineSummarizer(LLMConfig()).note_now(request)
    links = web_links(urls_in(text))
    return week_item(
        1, START, url=None, title=title, kind=ItemKind.POST, context=text, links=links, note=note
    )


def test_file_names_stay_inside_their_sentence() -> None:
    found = segment(WIKI_POST)
    assert len(found) == 3
    assert found[0].endswith("a collection of .md files in a folder.")
    assert "into .md files" in found[1] and "build.py" in found[1]
    assert "notes.txt" in found[2]


def test_a_quote_closing_a_question_and_numbered_clauses_stay_inside_their_sentence() -> None:
    found = segment(NARRATIVE_POST)
    assert len(found) == 3
    assert '("how could a dozen people possibly compete with the giants?") and 1) it' in found[1]
    assert found[1].endswith("with a new round of startups.")


def test_a_closing_bracket_after_an_exclamation_goes_with_its_sentence() -> None:
    assert segment("Read the paper (it is short!) and try it. Then tell me.") == [
        "Read the paper (it is short!) and try it.",
        "Then tell me.",
    ]


@given(
    st.lists(
        st.sampled_from(["Go", "now", ".md", "a.py", "(yes?)", "1)", "it.", '"why?"']), max_size=30
    )
)
def test_segmenting_keeps_every_word_in_order(tokens: list[str]) -> None:
    text = " ".join(tokens)
    assert " ".join(segment(text)).split() == text.split()


TRICKY_TOKENS = 'Go now.|Go|now.|Mr.|Smith|U.S.|e.g.|3.5|it!|"why?"|(yes)|…|\u00a0|a.|I|No.|Dr.'
NEVER_LAST = ("Mr.", "Dr.", "e.g.", "3.5")  # a title, an abbreviation, a decimal end no sentence


@given(st.lists(st.sampled_from(TRICKY_TOKENS.split("|") + ["Go now.", "  "]), max_size=40))
def test_sentences_keep_every_word_and_end_at_no_title_abbreviation_or_decimal(
    tokens: list[str],
) -> None:
    paragraph = " ".join(tokens)
    found = segment(paragraph)
    assert " ".join(found).split() == paragraph.split()
    assert not any(sentence.endswith(NEVER_LAST) for sentence in found[:-1])


def test_a_note_leaves_out_list_lines_their_markers_and_their_lead_in() -> None:
    note = note_of(LIST_POST, title=LIST_POST.splitlines()[0])
    assert note
    for fragment in ("-Byte", "Byte pair", ">", "🔹", "Llama", "3.", "Links", "👉", "covers:"):
        assert fragment not in note, fragment
    assert "By the end you will have a tokenizer" in note


def test_a_short_post_shows_its_list_as_a_list_without_markers_or_trailer() -> None:
    markdown = compose(PERIOD, [post(SHORT_LIST_POST)], WeekSummary(()), zone=ZONE)
    assert "training models.\n\n  - hardware\n  - memory\n  - the experiment loop\n" in markdown
    assert "It touches on" not in markdown  # the line that opens the list, shown as a list
    assert "- hardware - memory" not in markdown and "Links" not in markdown


def test_list_lines_are_told_from_prose() -> None:
    listed = ["-x y", "> Latency tradeoffs", "🔹 Qwen3 (4B)", "2) Don't", "Links ↓", "▪️ Why"]
    prose = ["Plain text.", "1.5B models are here", "🚀 We launched it today.", "Go → stop."]
    assert all(map(is_list_line, listed))
    assert not any(map(is_list_line, prose))
    assert [list_item(line) for line in listed] == [
        "x y",
        "Latency tradeoffs",
        "Qwen3 (4B)",
        "Don't",
        "",
        "Why",
    ]


def test_a_note_is_never_only_its_title_nor_opens_with_it() -> None:
    saved = NoteBasis.SAVED_CONTEXT
    assert note_of("LMSys", title="LMSys", basis=saved) == ""
    assert note_of("DSA.", title="DSA", basis=saved) == ""
    assert note_of("FlashInfer - Better Sampling", title="FlashInfer", basis=saved) == (
        "Better Sampling."
    )
    assert note_of("FlashInference is fast", title="FlashInfer", basis=saved) == (
        "FlashInference is fast."
    )


def test_a_post_with_no_prose_beyond_its_title_keeps_its_list_short() -> None:
    text = "As a data engineer. Please learn\n" + "\n".join(
        f">Topic number {n}: joins, indexes and plans" for n in range(1, 9)
    )
    title = "As a data engineer. Please learn"
    request = NoteRequest(item_id=1, title=title, text=text, url=None, basis=NoteBasis.FULL_TEXT)
    note = OfflineSummarizer(LLMConfig()).note_now(request)
    assert note.key_points == tuple(
        f"Topic number {n}: joins, indexes and plans" for n in range(1, 6)
    )
