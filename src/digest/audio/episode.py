"""A script spoken into an MP3: mono, at a speech bitrate, an ID3 chapter per section.

Each chapter is synthesised on its own, so its start and end are known exactly;
the chapters are written as ID3 CHAP frames under one ordered CTOC, which podcast
players use to skip between sections.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from pathlib import Path

import lameenc

from digest.atomic import write_atomic
from digest.audio import id3
from digest.audio.script import Script
from digest.audio.voices import Voice

PAUSE_S = 0.7  # silence between chapters
MP3_TYPE = "audio/mpeg"


@dataclass(frozen=True)
class ChapterMark:
    title: str
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class Episode:
    path: Path
    size: int  # bytes of the file, tags included
    duration_s: float
    chapters: tuple[ChapterMark, ...]
    voice: str
    synthesis_s: float  # CPU seconds spent speaking and encoding


def record_episode(script: Script, voice: Voice, path: Path, *, bitrate_kbps: int) -> Episode:
    """Speak `script` with `voice` into the MP3 at `path` (written atomically)."""
    started = _cpu_s()
    mp3, duration_s, chapters = _speak(script, voice, bitrate_kbps)
    data = _tagged(mp3, script, chapters, duration_s)
    write_atomic(path, data)
    return Episode(path, len(data), duration_s, chapters, voice.name, _cpu_s() - started)


def _speak(
    script: Script, voice: Voice, bitrate_kbps: int
) -> tuple[bytes, float, tuple[ChapterMark, ...]]:
    """The chapters spoken one after the other, a pause after each, encoded as they come
    (one chapter's audio in memory at a time): the MP3, its seconds, where each chapter lies."""
    mp3 = bytearray()
    marks: list[ChapterMark] = []
    encoder, seconds = None, 0.0
    for chapter in script.chapters:
        frames, rate = voice.speak(chapter.text)
        frames += bytes(2 * round(PAUSE_S * rate))
        if encoder is None:  # the voice's rate is known once it has spoken
            encoder = _encoder(rate, bitrate_kbps)
        mp3 += encoder.encode(frames)
        start, seconds = seconds, seconds + len(frames) / 2 / rate
        marks.append(ChapterMark(chapter.title, round(start * 1000), round(seconds * 1000)))
    if encoder is not None:
        mp3 += encoder.flush()
    return bytes(mp3), seconds, tuple(marks)


def _encoder(rate: int, bitrate_kbps: int) -> lameenc.Encoder:
    encoder = lameenc.Encoder()
    encoder.set_bit_rate(bitrate_kbps)
    encoder.set_in_sample_rate(rate)
    encoder.set_channels(1)
    encoder.set_quality(2)  # 2: near-best; the cost is small next to the synthesis
    return encoder


def _tagged(
    mp3: bytes, script: Script, chapters: tuple[ChapterMark, ...], duration_s: float
) -> bytes:
    """The MP3 with ID3v2.4 tags: its title, length and chapters."""
    ids = [f"chp{number}" for number in range(len(chapters))]
    frames = [
        id3.text_frame("TIT2", script.title),
        id3.text_frame("TALB", "digest"),
        id3.text_frame("TPE1", "digest"),
        id3.text_frame("TLEN", str(round(duration_s * 1000))),
        id3.table_of_contents("toc", ids, "Sections"),
        *(
            id3.chapter(element_id, mark.start_ms, mark.end_ms, mark.title)
            for element_id, mark in zip(ids, chapters, strict=True)
        ),
    ]
    return id3.tag(frames) + mp3


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (espeak-ng runs as a child)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime
