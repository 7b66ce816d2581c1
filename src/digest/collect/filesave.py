"""One file's items saved in one transaction, and what that did (FileReport): the step that
`digest import`, file sources (inbox.py) and big files read in blocks (bigfiles.py) share.

A file's format is sniffed by the importer registry (or forced); an OPML list of feeds is
refused here (files.py adds its feeds as sources).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import TypeVar
from zoneinfo import ZoneInfo

from digest.collect.feedlists import OPML
from digest.collect.filetext import good_text
from digest.collect.formats import Importer, ImportResult
from digest.collect.importers import find_reading
from digest.collect.importers.common import storable
from digest.collect.importers.opml import is_opml
from digest.errors import ImportFormatError
from digest.lifecycle import ReadingEnded
from digest.models import FileReading, ItemKind, Rejected, SavedItem
from digest.periods import week_label
from digest.store import Store

_Lined = TypeVar("_Lined", SavedItem, Rejected)


@dataclass
class FileReport:
    """What importing one file did."""

    path: Path
    format: str
    new: int
    duplicates: int
    notes: int  # notes: items without a URL, other than posts
    rejected: list[Rejected]  # lines not understood
    skipped: list[Rejected]  # deliberately not imported (javascript: links, headings…)
    dates: tuple[date, ...] = ()  # the days its dated items were saved, sorted
    weeks: tuple[str, ...] = ()  # the ISO weeks they fall in, sorted
    redated: int = 0  # dates after tomorrow or before 1995, replaced by the time first seen
    posts: int = 0  # saved posts (their links are the post's, followed where they can be)
    notices: list[Rejected] = field(default_factory=list)  # imported, with a word (guessed splits)
    why: str = ""  # why the file was read in this format
    held: int = 0  # lines held back until the file is complete (a last line without its end)
    replaced: int = 0  # items of an earlier reading in another format, removed


@dataclass(frozen=True)
class Loaded:
    path: Path
    importer: Importer
    text: str
    reading: FileReading
    bad: list[Rejected] = field(default_factory=list)  # lines skipped: binary, undecodable


def load(
    path: Path, data: bytes, forced_format: str | None, recorded: FileReading | None = None
) -> Loaded:
    """The file's text without its bad lines (reported), and how to read it
    (importers.find_reading); ImportFormatError names the file."""
    text, bad = good_text(data, path)
    return replace(recognise(path, text, forced_format, recorded), bad=bad)


def recognise(
    path: Path, text: str, forced_format: str | None, recorded: FileReading | None
) -> Loaded:
    if is_feed_list(text, forced_format):
        raise ImportFormatError(
            "an OPML list of feeds, not saved links; add its feeds with `digest import`",
            path=path,
        )
    try:
        importer, reading = find_reading(text, forced_format, recorded)
    except ImportFormatError as exc:
        raise ImportFormatError(exc.reason, path=path) from exc
    return Loaded(path, importer, text, reading)


def save(
    store: Store,
    loaded: Loaded,
    *,
    source_id: int,
    zone: ZoneInfo,
    now: datetime,
    topic: str | None = None,
    after_line: int = 0,
) -> FileReport:
    """Parse the whole file and save its items; with `after_line`, only what lies after it
    (items, and problems to report) is saved and reported."""
    try:
        result: ImportResult = loaded.importer.parse(loaded.text, zone=zone)
    except ImportFormatError as exc:  # sniffed as the format, yet broken (invalid JSON…)
        raise ImportFormatError(exc.reason, path=loaded.path) from exc
    result = after_line_only(replace(result, rejected=[*loaded.bad, *result.rejected]), after_line)
    report = save_result(store, loaded.path, loaded.reading, result, source_id, now, zone, topic)
    ended = ReadingEnded(file_key(loaded.path), loaded.reading, source_id, now)
    report.replaced = store.apply_file(ended)
    return report


def file_key(path: Path) -> str:
    """How the store names a file (its readings, its state as a source): a name's bytes
    that are not UTF-8 (surrogateescape) written as `\\xe9`, which SQLite can store."""
    return os.fsencode(path.absolute()).decode("utf-8", "backslashreplace")


def after_line_only(result: ImportResult, line: int) -> ImportResult:
    """What of `result` lies after `line` (everything for 0)."""
    if not line:
        return result
    return ImportResult(
        items=_after(result.items, line),
        rejected=_after(result.rejected, line),
        skipped=_after(result.skipped, line),
        notices=_after(result.notices, line),
    )


def save_result(
    store: Store,
    path: Path,
    reading: FileReading,
    result: ImportResult,
    source_id: int,
    now: datetime,
    zone: ZoneInfo,
    topic: str | None = None,
) -> FileReport:
    """Save the items of `result` (given `topic` where they have none) and report."""
    items = [
        storable(replace(item, topic=topic) if topic and not item.topic else item)
        for item in result.items
    ]
    saved = store.save_file_items(file_key(path), reading, source_id, items, now)
    return FileReport(
        path=path,
        format=reading.format,
        new=saved.new,
        duplicates=saved.duplicates,
        notes=sum(1 for item in items if item.url is None and item.kind is not ItemKind.POST),
        rejected=result.rejected,
        skipped=result.skipped,
        dates=tuple(sorted({i.saved_at.astimezone(zone).date() for i in items if i.saved_at})),
        weeks=tuple(sorted({week_label(i.saved_at, zone) for i in items if i.saved_at})),
        redated=saved.redated,
        posts=sum(1 for item in items if item.kind is ItemKind.POST),
        notices=result.notices,
        why=reading.reason,
    )


def _after(entries: list[_Lined], line: int) -> list[_Lined]:
    return [entry for entry in entries if entry.line is None or entry.line > line]


def is_feed_list(text: str, forced_format: str | None) -> bool:
    return forced_format == OPML or (forced_format is None and is_opml(text[:65536]))
