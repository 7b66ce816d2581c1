"""Offline sections: related items grouped under a name, in English and in another language."""

from __future__ import annotations

import random
from zoneinfo import ZoneInfo

import pytest

from digest.compose.digest import compose
from digest.compose.topics import offline_sections
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
        assert any(w.lower() in SUBJECTS[language][subject].lower() for w in name.split(", "))


def test_the_offline_overview_names_the_main_sections_citing_their_items() -> None:
    items, _ = articles("en")
    markdown = compose(PERIOD, items, WeekSummary(()), zone=ZONE, sections=offline_sections(items))
    week = markdown.split("## The week\n\n", 1)[1].split("\n## ", 1)[0]
    assert week.count(": 4 items ([") == 3
    assert "Recurring theme" not in markdown


def test_too_few_items_get_no_sections() -> None:
    items, _ = articles("en", per_subject=1)
    assert offline_sections(items) == {}
