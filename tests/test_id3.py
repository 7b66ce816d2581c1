"""The episode's ID3v2.4 chapters, read back by a reader of our own (tests/id3_frames.py)."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import miniaudio
import pytest

from digest.audio import id3
from digest.audio.episode import record_episode
from digest.audio.script import Chapter, Script
from id3_frames import chapters_of, read_tag

RATE = 16_000


class Tone:
    """A voice that hums a second of 440 Hz per sentence: audio without espeak-ng."""

    name = "tone"

    def speak(self, text: str) -> tuple[bytes, int]:
        seconds = text.count(".")
        samples = (
            round(8000 * math.sin(2 * math.pi * 440 * n / RATE)) for n in range(seconds * RATE)
        )
        return b"".join(struct.pack("<h", sample) for sample in samples), RATE


def test_an_episode_carries_its_title_length_and_an_ordered_chapter_per_section(
    tmp_path: Path,
) -> None:
    long_title = "Zürich, naïve café — " * 10  # over 127 bytes: its size needs two syncsafe bytes
    script = Script(
        "digest 2026-W47",
        (Chapter("Rust", "One. Two."), Chapter(long_title, "Three."), Chapter("日本語", "Four.")),
        left_out=0,
    )

    episode = record_episode(script, Tone(), tmp_path / "w.mp3", bitrate_kbps=32)

    data = (tmp_path / "w.mp3").read_bytes()
    frames, audio = read_tag(data)
    text = {frame.frame_id: frame.text for frame in frames if frame.frame_id.startswith("T")}
    assert text == {
        "TIT2": "digest 2026-W47",
        "TALB": "digest",
        "TPE1": "digest",
        "TLEN": str(round(episode.duration_s * 1000)),
    }
    toc, chapters = chapters_of(data)
    assert toc.flags == id3.CTOC_TOP_LEVEL | id3.CTOC_ORDERED
    assert toc.title == "Sections"
    assert toc.children == [chapter.element_id for chapter in chapters]
    assert [chapter.title for chapter in chapters] == ["Rust", long_title, "日本語"]
    assert [(c.start_ms, c.end_ms) for c in chapters] == [
        (mark.start_ms, mark.end_ms) for mark in episode.chapters
    ]
    assert chapters[0].start_ms == 0 and chapters[-1].end_ms == round(episode.duration_s * 1000)
    decoded = miniaudio.decode(audio, nchannels=1)
    assert decoded.duration == pytest.approx(episode.duration_s, abs=0.1)
    assert episode.size == len(data)


def test_sizes_are_syncsafe_and_a_table_of_contents_holds_255_chapters_at_most() -> None:
    assert id3.syncsafe(127) == b"\x00\x00\x00\x7f"
    assert id3.syncsafe(128) == b"\x00\x00\x01\x00"
    assert id3.syncsafe((1 << 28) - 1) == b"\x7f\x7f\x7f\x7f"
    with pytest.raises(ValueError, match="256 MiB"):
        id3.syncsafe(1 << 28)
    with pytest.raises(ValueError, match="255 chapters"):
        id3.table_of_contents("toc", [f"chp{n}" for n in range(256)], "Sections")
