"""Files of saved links and posts: file/folder sources, `digest import` and `digest add`.

A file's bytes are decoded (UTF-8, UTF-16 with a BOM, else cp1252/latin-1 when UTF-8
fails badly), its format is sniffed by the importer registry (or forced), and its items
are saved in one transaction. Files are only ever read: never moved, changed or deleted.

A file source remembers each file's size, mtime_ns and SHA-256 fingerprint. Every collect
hashes the file (cheap next to parsing) and skips decoding, parsing and saving when the
fingerprint is unchanged. The fingerprint, not size and mtime, decides: an edit that
keeps both (`touch -r`, `rsync -t`, coarse file-system clocks) is still seen.
"""

from __future__ import annotations

import codecs
import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.collect.formats import Importer, ImportResult, find_importer
from digest.collect.importers.common import shorten, url_problem
from digest.config import SourceConfig
from digest.errors import ImportFormatError, SourceError
from digest.models import ItemKind, Rejected, SavedItem, StageReport
from digest.store import Store

MAX_LISTED = 10  # problem lines shown per file; the rest are counted
MANUAL_SOURCE = ("manual", "manual")
IMPORT_SOURCE = ("import", "import")


@dataclass
class FileReport:
    """What importing one file did."""

    path: Path
    format: str
    new: int
    duplicates: int
    notes: int  # items without a URL
    rejected: list[Rejected]  # lines not understood
    skipped: list[Rejected]  # deliberately not imported (javascript: links, headings…)


@dataclass(frozen=True)
class _Loaded:
    path: Path
    importer: Importer
    text: str


# -- reporting ------------------------------------------------------------------


def describe(report: FileReport) -> list[str]:
    """The lines `digest import` prints for one file: a summary, then what was not understood."""
    counts = [
        f"{report.new} new",
        _plural(report.duplicates, "duplicate"),
        _plural(report.notes, "note") + " without URL",
        _plural(len(report.rejected), "line") + " not understood",
    ]
    if report.skipped:
        counts.append(f"{len(report.skipped)} skipped")
    lines = [f"{report.path}: format {report.format}: {', '.join(counts)}"]
    shown = report.rejected[:MAX_LISTED]
    lines += [f"  line {_where(r)}: {r.reason}: {shorten(r.text)}" for r in shown]
    if len(report.rejected) > len(shown):
        lines.append(f"  … and {len(report.rejected) - len(shown)} more")
    lines += [f"  skipped {n}: {reason}" for reason, n in _skip_reasons(report.skipped)]
    return lines


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _where(rejected: Rejected) -> str:
    return "?" if rejected.line is None else str(rejected.line)


def _skip_reasons(skipped: list[Rejected]) -> list[tuple[str, int]]:
    """Skipped entries grouped by reason ("not a web link (javascript:)": 12)."""
    return Counter(r.reason.split(": ", 1)[0] for r in skipped).most_common()


def _failure_lines(report: FileReport) -> list[str]:
    shown = report.rejected[:MAX_LISTED]
    lines = [f"{report.path}:{_where(r)}: {r.reason}: {shorten(r.text, 60)}" for r in shown]
    if len(report.rejected) > len(shown):
        lines.append(
            f"{report.path}: … and {len(report.rejected) - len(shown)} more lines not understood"
        )
    return lines


# -- reading ------------------------------------------------------------------


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from exc


