"""The digest's entries: an item as the reader sees it (its title, note, markers, links and
reading time), grouped into topics. Read by the digest, its footer and the audio edition."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from digest.compose.linktitles import known_title, link_title
from digest.compose.markdown import one_line
from digest.compose.postnotes import post_reading
from digest.compose.posts import is_list_post, labelled_links, post_title
from digest.compose.topics import ALSO_SAVED
from digest.models import Item, ItemKind, ItemState, NoteBasis
from digest.reading_time import item_minutes
from digest.text import sentences, shorten, without_links
from digest.unfetched import offline_stand_in, reason, saved_words, unread_line

OTHER = "Other"
CATCH_ALL = (OTHER, ALSO_SAVED)  # the sections of what has no section of its own: last
SAVED_CONTEXT_MARKER = "(from saved context — the page could not be read)"
NOT_READ_MARKER = "(page not fetched)"  # the footer says why and what to run
EXTRACTIVE_MARKER = "(extractive summary)"
EXCERPT_MARKER = "(from the central passages of a long page)"
SHORT_NOTE_CHARS = 280  # a saved note this short is shown as it is, not summarised
MIN_NOTE_WORDS = 3  # a note never opens on a shorter fragment


@dataclass(frozen=True)
class Entry:
    title: str
    url: str | None
    summary: str | None
    marker: str | None
    points: tuple[str, ...]
    also: tuple[tuple[str, str], ...] = ()  # (site, url) of the same story elsewhere
    links: tuple[tuple[str, str], ...] = ()  # (name, url) of the links in a post's text
    why: str | None = None  # why the ranking put it where it is: "matches your interest 'x'"
    related: str | None = None  # what earlier saves it connects to: "follow-up to *T* (W41)"
    unread_page: bool = False  # a link whose page has not been read: its note is not the page's
    minutes: int = 0  # the reading time of its page (digest/reading_time.py); 0: not read
    site: str | None = None  # the site's name, shown by a link whose page was not read
    newsletters: tuple[str, ...] = ()  # the letters it came in (a letter: its sender)
    highlights: tuple[str, ...] = ()  # what the reader highlighted in it


@dataclass
class Topic:
    name: str
    entries: list[Entry] = field(default_factory=list)

    @property
    def minutes(self) -> int:
        return sum(entry.minutes for entry in self.entries)

    @property
    def totals(self) -> str:
        """The section's line: "3 items · 7 min read"; "2 items · pages not fetched" when
        none of its pages was read; "2 items" for notes and posts."""
        count = len(self.entries)
        said = f"{count} item{'' if count == 1 else 's'}"
        if self.minutes:
            return f"{said} · {self.minutes} min read"
        if all(entry.unread_page for entry in self.entries):
            return f"{said} · {'page' if count == 1 else 'pages'} not fetched"
        return said


def topic_of(item: Item, shared_tags: Container[str] | None = None) -> str:
    """The item's topic, else its note's first tag (given `shared_tags`, its first tag that is
    one of those, casefolded), else Other."""
    tags = item.note.tags if item.note else ()
    shared = [
        t for t in tags if shared_tags is None or " ".join(t.split()).casefold() in shared_tags
    ]
    tag = shared[0] if shared else None
    for candidate in (item.topic, tag):
        name = " ".join((candidate or "").split())
        if name:
            return name
    return OTHER


def group_by_topic(
    items: Sequence[Item],
    also: Mapping[str, Sequence[Item]] | None = None,
    sections: Mapping[int, str] | None = None,
    why: Mapping[int, str] | None = None,
    related: Mapping[int, str] | None = None,
    highlighted: Mapping[int, Sequence[str]] | None = None,
) -> list[Topic]:
    """Topics by size (largest first) then name; Other, the catch-all, comes last. A tag
    names a section only when two or more items share it (as a tag or as their topic): one
    item's tag is noise. `also`: other items of the same story, linked from the entry."""
    tagged = Counter(name for item in items for name in _topic_and_tags(item))
    shared = {tag for tag, count in tagged.items() if count >= 2}
    groups: dict[str, Topic] = {}
    for item in items:
        name = (sections or {}).get(item.id) or topic_of(item, shared)
        others = (also or {}).get(item.key, ())
        sources = tuple((_site(other.url), other.url) for other in others if other.url)
        links = labelled_links(item, post_links(item))
        entry = entry_for(item)
        minutes = 0 if entry.unread_page else item_minutes(item)
        entry = replace(
            entry,
            also=sources,
            links=links,
            why=(why or {}).get(item.id),
            related=(related or {}).get(item.id),
            newsletters=item.newsletters,
            highlights=tuple((highlighted or {}).get(item.id, ())),
            minutes=minutes,
        )
        groups.setdefault(name.casefold(), Topic(name)).entries.append(entry)
    return sorted(
        groups.values(),
        key=lambda t: (t.name in CATCH_ALL, -len(t.entries), t.name.casefold(), t.name),
    )


