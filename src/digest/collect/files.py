"""Files of saved links and posts: `digest import`, `digest add`, and the reporting that
file sources (inbox.py) share; what a path given holds is found by finding.py.

A file is decoded (filetext.py) and saved in one transaction (filesave.py), or streamed a
block at a time when big (bigfiles.py). An OPML file given to `digest import` is a list of
feeds, added as feed sources (feedlists.py). Files are only ever read: never moved, changed
or deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.collect import REDATED
from digest.collect.bigfiles import big_file, save_big
from digest.collect.feedlists import FeedList, FeedListReport, import_feed_list, read_feed_list
from digest.collect.filesave import (
    FileReport,
    Loaded,
    file_key,
    is_feed_list,
    recognise,
    save,
)
from digest.collect.filetext import file_size, good_text, read_bytes
from digest.collect.finding import Unimported, files_under, not_saves_nor_highlights
from digest.collect.highlights import HighlightsReport, highlights_format, import_highlights
from digest.collect.importers.common import url_problem
from digest.config import IMPORT_SOURCE, MANUAL_SOURCE, SourceConfig
from digest.errors import ImportFormatError, SourceError, bug_reason, unit_bug
from digest.models import FileReading, ItemKind, Rejected, SavedItem
from digest.store import Store
from digest.text import shorten

MAX_LISTED = 10  # problem lines shown per file; the rest are counted
# a file source's last line with no line end yet (inbox.py): perhaps still being written
HELD_BACK = "held back (no line end): read on the next run if the file is unchanged"


# -- reporting ------------------------------------------------------------------


def describe(report: ImportOutcome) -> list[str]:
    """The lines `digest import` prints for one file: a summary, then what was not understood."""
    if isinstance(report, FeedListReport | HighlightsReport | Unimported):
        return report.describe()
    counts = [
        f"{report.new} new",
        _plural(report.duplicates, "duplicate"),
        *([_plural(report.posts, "post")] if report.posts else []),
        _plural(report.notes, "note") + " without URL",
        _plural(len(report.rejected), "line") + " not understood",
    ]
    if report.skipped:
        counts.append(f"{len(report.skipped)} skipped")
    if report.redated:
        counts.append(f"{report.redated} {REDATED}")
    if report.replaced:
        counts.append(f"{report.replaced} items of an earlier reading replaced")
    if report.held:  # last: it says what the next run does
        counts.append(f"{_plural(report.held, 'last line')} {HELD_BACK}")
    lines = [f"{report.path}: format {report.format}: {', '.join(counts)}"]
    shown = report.rejected[:MAX_LISTED]
    lines += [f"  line {_where(r)}: {r.reason}: {shorten(r.text, 80)}" for r in shown]
    if len(report.rejected) > len(shown):
        lines.append(f"  … and {len(report.rejected) - len(shown)} more")
    lines += [f"  {line}" for line in skip_lines(report)]
    if len(report.weeks) > 1:  # a journal spanning weeks: say which, and how to write them
        lines.append(
            f"  saved {report.dates[0]} to {report.dates[-1]}: {len(report.weeks)} weeks,"
            f" {report.weeks[0]} to {report.weeks[-1]};"
            f" `digest now --since {report.weeks[0]}` writes them"
        )
    lines += [
        f"  {reason} at {_line_list(where)}" for reason, where in _skip_reasons(report.notices)
    ]
    return lines + ([f"  read as {report.format}: {report.why}"] if report.why else [])


def skip_lines(report: FileReport) -> list[str]:
    """A line per reason entries were skipped: "skipped 5 (lines 1, 2, 9): heading or
    description, not an entry"."""
    return [
        f"skipped {len(where)} ({_line_list(where)}): {reason}"
        for reason, where in _skip_reasons(report.skipped)
    ]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _where(rejected: Rejected) -> str:
    return "?" if rejected.line is None else str(rejected.line)


def _skip_reasons(skipped: list[Rejected]) -> list[tuple[str, list[Rejected]]]:
    """Skipped entries grouped by reason ("not a web link (javascript:)"), most common first."""
    groups: dict[str, list[Rejected]] = {}
    for rejected in skipped:
        groups.setdefault(rejected.reason.split(": ", 1)[0], []).append(rejected)
    return sorted(groups.items(), key=lambda group: -len(group[1]))


def _line_list(entries: list[Rejected]) -> str:
    """ "lines 3, 4, 9" for the first ten, then "…"."""
    shown = ", ".join(_where(r) for r in entries[:MAX_LISTED])
    more = ", …" if len(entries) > MAX_LISTED else ""
    return f"line{'s' if len(entries) > 1 else ''} {shown}{more}"


