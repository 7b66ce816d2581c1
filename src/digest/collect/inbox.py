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

A last line without a line end may be one still being written (a writer can pause in the
middle of a line for any time): it is held back, its bytes counted (`held`), and read only
when a later collect finds the file as it was (same size, held bytes included, and same
mtime), the writer done with it; a file that only grew reads on from it as usual.
`digest import` (files.py) reads a file whole: it is given a file, not watching one.

A file whose size or mtime moved while it was read is never half-imported. A file read
whole in memory is not imported at all, and read again on the next collect. A big file is
saved a block at a time as it is streamed (bigfiles.py), so its blocks are saved before
the change is seen: that reading is voided (lifecycle.ReadingVoided), and the next
collect reads the file whole and removes the items only the voided reading gave.

A file no longer found below the source's path is forgotten (its state, reading and the
lines its items came from), its items kept; put back, it is read again as a new file.
Files imported by `digest import` are not watched: their readings stay.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.collect.bigfiles import READ_BLOCK, BigFile, big_file, blocks, read_range, save_big
from digest.collect.files import describe, problem_lines, skip_lines
from digest.collect.filesave import FileReport, file_key, load, save
from digest.collect.filetext import Opener, open_binary, read_bytes, read_head, unreadable
from digest.collect.finding import Found, Unimported, files_under, not_saves
from digest.config import SourceConfig
from digest.errors import ImportFormatError, SourceError, StoreError, unit_bug
from digest.lifecycle import FileSeen, FilesGone, ReadingVoided, SourceChecked, SourceFailed
from digest.models import FileReading, Rejected, Stage, StageReport
from digest.store import Store
from digest.store.records import FileState

RACY_WINDOW_NS = 2_000_000_000


@dataclass(frozen=True)
class _Seen:
    """A file as read now: its stat, when it was taken, and its content's hashes."""

    stat: os.stat_result
    size: int  # of what was read: less than the file's while its last line is unfinished
    checked_ns: int
    fingerprint: str
    grown: bool  # it starts with exactly the bytes read last time, and has more
    held: int  # bytes of an unfinished last line, after `size`, left for a later collect


def collect_file_source(
    store: Store,
    source: SourceConfig,
    source_id: int,
    zone: ZoneInfo,
    now: datetime,
    *,
    open_file: Opener = open_binary,
) -> StageReport:
    """Import the new or changed files of a file source (a file, or a folder searched
    recursively, hidden files left out), each opened by `open_file`; `done` counts new items.

    A file that cannot be read or recognised is a failure line and the others go on; so
    is every line not understood (`path:line: reason: text`). The source is marked failing
    when its path itself is missing or unreadable, or when every one of its files failed.
    """
    report = StageReport(Stage.COLLECT, part="files")
    try:
        found = files_under(source.path, follow_symlinks=source.follow_symlinks)
    except SourceError as exc:
        report.failures.append(f"{source.name}: {exc}")
        store.apply_source(SourceFailed(source_id, str(exc), now))
        return report
    for left in found.left:  # a folder that cannot be read has failed; the rest is news
        (report.failures if left.failed else report.info).extend(left.describe())
        report.left_behind += left.failed
    _forget_gone(store, source.path, found)
    paths = found.files
    file_errors: list[str] = []
    for path in paths:
        try:
            outcome = _collect_one(store, path, source, source_id, zone, now, open_file)
        except (SourceError, ImportFormatError) as exc:
            file_errors.append(str(exc))
            report.failures.append(str(exc))
            report.left_behind += isinstance(exc, SourceError)
            continue
        except StoreError:
            raise  # the store cannot take saves (a full disk): the run stops, one line
        except Exception as exc:  # a bug: this file fails, the others go on
            file_errors.append(line := unit_bug(str(path), exc))
            report.failures.append(line)
            continue
        if isinstance(outcome, Unimported):
            report.info.extend(outcome.describe())
        elif outcome is not None:
            report.done += outcome.new
            report.info.append(describe(outcome)[0])  # the rest: problem lines, skips
            report.info.extend(f"{outcome.path}: {line}" for line in skip_lines(outcome))
            report.failures.extend(problem_lines(outcome))
    if paths and len(file_errors) == len(paths):
        error = f"every file failed ({len(paths)}), last: {file_errors[-1]}"
        store.apply_source(SourceFailed(source_id, error, now))
    else:
        store.apply_source(SourceChecked(source_id, now))
    return report


