"""Each file format is an Importer, registered here by its module (collect/importers/),
found by sniffing the content (collect.importers.find_reading)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol
from zoneinfo import ZoneInfo

from digest.models import Rejected, SavedItem


@dataclass
class ImportResult:
    """Everything a file held: items, and what was skipped or not understood (never dropped)."""

    items: list[SavedItem] = field(default_factory=list)
    rejected: list[Rejected] = field(
        default_factory=list
    )  # lines not understood, with line numbers
    skipped: list[Rejected] = field(
        default_factory=list
    )  # deliberately not imported (javascript: …)
    # imported, with a word for the report (a guessed post boundary)
    notices: list[Rejected] = field(default_factory=list)


class Importer(Protocol):
    name: str  # what --format takes, and what the import report prints
    description: str
    # Each item's `line` is the file line it starts on and no item takes in an earlier
    # item's lines: a file that only grew can be read on from the line it was left at.
    appendable: bool

    def sniff(self, head: str) -> int:
        """How sure we are that `head` (the first 64 KiB of text) is this format: 0 to 100."""
        ...

    def parse(self, text: str, *, zone: ZoneInfo) -> ImportResult:
        """Every item of the file; dates without a time are midnight in `zone`."""
        ...


LineSource = Callable[[], Iterator[str]]  # opens a file's lines afresh at each call
STREAM_BLOCK = 2000  # items a streaming importer hands over at a time


class LineImporter(Importer, Protocol):
    """An importer that can read a file a line at a time, in bounded memory."""

    def parse_stream(self, open_lines: LineSource, *, zone: ZoneInfo) -> Iterator[ImportResult]:
        """The file's items, and what was skipped or rejected, a block at a time."""
        ...


class LineReader:
    """What a line-by-line importer keeps while reading: the `result` so far, added to by
    `read_line`; `in_blocks` hands it out a block at a time."""

    def __init__(self) -> None:
        self.result = ImportResult()

    def read_line(self, number: int, line: str) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """At the end of the file: what was kept for lines that did not come."""

    def cut(self) -> ImportResult:
        """What was read so far that later lines cannot change, taken out of `result`."""
        done, self.result = self.result, ImportResult()
        return done


def in_blocks(reader: LineReader, numbered: Iterable[tuple[int, str]]) -> Iterator[ImportResult]:
    """Each (line number, line) given to `reader`; its results a block of items at a time."""
    for number, line in numbered:
        reader.read_line(number, line)
        if len(reader.result.items) >= STREAM_BLOCK:
            yield reader.cut()
    reader.finish()
    yield reader.result


def streaming(importer: Importer) -> LineImporter | None:
    """`importer` if it can read a file a line at a time, else None."""
    return importer if hasattr(importer, "parse_stream") else None  # type: ignore[return-value]


ByteSource = Callable[[], BinaryIO]  # opens a file's bytes


class RecordImporter(Importer, Protocol):
    """An importer that reads a big export a record at a time from its bytes (JSON)."""

    def parse_file(self, open_file: ByteSource, *, zone: ZoneInfo) -> Iterator[ImportResult]:
        """The export's items, and what was rejected, a block at a time."""
        ...


def record_streaming(importer: Importer) -> RecordImporter | None:
    """`importer` if it can read a big export a record at a time, else None."""
    return importer if getattr(importer, "stream_prefixes", None) else None  # type: ignore[return-value]


def merged(blocks: Iterable[ImportResult]) -> ImportResult:
    """The blocks of a streamed parse as one result."""
    whole = ImportResult()
    for block in blocks:
        whole.items += block.items
        whole.rejected += block.rejected
        whole.skipped += block.skipped
    return whole


REGISTRY: dict[str, Importer] = {}
# Formats `digest import` reads that hold feeds to poll, not items (collect/feedlists.py).
FEED_LIST_FORMATS = ("opml",)


def register(importer: Importer) -> Importer:
    REGISTRY[importer.name] = importer
    return importer
