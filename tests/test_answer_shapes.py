"""Notes from answers shaped as real models shape them, through the real client against the
loopback server, and the reader of answers fuzzed: what is usable is kept (normalised), what is
not is refused, nothing raises anything else."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from digest.config import LLMConfig
from digest.errors import UnusableAnswer
from digest.models import Note, NoteBasis
from digest.notes import NoteRequest, judging, make_summarizer
from digest.notes.answer_text import read_answer
from digest.notes.answers import AnswerContext, parse_note_answer
from digest.notes.week_answers import parse_week_answer
from digest.text import looks_english, sentences, surely_english
from fake_openai import UNUSABLE_SHAPES, USABLE_SHAPES, FakeOpenAI

ARTICLE = (
    "Compilers written in Rust check memory safety before programs run. Browser engines"
    " adopted these compilers because whole classes of bugs disappear. Garbage collection"
    " is not needed, and performance stays close to C."
)
WORDS = ("compilers", "written", "memory", "safety", "before", "programs", "browser", "engines")


def request() -> NoteRequest:
    return NoteRequest(
        item_id=3,
        title="Safer compilers",
        url="https://example.org/rust",
        text=ARTICLE,
        basis=NoteBasis.FULL_TEXT,
    )


def note_from(fake: FakeOpenAI, shape: str, **llm: Any) -> Note:
    fake.responder = FakeOpenAI.shaped(shape)
    settings: dict[str, Any] = {"model": "small-local", "timeout_s": 5} | llm
    config = LLMConfig(provider="openai", base_url=fake.base_url, **settings)

    async def one() -> Note:
        summarizer = make_summarizer(config)
        try:
            return await summarizer.note(request())
        finally:
            await summarizer.aclose()

    return asyncio.run(one())


@pytest.mark.slow
@pytest.mark.parametrize("shape", USABLE_SHAPES)
def test_a_usable_answer_shape_gives_the_models_note_in_one_call(
    fake_openai: FakeOpenAI, shape: str
) -> None:
    note = note_from(fake_openai, shape)

    assert len(fake_openai.requests) == 1  # no repair
    assert note.model == "small-local" and not note.extractive
    assert any(word in note.summary.lower() for word in WORDS)  # about the article
    for debris in ("{", "}", "```", "<think>", '"summary"', "'summary'", "Sure!", "//", "\n"):
        assert debris not in note.summary, shape
    assert 1 <= len(sentences(note.summary)) <= 6
    assert all(point and "\n" not in point and point.strip(".…") for point in note.key_points)
    assert all(tag == tag.lower() and "," not in tag for tag in note.tags)


def test_shapes_are_normalised_as_a_reader_expects(fake_openai: FakeOpenAI) -> None:
    expected_two = "The text explains Compilers and written in plain terms. The text explains"
    assert note_from(fake_openai, "prose").summary.startswith(expected_two)
    assert note_from(fake_openai, "summary_list").summary.startswith(expected_two)
    assert len(sentences(note_from(fake_openai, "seven_sentences").summary)) == 6
    assert note_from(fake_openai, "tags_string").tags == ("rust", "compilers", "safety")
    assert note_from(fake_openai, "points_string").key_points == ("It is about Compilers",)
    assert note_from(fake_openai, "no_tags").tags == ()
    assert note_from(fake_openai, "no_points").key_points == ()
    assert note_from(fake_openai, "short_points").key_points == ("Compilers",)  # not "ok"
    assert "The user wants" not in note_from(fake_openai, "think").summary
    sections = note_from(fake_openai, "markdown_sections")
    assert sections.summary.startswith(expected_two) and "Sure" not in sections.summary
    assert sections.key_points == ("About Compilers", f"Why {sections.summary.split()[5]} matters")
    assert sections.tags == ("notes", "reading")
    assert note_from(fake_openai, "other_language", language="German").summary.startswith(
        "Der Artikel erklärt"
    )


def test_an_answer_cut_off_by_max_tokens_keeps_its_complete_sentences(
    fake_openai: FakeOpenAI,
) -> None:
    note = note_from(fake_openai, "truncated")
    assert note.summary == (
        "The text explains Compilers and written in plain terms."
        " The text explains written and Rust in plain terms."
    )


def test_key_points_that_are_only_dots_are_dropped_not_shown(fake_openai: FakeOpenAI) -> None:
    assert note_from(fake_openai, "dotted_points").key_points == ("About Compilers",)


@pytest.mark.parametrize("shape", UNUSABLE_SHAPES)
def test_an_unusable_answer_shape_is_refused_after_one_repair(
    fake_openai: FakeOpenAI, shape: str
) -> None:
    with pytest.raises(UnusableAnswer, match=r"item 3 'Safer compilers': no usable answer"):
        note_from(fake_openai, shape)
    assert len(fake_openai.requests) == 2


def test_a_reasoning_model_gets_max_completion_tokens(fake_openai: FakeOpenAI) -> None:
    note = note_from(fake_openai, "reasoning_field", model="o3-mini")
    assert note.model == "o3-mini" and not note.extractive
    body = fake_openai.requests[0]
    assert body["max_completion_tokens"] == 300 and "max_tokens" not in body


def test_the_token_parameter_can_be_set_in_the_config(fake_openai: FakeOpenAI) -> None:
    note_from(fake_openai, "json", token_limit_param="max_completion_tokens")
    assert "max_tokens" not in fake_openai.requests[0]


def test_a_server_that_names_the_other_token_parameter_is_asked_again_with_it(
    fake_openai: FakeOpenAI,
) -> None:
    message = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
    fake_openai.script(FakeOpenAI.error(400, message, code="unsupported_parameter"))
    note = note_from(fake_openai, "json")
    assert not note.extractive
    assert [("max_tokens" in b, "max_completion_tokens" in b) for b in fake_openai.requests] == [
        (True, False),
        (False, True),
    ]


# -- the reader, fuzzed -------------------------------------------------------------------

json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["summary", "tags", "key_points", "text", "x"]), children)
    ),
    max_leaves=12,
)
noise = st.sampled_from(["", "```json\n", "Sure! ", "<think>hm</think>", "}", "{", "'", ",", "//"])


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300) | st.builds(lambda a, b, c: a + repr(b) + c, noise, json_like, noise))
def test_reading_any_answer_never_raises(content: str) -> None:
    read = read_answer(content)
    assert isinstance(read, dict | str)
    context = AnswerContext(source=ARTICLE, item_urls=("https://example.org/rust",), truncated=True)
    try:
        answer = parse_note_answer(content, context)
    except ValueError:
        return
    assert answer.summary and len(answer.summary) <= 1200
    assert len(answer.key_points) <= 5 and len(answer.tags) <= 5


@pytest.mark.slow
@settings(max_examples=200)
@given(json_like)
def test_reading_any_week_answer_never_raises(data: Any) -> None:
    try:
        answer = parse_week_answer(repr(data), frozenset({1, 2}))
    except ValueError:
        return
    assert answer.statements
    assert all(set(s.items) <= {1, 2} and s.items for s in answer.statements)


@pytest.mark.parametrize(
    ("summary", "english", "sure"),
    [
        ("The article explains how compilers parse grammars and why it matters for teams.", True, True),
        ("Also will man wissen, was in der Praxis so passiert, wenn man es an einem Beispiel"
         " zeigt.", False, False),  # German that shares words with English ("also", "will")
        ("https://www.youtube.com/watch?v=33y9FMIvcWY Everything is a file in Linux", True, False),
        ("Der Artikel erklärt Compiler.", True, False),  # too short to tell either way
        ("Le texte explique comment les compilateurs fonctionnent et pourquoi ils comptent"
         " tant pour les équipes.", False, False),
    ],
)  # fmt: skip
def test_the_language_of_a_note_is_told_only_on_enough_words(
    summary: str, english: bool, sure: bool
) -> None:
    assert (looks_english(summary), surely_english(summary)) == (english, sure)


@pytest.mark.slow
@settings(max_examples=200)
@given(st.text(max_size=400), st.text(max_size=400))
def test_judging_any_text_never_raises(text: str, other: str) -> None:
    judging.is_placeholder(text)
    judging.is_repetitive(text)
    judging.echoes(text, other)
    judging.off_topic(text, judging.stems(other), [judging.stems(text)])
    judging.wrong_language(text, "English")