def decode(data: bytes, path: Path) -> str:
    """Text of a file: UTF-8 (BOM or not), UTF-16 with a BOM, else a Western legacy encoding."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data[:8192]:
        raise ImportFormatError(f"{path}: a binary file, not text")
    text = data.decode("utf-8-sig", errors="replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    if bad > 3 and bad * 1000 > len(text):  # many broken sequences: not UTF-8 at all
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            return data.decode("latin-1")
    return text


def _load(path: Path, data: bytes, forced_format: str | None) -> _Loaded:
    text = decode(data, path)
    try:
        importer = find_importer(text, forced_format)
    except ImportFormatError as exc:
        raise ImportFormatError(f"{path}: {exc}") from exc
    return _Loaded(path, importer, text)


def _save(
    store: Store,
    loaded: _Loaded,
    *,
    source_id: int,
    zone: ZoneInfo,
    now: datetime,
    topic: str | None = None,
) -> FileReport:
    result: ImportResult = loaded.importer.parse(loaded.text, zone=zone)
    items = [
        replace(item, topic=topic) if topic and not item.topic else item for item in result.items
    ]
    saved = store.save_items(source_id, items, now)
    return FileReport(
        path=loaded.path,
        format=loaded.importer.name,
        new=saved.new,
        duplicates=saved.duplicates,
        notes=sum(1 for item in items if item.url is None),
        rejected=result.rejected,
        skipped=result.skipped,
    )


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
    loaded = _load(path, read_bytes(path), forced_format)
    return _save(store, loaded, source_id=source_id, zone=zone, now=now, topic=topic)


def import_files(
    store: Store,
    paths: Sequence[Path],
    *,
    zone: ZoneInfo,
    now: datetime,
    forced_format: str | None = None,
) -> list[FileReport]:
    """`digest import FILE…`: every file is read and recognised before any is saved,
    so a typo in one name imports nothing rather than half."""
    loaded = [_load(path, read_bytes(path), forced_format) for path in paths]
    source_id = store.ensure_source(*IMPORT_SOURCE)
    return [_save(store, one, source_id=source_id, zone=zone, now=now) for one in loaded]


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
    source_id = store.ensure_source(*MANUAL_SOURCE)
    return store.save_items(source_id, [item], now).new == 1


# -- file and folder sources ----------------------------------------------------


def collect_file_source(
    store: Store, source: SourceConfig, source_id: int, zone: ZoneInfo, now: datetime
) -> StageReport:
    """Import the new or changed files of a file source (a file, or a folder searched
    recursively, hidden files left out); `done` counts new items.

    A file that cannot be read or recognised is a failure line and the others go on; so
    is every line not understood (`path:line: reason: text`). The source is marked failing
    only when its path itself is missing or unreadable.
    """
    report = StageReport("collect files")
    try:
        paths = files_under(source.path)
    except SourceError as exc:
        report.failures.append(f"{source.name}: {exc}")
        store.record_source_failure(source_id, str(exc), now, None)
        return report
    for path in paths:
        try:
            outcome = _collect_one(store, path, source, source_id, zone, now)
        except (SourceError, ImportFormatError) as exc:
            report.failures.append(str(exc))
            continue
        if outcome is not None:
            report.done += outcome.new
            report.info.append(describe(outcome)[0])
            report.failures.extend(_failure_lines(outcome))
    store.record_source_success(source_id, now)
    return report


def files_under(root: Path | None) -> list[Path]:
    """`root` if it is a file, else every non-hidden regular file below it, sorted."""
    if root is None:
        raise SourceError("a file source needs a path")
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise SourceError(f"{root}: no such file or folder")
    found: list[Path] = []
    for folder, dirs, files in os.walk(root, onerror=_raise_source_error):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        found.extend(Path(folder, name) for name in files if not name.startswith("."))
    return sorted(path for path in found if path.is_file())


def _raise_source_error(exc: OSError) -> None:
    raise SourceError(f"cannot list {exc.filename}: {exc.strerror or exc}") from exc


def _collect_one(
    store: Store, path: Path, source: SourceConfig, source_id: int, zone: ZoneInfo, now: datetime
) -> FileReport | None:
    """Import `path` unless its fingerprint is the one recorded; None when unchanged."""
    try:
        stat = path.stat()  # before reading: a write racing the read is seen next time
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    data = read_bytes(path)
    fingerprint = hashlib.sha256(data).hexdigest()
    key = str(path.absolute())
    state = store.file_state(key)
    if state is not None and state["fingerprint"] == fingerprint:
        if (state["size"], state["mtime_ns"]) != (stat.st_size, stat.st_mtime_ns):
            _remember(store, key, stat, fingerprint, data, now)  # only touched
        return None
    loaded = _load(path, data, source.format)
    report = _save(store, loaded, source_id=source_id, zone=zone, now=now, topic=source.topic)
    _remember(store, key, stat, fingerprint, data, now)
    return report


def _remember(
    store: Store, key: str, stat: os.stat_result, fingerprint: str, data: bytes, now: datetime
) -> None:
    store.save_file_state(
        key,
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        fingerprint=fingerprint,
        lines_read=data.count(b"\n") + 1,
        now=now,
    )
