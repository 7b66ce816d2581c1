"""The week as a script for the ear (pure): what a voice reads, a chapter per section.

Not the digest's bullets read aloud: an opening that says the week and what is in
it, each section by name, each item by its title and the first sentence or two of
its note, short spoken transitions. No URL, markdown or label survives, and
symbols and abbreviations are written as they are spoken. Items whose page was
never read are left out (their "note" is the user's own context), and so is
whatever does not fit in `max_minutes`: the closing says what was left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from digest.compose.entries import Entry, Topic
from digest.periods import format_date
from digest.text import sentences, words
from digest.urls import for_display

OPENING_CHAPTER = "The week"
NOTE_WORDS = 45  # the note's second sentence is read only while the two stay this short
_ORDINAL_OPENERS = ("First", "Next", "Then", "Now", "Also")

# Written forms a voice would read letter by letter or symbol by symbol, as they are said.
_ABBREVIATIONS = (
    (r"\be\.\s?g\.(?=\W|$)", "for example"),
    (r"\bi\.\s?e\.(?=\W|$)", "that is"),
    (r"\betc\.(?=\W|$)", "and so on"),
    (r"\bvs\.?(?=\s)", "versus"),
    (r"\bapprox\.(?=\W|$)", "approximately"),
    (r"\bcf\.(?=\W|$)", "compare"),
    (r"\bw/o\b", "without"),
    (r"\bw/(?=\s)", "with"),
)
_NUMBER = r"\d+(?:[.,]\d+)*"
_SYMBOLS = (
    (r"\s*(?:→|⇒|->|=>)\s*", " to "),
    (r"\s*(?:←|<-)\s*", " from "),
    (r"(?<=\d)\s*[-–—]\s*(?=\d)", " to "),  # a range: 3–5
    (r"\s*[–—]\s*", ", "),  # a dash between words is a pause
    (r"(?<=\d)\s*%", " percent"),
    (rf"\$\s?({_NUMBER})(\s?(?:[kKmMbB]n?|million|billion)\b)?", r"\1\2 dollars"),
    (rf"€\s?({_NUMBER})", r"\1 euros"),
    (rf"£\s?({_NUMBER})", r"\1 pounds"),
    (r"(?<=\d)\s?[x×](?=\W|$)", " times"),
    (r"\s*&\s*", " and "),
    (r"\s+\+\s+", " plus "),
    (r"(?<=\w)\+\+", " plus plus"),
    (r"\s+=\s+", " equals "),
    (r"\s*@\s*", " at "),
    (r"#(?=\d)", "number "),
    (r"~\s?(?=\d)", "about "),
    (r"(?<=\d)\s?°C\b", " degrees Celsius"),
    (r"(?<=\d)\s?°F\b", " degrees Fahrenheit"),
    (r"…|\.{3}", "."),
    (r"(?<=[A-Za-z])/(?=[A-Za-z])", " or "),
)
_MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_ASIDE_WITH_URL = re.compile(r"\s*\([^()]*(?:https?://|www\.)[^()]*\)")
_URL = re.compile(r"(?:https?://|www\.)\S+|\b[\w.-]+\.(?:com|org|net|io|dev|ai)/\S*", re.I)
_MARKDOWN = re.compile(r"\\(?=\S)|[*`#|<>\[\]{}^]")
_UNDERSCORES = re.compile(r"_+")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
# What is left unsaid: emoji, arrows and other pictographs, bullets, stray quotes, and the
# symbols the rules above found nothing to say for (a % after no number).
_UNSAID = re.compile(
    r"[\u2190-\u21ff\u2300-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff•·\"“”%$€£=+@~]"
)
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_STOP = re.compile(r"\s+([,.;:!?])")
_REPEATED_STOPS = re.compile(r"([,.;:!?])[,.;:]+")


@dataclass(frozen=True)
class Chapter:
    title: str
    text: str  # what the voice says, paragraphs separated by blank lines


@dataclass(frozen=True)
class Script:
    title: str
    chapters: tuple[Chapter, ...]
    left_out: int  # items not read for lack of time

    @property
    def text(self) -> str:
        """The whole script, as saved beside the digest for reading what was heard."""
        return "\n\n".join(chapter.text for chapter in self.chapters) + "\n"

    @property
    def words(self) -> int:
        return len(self.text.split())


def spoken(text: str) -> str:
    """`text` as a voice should read it: no URL or markdown, symbols and abbreviations spelt out
    ("e.g." -> "for example", "→" -> "to", "40%" -> "40 percent"), dates as said."""
    text = for_display(text)  # a secret in a title is not read out either
    text = _URL.sub("", _ASIDE_WITH_URL.sub("", _MARKDOWN_LINK.sub(r"\1", text)))
    text = _ISO_DATE.sub(_spoken_date, text)
    for pattern, said in (*_ABBREVIATIONS, *_SYMBOLS):
        text = re.sub(pattern, said, text)
    text = _UNSAID.sub("", _UNDERSCORES.sub(" ", _MARKDOWN.sub("", text)))
    text = _REPEATED_STOPS.sub(r"\1", _SPACE_BEFORE_STOP.sub(r"\1", text))
    return _SPACES.sub(" ", text).strip(" ,;:")


def _spoken_date(match: re.Match[str]) -> str:
    year, month, day = (int(part) for part in match.groups())
    try:
        return format_date(date(year, month, day))
    except ValueError:  # no such day: said as written
        return match[0]


def week_script(
    label: str,
    dates: str,
    topics: Sequence[Topic],
    *,
    max_minutes: float,
    words_per_minute: int,
) -> Script:
    """The script of a week: its topics (as the digest lists them) read within `max_minutes`."""
    heard = [Topic(topic.name, [e for e in topic.entries if not e.unread_page]) for topic in topics]
    heard = [topic for topic in heard if topic.entries]
    unread = sum(len(topic.entries) for topic in topics) - sum(len(t.entries) for t in heard)
    # words left once the opening is said and room is kept for the closing (what was left out)
    room = int(max_minutes * words_per_minute) - len(_opening(dates, heard).split()) - 40
    kept: list[Topic] = []
    for index, topic in enumerate(heard):
        room -= len(_section_opening(index, len(heard), topic).split())
        fits: list[Entry] = []
        for entry in topic.entries:
            room -= len(_item(len(fits), entry.title, entry.summary).split())
            if room < 0:
                break
            fits.append(entry)
        if fits:
            kept.append(Topic(topic.name, fits))
        if room < 0:
            break
    left_out = sum(len(topic.entries) for topic in heard) - sum(len(t.entries) for t in kept)
    chapters = [Chapter(OPENING_CHAPTER, _opening(dates, kept))]
    chapters.extend(_section(index, len(kept), topic) for index, topic in enumerate(kept))
    closing = _closing(left_out, unread, max_minutes)
    last = chapters[-1]
    chapters[-1] = Chapter(last.title, f"{last.text}\n\n{closing}")
    return Script(f"Digest for {label}", tuple(chapters), left_out)


def _opening(dates: str, topics: Sequence[Topic]) -> str:
    week = f"This is your digest for the week of {spoken(dates.replace('–', ' to '))}."
    count = sum(len(topic.entries) for topic in topics)
    if not count:
        return f"{week} Nothing to read aloud."
    names = [_name(index, topic) for index, topic in enumerate(topics)]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    sections = "one section" if len(names) == 1 else f"{len(names)} sections"
    return f"{week} {_count(count, 'item')}, in {sections}: {listed}."


def _section(index: int, total: int, topic: Topic) -> Chapter:
    paragraphs = [_section_opening(index, total, topic)]
    paragraphs.extend(
        _item(number, entry.title, entry.summary) for number, entry in enumerate(topic.entries)
    )
    title = for_display(" ".join(topic.name.split())) or f"Section {index + 1}"  # as shown
    return Chapter(title, "\n\n".join(paragraphs))


def _name(index: int, topic: Topic) -> str:
    """The section's name as said; one made of symbols alone is called by its number."""
    return spoken(topic.name) or f"Section {index + 1}"


