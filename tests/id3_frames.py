"""A test-only reader of the ID3v2.4 frames an episode carries, to read its chapters back.

Kept apart from digest.audio.id3 on purpose (it is the writer's counterpart, written from
the ID3v2.4 structure and the Chapter Frame Addendum): it checks sizes and ends strictly,
so a tag a player would misread fails here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field


@dataclass
class Frame:
    frame_id: str
    text: str = ""  # T*** frames
    element_id: str = ""  # CHAP and CTOC
    start_ms: int = 0
    end_ms: int = 0
    flags: int = 0
    children: list[str] = field(default_factory=list)  # CTOC
    sub_frames: list[Frame] = field(default_factory=list)

    @property
    def title(self) -> str:
        return next(sub.text for sub in self.sub_frames if sub.frame_id == "TIT2")


def unsyncsafe(data: bytes) -> int:
    assert len(data) == 4 and all(byte < 0x80 for byte in data), data
    return sum(byte << 7 * (3 - place) for place, byte in enumerate(data))


def read_tag(mp3: bytes) -> tuple[list[Frame], bytes]:
    """The frames of the ID3v2.4 tag at the start of `mp3`, and the audio after it."""
    assert mp3[:5] == b"ID3\x04\x00", mp3[:5]
    assert mp3[5] == 0, "no tag flags are written"
    size = unsyncsafe(mp3[6:10])
    return read_frames(mp3[10 : 10 + size]), mp3[10 + size :]


def read_frames(data: bytes) -> list[Frame]:
    frames, at = [], 0
    while at < len(data) and data[at] != 0:  # a NUL byte starts the padding
        frame_id = data[at : at + 4].decode("ascii")
        size = unsyncsafe(data[at + 4 : at + 8])
        assert data[at + 8 : at + 10] == b"\x00\x00", "no frame flags are written"
        body = data[at + 10 : at + 10 + size]
        assert len(body) == size, f"{frame_id} runs past the tag"
        frames.append(read_frame(frame_id, body))
        at += 10 + size
    return frames


def read_frame(frame_id: str, body: bytes) -> Frame:
    if frame_id.startswith("T"):
        assert body[0] == 3, "text is UTF-8"
        return Frame(frame_id, text=body[1:].decode("utf-8"))
    element_id, rest = _element_id(body)
    if frame_id == "CHAP":
        start, end, start_offset, end_offset = struct.unpack(">IIII", rest[:16])
        assert (start_offset, end_offset) == (0xFFFFFFFF, 0xFFFFFFFF)
        return Frame(
            frame_id,
            element_id=element_id,
            start_ms=start,
            end_ms=end,
            sub_frames=read_frames(rest[16:]),
        )
    assert frame_id == "CTOC", frame_id
    flags, count, rest = rest[0], rest[1], rest[2:]
    children = []
    for _ in range(count):
        child, rest = _element_id(rest)
        children.append(child)
    return Frame(
        frame_id,
        element_id=element_id,
        flags=flags,
        children=children,
        sub_frames=read_frames(rest),
    )


def _element_id(data: bytes) -> tuple[str, bytes]:
    end = data.index(b"\x00")
    return data[:end].decode("latin-1"), data[end + 1 :]


def chapters_of(mp3: bytes) -> tuple[Frame, list[Frame]]:
    """The table of contents and the chapters, in the order the tag lists them."""
    frames, _ = read_tag(mp3)
    (toc,) = [frame for frame in frames if frame.frame_id == "CTOC"]
    return toc, [frame for frame in frames if frame.frame_id == "CHAP"]
