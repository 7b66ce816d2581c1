"""Files too big to hold in memory (a journal of years): read a block of lines at a time,
their items saved as they come, so that memory does not grow with the file's size.

Only formats that can be read a line at a time (`formats.LineImporter`) are streamed; a
big file of another format is read whole, as a small one is.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.collect.filesave import FileReport, after_line_only, file_key, load, save_result
from digest.collect.filetext import (
    HEAD_BYTES,
    Opener,
    encoding_of,
    line_problem,
    open_binary,
    unreadable,
    without_controls,
)
from digest.collect.formats import (
    ImportResult,
    LineImporter,
    RecordImporter,
    record_streaming,
    streaming,
)
from digest.collect.importers.common import lines_of
from digest.lifecycle import ReadingEnded
from digest.models import FileReading, Rejected
from digest.store import Store

STREAM_BYTES = 16 * 1024 * 1024  # files larger than this are streamed when their format allows
READ_BLOCK = 1024 * 1024


@dataclass(frozen=True)
class BigFile:
    path: Path
    importer: LineImporter | RecordImporter
    encoding: str
    reading: FileReading
    size: int  # bytes to read: the file's, or fewer while its last line is unfinished
    open_file: Opener = field(default=open_binary, compare=False)


def big_file(
    path: Path,
    size: int,
    forced_format: str | None,
    recorded: FileReading | None,
    open_file: Opener = open_binary,
) -> BigFile | None:
    """`path` as a file to stream, when it is big and its format can be read line by line."""
    if size <= STREAM_BYTES:
        return None
    head = read_range(path, 0, HEAD_BYTES, open_file)
    loaded = load(path, head, forced_format, recorded)
    importer = streaming(loaded.importer) or record_streaming(loaded.importer)
    if importer is None:
        return None
    return BigFile(path, importer, encoding_of(head, path), loaded.reading, size, open_file)


def read_range(path: Path, start: int, length: int, open_file: Opener = open_binary) -> bytes:
    try:
        with open_file(path) as file:
            file.seek(start)
            return file.read(length)
    except OSError as exc:
        raise unreadable(path, exc) from exc


def blocks(path: Path, size: int, open_file: Opener = open_binary) -> Iterator[bytes]:
    """The first `size` bytes of `path`, READ_BLOCK at a time."""
    try:
        with open_file(path) as file:
            left = size
            while left > 0 and (block := file.read(min(READ_BLOCK, left))):
                left -= len(block)
                yield block
    except OSError as exc:
        raise unreadable(path, exc) from exc


LINE_CAP = 65536  # characters of a line that are read; the rest is skipped and reported


def _line_end(block: bytes) -> int:
    """Where the first line end of `block` is (\\n or \\r), or -1."""
    ends = [at for at in (block.find(b"\n"), block.find(b"\r")) if at >= 0]
    return min(ends, default=-1)


class FileLines:
    """The lines of a big file as `lines_of` would split its text; `ended` counts the
    lines that had their line end once it has been read through.

    A line longer than LINE_CAP is cut there and the rest skipped unread into memory (a
    sparse file is one endless line of NULs); a line holding binary bytes or undecodable
    ones (filetext.line_problem) is given as blank. Both are in `problems`, by line."""

    def __init__(self, big: BigFile) -> None:
        self.big = big
        self.ended = 0
        self.problems: list[Rejected] = []

    def __iter__(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder(self.big.encoding)(errors="replace")
        pending, dropped, dropping = "", 0, False
        for block in blocks(self.big.path, self.big.size, self.big.open_file):
            if dropping:  # the rest of an endless line: skipped undecoded, to its line end
                end = _line_end(block)
                dropped += len(block) if end < 0 else end
                if end < 0:
                    continue
                block, dropping = block[end:], False
                decoder.reset()
            pending += decoder.decode(block)
            held = "\r" if pending.endswith("\r") else ""  # perhaps the half of a \r\n
            lines = lines_of(pending[: len(pending) - len(held)])
            pending = lines.pop() + held
            for line in lines:
                yield self._checked(line, dropped)
                dropped = 0
            if len(pending) > LINE_CAP:  # a line without end in sight: keep its start only
                dropped += len(pending) - LINE_CAP
                pending = pending[:LINE_CAP]
                dropping = self.big.encoding != "utf-16"  # its line ends are two bytes
        for line in lines_of(pending + decoder.decode(b"", final=True)):
            yield self._checked(line, dropped)
            dropped = 0
        self.ended -= 1  # the last piece had no line end

    def _checked(self, line: str, dropped: int) -> str:
        """`line` (line `ended` + 1) capped, or blank when it is bad; counted as ended."""
        self.ended += 1
        if dropped or len(line) > LINE_CAP:
            skipped = dropped + max(0, len(line) - LINE_CAP)
            line = line[:LINE_CAP]
            why = (
                f"line longer than {LINE_CAP // 1024} KB: the rest ({skipped:,} characters) skipped"
            )
            self.problems.append(Rejected(self.ended, line[:200], why))
        if (problem := line_problem(line)) is not None:
            self.problems.append(
                Rejected(self.ended, line[:200].replace("\x00", "\ufffd"), problem)
            )
            return ""
        return without_controls(line)


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
    on from). Stopped halfway, or cut by a change to the file (inbox.py voids that reading),
    it leaves the blocks saved so far until the next whole read of the file replaces them."""
    report = FileReport(big.path, big.importer.name, 0, 0, 0, [], [], why=big.reading.reason)
    opened: list[FileLines] = []

    def open_lines() -> Iterator[str]:
        opened.append(FileLines(big))
        return iter(opened[-1])

    for block in _parsed(big, open_lines, zone):
        block = after_line_only(block, after_line)
        _add(report, save_result(store, big.path, big.reading, block, source_id, now, zone, topic))
    problems = opened[-1].problems if opened else []
    report.rejected = [*_after_line(problems, after_line), *report.rejected]
    report.replaced = store.apply_file(
        ReadingEnded(file_key(big.path), big.reading, source_id, now)
    )
    return report, opened[-1].ended if opened else 0


def _parsed(
    big: BigFile, open_lines: Callable[[], Iterator[str]], zone: ZoneInfo
) -> Iterator[ImportResult]:
    """The file's results a block at a time: by records from its bytes (a JSON export),
    else by lines."""
    records = record_streaming(big.importer)
    if records is not None:
        return records.parse_file(lambda: big.open_file(big.path), zone=zone)
    lines = streaming(big.importer)
    assert lines is not None, "a big file is read by records or by lines"
    return lines.parse_stream(open_lines, zone=zone)


def _after_line(problems: list[Rejected], line: int) -> list[Rejected]:
    return [problem for problem in problems if problem.line is not None and problem.line > line]


def _add(total: FileReport, part: FileReport) -> None:
    total.new += part.new
    total.duplicates += part.duplicates
    total.notes += part.notes
    total.redated += part.redated
    total.rejected += part.rejected
    total.skipped += part.skipped
    total.dates = tuple(sorted({*total.dates, *part.dates}))
    total.weeks = tuple(sorted({*total.weeks, *part.weeks}))
