"""Offline sections: related items grouped under a name, in English and in another language."""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import replace
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from digest.compose.brief import Noted, week_in_brief
from digest.compose.digest import compose
from digest.compose.topics import ALSO_SAVED, offline_sections
from digest.models import Item, Note, WeekSummary
from digest.periods import parse_week
from weekitems import week_item

ZONE = ZoneInfo("UTC")
PERIOD = parse_week("2026-W47", ZONE)

SUBJECTS = {
    "en": {
        "football": "football match goal striker league club coach season penalty stadium fans "
        "referee midfielder transfer keeper",
        "astronomy": "telescope galaxy star planet orbit astronomers comet nebula supernova "
        "observatory moon solar spacecraft cosmic",
        "cooking": "recipe oven flour butter bake dough sauce garlic onion simmer kitchen chef "
        "dinner roast pastry",
    },
    "de": {
        "football": "Fußball Spiel Tor Stürmer Liga Verein Trainer Saison Elfmeter Stadion Fans "
        "Schiedsrichter Mittelfeld Torwart",
        "astronomy": "Teleskop Galaxie Stern Planet Umlaufbahn Astronomen Komet Nebel Supernova "
        "Sternwarte Mond Sonne Raumsonde kosmisch",
        "cooking": "Rezept Ofen Mehl Butter backen Teig Soße Knoblauch Zwiebel köcheln Küche Koch "
        "Abendessen braten Gebäck",
    },
}


def articles(language: str, per_subject: int = 4) -> tuple[list[Item], dict[int, str]]:
    randomness = random.Random(7)
    items: list[Item] = []
    subject_of: dict[int, str] = {}
    for subject, vocabulary in SUBJECTS[language].items():
        terms = vocabulary.split()
        for n in range(per_subject):
            item_id = len(items) + 1
            sentences = [" ".join(randomness.sample(terms, 6)) + "." for _ in range(8)]
            items.append(item(item_id, f"{terms[n]} {terms[n + 1]}", " ".join(sentences)))
            subject_of[item_id] = subject
    return items, subject_of


def item(item_id: int, title: str, text: str) -> Item:
    return week_item(item_id, PERIOD.start, title=title, text=text, note=Note(text[:80]))


@pytest.mark.parametrize("language", ["en", "de"])
def test_items_on_one_subject_share_a_section_named_by_their_words(language: str) -> None:
    items, subject_of = articles(language)
    sections = offline_sections(items)
    assert set(sections) == {i.id for i in items}  # every item in a section
    by_subject: dict[str, set[str]] = {}
    for item_id, name in sections.items():
        by_subject.setdefault(subject_of[item_id], set()).add(name)
    assert all(len(names) == 1 for names in by_subject.values())
    names = [next(iter(n)) for n in by_subject.values()]
    assert len(set(names)) == 3
    for subject, (name,) in by_subject.items():
        assert all(w.lower() in SUBJECTS[language][subject].lower() for w in name.split())


def test_the_week_in_brief_covers_every_section_in_the_bodys_order_with_its_count() -> None:
    items, _ = articles("en")
    markdown = compose(PERIOD, items, WeekSummary(()), zone=ZONE, sections=offline_sections(items))
    week, body = markdown.split("## The week\n\n", 1)[1].split("\n## ", 1)
    body_sections = re.findall(r"^## (.+)\n\n((?:.|\n)*?)(?=^## |\Z)", "## " + body, re.M)
    expected = [(name, str(("\n" + entries).count("\n- **"))) for name, entries in body_sections]
    assert re.findall(r"^- \*\*(.+?)\*\* \((\d+) items?\)", week, re.M) == expected
    assert "*Offline: each line is a sentence from its section's most central note" in week
    assert "**Must read:** [" in week and "the note closest to the rest of the week." in week
    assert "Recurring theme" not in markdown


def test_items_that_share_nothing_are_also_saved_and_a_feeds_under_its_name() -> None:
    items, _ = articles("en", per_subject=1)
    items[0] = replace(items[0], sources=("vLLM blog",))
    assert offline_sections(items, feeds={"vLLM blog"}) == {
        1: "vLLM blog",
        2: ALSO_SAVED,
        3: ALSO_SAVED,
    }


def test_the_users_own_grouping_is_kept_and_never_renamed() -> None:
    items, _ = articles("en")
    topics = [replace(item, topic="Kitchen") if item.id > 8 else item for item in items]
    sections = offline_sections(topics)
    assert set(sections) == set(range(1, 9))  # the topics stay theirs: compose names them
    markdown = compose(PERIOD, topics, WeekSummary(()), zone=ZONE, sections=sections)
    assert "\n## Kitchen\n" in markdown


def test_a_section_name_is_never_a_count_or_a_numbered_section() -> None:
    items, _ = articles("en")
    counted = [replace(i, text=f"Three {i.text} three three.") for i in items]
    names = set(offline_sections(counted).values())
    assert not any(re.search(r"\bthree\b|Section \d", name, re.I) for name in names)


@settings(max_examples=12)
@given(st.integers(0, 11), st.integers(0, 10_000))
def test_one_more_item_keeps_nine_in_ten_pairs_and_the_names_of_unchanged_groups(
    subject: int, seed: int
) -> None:
    items, _ = articles("en", per_subject=5)
    randomness = random.Random(seed)
    terms = list(SUBJECTS["en"].values())[subject % 3].split()
    text = " ".join(" ".join(randomness.sample(terms, 6)) + "." for _ in range(8))
    before = offline_sections(items)
    after = offline_sections([*items, item(len(items) + 1, "another one", text)])
    pairs = list(itertools.combinations(sorted(before), 2))
    kept = sum((before[a] == before[b]) == (after[a] == after[b]) for a, b in pairs)
    assert kept >= 0.9 * len(pairs)
    for name in set(before.values()) - {ALSO_SAVED}:
        members = members_of(before, name)
        now = after[min(members)]
        if members_of(after, now) == members:  # the same group: the same name
            assert now == name