def _site(url: str) -> str:
    host = urlsplit(url).hostname or url
    return host.removeprefix("www.")


def _topic_and_tags(item: Item) -> set[str]:
    names = [item.topic or "", *(item.note.tags if item.note else ())]
    return {" ".join(name.split()).casefold() for name in names} - {""}


def entry_for(item: Item) -> Entry:
    """The item as the digest shows it: a link, a post, a letter or a note of the reader's."""
    note = item.note
    if item.kind is ItemKind.POST and not item.url:
        return _post_entry(item)
    if item.kind is ItemKind.NEWSLETTER:
        return _letter_entry(item)
    if not item.url:
        return _note_entry(item)
    title = item_title(item)
    if note is None or offline_stand_in(item):  # the user's own words; why the page is unread
        words = saved_words(item)  # the stand-in note is these words, cleaned: shown if any
        saved = (
            (model_text(note.summary) if note else shorten(words, SHORT_NOTE_CHARS))
            if words
            else ""
        )
        context = without_lead(saved, title, title_opens_text=True) or None
        marker = _unread_entry_marker(item, context)
        named = title.startswith(_site(item.url)) or title == known_title(item.url)
        site = None if named else _site(item.url)  # "YouTube video" names its site already
        return Entry(title, item.url, context, marker, (), unread_page=True, site=site)
    summary = without_lead(model_text(note.summary), title) or None
    points = tuple(point for point in map(model_text, note.key_points) if point)
    unread = note.basis is NoteBasis.SAVED_CONTEXT
    return Entry(title, item.url, summary, _note_marker(item), points, unread_page=unread)


def _post_entry(item: Item) -> Entry:
    """A post: its first line or sentence as title, then what it gives (postnotes.py) in
    place of an offline note; a model's note as the model wrote it; a reading list's
    labelled links stand for its note."""
    title = item_title(item)
    if is_list_post(item):
        return Entry(title, None, None, None, ())
    context = item.context or ""
    if item.note is None or not item.note.by_model:
        whole = len(model_text(context)) <= SHORT_NOTE_CHARS
        reading = post_reading(context, title, whole=whole)
        picked = not whole and (reading.prose or reading.points)  # its telling lines only
        marker = EXTRACTIVE_MARKER if picked and item.note else None
        return Entry(title, None, reading.prose, marker, reading.points)
    summary = without_lead(model_text(item.note.summary), title, title_opens_text=True)
    points = tuple(p for p in item.note.key_points if _comparable(p) not in _comparable(title))
    return Entry(title, None, summary or None, None, points)


def _letter_entry(item: Item) -> Entry:
    """A letter kept whole: its subject, then its note, or its opening words before one."""
    title = one_line(item.title or "") or "(no subject)"
    if item.note is None:
        return Entry(title, None, shorten(item.text or "", SHORT_NOTE_CHARS) or None, None, ())
    summary = without_lead(model_text(item.note.summary), title, title_opens_text=True) or None
    points = tuple(point for point in map(model_text, item.note.key_points) if point)
    return Entry(title, None, summary, _note_marker(item), points)


