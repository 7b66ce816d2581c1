"""Items and a period -> the digest's markdown, through a jinja2 template (pure).

Identical inputs give identical bytes: nothing volatile (no "generated at") is
written, because the content hash of the result decides whether a delivery is new.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit
from zoneinfo import ZoneInfo

import jinja2

from digest.compose.brief import (
    MUST_READ_RULE,
    OFFLINE_NOTE,
    RANKED_MUST_READ_RULE,
    Noted,
    week_in_brief,
)
from digest.compose.linktitles import known_title, link_title
from digest.compose.postnotes import post_reading
from digest.compose.posts import is_list_post, labelled_links, post_title
from digest.compose.ranking import Ranking
from digest.compose.stories import same_stories
from digest.compose.topics import ALSO_SAVED
from digest.compose.usertemplates import Rendered, render
from digest.lifecycle import why_no_note
from digest.models import (
    OFFLINE_MODEL,
    Item,
    ItemKind,
    ItemState,
    ModelUsage,
    NoteBasis,
    Period,
    StoredHighlight,
    Usage,
    WeekSummary,
)
from digest.reading import item_minutes
from digest.text import sentences, shorten, without_links
from digest.unread import offline_stand_in, reason, saved_words, unread_line
from digest.urls import without_userinfo

OTHER = "Other"
CATCH_ALL = (OTHER, ALSO_SAVED)  # the sections of what has no section of its own: last
SAVED_CONTEXT_MARKER = "(from saved context — the page could not be read)"
NOT_READ_MARKER = "(page not fetched)"  # the footer says why and what to run
PAGE_NOT_FETCHED = "page not fetched"  # in the footer, not "not read": `digest read` marks that
SHOWN_AS_SAVED = "shown as written"  # notes, short posts and lists: no summary to make
EXTRACTIVE_MARKER = "(extractive summary)"
EXCERPT_MARKER = "(from the central passages of a long page)"
EMPTY_WEEK = "Nothing was saved this week."
SHORT_NOTE_CHARS = 280  # a saved note this short is shown as it is, not summarised
CITED_TITLE_CHARS = 60
BRIEF_MIN_ITEMS = 4  # a smaller week reads in full faster than a brief of it
BRIEF_TITLES = 2  # a section with no note to quote is told by its first titles
MIN_NOTE_WORDS = 3  # a note never opens on a shorter fragment
_INLINE_CITATION = re.compile(r"\s*\[(\d+(?:\s*,\s*\d+)*)\]")

_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
# A line starting like this would open a block (heading, list, quote, fence, table, rule).
_BLOCK_START = re.compile(r"^(\d+)?([#>\-+*=|~`.)])")
_INLINE_SPECIAL = re.compile(r"([\\`\[\]<>*])")
_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# Characters that would end or split a link destination; everything else is kept as saved.
_URL_UNSAFE = re.compile(r"[\s()<>\\\x00-\x1f\x7f]")
# Control characters (a terminal escape, a NUL) have no place in a digest read in a terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


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
    minutes: int = 0  # the reading time of its page (digest/reading.py); 0: not read
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


@dataclass(frozen=True)
class Backlog:
    """Items for the optional sections after the week's topics (the caller picks them)."""

    unread: Sequence[Item] = ()  # not marked read, from earlier weeks, oldest first
    year_ago: Sequence[Item] = ()  # saved in the same ISO week a year earlier
    unread_limit: int | None = None  # "Still unread" shows this many (not counting year_ago)
    highlights: Sequence[StoredHighlight] = ()  # "From your highlights": due this week
    highlighted: Mapping[int, Sequence[str]] = field(default_factory=dict)  # item id -> its own


@dataclass(frozen=True)
class Provenance:
    """For the footer: who wrote the notes and the week summary, at what cost (from the store,
    so the same notes give the same footer on every rerun)."""

    notes: Sequence[ModelUsage] = ()
    week: ModelUsage | None = None
    # every call made for the notes (repairs, failures, refused answers too), as `status`
    # counts them; None: the notes' own usage
    note_calls: Usage | None = None
    muted: int = 0  # items the reader's rules left out
    offline_at: datetime | None = None  # the last fetch found no network, then


