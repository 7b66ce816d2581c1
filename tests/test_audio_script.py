"""The script for the ear: the week as a voice should read it (pure)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from digest.audio.script import OPENING_CHAPTER, spoken, week_script
from digest.compose.entries import Entry, Topic

WEEK = "2026-W47"
DATES = "16–22 November 2026"
URL_OR_MARKDOWN = re.compile(r"https?://|www\.|\]\(|\*\*|`|^#|^- ", re.M)


def entry(title: str, note: str | None, *, unread_page: bool = False) -> Entry:
    return Entry(title, "https://site.example/a", note, None, (), unread_page=unread_page)


def script_of(topics: list[Topic], max_minutes: float = 20) -> str:
    return week_script(WEEK, DATES, topics, max_minutes=max_minutes, words_per_minute=150).text


def test_the_script_says_the_week_then_each_section_and_item_without_urls_or_markdown() -> None:
    topics = [
        Topic(
            "Serving",
            [
                entry(
                    "vLLM → 2x faster",
                    "The **release** (see https://blog.example/x) doubles throughput, e.g. on"
                    " A100 GPUs by ~40%. It shipped on 2026-11-20. A third sentence is not read.",
                )
            ],
        ),
        Topic("Databases", [entry("SQLite & you", "Small and fast; w/o a server. $5 vs $10.")]),
    ]

    script = week_script(WEEK, DATES, topics, max_minutes=20, words_per_minute=150)

    assert [chapter.title for chapter in script.chapters] == [
        OPENING_CHAPTER,
        "Serving",
        "Databases",
    ]
    assert script.chapters[0].text == (
        "This is your digest for the week of 16 to 22 November 2026."
        " 2 items, in 2 sections: Serving and Databases."
    )
    assert (
        "vLLM to 2 times faster. The release doubles throughput, for example on A100 GPUs"
        " by about 40 percent. It shipped on 20 November 2026."
    ) in script.text
    assert "third sentence" not in script.text
    assert "SQLite and you. Small and fast; without a server. 5 dollars versus 10 dollars." in (
        script.text
    )
    assert not URL_OR_MARKDOWN.search(script.text)
    assert not re.search(r"[→~%&$*\[\]]|e\.g\.", script.text)


def test_items_whose_page_was_not_read_are_left_out_and_counted() -> None:
    topics = [
        Topic("Serving", [entry("Read", "A note."), entry("Unread", "ctx", unread_page=True)]),
        Topic("Other", [entry("Also unread", "saved words", unread_page=True)]),
    ]

    text = script_of(topics)

    assert "Unread" not in text and "saved words" not in text
    assert "Other" not in text  # a section with nothing heard is not announced
    assert "2 items whose page was not fetched are in the written digest only." in text


def test_max_minutes_cuts_the_script_and_says_what_was_left_out() -> None:
    note = "This sentence has exactly eight words in it. " * 2
    topics = [Topic(f"Section {n}", [entry(f"Item {n}-{i}", note) for i in range(5)]) for n in "AB"]

    script = week_script(WEEK, DATES, topics, max_minutes=1, words_per_minute=150)

    assert script.left_out > 0
    assert script.words <= 150
    assert f"{script.left_out} more items did not fit in 1 minute" in script.text
    assert "Section B" not in script.text  # nothing of it fitted: not announced


@given(st.text(alphabet=st.sampled_from("ab1 .,*_`#[]()<>→%&$/-:\n")))
def test_spoken_text_keeps_no_markdown_or_symbols(text: str) -> None:
    said = spoken(f"[link](https://x.example/p?q=1) {text} www.example.org/x")

    assert not re.search(r"https?:|www\.|[*`#\[\]<>→%&$_\n]", said)


texts = st.text(alphabet=st.sampled_from("ab1 .,*_`#[]()<>→%&$/-:\n"), max_size=80)


@given(
    st.lists(
        st.tuples(texts, st.lists(st.tuples(texts, st.none() | texts, st.booleans()), max_size=4)),
        max_size=4,
    ),
    st.floats(min_value=0.1, max_value=5),
)
def test_any_week_makes_a_script_within_its_minutes_with_no_markdown(
    sections: list[tuple[str, list[tuple[str, str | None, bool]]]], max_minutes: float
) -> None:
    topics = [
        Topic(name, [entry(t, note, unread_page=unread) for t, note, unread in items])
        for name, items in sections
    ]

    script = week_script(WEEK, DATES, topics, max_minutes=max_minutes, words_per_minute=150)

    assert script.chapters[0].title == OPENING_CHAPTER
    assert all(chapter.title for chapter in script.chapters)
    assert not re.search(r"https?:|www\.|[*`#\[\]<>→%&$_]", script.text)
    heard = sum(1 for _, items in sections for _, _, unread in items if not unread)
    assert script.left_out <= heard
    if script.left_out:
        assert script.words <= max(max_minutes * 150, 60)  # the opening and closing are said


def test_a_chapter_is_titled_as_the_digest_names_its_section_and_said_aloud() -> None:
    script = week_script(
        WEEK, DATES, [Topic("C++ & Rust", [entry("T", "N.")])], max_minutes=5, words_per_minute=150
    )

    assert script.chapters[1].title == "C++ & Rust"
    assert script.chapters[1].text.startswith("First, C plus plus and Rust: 1 item.")
