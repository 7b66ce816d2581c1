"""Items and a period -> the digest's markdown, through a jinja2 template (pure).

Identical inputs give identical bytes: nothing volatile (no "generated at") is
written, because the content hash of the result decides whether a delivery is new. Its
entries are made in entries.py, its footer in footer.py, its markdown escaped by markdown.py.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import jinja2

from digest.compose.brief import (
    MUST_READ_RULE,
    OFFLINE_NOTE,
    RANKED_MUST_READ_RULE,
    Noted,
    week_in_brief,
)
from digest.compose.entries import Topic, group_by_topic, item_title, model_text
from digest.compose.footer import Provenance, footer_lines
from digest.compose.markdown import MD_FILTERS, md_label, md_text, md_url
from digest.compose.ranking import Ranking
from digest.compose.stories import same_stories
from digest.compose.usertemplates import Rendered, render
from digest.models import OFFLINE_MODEL, Item, Period, StoredHighlight, WeekSummary
from digest.periods import format_date, format_period
from digest.text import shorten

EMPTY_WEEK = "Nothing was saved this week."
CITED_TITLE_CHARS = 60
BRIEF_MIN_ITEMS = 4  # a smaller week reads in full faster than a brief of it
BRIEF_TITLES = 2  # a section with no note to quote is told by its first titles
_INLINE_CITATION = re.compile(r"\s*\[(\d+(?:\s*,\s*\d+)*)\]")


@dataclass(frozen=True)
class Backlog:
    """Items for the optional sections after the week's topics (the caller picks them)."""

    unread: Sequence[Item] = ()  # not marked read, from earlier weeks, oldest first
    year_ago: Sequence[Item] = ()  # saved in the same ISO week a year earlier
    unread_limit: int | None = None  # "Still unread" shows this many (not counting year_ago)
    highlights: Sequence[StoredHighlight] = ()  # "From your highlights": due this week
    highlighted: Mapping[int, Sequence[str]] = field(default_factory=dict)  # item id -> its own


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
    return BacklogEntry(item_title(item), item.url, format_date(saved))


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
        format_date(saved),
    )


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


def _unique(items: Iterable[Item]) -> list[Item]:
    """Each item once (by key), in a stable order whatever order they came in."""
    seen: dict[str, Item] = {}
    for item in sorted(items, key=lambda i: (i.saved_at, i.id)):
        seen.setdefault(item.key, item)
    return list(seen.values())


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
        chosen = ", ".join(_link(Noted(item_title(item), item.url, None)) for item in ranked)
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
        title = md_label(shorten(item_title(item), CITED_TITLE_CHARS))
        cited.append(f"[{title}]({md_url(item.url)})" if item.url else f"*{title}*")
    return ", ".join(cited)


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