def _section_opening(index: int, total: int, topic: Topic) -> str:
    opener = "Finally" if index == total - 1 and total > 1 else _ORDINAL_OPENERS[min(index, 4)]
    return f"{opener}, {_name(index, topic)}: {_count(len(topic.entries), 'item').lower()}."


def _item(number: int, title: str, summary: str | None) -> str:
    lead = "" if number == 0 else ("Next: " if number % 2 else "Also: ")
    heading = _sentence(spoken(title))
    note = _first_sentences(spoken(summary or ""))
    return f"{lead}{heading} {note}".strip()


def _first_sentences(text: str) -> str:
    """The note's first sentence, and its second while the two stay short."""
    found = sentences(text)
    if not found:
        return ""
    kept = found[:2] if len(words(" ".join(found[:2]))) <= NOTE_WORDS else found[:1]
    return " ".join(_sentence(sentence) for sentence in kept)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?" else f"{text}."


def _closing(left_out: int, unread: int, max_minutes: float) -> str:
    lines = []
    if left_out:
        limit = f"{max_minutes:g} minute" + ("" if max_minutes == 1 else "s")
        lines.append(
            f"{_count(left_out, 'more item')} did not fit in {limit};"
            " they are in the written digest."
        )
    if unread:
        lines.append(
            f"{_count(unread, 'item')} whose page was not fetched"
            f" {'is' if unread == 1 else 'are'} in the written digest only."
        )
    lines.append("That was the week.")
    return " ".join(lines)


def _count(n: int, noun: str) -> str:
    text = f"{n} {noun}{'' if n == 1 else 's'}"
    return text[0].upper() + text[1:]
