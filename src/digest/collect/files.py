"""Files of saved links and posts: `digest import`, `digest add`, and the finding and
reporting that file sources (inbox.py) share.

A file is decoded (filetext.py) and saved in one transaction (filesave.py), or streamed a
block at a time when big (bigfiles.py). An OPML file given to `digest import` is a list of
feeds, added as feed sources (feedlists.py). Files are only ever read: never moved, changed
or deleted.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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
    load,
    recognise,
    save,
)
from digest.collect.filetext import file_size, good_text, read_bytes, read_head, unreadable
from digest.collect.highlights import HighlightsReport, highlights_format, import_highlights
from digest.collect.importers.common import url_problem
from digest.collect.importers.posts import signals_of_posts
from digest.config import IMPORT_SOURCE, MANUAL_SOURCE, SourceConfig
from digest.errors import ImportFormatError, SourceError, bug_reason, unit_bug
from digest.models import FileReading, ItemKind, Rejected, SavedItem
from digest.store import Store
from digest.text import shorten

MAX_LISTED = 10  # problem lines shown per file; the rest are counted


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
    if report.held:
        counts.append(f"{_plural(report.held, 'line')} held back until the file is complete")
    if report.replaced:
        counts.append(f"{report.replaced} items of an earlier reading replaced")
    lines = [f"{report.path}: format {report.format}: {', '.join(counts)}"]
    shown = report.rejected[:MAX_LISTED]
    lines += [f"  line {_where(r)}: {r.reason}: {shorten(r.text, 80)}" for r in shown]
    if len(report.rejected) > len(shown):
        lines.append(f"  … and {len(report.rejected) - len(shown)} more")
    lines += [
        f"  skipped {len(where)} ({_line_list(where)}): {reason}"
        for reason, where in _skip_reasons(report.skipped)
    ]
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


def import_file(
    store: Store,
    path: Path,
    *,
    source_id: int,
    zone: ZoneInfo,
    now: datetime,
    forced_format: str | None = None,
    topic: str | None = None,
) -> FileReport:
    """Import one file into `source_id`; `topic` is given to items the file leaves without one.

    Raises SourceError when the file cannot be read, ImportFormatError when its format is
    not recognised (or `forced_format` is unknown); both name the file.
    """
    recorded = store.file_reading(file_key(path))
    big = big_file(path, file_size(path), forced_format, recorded)
    if big is not None:
        return save_big(store, big, source_id=source_id, zone=zone, now=now, topic=topic)[0]
    loaded = load(path, read_bytes(path), forced_format, recorded)
    return save(store, loaded, source_id=source_id, zone=zone, now=now, topic=topic)


@dataclass(frozen=True)
class Unimported:
    """A file `digest import` did not import, and why; `failed` unless it was just empty."""

    path: Path
    reason: str
    failed: bool = True

    def describe(self) -> list[str]:
        return [f"{self.path}: {self.reason}"]


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
        if sorting and (left := not_saves(path, read_head(path))) is not None:
            return left
        recorded = store.file_reading(file_key(path))
        if (big := big_file(path, file_size(path), forced_format, recorded)) is not None:
            return save_big(store, big, source_id=source_id, zone=zone, now=now)[0]
        text, bad = good_text(read_bytes(path), path)
        if not text.strip():
            return Unimported(path, "an empty file, nothing to import", failed=False)
        if (highlights := highlights_format(text, forced_format)) is not None:
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


@dataclass
class Found:
    """The files a path given to digest holds, and those found but left alone (why)."""

    files: list[Path] = field(default_factory=list)
    left: list[Unimported] = field(default_factory=list)


def _is_list(head: str) -> bool:
    markdown = re.search(r"^\s*(?:#{1,6}\s|\|)", head, re.MULTILINE)
    return markdown is None and len(_ENTRY.findall(head)) >= LIST_ENTRIES


def files_under(root: Path | None, *, follow_symlinks: bool = False) -> Found:
    """`root` if it is a file, else every non-hidden regular file below it, sorted.

    Below a folder, a symbolic link is left alone (and named) unless `follow_symlinks`:
    an inbox can hold a link to a key or a password file the user never meant to save. A
    FIFO, socket or device is left alone wherever it is: reading one can block forever.
    """
    if root is None:
        raise SourceError("a file source needs a path")
    if not root.is_dir():
        if not root.exists():
            raise SourceError("no such file or folder", path=root)
        return _sorted(_regular([root], follow_symlinks=True))
    candidates: list[Path] = []
    unread: list[Unimported] = []
    for folder, dirs, files in os.walk(root, onerror=_unread_folder(root, unread)):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        names = [*files, *(name for name in dirs if _is_link(Path(folder, name)))]
        candidates.extend(Path(folder, name) for name in names if not name.startswith("."))
    found = _regular(candidates, follow_symlinks=follow_symlinks)
    found.left.extend(unread)
    return _sorted(found)


def _unread_folder(root: Path, unread: list[Unimported]) -> Callable[[OSError], None]:
    """What os.walk does with a folder it cannot list: the source's own folder is a
    SourceError; one below it is left behind (named, failed), the rest read."""

    def left_behind(exc: OSError) -> None:
        if Path(exc.filename) == root:
            raise unreadable(exc.filename, exc, "list") from exc
        why = f"a folder that cannot be read ({exc.strerror or exc}): its files are left behind"
        unread.append(Unimported(Path(exc.filename), why))

    return left_behind


def _is_link(path: Path) -> bool:
    try:
        return path.is_symlink()
    except OSError:
        return False  # a folder os.walk then names as unreadable, a file _regular does


def _sorted(found: Found) -> Found:
    return Found(sorted(found.files), sorted(found.left, key=lambda left: left.path))


def _regular(paths: list[Path], *, follow_symlinks: bool) -> Found:
    found = Found()
    for path in paths:
        if _is_link(path) and not follow_symlinks:
            found.left.append(
                _left(
                    path,
                    f"a symbolic link to {_target(path)}, not followed"
                    " (follow_symlinks = true in the source reads it)",
                )
            )
            continue
        try:
            mode = path.stat().st_mode
        except OSError as exc:
            found.left.append(_left(path, f"cannot read it: {exc.strerror or exc}"))
            continue
        if stat.S_ISREG(mode):
            found.files.append(path)
        elif not stat.S_ISDIR(mode):
            found.left.append(_left(path, f"not a regular file ({_kind(mode)})"))
    return found


def _left(path: Path, why: str) -> Unimported:
    return Unimported(path, f"skipped: {why}", failed=False)


def _target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError:
        return "?"


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"))
    return next((name for test, name in kinds if test(mode)), "a device")


# Documents a folder of saves often holds beside them, told by their names.
_DOCUMENT_NAME = re.compile(
    r"^(?:readme|licen[cs]e|copying|notice|authors|contributing|code_of_conduct|security"
    r"|changelog|changes|history)(?:[._-]|$)",
    re.IGNORECASE,
)
_WEB_LINK = re.compile(r"https?://", re.IGNORECASE)
_ENTRY = re.compile(r"^\s*[-*•]\s+\w", re.MULTILINE)
LIST_ENTRIES = 3  # a document with this many `- ` entries and no markdown is a list of saves
_DATED_ENTRY = re.compile(r"^\s{0,3}#{1,6}\s+\d{4}[-/.]\d{1,2}[-/.]\d{1,2}", re.MULTILINE)


def not_saves(path: Path, head: str) -> Unimported | None:
    """A file found in a folder that is no saves file (its start is `head`): a README, a
    licence or a changelog by its name, or a document with no saved link (`http(s)://`), no
    dated entry (`## YYYY-MM-DD`), no plain list of entries (LIST_ENTRIES `- ` lines, no
    markdown heading or table) and none of the signs of pasted posts (closing arrows, emoji
    bullets, `Day N/365`: posts.signals_of_posts). Files given by name, and folder sources with a `format`,
    are read whatever they look like."""
    if _DOCUMENT_NAME.match(path.name):
        why = "a README, licence or changelog, by its name"
    elif not (_WEB_LINK.search(head) or _DATED_ENTRY.search(head) or _is_list(head)):
        if signals_of_posts([line.strip() for line in head.splitlines()], head):
            return None
        why = "no saved links, dated entries, list of entries or signs of pasted posts"
    else:
        return None
    return Unimported(path, f"not a saves file: {why}; skipped", failed=False)


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
