"""The few ID3v2.4 frames the episode carries: text frames and chapters (CHAP under one CTOC).

Written by hand (the ID3v2.4 structure and the ID3v2 Chapter Frame Addendum, id3.org),
because the tagging libraries that write chapters are GPL: sizes are "syncsafe" (7 bits a
byte), text is UTF-8 (encoding byte 3), element ids are Latin-1 and end with a NUL.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

HEADER = b"ID3\x04\x00"  # ID3, version 2.4.0
UTF8 = b"\x03"
NO_OFFSET = 0xFFFFFFFF  # CHAP: chapters are placed by time, not byte offset
CTOC_TOP_LEVEL, CTOC_ORDERED = 0x02, 0x01
MAX_CHILDREN = 255  # a CTOC counts its entries in one byte


def syncsafe(size: int) -> bytes:
    """`size` in four bytes of seven bits each, as ID3v2.4 writes tag and frame sizes."""
    if not 0 <= size < 1 << 28:
        raise ValueError(f"an ID3 size must be below 256 MiB, not {size}")
    return bytes((size >> shift) & 0x7F for shift in (21, 14, 7, 0))


def frame(frame_id: str, body: bytes) -> bytes:
    return frame_id.encode("ascii") + syncsafe(len(body)) + b"\x00\x00" + body


def text_frame(frame_id: str, text: str) -> bytes:
    """A T*** frame (TIT2 title, TALB album, TPE1 artist, TLEN length in ms)."""
    return frame(frame_id, UTF8 + text.encode("utf-8"))


def chapter(element_id: str, start_ms: int, end_ms: int, title: str) -> bytes:
    times = struct.pack(">IIII", start_ms, end_ms, NO_OFFSET, NO_OFFSET)
    return frame("CHAP", _element_id(element_id) + times + text_frame("TIT2", title))


def table_of_contents(element_id: str, children: Sequence[str], title: str) -> bytes:
    """The top-level, ordered CTOC listing the chapters' element ids."""
    if len(children) > MAX_CHILDREN:
        raise ValueError(f"an ID3 table of contents holds {MAX_CHILDREN} chapters at most")
    body = _element_id(element_id) + bytes([CTOC_TOP_LEVEL | CTOC_ORDERED, len(children)])
    body += b"".join(_element_id(child) for child in children)
    return frame("CTOC", body + text_frame("TIT2", title))


def tag(frames: Sequence[bytes]) -> bytes:
    """The whole ID3v2.4 tag (no flags, no padding), to stand before the MP3's first frame."""
    body = b"".join(frames)
    return HEADER + b"\x00" + syncsafe(len(body)) + body


def _element_id(element_id: str) -> bytes:
    return element_id.encode("latin-1") + b"\x00"
