"""Files too big to hold in memory (a journal of years): read a block of lines at a time,
their items saved as they come, so that memory does not grow with the file's size.

Only formats that can be read a line at a time (`formats.LineImporter`) are streamed; a
big file of another format is read whole, as a small one is.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.collect.files import (
    FileReport,
    after_line_only,
    encoding_of,
    file_key,
    load,
    save_result,
    unreadable,
)
from digest.collect.formats import LineImporter, streaming
from digest.collect.importers.common import lines_of
from digest.models import FileReading
from digest.store import Store

STREAM_BYTES = 16 * 1024 * 1024  # files larger than this are streamed when their format allows
READ_BLOCK = 1024 * 1024
HEAD_BYTES = 65536  # what the format is recognised from


@dataclass(frozen=True)
class BigFile:
    path: Path
    importer: LineImporter
    encoding: str
    reading: FileReading
    size: int  # bytes to read: the file's, or fewer while its last line is unfinished


def big_file(
    path: Path, size: int, forced_format: str | None, recorded: FileReading | None
) -> BigFile | None:
    """`path` as a file to stream, when it is big and its format can be read line by line."""
    if size <= STREAM_BYTES:
        return None
    head = read_range(path, 0, HEAD_BYTES)
    loaded = load(path, head, forced_format, recorded)
    importer = streaming(loaded.importer)
    if importer is None:
        return None
    return BigFile(path, importer, encoding_of(head, path), loaded.reading, size)


def read_range(path: Path, start: int, length: int) -> bytes:
    try:
        with path.open("rb") as file:
            file.seek(start)
            return file.read(length)
    except OSError as exc:
        raise unreadable(path, exc) from exc


def blocks(path: Path, size: int) -> Iterator[bytes]:
    """The first `size` bytes of `path`, READ_BLOCK at a time."""
    try:
        with path.open("rb") as file:
            left = size
            while left > 0 and (block := file.read(min(READ_BLOCK, left))):
                left -= len(block)
                yield block
    except OSError as exc:
        raise unreadable(path, exc) from exc


class FileLines:
    """The lines of a big file as `lines_of` would split its text; `ended` counts the
    lines that had their line end once it has been read through."""

    def __init__(self, big: BigFile) -> None:
        self.big = big
        self.ended = 0

    def __iter__(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder(self.big.encoding)(errors="replace")
        pending = ""
        for block in blocks(self.big.path, self.big.size):
            pending += decoder.decode(block)
            held = "\r" if pending.endswith("\r") else ""  # perhaps the half of a \r\n
            lines = lines_of(pending[: len(pending) - len(held)])
            pending = lines.pop() + held
            self.ended += len(lines)
            yield from lines
        lines = lines_of(pending + decoder.decode(b"", final=True))
        self.ended += len(lines) - 1
        yield from lines


def save_big(
    store: Store,
    big: BigFile,
    *,
    source_id: int,
    zone: ZoneInfo,
    now: datetime,
    topic: str | None = None,
    after_line: int = 0,
) -> tuple[FileReport, int]:
    """Parse and save a big file a block at a time, each block its own transaction (one for
    the whole file would grow SQLite's write-ahead log to several times the file); its
    report, and how many of its lines were ended (what a later read of the grown file goes
    on from). Stopped halfway, it leaves the blocks saved so far, and a file source's state
    unrecorded: the next collect reads it again, the store's dedupe by key keeping that right."""
    report = FileReport(big.path, big.importer.name, 0, 0, 0, [], [], why=big.reading.reason)
    opened: list[FileLines] = []

    def open_lines() -> Iterator[str]:
        opened.append(FileLines(big))
        return iter(opened[-1])

    for block in big.importer.parse_stream(open_lines, zone=zone):
        block = after_line_only(block, after_line)
        _add(report, save_result(store, big.path, big.reading, block, source_id, now, zone, topic))
    report.replaced = store.end_reading(file_key(big.path), big.reading, source_id, now)
    return report, opened[-1].ended


def _add(total: FileReport, part: FileReport) -> None:
    total.new += part.new
    total.duplicates += part.duplicates
    total.notes += part.notes
    total.redated += part.redated
    total.rejected += part.rejected
    total.skipped += part.skipped
    total.dates = tuple(sorted({*total.dates, *part.dates}))
    total.weeks = tuple(sorted({*total.weeks, *part.weeks}))