def problem_lines(report: FileReport) -> list[str]:
    """The lines not understood as failure lines `path:line: reason: text`, ten at most."""
    shown = report.rejected[:MAX_LISTED]
    lines = [f"{report.path}:{_where(r)}: {r.reason}: {shorten(r.text, 60)}" for r in shown]
    if len(report.rejected) > len(shown):
        lines.append(
            f"{report.path}: … and {len(report.rejected) - len(shown)} more lines not understood"
        )
    return lines


# -- `digest import` and `digest add` --------------------------------------------


ImportOutcome = FileReport | FeedListReport | HighlightsReport | Unimported


def import_files(
    store: Store,
    paths: Sequence[Path],
    *,
    zone: ZoneInfo,
    now: datetime,
    forced_format: str | None = None,
    declared: Sequence[SourceConfig] = (),
) -> list[ImportOutcome]:
    """`digest import FILE…`: each file (a folder: every file below it) on its own, so one
    that cannot be read, is empty or is not recognised is an `Unimported` and the others
    are imported all the same.

    A feed list's feeds become feed sources unless `declared` (the config's sources) or
    the database know them already.
    """
    source_id = store.ensure_source(IMPORT_SOURCE, IMPORT_SOURCE)
    outcomes: list[ImportOutcome] = []
    for given in paths:
        try:
            found = files_under(given)
        except SourceError as exc:
            outcomes.append(Unimported(given, _reason_for(exc, given)))
            continue
        if not found.files and not found.left:
            outcomes.append(Unimported(given, "an empty folder, nothing to import", failed=False))
        outcomes.extend(found.left)
        sorting = given.is_dir() and forced_format is None  # saves apart from other documents
        for path in found.files:
            outcomes.append(
                _import_one(store, path, source_id, zone, now, forced_format, declared, sorting)
            )
    return outcomes


def _import_one(
    store: Store,
    path: Path,
    source_id: int,
    zone: ZoneInfo,
    now: datetime,
    forced_format: str | None,
    declared: Sequence[SourceConfig],
    sorting: bool,
) -> ImportOutcome:
    try:
        if sorting and (left := not_saves_nor_highlights(path)) is not None:
            return left
        recorded = store.file_reading(file_key(path))
        if (big := big_file(path, file_size(path), forced_format, recorded)) is not None:
            return save_big(store, big, source_id=source_id, zone=zone, now=now)[0]
        text, bad = good_text(read_bytes(path), path)
        if not text.strip():
            return Unimported(path, "an empty file, nothing to import", failed=False)
        if (highlights := highlights_format(text, forced_format, path)) is not None:
            return import_highlights(store, path, text, highlights, source_id, zone, now)
        planned = _plan(path, text, forced_format, recorded)
        if isinstance(planned, FeedList):
            return import_feed_list(store, planned, declared, now)
        return save(store, replace(planned, bad=bad), source_id=source_id, zone=zone, now=now)
    except (SourceError, ImportFormatError) as exc:
        return Unimported(path, _reason_for(exc, path))
    except Exception as exc:  # a bug: this file is not imported, the others are
        unit_bug(str(path), exc)
        return Unimported(path, bug_reason(exc))


def _reason_for(exc: SourceError | ImportFormatError, path: Path) -> str:
    """The error's line for `Unimported`, which names the file itself."""
    return exc.reason if exc.path == path else str(exc)


def _plan(
    path: Path, text: str, forced_format: str | None, recorded: FileReading | None
) -> Loaded | FeedList:
    if is_feed_list(text, forced_format):
        return read_feed_list(path, text)
    return recognise(path, text, forced_format, recorded)


def add_url(
    store: Store,
    url: str,
    *,
    title: str | None,
    note: str | None,
    saved_at: datetime | None,
    now: datetime,
) -> bool:
    """`digest add URL`: save one link in the "manual" source; True if it was not known.

    A known link keeps its earliest save time; a new note is added to its context.
    Raises ImportFormatError when `url` is not an http(s) address.
    """
    problem = url_problem(url)
    if problem is not None:
        raise ImportFormatError(f"cannot save {url!r}: {problem}")
    item = SavedItem(
        url=url.strip(),
        title=title or None,
        saved_at=saved_at,
        context=note or None,
        kind=ItemKind.LINK,
    )
    source_id = store.ensure_source(MANUAL_SOURCE, MANUAL_SOURCE)
    return store.save_items(source_id, [item], now).new == 1