def _note_entry(item: Item) -> Entry:
    """A saved note without a URL. A short one is shown whole: its title as the item line and
    the rest of its text (a comment, say) as the note, never a summary restating them."""
    text = one_line(item.title or item.context or "") or "(untitled note)"
    context = one_line(item.context or "")
    if len(context) <= SHORT_NOTE_CHARS:
        rest = context.removeprefix(text) if context.startswith(text) else context
        rest = rest.lstrip(" -–—:;,.")
        return Entry(text, None, rest if rest and rest != text else None, None, ())
    if item.note is None:
        return Entry(text, None, None, None, ())
    summary = without_lead(one_line(item.note.summary), text, title_opens_text=True) or None
    points = item.note.key_points
    picked = item.note.extractive and (summary or points)  # sentences of the reader's own
    return Entry(text, None, summary, EXTRACTIVE_MARKER if picked else None, points)


def item_title(item: Item) -> str:
    """The saved title, else the page's own from any fetch (never a wall's), else the words
    of the link's address ("I want off Mr Golang's wild ride"), else its host and path."""
    named = one_line(post_title(item) or item.title or item.page_title or "")
    if named or item.url is None:
        return named or one_line(item.display_title) or "(untitled note)"
    return link_title(item.url)


def _unread_entry_marker(item: Item, shown: str | None) -> str | None:
    """Why a link is shown without a note of its page, in one quiet line."""
    if item.state is ItemState.FAILED:
        return _unread_marker(item)
    why = reason(item)
    if why and not shown:  # nothing saved to show either: no "from saved context"
        return f"(page not read: {why})"
    return _note_marker(item) if item.note else NOT_READ_MARKER


def _unread_marker(item: Item) -> str:
    line = unread_line(item)
    return f"({line[0].lower()}{line[1:].rstrip('.')})" if line else NOT_READ_MARKER


def _note_marker(item: Item) -> str | None:
    assert item.note is not None
    if item.note.basis is NoteBasis.SAVED_CONTEXT:
        failed = item.state is ItemState.FAILED
        return _unread_marker(item) if failed else saved_context_marker(item)
    if item.note.extractive:
        return EXTRACTIVE_MARKER
    return EXCERPT_MARKER if item.note.basis is NoteBasis.EXCERPT else None


def saved_context_marker(item: Item) -> str:
    """Say that the note rests on saved context, and why when the page was no article."""
    why = reason(item)
    return f"(from saved context — {why})" if why else SAVED_CONTEXT_MARKER


def post_links(item: Item) -> tuple[str, ...]:
    """The web links a post was saved with (stored, so the HTML may link to them)."""
    if item.kind is not ItemKind.POST:
        return ()
    return tuple(url for url in item.links if url.startswith(("https://", "http://")))


def without_lead(summary: str, title: str, *, title_opens_text: bool = False) -> str:
    """The summary without the title it repeats: the sentences the title holds are left out,
    and so is a sentence the title is a shortening of ("…"), so that the note starts at a
    sentence, never in the middle of one. `title_opens_text`: the title is the text's first
    line (a post, a note), so a sentence it opens is left without it."""
    key = _comparable(title.removesuffix("…"))
    if not key:
        return summary
    parts = sentences(summary)
    kept = 0
    while kept < len(parts) and (sentence := _comparable(parts[kept])):
        repeated = sentence in key or (title.endswith("…") and sentence.startswith(key))
        if not repeated and (not kept or len(sentence.split()) >= MIN_NOTE_WORDS):
            break  # a fragment right after the title ("Period.") goes with it
        kept += 1
    if kept:
        return " ".join(parts[kept:])
    if not title_opens_text or title.endswith("…") or not _comparable(summary).startswith(key):
        return summary
    return _after_title(summary, key)


def _after_title(summary: str, key: str) -> str:
    """What follows a title that opens the summary's first sentence, capitalised."""
    covered = 0  # how many characters of `summary` the title covers, counted on comparable text
    while covered < len(summary) and len(_comparable(summary[:covered])) < len(key):
        covered += 1
    if summary[covered : covered + 1].isalnum():  # the title ends inside a word: not a repeat
        return summary
    rest = summary[covered:].lstrip(" -–—:;,.!?…\"'”’)")
    return rest[:1].upper() + rest[1:]


def _comparable(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", "", text).casefold().split())


def model_text(text: str) -> str:
    """A model's text with no link, URL or HTML tag left in it, on one line."""
    return without_links(text).replace("<", "\\<")
