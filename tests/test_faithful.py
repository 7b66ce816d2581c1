"""A model's note says only what its article says (notes/faithful.py through the answer parser):
sentences with a number or a name the article lacks are dropped, a note left with too little
is refused, notes without words are refused, key points earn their place."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from digest.notes.answers import AnswerContext, describe_invalid, parse_note_answer
from digest.notes.faithful import check, known_facts, names, unknown_facts
from digest.notes.judging import MIN_NOTE_WORDS, content_words
from digest.text import sentences

TITLE = "Junior surfer wins the Coastal Cup"
ARTICLE = f"""{TITLE}
Maya Okafor, 19, won the Coastal Cup at Kelp Bay on Sunday, beating twelve other surfers.
The prize of £2,500 will pay for her trip to the national championship in September.
Her coach, Tom Reyes, said she trained for two years on the same beach.
About 40 per cent of the entrants were under 21, the organisers said.
The UK surfing federation plans to hold the event again next year."""

CONTEXT = AnswerContext(source=ARTICLE, title=TITLE, language="English")


def note(summary: Any, **fields: Any) -> Any:
    return parse_note_answer(json.dumps({"summary": summary} | fields), CONTEXT)


def refusal(summary: Any) -> str:
    with pytest.raises(ValueError) as caught:
        note(summary)
    return describe_invalid(caught.value)


@pytest.mark.parametrize(
    "sentence",
    [
        "The surfer beat 12 others at Kelp Bay.",  # twelve is 12
        "The prize was 2500 pounds, about £2.5k.",  # 2,500 is 2500 and 2.5 thousand
        "Forty percent of the entrants were under twenty-one.",
        "Her coach Tom Reyes trained her for 2 years.",
        "The United Kingdom federation will hold it again.",  # UK
        "The Coastal Cup went to a 19-year-old on Sunday.",
        "In September the Okafor family and Kelp Bay's surfers will travel.",
    ],
)
def test_what_the_article_says_however_written_is_found(sentence: str) -> None:
    assert unknown_facts(sentence, known_facts(ARTICLE)) == []


@pytest.mark.parametrize(
    ("sentence", "missing"),
    [
        ("She won the 2013 World Cup in Australia.", ["2013", "World Cup", "Australia"]),
        ("The record was held by her uncle Bobby Reynolds.", ["Bobby Reynolds"]),
        ("She won on Saturday, beating 14 surfers.", ["14", "Saturday"]),
        ("The prize was £3,000.", ["3,000"]),
        ("Her coach, Jason Jones, praised her.", ["Jason Jones"]),
    ],
)
def test_a_number_or_name_the_article_lacks_is_named(sentence: str, missing: list[str]) -> None:
    assert sorted(unknown_facts(sentence, known_facts(ARTICLE))) == sorted(missing)


def test_names_are_capitalised_runs_inside_a_sentence_not_its_first_word() -> None:
    said = 'Maya won. Then "Great" said Tom Reyes of the UK: Quiet now.'
    assert [name for s in sentences(said) for name in names(s)] == ["Tom Reyes", "UK"]


def test_an_invented_sentence_is_dropped_and_the_true_ones_kept() -> None:
    summary = (
        "Maya Okafor won the Coastal Cup at Kelp Bay, beating twelve other surfers."
        " The 19-year-old broke the record held by her uncle Bobby Reynolds in 2016."
        " The £2,500 prize pays for her trip to the national championship."
    )
    assert note(summary).summary == (
        "Maya Okafor won the Coastal Cup at Kelp Bay, beating twelve other surfers."
        " The £2,500 prize pays for her trip to the national championship."
    )


def test_a_note_left_with_too_little_once_invented_sentences_go_is_refused() -> None:
    why = refusal("The surfer won the 2013 World Cup in Australia. Jason Jones trained her.")
    assert why.startswith("summary: the summary states facts its article does not")
    assert "2013" in why and "Australia" in why


@pytest.mark.parametrize(
    ("summary", "problem"),
    [
        ("742", "says nothing"),
        ("5118304256", "says nothing"),
        ({"title": "New Harry Potter and the Half-Blood Prince"}, "no summary"),
        ('{ "title": "Junior surfer wins the Coastal Cup" }', "JSON or code"),
        ("Junior surfer wins the Coastal Cup.", "only repeats the title"),
        ("The surfer won.", "says nothing"),
        ("<b>2024</b> 19 #42 @maya", "says nothing"),
    ],
)
def test_a_summary_without_words_is_refused(summary: Any, problem: str) -> None:
    assert problem in refusal(summary)


def test_an_empty_summary_left_once_the_items_url_is_taken_out_is_refused() -> None:
    context = AnswerContext(source=ARTICLE, title=TITLE, item_urls=("https://surf.example/cup",))
    with pytest.raises(ValueError, match="says nothing"):
        parse_note_answer('{"summary": "https://surf.example/cup"}', context)


def test_key_points_that_repeat_invent_or_say_nothing_are_dropped() -> None:
    summary = "Maya Okafor won the Coastal Cup at Kelp Bay, beating twelve other surfers."
    points = [
        "Maya Okafor won the Coastal Cup at Kelp Bay",  # the summary again
        "The £2,500 prize pays for the national championship trip",
        "The prize pays for the trip to the national championship",  # the point above again
        "742",
        "@mayasurfs",
        "[JSON-RISKFUL]",
        "Here are the key points:",
        "She trained with Jason Jones in 2013",  # invented
        "Coach Tom Reyes trained her for two years",
    ]
    kept = note(summary, key_points=points).key_points
    assert kept == [
        "The £2,500 prize pays for the national championship trip",
        "Coach Tom Reyes trained her for two years",
    ]


def test_a_key_point_joining_two_earlier_ones_repeats_them() -> None:
    summary = "Maya Okafor won the Coastal Cup at Kelp Bay."
    points = [
        "The £2,500 prize pays for the national championship trip",
        "Coach Tom Reyes trained her for two years on the beach",
        "The prize pays for the championship trip, and her coach trained her for two years",
    ]
    assert note(summary, key_points=points).key_points == points[:2]


def test_a_blank_the_model_left_unfilled_is_a_fact_the_article_lacks() -> None:
    known = known_facts("Fans will get cards. The organisers said [the council] agreed. See [1].")

    said = "The cards were announced on [insert date] by [insert name] at the {venue}."
    assert unknown_facts(said, known) == ["[insert date]", "[insert name]", "{venue}"]
    quoted = "They said [the council] agreed [1], see [the post](https://a.example/) […]."
    assert unknown_facts(quoted, known) == []
    kept = note(
        "Maya Okafor won the Coastal Cup at Kelp Bay. The data is from the [company's name]"
        " website.",
        key_points=["The prize was given on [insert date]", "She trained for two years"],
    )
    assert kept.summary == "Maya Okafor won the Coastal Cup at Kelp Bay."
    assert kept.key_points == ["She trained for two years"]


def test_a_note_in_another_language_is_checked_for_numbers_only() -> None:
    context = AnswerContext(source=ARTICLE, title=TITLE, language="German")
    german = "Die Surferin Maya Okafor gewann den Pokal. Der Preis von 2500 Pfund zahlt die Reise."
    assert parse_note_answer(json.dumps({"summary": german}), context).summary == german
    invented = german + " Sie gewann 2013 die Weltmeisterschaft."
    assert parse_note_answer(json.dumps({"summary": invented}), context).summary == german


# -- a note made of the article's own sentences passes, however the article is made ------------

_WORD = st.sampled_from(
    [
        "surfers",
        "coach",
        "beach",
        "prize",
        "trained",
        "council",
        "harbour",
        "ferry",
        "library",
        "volunteers",
        "bicycles",
        "repaired",
        "toasters",
        "residents",
        "festival",
        "engines",
        "tickets",
        "museum",
        "opened",
    ]
)
_NAME = st.sampled_from(["Maya Okafor", "Tom Reyes", "Kelp Bay", "the UK", "NASA", "Ana Torres"])
_NUMBER = st.sampled_from(["12", "2,500", "40 per cent", "twelve", "£2.5bn", "1999", "3rd", "19"])


@st.composite
def article_sentence(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(_WORD, _NAME, _NUMBER), min_size=4, max_size=12, unique=True))
    opener = draw(st.sampled_from(["The", "Its", "A", "Our", "Some"]))
    return f"{opener} {' '.join(parts)} {draw(_WORD)} {draw(_WORD)} {draw(_WORD)}."


@given(
    lines=st.lists(article_sentence(), min_size=2, max_size=8, unique=True),
    data=st.data(),
)
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
def test_a_note_of_the_articles_own_sentences_is_never_refused_or_trimmed(
    lines: list[str], data: st.DataObject
) -> None:
    article = "\n".join(lines)
    chosen = data.draw(st.lists(st.sampled_from(lines), min_size=1, max_size=3, unique=True))
    summary = " ".join(chosen)
    assert not check(sentences(summary), known_facts(article)).dropped
    if len(content_words(summary)) >= MIN_NOTE_WORDS:
        context = AnswerContext(source=article)  # word salad: no language to judge
        try:
            answer = parse_note_answer(json.dumps({"summary": summary}), context)
        except ValueError as exc:
            assert "says the same thing" in str(exc)  # drawn words may repeat: not a fact check
        else:
            assert answer.summary == summary
