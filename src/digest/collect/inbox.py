"""File and folder sources: re-scanned on every collect, each file read only when it changed.

A file is skipped without being opened while its stat (size, mtime_ns, inode, device) is
the one recorded when it was last read, unless that mtime was within RACY_WINDOW_NS of
the read: a change made in the same clock tick (or on a file system that keeps mtimes to
two seconds) could leave it unmoved, so such a file is hashed again next time, as git
does with "racily clean" entries.

A file whose stat changed is read and its SHA-256 compared with the one recorded: a touch
without a change imports nothing. A file that grew, whose first `size` bytes hash to the
recorded fingerprint, is parsed whole (so a journal's date headings still date what was
added under them) but only the items and problems on lines after the `lines_read` complete
lines of last time are saved and reported, for formats whose items keep to their own
lines (`Importer.appendable`); any other change imports the whole file again, and the
store's dedupe by key keeps that right. Files are only ever read: never moved, changed or
deleted.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from digest.collect.files import (
    FileReport,
    describe,
    files_under,
    load,
    problem_lines,
    read_bytes,
    save,
)
from digest.config import SourceConfig
from digest.errors import ImportFormatError, SourceError, unit_bug
from digest.models import StageReport
from digest.store import Store

RACY_WINDOW_NS = 2_000_000_000


@dataclass(frozen=True)
class _Seen:
    """A file as read now: its stat, when it was taken, and its content's hashes."""

    stat: os.stat_result
    checked_ns: int
    fingerprint: str
    grown: bool  # it starts with exactly the bytes read last time, and has more


def collect_file_source(
    store: Store, source: SourceConfig, source_id: int, zone: ZoneInfo, now: datetime
) -> StageReport:
    """Import the new or changed files of a file source (a file, or a folder searched
    recursively, hidden files left out); `done` counts new items.

    A file that cannot be read or recognised is a failure line and the others go on; so
    is every line not understood (`path:line: reason: text`). The source is marked failing
    when its path itself is missing or unreadable, or when every one of its files failed.
    """
    report = StageReport("collect files")
    try:
        paths = files_under(source.path)
    except SourceError as exc:
        report.failures.append(f"{source.name}: {exc}")
        store.record_source_failure(source_id, str(exc), now, None)
        return report
    file_errors: list[str] = []
    for path in paths:
        try:
            outcome = _collect_one(store, path, source, source_id, zone, now)
        except (SourceError, ImportFormatError) as exc:
            file_errors.append(str(exc))
            report.failures.append(str(exc))
            continue
        except Exception as exc:  # a bug: this file fails, the others go on
            file_errors.append(line := unit_bug(str(path), exc))
            report.failures.append(line)
            continue
        if outcome is not None:
            report.done += outcome.new
            report.info.append(describe(outcome)[0])
            report.failures.extend(problem_lines(outcome))
    if paths and len(file_errors) == len(paths):
        error = f"every file failed ({len(paths)}), last: {file_errors[-1]}"
        store.record_source_failure(source_id, error, now, None)
    else:
        store.record_source_success(source_id, now)
    return report


def _collect_one(
    store: Store, path: Path, source: SourceConfig, source_id: int, zone: ZoneInfo, now: datetime
) -> FileReport | None:
    """Import what is new in `path`; None when nothing changed since it was last read."""
    key = str(path.absolute())
    state = store.file_state(key)
    checked_ns = time.time_ns()
    stat = _stat(path)  # before reading: a write racing the read is seen next time
    if state is not None and _unchanged(state, stat):
        return None
    data = read_bytes(path)
    seen = _seen(data, stat, checked_ns, state)
    if state is not None and seen.fingerprint == state["fingerprint"]:
        _remember(store, key, seen, state["lines_read"], now)  # touched, or racy last time
        return None
    if not data.strip():  # an empty file (a placeholder, a file being written): nothing to read
        _remember(store, key, seen, 0, now)
        return None
    loaded = load(path, data, source.format)
    after = state["lines_read"] if state and seen.grown and loaded.importer.appendable else 0
    report = save(
        store,
        loaded,
        source_id=source_id,
        zone=zone,
        now=now,
        topic=source.topic,
        after_line=after,
    )
    _remember(store, key, seen, complete_lines(loaded.text), now)
    return report


def _stat(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _unchanged(state: dict[str, Any], stat: os.stat_result) -> bool:
    """The stat is the one recorded, and was taken late enough after the mtime to trust it."""
    same = (state["size"], state["mtime_ns"], state["inode"], state["device"]) == (
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ino,
        stat.st_dev,
    )
    return same and stat.st_mtime_ns + RACY_WINDOW_NS <= state["checked_ns"]


def _seen(
    data: bytes, stat: os.stat_result, checked_ns: int, state: dict[str, Any] | None
) -> _Seen:
    previous = state["size"] if state is not None else 0
    hasher = hashlib.sha256(memoryview(data)[:previous])
    grown = (
        state is not None and len(data) > previous and hasher.hexdigest() == state["fingerprint"]
    )
    hasher.update(memoryview(data)[previous:])
    return _Seen(stat, checked_ns, hasher.hexdigest(), grown)


def complete_lines(text: str) -> int:
    """How many lines of `text` are ended (by \\n, \\r\\n or \\r, as the importers count)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def _remember(store: Store, key: str, seen: _Seen, lines_read: int, now: datetime) -> None:
    store.save_file_state(
        key,
        size=seen.stat.st_size,
        mtime_ns=seen.stat.st_mtime_ns,
        inode=seen.stat.st_ino,
        device=seen.stat.st_dev,
        checked_ns=seen.checked_ns,
        fingerprint=seen.fingerprint,
        lines_read=lines_read,
        now=now,
    )
