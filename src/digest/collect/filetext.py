"""A file's bytes as text: opened, decoded (UTF-8, UTF-16 with a BOM, else cp1252/latin-1
when UTF-8 fails badly), and its binary or undecodable lines skipped and reported.

Whole files (filesave.py) and big ones read a block at a time (bigfiles.py) share it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from digest.collect.importers.common import lines_of
from digest.errors import ImportFormatError, SourceError
from digest.models import Rejected


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as exc:
        raise unreadable(path, exc) from exc


Opener = Callable[[Path], BinaryIO]  # how a file source opens its files (for reading)


def open_binary(path: Path) -> BinaryIO:
    try:
        return path.open("rb")
    except OSError as exc:
        raise unreadable(path, exc) from exc


def read_bytes(path: Path, open_file: Opener = open_binary) -> bytes:
    try:
        with open_file(path) as file:
            return file.read()
    except OSError as exc:
        raise unreadable(path, exc) from exc


HEAD_BYTES = 65536  # what a file, its format and its encoding are recognised from


def read_head(path: Path) -> str:
    """The text of the file's first HEAD_BYTES."""
    try:
        with path.open("rb") as file:
            return decode(file.read(HEAD_BYTES), path)
    except OSError as exc:
        raise unreadable(path, exc) from exc


def decode(data: bytes, path: Path) -> str:
    """Text of a file: UTF-8 (BOM or not, a stray bad byte or two kept as U+FFFD), UTF-16
    with a BOM, else a Western legacy encoding (cp1252, which latin-1 text reads the same in)
    when the bytes hold no UTF-8 at all."""
    if encoding_of(data, path) == "utf-16":
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8-sig", errors="replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    multibyte = sum(1 for char in text if ord(char) > 0x7F and char != "\ufffd")
    if multibyte >= bad:  # UTF-8 with a stray byte or two: keep what is right
        return text
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:  # bytes cp1252 leaves undefined (0x81, 0x8d, 0x8f, 0x90, 0x9d)
        return data.decode("latin-1")


def encoding_of(data: bytes, path: Path) -> str:
    """utf-16 (with a BOM), utf-8-sig, or cp1252 when UTF-8 fails badly; ImportFormatError
    for a binary file. `data` may be the file's start only (big files are read in blocks)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if _mostly_binary(data[:HEAD_BYTES]):
        raise ImportFormatError("a binary file, not text", path=path)
    text = data.decode("utf-8-sig", errors="replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    # many broken sequences: not UTF-8 at all (one cut at the end of a file's start is fine)
    return "cp1252" if bad > 3 and bad * 1000 > len(text) else "utf-8-sig"


# Characters no text holds: NUL and the other C0 controls but tab, the line ends, form feed
# and escape. A file is binary when they are BINARY_SHARE of its start, or when they are
# common (SOME_CONTROLS) and, with the bytes that are not UTF-8, make BINARY_SHARE: compressed
# data such as a photo is mostly bytes of the second kind, while a text in a legacy 8-bit
# encoding (cp1251, latin-1) has no controls at all. Else a line holding one is skipped and
# reported, as is one holding bytes its encoding could not read.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f]")
BINARY_SHARE = 0.3
CONTROL_SHARE = 0.1  # of a line: binary junk, not a stray control character in a title
SOME_CONTROLS = 0.05


def _mostly_binary(head: bytes) -> bool:
    text = head.decode("utf-8", errors="replace")
    if not text:
        return False
    controls = len(_CONTROL.findall(text))
    odd = controls + text.count("\ufffd")
    return controls >= BINARY_SHARE * len(text) or (
        controls >= SOME_CONTROLS * len(text) and odd >= BINARY_SHARE * len(text)
    )


def line_problem(line: str, *, undecodable: bool = True) -> str | None:
    """Why a line of a text file is skipped: binary bytes (a NUL, or control characters
    that are CONTROL_SHARE of it: a few in a title are removed instead, see
    without_bad_lines), or (`undecodable`: the decoder put U+FFFD there) bytes that are not
    text in the file's encoding; None for a good one."""
    controls = len(_CONTROL.findall(line))
    if "\x00" in line or (controls and controls >= CONTROL_SHARE * len(line)):
        return "binary bytes (NUL or control characters); line skipped"
    if undecodable and "\ufffd" in line:
        return "bytes that are not text in the file's encoding; line skipped"
    return None


def without_controls(line: str) -> str:
    """A good line's few control characters removed (a BEL in a title): the save is kept."""
    return _CONTROL.sub("", line)


def without_bad_lines(text: str, *, undecodable: bool) -> tuple[str, list[Rejected]]:
    """`text` with its bad lines (line_problem) blanked, their numbers kept; and the lines
    skipped, for the report."""
    if not _CONTROL.search(text) and not (undecodable and "\ufffd" in text):
        return text, []
    lines = lines_of(text)
    skipped: list[Rejected] = []
    for index, line in enumerate(lines):
        if (problem := line_problem(line, undecodable=undecodable)) is not None:
            skipped.append(Rejected(index + 1, _CONTROL.sub("\ufffd", line)[:200], problem))
            lines[index] = ""
        else:
            lines[index] = without_controls(line)
    return "\n".join(lines), skipped


def good_text(data: bytes, path: Path) -> tuple[str, list[Rejected]]:
    """The file's text with its bad lines blanked, and those lines (without_bad_lines)."""
    text = decode(data, path)
    undecodable = text.count("\ufffd") > data.count("\ufffd".encode())
    return without_bad_lines(text, undecodable=undecodable)


def unreadable(path: str | Path, exc: OSError, doing: str = "read") -> SourceError:
    """The error for a file or folder the system would not let digest read (or list)."""
    return SourceError(f"cannot {doing} it: {exc.strerror or exc}", path=path)
