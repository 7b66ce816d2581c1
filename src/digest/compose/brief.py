"""The week in brief without an LLM: one line per section, in the body's order, made of a
sentence from the section's most central note, and a "Must read" picked by a rule the reader
is told (pure).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from digest.text import cosine, sentences, shorten, tfidf, words

BRIEF_SENTENCE_CHARS = 200
OFFLINE_NOTE = (
    "*Offline: each line is a sentence from its section's most central note; no LLM wrote it.*"
)
MUST_READ_RULE = "the note closest to the rest of the week"
RANKED_MUST_READ_RULE = "chosen by your rules (pin) and interests"
MIN_SENTENCE_WORDS = 4  # content words: a shorter opening says too little to stand for a section


@dataclass(frozen=True)
class Noted:
    """One entry of a section as the brief sees it: what links to it and what its note says."""

    title: str
    url: str | None
    note: str | None


@dataclass(frozen=True)
class Line:
    section: str
    count: int
    sentence: str | None  # from the most central note, None when no note says enough
    cited: Noted
    others: tuple[Noted, ...]  # the section's other entries, in the body's order


@dataclass(frozen=True)
class Brief:
    lines: tuple[Line, ...]
    must_read: Noted | None


def week_in_brief(sections: Sequence[tuple[str, Sequence[Noted]]]) -> Brief:
    """Every section (as given: the body's order), its count and its most central note's first
    sentence that says something; the must-read: of the notes a reader can open (a URL), the
    one closest to all the others, or none."""
    every = [entry for _, entries in sections for entry in entries]
    vectors = tfidf([words(entry.note or "") for entry in every])
    total: dict[str, float] = {}
    for vector in vectors:
        for word, weight in vector.items():
            total[word] = total.get(word, 0.0) + weight
    # a note's summed cosine to every note (itself too, hence the 1) is one dot product
    closeness = [
        cosine(vector, total) - 1.0 if entry.note else -1.0
        for entry, vector in zip(every, vectors, strict=True)
    ]
    score = dict(zip(map(id, every), closeness, strict=True))
    lines = []
    for name, entries in sections:
        central = max(entries, key=lambda entry: score[id(entry)])  # ties: the first
        others = tuple(entry for entry in entries if entry is not central)
        lines.append(Line(name, len(entries), _telling_sentence(central.note), central, others))
    noted = [entry for entry in every if entry.note]
    openable = [entry for entry in noted if entry.url]  # a line without a link opens nothing
    enough = len(noted) >= 2 and bool(openable)
    must_read = max(openable, key=lambda entry: score[id(entry)]) if enough else None
    return Brief(tuple(lines), must_read)


def _telling_sentence(note: str | None) -> str | None:
    """The note's first sentence that says something: no list item, no few-word fragment."""
    found = (
        s for s in sentences(note or "") if s[:1].isalnum() and len(words(s)) >= MIN_SENTENCE_WORDS
    )
    first = next(found, None)
    return shorten(first, BRIEF_SENTENCE_CHARS) if first else None
