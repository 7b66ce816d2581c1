"""The audio edition's cost: CPU seconds of synthesis per minute of audio, and bytes per minute.

    python bench/audio.py [--items 12] [--piper VOICE.onnx] [--bitrate 48]

Speaks a made-up week (ITEMS items in three sections, each note two plain sentences of
about 20 words, as the offline notes write them) with espeak-ng, and with a Piper voice
when one is given, through the same code as `digest now` (script, voice, MP3 with
chapters). CPU time counts this process and its children (espeak-ng runs as one), so it
is the work a voice costs on a shared machine, whatever the load (onnxruntime, under
Piper, uses every core it finds: run it on the machine whose figures you want).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from digest.audio.episode import record_episode
from digest.audio.script import Script, week_script
from digest.audio.voices import voice_for
from digest.compose.entries import Entry, Topic
from digest.config import AudioConfig

SUBJECTS = ("model serving", "storage engines", "testing", "compilers", "networks", "editors")
SECTIONS = ("Machine learning", "Databases", "Software engineering")


def week(items: int) -> Script:
    topics = [Topic(name, []) for name in SECTIONS]
    for number in range(items):
        subject = SUBJECTS[number % len(SUBJECTS)]
        note = (
            f"The authors describe how they rebuilt part of {subject} so that slow work no longer"
            f" holds up the rest, and measure the change on a busy system. Number {number}"
            " finds that the worst delays fall by a third while the overall rate stays the same."
        )
        title = f"A closer look at {subject}, part {number + 1}"
        topics[number % len(topics)].entries.append(
            Entry(title, "https://x.example", note, None, ())
        )
    return week_script(
        "2026-W47", "16–22 November 2026", topics, max_minutes=60, words_per_minute=150
    )


def measure(script: Script, config: AudioConfig, bitrate: int) -> str:
    voice = voice_for(config)
    with tempfile.TemporaryDirectory() as folder:
        wall = time.perf_counter()
        episode = record_episode(script, voice, Path(folder) / "week.mp3", bitrate_kbps=bitrate)
        wall = time.perf_counter() - wall
    minutes = episode.duration_s / 60
    return (
        f"{episode.voice}: {minutes:.2f} min of audio from {script.words} words;"
        f" {episode.synthesis_s / minutes:.1f} CPU s per audio minute"
        f" ({wall / minutes:.1f} s wall); {episode.size / minutes / 1e3:.0f} kB per minute"
        f" at {bitrate} kbit/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=12)
    parser.add_argument("--piper", type=Path, help="a Piper voice model (.onnx, .json beside it)")
    parser.add_argument("--bitrate", type=int, default=48, choices=(32, 40, 48, 56, 64))
    args = parser.parse_args()
    script = week(args.items)
    print(f"load average: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")
    print(measure(script, AudioConfig(), args.bitrate))
    if args.piper:
        print(measure(script, AudioConfig(voice=args.piper), args.bitrate))


if __name__ == "__main__":
    main()
