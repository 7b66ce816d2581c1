"""The digest's footer: who wrote the notes and the week summary, at what cost, and every
item of the week accounted for in one line."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from digest.compose.entries import EXTRACTIVE_MARKER, SHORT_NOTE_CHARS, entry_for
from digest.compose.markdown import md_text, one_line
from digest.config import NO_SOURCES, NO_SOURCES_FIX
from digest.lifecycle import why_no_note
from digest.models import OFFLINE_MODEL, Item, ItemKind, ItemState, ModelUsage, Usage
from digest.unfetched import offline_stand_in, reason

PAGE_NOT_FETCHED = "page not fetched"  # in the footer, not "not read": `digest read` marks that
SHOWN_AS_SAVED = "shown as written"  # notes, short posts and lists: no summary to make


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
    no_sources: bool = False  # a fresh installation: no source and nothing saved (its fix)


def footer_lines(provenance: Provenance, items: Sequence[Item]) -> list[str]:
    """Who wrote the notes and the week summary, the tokens and cost, what was skipped."""
    lines = []
    offline = [item for item in items if item.note and item.note.extractive]
    # counted as the digest marks them: not "LMSys.", a stand-in, a list, a short post
    unshown = sum(entry_for(item).marker != EXTRACTIVE_MARKER for item in offline)
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
    if provenance.no_sources and not items:  # "`digest init` …", as plain words here
        lines.append(f"No items: {NO_SOURCES}; {NO_SOURCES_FIX.replace('`', '')}.")
    else:
        lines.append(account_line(items, provenance.muted))
    if provenance.offline_at and (waiting := sum(map(_never_fetched, items))):
        lines.append(offline_line(provenance.offline_at, waiting))
    return [md_text(line) for line in lines]


def _shows_summary(item: Item) -> bool:
    """Whether the digest shows a summary from the item's note: not for a stand-in for a page
    never read, a note shown as written, a reading list or a note that only named the title."""
    if item.note is None or offline_stand_in(item) or _shown_as_written(item):
        return False
    entry = entry_for(item)
    return bool(entry.summary or entry.points)


def _shown_as_written(item: Item) -> bool:
    """A short note without a link: shown as the user wrote it, nothing to summarise."""
    short = len(one_line(item.context or "")) <= SHORT_NOTE_CHARS
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
