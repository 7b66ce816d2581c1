"""Notes a subscriber can read: a post's title is its first sentence, its note starts at the
next one, a reading list keeps its labelled links, and nothing pretends to be a note."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from digest.collect.importers.common import urls_in, web_links
from digest.compose.digest import compose
from digest.compose.entries import without_lead
from digest.compose.posts import labelled_links
from digest.config import LLMConfig
from digest.models import Item, ItemKind, ItemState, Note, NoteBasis, WeekSummary
from digest.notes.base import NoteRequest
from digest.notes.offline import OfflineSummarizer
from digest.periods import parse_week
from weekitems import week_item

ZONE = ZoneInfo("UTC")
PERIOD = parse_week("2026-W47", ZONE)
START = datetime(2026, 11, 16, tzinfo=UTC)

LONG_OPENING = (
    "We just launched a new project that teaches you how to build a paged attention kernel"
    " in CUDA, step by step.\n"
    "By the end, you will have a working kernel built from the ground up and tested against"
    " a reference.\n"
    "The project covers memory layouts, warp shuffles and the online softmax in detail.\n"
    "Each chapter ends with exercises that check your kernel against the reference one."
)
READING_LIST = (
    "Free books on machine learning:\n"
    "1. Foundations of Machine Learning\n"
    "https://t.co/aaa111\n"
    "2. Understanding Deep Learning\n"
    "https://t.co/bbb222\n"
    "3. Machine Learning Systems\n"
    "❯ Vol 1: https://t.co/ccc333\n"
    "❯ Vol 2: https://t.co/ddd444\n"
)
TWO_SENTENCE_OPENING = (
    "Sebastian is one of the most respected teachers of machine learning. Period.\n"
    "He wrote the clearest guides to building a language model from scratch, one layer at a"
    " time, with code you can run on a laptop.\n"
    "Every chapter has notebooks, and the notebooks have tests that tell you what broke."
)


def post(item_id: int, text: str) -> Item:
    """A post as the importer saves it and the offline summariser notes it."""
    title = text.splitlines()[0][:100]
    links = web_links(urls_in(text))
    request = NoteRequest(
        item_id=item_id, title=title, text=text, url=None, basis=NoteBasis.FULL_TEXT
    )
    note = OfflineSummarizer(LLMConfig()).note_now(request)
    return week_item(
        item_id,
        START,
        url=None,
        title=title,
        kind=ItemKind.POST,
        context=text,
        links=links,
        note=note,
    )


def entry_of(markdown: str, title: str) -> str:
    return markdown.split(f"- **{title}**\n", 1)[1].split("\n- **", 1)[0].split("\n## ", 1)[0]


def test_a_cut_first_line_gives_a_title_with_an_ellipsis_and_a_note_from_the_next_sentence() -> (
    None
):
    markdown = compose(PERIOD, [post(1, LONG_OPENING)], WeekSummary(()), zone=ZONE)
    title = (
        "We just launched a new project that teaches you how to build a paged attention kernel"
        " in CUDA…"
    )
    note = entry_of(markdown, title).strip().splitlines()[0]
    assert note.startswith("By the end, you will have a working kernel")


def test_a_title_of_whole_sentences_is_never_repeated_as_the_note() -> None:
    markdown = compose(PERIOD, [post(1, TWO_SENTENCE_OPENING)], WeekSummary(()), zone=ZONE)
    title = "Sebastian is one of the most respected teachers of machine learning. Period."
    body = entry_of(markdown, title)
    assert "respected teachers" not in body and "Period." not in body
    assert body.strip().startswith("He wrote the clearest guides")


def test_a_reading_list_keeps_each_link_labelled_with_its_lines_words() -> None:
    markdown = compose(PERIOD, [post(1, READING_LIST)], WeekSummary(()), zone=ZONE)
    body = entry_of(markdown, "Free books on machine learning")  # no colon
    assert body.strip() == (
        "*links: [Foundations of Machine Learning](https://t.co/aaa111),"
        " [Understanding Deep Learning](https://t.co/bbb222),"
        " [Machine Learning Systems, Vol 1](https://t.co/ccc333),"
        " [Machine Learning Systems, Vol 2](https://t.co/ddd444)*"
    )


def test_without_lead_never_leaves_the_rest_of_a_cut_sentence() -> None:
    summary = "Two weeks the talk picked up. The paper shows gains on long inputs."
    assert (
        without_lead(
            "Models have been around for months, but in the last two weeks the talk picked up."
            " The paper shows gains on long inputs.",
            "Models have been around for months, but in the last…",
        )
        == "The paper shows gains on long inputs."
    )
    assert without_lead(summary, "Nothing in common") == summary
    assert without_lead(
        "LLM Knowledge Bases I use Obsidian daily.", "LLM Knowledge Bases", title_opens_text=True
    ) == ("I use Obsidian daily.")


def test_no_note_starts_with_a_fragment_and_no_unread_link_note_is_its_address() -> None:
    url = "https://www.youtube.com/watch?v=33y9FMIvcWY"
    unread = week_item(
        9,
        START,
        url=url,
        context=url,
        state=ItemState.FAILED,
        error=f"fetch failed: '{url}': cannot resolve",
        note=Note("v=33y9FMIvcWY.", basis=NoteBasis.SAVED_CONTEXT, prompt_version="extractive-3"),
    )
    items = [post(1, LONG_OPENING), post(2, TWO_SENTENCE_OPENING), post(3, READING_LIST), unread]
    markdown = compose(PERIOD, items, WeekSummary(()), zone=ZONE)
    notes = [
        line.strip()
        for line in markdown.splitlines()
        if line.startswith("  ") and not line.strip().startswith(("- ", "*"))
    ]
    assert notes
    for note in notes:
        first_sentence = note.split(". ")[0]
        assert len(first_sentence.split()) >= 3 or note.endswith("."), note
        assert note[0].isupper() or not note[0].isalpha(), note
    assert "v=33y9FMIvcWY." not in markdown and "youtube.com/watch?v=33y9FMIvcWY*" not in markdown


def test_a_link_after_a_list_of_points_is_not_labelled_with_the_last_point() -> None:
    text = (
        "Read this to get started with database internals.\n"
        "A clear overview of what matters when a database runs in production. It covers:\n"
        "- storage\n"
        "- indexes\n"
        "- the query planning process\n"
        "https://t.co/zzz999\n"
        "One more point\n"
        "https://t.co/yyy888\n"
    )
    links = ("https://t.co/zzz999", "https://t.co/yyy888")
    labels = {url: label for label, url in labelled_links(post(1, text), links)}
    assert labels == {"https://t.co/zzz999": "t.co/zzz999", "https://t.co/yyy888": "One more point"}