def members_of(sections: dict[int, str], name: str) -> set[int]:
    return {item_id for item_id, named in sections.items() if named == name}


def test_the_week_is_left_out_when_it_would_only_repeat_the_body() -> None:
    bare = [
        week_item(n, PERIOD.start, title=f"Saved link {n}", topic="Reading") for n in range(1, 7)
    ]  # no note to quote: the brief could only list titles
    noted, _ = articles("en", per_subject=1)  # notes to quote, but only three items
    for items in (bare, bare[:1], noted):
        markdown = compose(PERIOD, items, WeekSummary(()), zone=ZONE, sections={})
        assert "## The week" not in markdown and "Offline:" not in markdown
        assert markdown.count("Saved link 1") == (items is not noted)  # once: in the body
        assert markdown.startswith("# Digest for 2026-W47\n\n16–22 November 2026\n")


def test_adding_links_never_read_does_not_rename_or_regroup_the_others() -> None:
    items, _ = articles("en")
    before = offline_sections(items)
    unread = [
        week_item(100 + n, PERIOD.start, title=title, url=f"https://good.example.org/{n}")
        for n, title in enumerate(["Token budgets", "Model cards", "Football", "Oven", *"ab"])
    ] + [week_item(200 + n, PERIOD.start, url=f"https://x.example/telescope/{n}") for n in (1, 2)]
    after = offline_sections([*items, *unread])
    assert {item_id: after[item_id] for item_id in before} == before
    assert {after[i.id] for i in unread} == {ALSO_SAVED}


def test_most_members_contain_their_sections_name_and_at_least_three_do() -> None:
    items, _ = articles("en")
    named = offline_sections(items)
    sections = {name for name in named.values() if name != ALSO_SAVED}
    assert sections
    for name in sections:
        members = [i for i in items if named[i.id] == name]
        said = [f"{i.title}\n{i.text}".casefold() for i in members]
        containing = sum(name.casefold() in text for text in said)
        assert containing >= max(3, len(members) / 2), (name, containing, len(members))


def test_a_unit_of_time_or_a_word_common_in_the_week_names_no_section() -> None:
    items, subject_of = articles("en")
    added = {"football": "The model took 17 minutes, minutes more than the model before."}
    added["astronomy"] = "The model."
    timed = [
        replace(i, text=f"{i.text} {added.get(subject_of[i.id], '')}" if i.id != 8 else i.text)
        for i in items
    ]  # every football item says "minutes" and "model"; so do 3 of the other 8
    talks = [
        item(
            20 + n, f"Watch {subject}", f"{subject} talk, 17 minutes. Then 36 minutes. 72 minutes."
        )
        for n, subject in enumerate(["Postgres outages", "Compiler passes", "Lisp lectures"])
    ]  # they share only the unit of their lengths
    for week in (timed, [*items, *talks]):
        names = set(offline_sections(week).values())
        assert names != {ALSO_SAVED}
        assert not any(re.search(r"\bminutes?\b|\bmodel\b", name, re.I) for name in names)


def test_two_items_on_one_named_subject_are_joined_and_a_common_word_joins_none() -> None:
    tunnel = "A tunnel hides your traffic inside DNS queries. Every firewall has to allow DNS. "
    resolvers = "Resolvers hold their answers for days, so he stored a file in them. "
    items, _ = articles("en", per_subject=1)
    items += [
        item(4, "firewalls can't stop this", tunnel * 3),
        item(5, "A developer noticed something about DNS resolvers", resolvers),
        item(6, "How matmul kernels work", "Tiles, shared memory and tensor cores."),
        item(7, "How containers work in Modal", "Images are lazily loaded from a cache."),
        item(8, "Notes on Rust traits", "Traits, generics and dispatch."),
    ]
    sections = offline_sections(items)
    assert sections[4] == sections[5] == "DNS"  # one says it in its title, the other often
    # "work" is in both titles but not as a name; "Rust" is a name only one item has
    assert {sections[n] for n in (6, 7, 8)} == {ALSO_SAVED}


def test_a_subject_word_that_other_items_of_the_week_use_too_joins_no_pair() -> None:
    items = [
        item(1, "Notes on Postgres vacuum", "Vacuum reclaims dead rows."),
        item(2, "Tuning Postgres for writes", "Checkpoints and the write-ahead log."),
        item(3, "A talk on indexes", "B-trees in Postgres and elsewhere."),
        item(4, "Why queues fill up", "Backpressure, again in Postgres."),
    ]
    assert set(offline_sections(items).values()) == {ALSO_SAVED}


def test_the_must_read_is_a_note_a_reader_can_open_or_there_is_none() -> None:
    central = "Kernels fuse attention and the matmul so the GPU never waits on memory."
    lines = [
        Noted("VLLM Triton backend deep dive", None, f"{central} {central}"),  # a list line
        Noted("Fused kernels", "https://a.example/fused", central),
        Noted("Oven bread", "https://b.example/bread", "Bake the dough in a hot oven."),
    ]
    assert week_in_brief([("Kernels", lines)]).must_read == lines[1]
    unlinked = [replace(entry, url=None) for entry in lines]
    assert week_in_brief([("Kernels", unlinked)]).must_read is None
