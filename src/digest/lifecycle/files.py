"""What the collect stage saw of each file it reads, and what a reading of one changes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from digest.models import FileReading


@dataclass(frozen=True)
class FileSeen:
    """What a file was when last read: its stat, the wall-clock time of that stat, the
    SHA-256 of the `size` bytes read, how many complete lines they had, and how many bytes
    of an unfinished last line were held back after them."""

    path: str
    size: int
    mtime_ns: int
    inode: int
    device: int
    checked_ns: int
    fingerprint: str
    lines_read: int
    at: datetime
    held: int = 0


@dataclass(frozen=True)
class ReadingEnded:
    """All the items of a reading of `path` are saved: it is the file's reading now, and
    the items only an earlier reading in another format gave are removed."""

    path: str
    reading: FileReading
    source_id: int
    at: datetime


@dataclass(frozen=True)
class ReadingVoided:
    """The file changed while it was read: what that reading gave is replaced by the next."""

    path: str


@dataclass(frozen=True)
class FilesGone:
    """Files no longer there: their states, readings and lines are forgotten (their items
    stay saved: a file leaving the inbox unsaves nothing)."""

    paths: tuple[str, ...]


FileIntent = FileSeen | ReadingEnded | ReadingVoided | FilesGone