def _forget_gone(store: Store, root: Path | None, found: Found) -> None:
    """Forget the files below `root` that are no longer there (lifecycle.FilesGone)."""
    if root is None:
        return
    here = {file_key(path) for path in found.files} | {file_key(left.path) for left in found.left}
    gone = tuple(path for path in store.file_paths(file_key(root)) if path not in here)
    store.apply_file(FilesGone(gone))


def _collect_one(
    store: Store,
    path: Path,
    source: SourceConfig,
    source_id: int,
    zone: ZoneInfo,
    now: datetime,
    open_file: Opener,
) -> FileReport | Unimported | None:
    """Import what is new in `path`; None when nothing changed since it was last read, an
    Unimported when it is left alone (too big, no saves file, written to while read)."""
    key = file_key(path)
    state = store.file_state(key)
    checked_ns = time.time_ns()
    stat = _stat(path)  # before reading: a write racing the read is seen next time
    settled = state is not None and _same_stat(state, stat)
    if state is not None and settled and not state.held and _trusted(state, stat):
        return None
    left = _left_alone(path, source, stat)
    if left is not None:  # remembered, so that it is said once, not on every collect
        _remember(store, key, _Seen(stat, stat.st_size, checked_ns, "", False, 0), 0, now)
        return left
    recorded = store.file_reading(key)
    big_or_data, seen = _read(
        path, source, stat, checked_ns, state, recorded, open_file, whole=settled
    )
    if _moved(path, stat):  # written to while read: what was read may be half of either
        return Unimported(path, "changed while it was read; read again on the next collect")
    if not seen.size:
        _remember(store, key, seen, 0, now)  # only a line still being written: next time
        return None
    if state is not None and seen.fingerprint == state.fingerprint:
        _remember(store, key, seen, state.lines_read, now)  # touched, racy, or a line unfinished
        return None
    if isinstance(big_or_data, bytes) and not big_or_data.strip():
        _remember(store, key, seen, 0, now)  # blank (a placeholder, being written): nothing to read
        return None
    grown_from = state.lines_read if state and seen.grown else 0
    report, lines_ended = _import(
        store, path, big_or_data, source, source_id, zone, now, grown_from, recorded
    )
    report.held = 1 if seen.held else 0
    if isinstance(big_or_data, BigFile) and _moved(path, stat):  # streamed while written to
        store.apply_file(ReadingVoided(key))  # what it gave stands until the next read replaces it
        report.rejected.append(
            Rejected(None, "", "changed while it was read; read again whole next collect")
        )
        return report
    _remember(store, key, seen, lines_ended, now)
    return report


def _read(
    path: Path,
    source: SourceConfig,
    stat: os.stat_result,
    checked_ns: int,
    state: FileState | None,
    recorded: FileReading | None,
    open_file: Opener,
    *,
    whole: bool,
) -> tuple[BigFile | bytes, _Seen]:
    """The file's bytes (or, for a big file, what to stream), up to its last line end unless
    `whole`; and what was seen of them."""
    big = big_file(path, stat.st_size, source.format, recorded, open_file)
    if big is None:
        data = read_bytes(path, open_file)
        complete = data if whole else complete_part(data)
        held = len(data) - len(complete)
        return complete, _seen([complete], stat, checked_ns, state, held)
    tail = read_range(path, max(0, big.size - READ_BLOCK), READ_BLOCK, open_file)
    kept = tail if whole else complete_part(tail)
    big = replace(big, size=big.size - len(tail) + len(kept))
    held = len(tail) - len(kept)
    return big, _seen(blocks(path, big.size, open_file), stat, checked_ns, state, held)