@dataclass(frozen=True)
class BacklogEntry:
    title: str
    url: str | None
    saved: str  # "3 November 2026"


def compose(
    period: Period,
    items: Sequence[Item],
    week_summary: WeekSummary,
    *,
    zone: ZoneInfo,
    backlog: Backlog = Backlog(),
    provenance: Provenance | None = None,
    sections: Mapping[int, str] | None = None,
    ranking: Ranking | None = None,
    related: Mapping[int, str] | None = None,
) -> str:
    """The digest of `period` as markdown: see digest_context."""
    context = digest_context(
        period,
        items,
        week_summary,
        zone=zone,
        backlog=backlog,
        provenance=provenance,
        sections=sections,
        ranking=ranking,
        related=related,
    )
    return render_digest(context).text


def render_digest(context: Mapping[str, Any], templates_dir: Path | None = None) -> Rendered:
    """The digest's markdown: from `templates_dir`'s digest.md.j2 if there is one (the
    built-in one when it fails, with the failure), else from the built-in template."""
    return render(
        "digest.md.j2",
        context,
        templates_dir,
        lambda: _template().render(**context),
        filters=MD_FILTERS,
    )


def reader_view(context: Mapping[str, Any]) -> str:
    """A hash of what a reader of the digest sees (items, notes, sections, the week's
    summary, the backlog), not of how it is rendered nor of the footer's costs: the log
    takes a new revision only when this changes."""
    shown = {key: value for key, value in context.items() if key not in NOT_SEEN}
    text = json.dumps(shown, default=asdict, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


NOT_SEEN = frozenset({"footer"})  # what a model cost; the items and their notes are seen


def digest_context(
    period: Period,
    items: Sequence[Item],
    week_summary: WeekSummary,
    *,
    zone: ZoneInfo,
    backlog: Backlog = Backlog(),
    provenance: Provenance | None = None,
    sections: Mapping[int, str] | None = None,
    ranking: Ranking | None = None,
    related: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """What the digest template renders: heading, the week's summary, the items grouped by
    topic, then the backlog sections that have items, then the provenance footer if given.

    A WeekSummary is checked against `items`: citations of other ids are dropped, and so is
    a statement left citing nothing; links and URLs in its text are removed, and citations
    become links to the items' own URLs. `sections` names the section of items without a
    topic (most central first within a section); given it, an offline week summary is
    replaced by the week in brief (compose/brief.py), which covers every section. `ranking`
    orders the items within each section, says why, and names the must-reads first;
    `related` gives an item a line on the earlier saves it connects to (compose/related.py)."""
    unique = _unique(items)
    brief = sections is not None and week_summary.model == OFFLINE_MODEL
    sections, ranking = sections or {}, ranking or Ranking()
    entries, also = _one_entry_per_story(unique)
    topics = group_by_topic(
        ranking.ordered(entries), also, sections, ranking.why, related, backlog.highlighted
    )
    must_read = [*ranking.pinned, *(week_summary.must_read or ranking.must_read)]
    week_summary = replace(week_summary, must_read=tuple(dict.fromkeys(must_read)))
    ranked = [
        item
        for i in ranking.must_read
        for item in unique
        if item.id == i and (item.url or i in ranking.pinned)  # pinned: the reader's choice
    ]
    year_ago = _unique(backlog.year_ago)
    shown = {item.key for item in year_ago}
    unread = [item for item in backlog.unread if item.key not in shown][: backlog.unread_limit]
    return {
        "label": period.label,
        "period_range": format_period(period, zone),
        "week_summary": (brief_text(topics, ranked) if len(unique) >= BRIEF_MIN_ITEMS else "")
        if brief and unique
        else _week_text(week_summary, unique, topics),
        "topics": topics,
        "minutes": sum(topic.minutes for topic in topics),
        "unread": [_backlog_entry(item, zone) for item in unread],
        "year_ago": [_backlog_entry(item, zone) for item in year_ago],
        "highlights": [_highlight_entry(highlight, zone) for highlight in backlog.highlights],
        "footer": footer_lines(_without_week(provenance, brief), unique) if provenance else [],
    }


def _without_week(provenance: Provenance, brief: bool) -> Provenance:
    """The brief says in its own line how it was made: the footer does not repeat it."""
    return replace(provenance, week=None) if brief else provenance


def _backlog_entry(item: Item, zone: ZoneInfo) -> BacklogEntry:
    saved = item.saved_at.astimezone(zone).date()
    return BacklogEntry(_title(item), item.url, f"{_day(saved)} {saved.year}")


@dataclass(frozen=True)
class HighlightEntry:
    id: int
    text: str
    note: str | None
    source: str
    url: str | None
    saved: str  # "3 November 2025"


def _highlight_entry(highlight: StoredHighlight, zone: ZoneInfo) -> HighlightEntry:
    saved = highlight.highlighted_at.astimezone(zone).date()
    return HighlightEntry(
        highlight.id,
        " ".join(highlight.text.split()),
        highlight.note and " ".join(highlight.note.split()),
        highlight.source,
        highlight.url,
        f"{_day(saved)} {saved.year}",
    )


def content_hash(markdown: str) -> str:
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()


def format_period(period: Period, zone: ZoneInfo, *, short: bool = False) -> str:
    """'17–23 November 2026' ('17–23 Nov 2026' if short); months and years are named only
    where they change."""
    first = period.start.astimezone(zone).date()
    last = (period.end.astimezone(zone) - timedelta(days=1)).date()
    months = [month[:3] for month in _MONTHS] if short else _MONTHS
    start, end = (f"{day.day} {months[day.month - 1]}" for day in (first, last))
    if first.year != last.year:
        return f"{start} {first.year} – {end} {last.year}"
    if first.month != last.month:
        return f"{start} – {end} {last.year}"
    return f"{first.day}–{end} {last.year}"


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


def _one_entry_per_story(items: Sequence[Item]) -> tuple[list[Item], dict[str, list[Item]]]:
    """The item shown for each story (the first with a note), and the other items of its story
    by the shown item's key."""
    shown, also = [], {}
    for group in same_stories(items):
        first = min(group, key=lambda i: (items[i].note is None, i))
        shown.append(items[first])
        if len(group) > 1:
            also[items[first].key] = [items[i] for i in group if i != first]
    return shown, also


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
        entry = _entry(item)
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


def _unique(items: Iterable[Item]) -> list[Item]:
    """Each item once (by key), in a stable order whatever order they came in."""
    seen: dict[str, Item] = {}
    for item in sorted(items, key=lambda i: (i.saved_at, i.id)):
        seen.setdefault(item.key, item)
    return list(seen.values())


def _entry(item: Item) -> Entry:
    note = item.note
    if item.kind is ItemKind.POST and not item.url:
        return _post_entry(item)
    if item.kind is ItemKind.NEWSLETTER:
        return _letter_entry(item)
    if not item.url:
        return _note_entry(item)
    title = _title(item)
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
    title = _title(item)
    if is_list_post(item):
        return Entry(title, None, None, None, ())
    context = item.context or ""
    if item.note is None or not item.note.by_model:
        whole = len(model_text(context)) <= SHORT_NOTE_CHARS
        reading = post_reading(context, title, whole=whole)
        return Entry(title, None, reading.prose, None, reading.points)
    summary = without_lead(model_text(item.note.summary), title, title_opens_text=True)
    points = tuple(p for p in item.note.key_points if _comparable(p) not in _comparable(title))
    return Entry(title, None, summary or None, None, points)


def _letter_entry(item: Item) -> Entry:
    """A letter kept whole: its subject, then its note, or its opening words before one."""
    title = _collapse(item.title or "") or "(no subject)"
    if item.note is None:
        return Entry(title, None, shorten(item.text or "", SHORT_NOTE_CHARS) or None, None, ())
    summary = without_lead(model_text(item.note.summary), title, title_opens_text=True) or None
    points = tuple(point for point in map(model_text, item.note.key_points) if point)
    return Entry(title, None, summary, _note_marker(item), points)


def _title(item: Item) -> str:
    """The saved title, else the page's own from any fetch (never a wall's), else the words
    of the link's address ("I want off Mr Golang's wild ride"), else its host and path."""
    named = _collapse(post_title(item) or item.title or item.page_title or "")
    if named or item.url is None:
        return named or _collapse(item.display_title) or "(untitled note)"
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


def post_links(item: Item) -> tuple[str, ...]:
    """The web links a post was saved with (stored, so the HTML may link to them)."""
    if item.kind is not ItemKind.POST:
        return ()
    return tuple(url for url in item.links if url.startswith(("https://", "http://")))


def _note_entry(item: Item) -> Entry:
    """A saved note without a URL. A short one is shown whole: its title as the item line and
    the rest of its text (a comment, say) as the note, never a summary restating them."""
    text = _collapse(item.title or item.context or "") or "(untitled note)"
    context = _collapse(item.context or "")
    if len(context) <= SHORT_NOTE_CHARS:
        rest = context.removeprefix(text) if context.startswith(text) else context
        rest = rest.lstrip(" -–—:;,.")
        return Entry(text, None, rest if rest and rest != text else None, None, ())
    summary = (
        without_lead(_collapse(item.note.summary), text, title_opens_text=True)
        if item.note
        else None
    )
    points = item.note.key_points if item.note else ()
    return Entry(text, None, summary or None, None, points)


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


def _note_marker(item: Item) -> str | None:
    assert item.note is not None
    if item.note.basis is NoteBasis.SAVED_CONTEXT:
        failed = item.state is ItemState.FAILED
        return _unread_marker(item) if failed else saved_context_marker(item)
    if item.note.extractive:
        return EXTRACTIVE_MARKER
    return EXCERPT_MARKER if item.note.basis is NoteBasis.EXCERPT else None


def model_text(text: str) -> str:
    """A model's text with no link, URL or HTML tag left in it, on one line."""
    return without_links(text).replace("<", "\\<")


def saved_context_marker(item: Item) -> str:
    """Say that the note rests on saved context, and why when the page was no article."""
    why = reason(item)
    return f"(from saved context — {why})" if why else SAVED_CONTEXT_MARKER


def _week_text(week_summary: WeekSummary, items: Sequence[Item], topics: Sequence[Topic]) -> str:
    if not items:
        return EMPTY_WEEK
    if checked := checked_week_summary(week_summary, items):
        return checked
    things = "item" if len(items) == 1 else "items"
    groups = "topic" if len(topics) == 1 else "topics"
    return f"{len(items)} {things} saved this week, in {len(topics)} {groups}."


def brief_text(topics: Sequence[Topic], ranked: Sequence[Item] = ()) -> str:
    """The offline week in brief as markdown: a line per section, then the must-read and the
    rule that picked it (`ranked`: the reader's pins and interests chose them). Empty when
    it would only repeat the body's titles: no note to quote."""
    brief = week_in_brief(
        [(t.name, [Noted(e.title, e.url, e.summary) for e in t.entries]) for t in topics]
    )
    if not any(line.sentence for line in brief.lines):
        return ""
    lines = []
    for line in brief.lines:
        things = "item" if line.count == 1 else "items"
        if line.sentence:
            said = f"{md_text(line.sentence)} ({_link(line.cited)})"
        else:  # nothing to quote: the first titles
            shown = [line.cited, *line.others][:BRIEF_TITLES]
            more = line.count - len(shown)
            said = ", ".join(map(_link, shown)) + (f" and {more} more" if more else "")
        lines.append(f"- **{md_text(line.section)}** ({line.count} {things}): {said}")
    lines += ["", OFFLINE_NOTE]
    if ranked:
        chosen = ", ".join(_link(Noted(_title(item), item.url, None)) for item in ranked)
        lines += ["", f"**Must read:** {chosen}, {RANKED_MUST_READ_RULE}."]
    elif brief.must_read:
        lines += ["", f"**Must read:** {_link(brief.must_read)}, {MUST_READ_RULE}."]
    return "\n".join(lines)


def _link(entry: Noted) -> str:
    title = shorten(entry.title, CITED_TITLE_CHARS)
    return f"[{md_label(title)}]({md_url(entry.url)})" if entry.url else f"*{md_text(title)}*"


def checked_week_summary(summary: WeekSummary, items: Sequence[Item]) -> str:
    """Markdown of the statements and must-reads whose citations check out against `items`."""
    by_id = {item.id: item for item in items}
    lines = []
    for statement in summary.statements:
        inline = [
            int(n) for found in _INLINE_CITATION.findall(statement.text) for n in found.split(",")
        ]
        cited = [i for i in dict.fromkeys([*statement.cites, *inline]) if i in by_id]
        text = model_text(_INLINE_CITATION.sub("", statement.text))
        if cited and text:
            lines.append(f"- {md_text(text)} ({_citations(cited, by_id)})")
    must_read = [i for i in dict.fromkeys(summary.must_read) if i in by_id]
    if must_read:
        lines.append(f"\n**Must read:** {_citations(must_read, by_id)}")
    return "\n".join(lines)


def _citations(ids: Sequence[int], by_id: dict[int, Item]) -> str:
    """Each cited item as a link to its own URL, by its title; an item without one by name."""
    cited = []
    for item_id in ids:
        item = by_id[item_id]
        title = md_label(shorten(_title(item), CITED_TITLE_CHARS))
        cited.append(f"[{title}]({md_url(item.url)})" if item.url else f"*{title}*")
    return ", ".join(cited)


def footer_lines(provenance: Provenance, items: Sequence[Item]) -> list[str]:
    """Who wrote the notes and the week summary, the tokens and cost, what was skipped."""
    lines = []
    offline = [item for item in items if item.note and item.note.extractive]
    unshown = sum(not _shows_summary(item) for item in offline)  # "LMSys.", a stand-in, a list
    usages = [
        replace(entry, count=max(0, entry.count - unshown))
        if entry.model == OFFLINE_MODEL
        else entry
        for entry in provenance.notes
    ]
    notes = "; ".join(_by_model(entry, "note") for entry in usages if entry.count)
    if notes:
        lines.append(f"Notes: {notes}.")
    if standing_in := sum(map(_stands_in_for_model, items)):
        lines.append(
            f"The offline note stands where the model's answer was refused or failed:"
            f" {standing_in} item{'s' if standing_in > 1 else ''} (`digest export` gives"
            " note_by and note_error)."
        )
    if provenance.week is not None:
        lines.append(f"Week summary: {_by_model(provenance.week, '')}.")
    notes_usage = provenance.note_calls
    if notes_usage is None:
        notes_usage = sum((entry.usage for entry in provenance.notes), Usage())
    total = notes_usage + (provenance.week.usage if provenance.week else Usage())
    if total.tokens_in or total.tokens_out:
        lines.append(f"LLM total: {_usage_text(total)}.")
    lines.append(account_line(items, provenance.muted))
    if provenance.offline_at and (waiting := sum(map(_never_fetched, items))):
        lines.append(offline_line(provenance.offline_at, waiting))
    return [md_text(line) for line in lines]


def _shows_summary(item: Item) -> bool:
    """Whether the digest shows a summary from the item's note: not for a stand-in for a page
    never read, a note shown as written, a reading list or a note that only named the title."""
    if item.note is None or offline_stand_in(item) or _shown_as_written(item):
        return False
    entry = _entry(item)
    return bool(entry.summary or entry.points)


def _shown_as_written(item: Item) -> bool:
    """A short note without a link: shown as the user wrote it, nothing to summarise."""
    short = len(_collapse(item.context or "")) <= SHORT_NOTE_CHARS
    return not item.url and item.kind is not ItemKind.NEWSLETTER and short


def _stands_in_for_model(item: Item) -> bool:
    return bool(item.note_error and item.note and not item.note.by_model)


def _by_model(entry: ModelUsage, noun: str) -> str:
    if entry.prompt_version.startswith("extractive") or entry.model == OFFLINE_MODEL:
        plural = "y" if entry.count == 1 else "ies"
        what = f"{entry.count} extractive summar{plural}" if noun else "from the notes' tags"
        if entry.usage.tokens_in or entry.usage.tokens_out:  # the model was asked, and failed
            return f"{what} (offline; the model's answer was not used: {_usage_text(entry.usage)})"
        return f"{what} (offline, no LLM)"
    count = f"{entry.count} {noun}{'' if entry.count == 1 else 's'} by " if noun else ""
    prompt = f", prompt {entry.prompt_version}" if entry.prompt_version else ""
    return f"{count}{entry.model}{prompt} ({_usage_text(entry.usage)})"


def _usage_text(usage: Usage) -> str:
    return f"{usage.tokens_in:,} tokens in, {usage.tokens_out:,} out, ${usage.cost_usd:.4f}"


def account_line(items: Sequence[Item], muted: int = 0) -> str:
    """Every item of the week in one line: "31 items: 1 noted, 30 pages not fetched, 2 muted
    by rules." ("shown as written": notes, short posts and lists, with no summary made)."""
    counts = Counter(map(_accounted_as, items))
    if muted:
        counts["muted by rules"] = muted
    total = len(items) + muted
    parts = ", ".join(
        f"{count} {_plural(what) if count > 1 else what}"
        for what, count in sorted(counts.items(), key=_order)
    )
    return f"{total} item{'' if total == 1 else 's'}: {parts}." if parts else "No items."


def _plural(what: str) -> str:
    return "pages" + what.removeprefix("page") if what.startswith("page ") else what


def offline_line(at: datetime, waiting: int) -> str:
    """The network was down at the last fetch: what waits, and what to run when it is back."""
    pages = f"{waiting} page{'' if waiting == 1 else 's'} of this week"
    return (
        f"No network at the last run ({at:%d %b %H:%M} UTC): {pages} not fetched;"
        " once online, run digest now --retry to fetch them."
    )


def _accounted_as(item: Item) -> str:
    page_unread = item.url is not None and (item.note is None or offline_stand_in(item))
    if page_unread and item.kind is not ItemKind.POST:
        why = None if _never_fetched(item) else reason(item)
        return f"{PAGE_NOT_FETCHED} ({why})" if why else PAGE_NOT_FETCHED
    if item.note is None and not _shown_as_written(item):
        return why_no_note(item)
    return "noted" if _shows_summary(item) else SHOWN_AS_SAVED


def _order(entry: tuple[str, int]) -> tuple[int, str]:
    what = entry[0]
    rank = 0 if what == "noted" else 1 if what == SHOWN_AS_SAVED else 3 if "muted" in what else 2
    return rank, what


def _never_fetched(item: Item) -> bool:
    return item.url is not None and item.state is ItemState.NEW and item.kind is not ItemKind.POST


def _day(day: date) -> str:
    return f"{day.day} {_MONTHS[day.month - 1]}"


def _collapse(text: str) -> str:
    return " ".join(_CONTROL.sub("", text).split())


def md_line(text: str) -> str:
    """One line of text that cannot open a block (heading, list, quote) where it starts."""
    return _unblock(_collapse(text))


def md_text(text: str) -> str:
    """Text safe inside link brackets or a heading: markdown syntax characters escaped."""
    return _unblock(md_label(text))


def md_label(text: str) -> str:
    """Text inside link brackets in the middle of a line: syntax characters escaped, but no
    block escape ("127.0.0.1" stays as written: it cannot open a list there)."""
    return _EDGE_UNDERSCORE.sub(r"\\_", _INLINE_SPECIAL.sub(r"\\\1", _collapse(text)))


def md_url(url: str) -> str:
    """A link destination that stays one token: spaces, parentheses and brackets encoded; a
    saved link's login (stored as `***@`) is left out, so the link opens the page."""
    return _URL_UNSAFE.sub(lambda m: quote(m[0], safe=""), without_userinfo(url.strip()))


def md_block(text: str) -> str:
    """Free text (the week summary) kept as markdown, but unable to add headings of its own."""
    lines = text.strip().replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(re.sub(r"^(\s*)#", r"\1\\#", line) for line in lines)


def _unblock(line: str) -> str:
    """Escape what would make `line` open a block: '# x' -> '\\# x', '1. x' -> '1\\. x'."""
    return _BLOCK_START.sub(lambda m: (m[1] or "") + "\\" + m[2], line, count=1)


@cache
def _template() -> jinja2.Template:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("digest.compose", "templates"),
        autoescape=False,  # markdown, not HTML: escaping is done by the md_* filters
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters.update(MD_FILTERS)
    return environment.get_template("digest.md.j2")


MD_FILTERS = {
    "md_line": md_line,
    "md_text": md_text,
    "md_label": md_label,
    "md_url": md_url,
    "md_block": md_block,
}