def _import(
    store: Store,
    path: Path,
    what: BigFile | bytes,
    source: SourceConfig,
    source_id: int,
    zone: ZoneInfo,
    now: datetime,
    grown_from: int,
    recorded: FileReading | None,
) -> tuple[FileReport, int]:
    """Save the file's items (only those after line `grown_from` when the format allows);
    its report, and how many lines of it were ended."""
    topic = source.topic
    if isinstance(what, BigFile):
        after = grown_from if what.importer.appendable else 0
        return save_big(
            store, what, source_id=source_id, zone=zone, now=now, topic=topic, after_line=after
        )
    loaded = load(path, what, source.format, recorded)
    after = grown_from if loaded.importer.appendable else 0
    report = save(
        store, loaded, source_id=source_id, zone=zone, now=now, topic=topic, after_line=after
    )
    return report, complete_lines(loaded.text)


def _left_alone(path: Path, source: SourceConfig, stat: os.stat_result) -> Unimported | None:
    """Why `path` is not read: over the source's size limit, or in a folder and no saves
    file (files.not_saves); None to read it."""
    limit = int(source.max_file_mb * 1024 * 1024)
    if stat.st_size > limit:
        return Unimported(
            path,
            f"skipped: {_megabytes(stat.st_size)}, over the source's limit of"
            f" {_megabytes(limit)} (max_file_mb)",
            failed=False,
        )
    if source.format is None and source.path is not None and source.path.is_dir():
        return not_saves(path, read_head(path))
    return None


def _megabytes(size: int) -> str:
    megabytes = size / 1024 / 1024
    return f"{megabytes:.0f} MB" if megabytes >= 1 else f"{size / 1024:.0f} KB"


def _moved(path: Path, before: os.stat_result) -> bool:
    """The file's size or mtime is no longer what it was before it was read."""
    after = _stat(path)
    return (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns)


def _stat(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except OSError as exc:
        raise unreadable(path, exc) from exc


def _same_stat(state: FileState, stat: os.stat_result) -> bool:
    """The file is as recorded: its size (held bytes included), mtime, inode and device."""
    return (state.size + state.held, state.mtime_ns, state.inode, state.device) == (
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ino,
        stat.st_dev,
    )


def _trusted(state: FileState, stat: os.stat_result) -> bool:
    """The stat was taken late enough after the mtime to be trusted (see the docstring)."""
    return stat.st_mtime_ns + RACY_WINDOW_NS <= state.checked_ns


def _seen(
    chunks: Iterable[bytes],
    stat: os.stat_result,
    checked_ns: int,
    state: FileState | None,
    held: int,
) -> _Seen:
    """The hashes of the bytes read (given a chunk at a time), and whether they start with
    exactly the bytes read last time."""
    previous = state.size if state is not None else 0
    hasher, size, before = hashlib.sha256(), 0, None
    for chunk in chunks:
        if before is None and size + len(chunk) >= previous:
            hasher.update(memoryview(chunk)[: previous - size])
            before = hasher.hexdigest()
            hasher.update(memoryview(chunk)[previous - size :])
        else:
            hasher.update(chunk)
        size += len(chunk)
    grown = state is not None and size > previous and before == state.fingerprint
    return _Seen(stat, size, checked_ns, hasher.hexdigest(), grown, held)


def complete_part(data: bytes) -> bytes:
    """`data` up to its last line end: what follows may be a line still being written."""
    if data.endswith((b"\n", b"\r")):
        return data
    return data[: max(data.rfind(b"\n"), data.rfind(b"\r")) + 1]


def complete_lines(text: str) -> int:
    """How many lines of `text` are ended (by \\n, \\r\\n or \\r, as the importers count)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def _remember(store: Store, key: str, seen: _Seen, lines_read: int, now: datetime) -> None:
    store.apply_file(
        FileSeen(
            key,
            size=seen.size,
            mtime_ns=seen.stat.st_mtime_ns,
            inode=seen.stat.st_ino,
            device=seen.stat.st_dev,
            checked_ns=seen.checked_ns,
            fingerprint=seen.fingerprint,
            lines_read=lines_read,
            at=now,
            held=seen.held,
        )
    )
