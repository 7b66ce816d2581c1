"""What a podcast episode said: the transcript its feed entry links with
`<podcast:transcript>` (SRT, WebVTT, the podcast namespace's JSON, or HTML), read at collect
through the guarded fetcher (private addresses, size and time bounded as every fetch) and
kept as the episode's text, so its note is made from what was said. An episode without one,
or whose transcript cannot be read, keeps its description and page, as before.

The format is told by the file itself (a WebVTT header, JSON, SRT's numbered cues, HTML),
not by the type the feed declares, which publishers get wrong."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from youtube_transcript_api import FetchedTranscriptSnippet

from digest.errors import DigestError, unit_bug
from digest.fetch.client import Fetcher, check_status
from digest.fetch.videos import said_text
from digest.models import SavedItem
from digest.runtime.tasks import run_together
from digest.store import item_key

_TIMING = re.compile(
    r"^\s*(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{1,3})\s*-->\s*\S+"
)  # "00:01:02,500 --> …" (SRT), "01:02.500 --> … align:start" (WebVTT)
_VOICE = re.compile(r"^\s*<v(?:\.[\w.-]+)?\s+([^>]+)>")  # WebVTT's speaker: <v Alice>
_TAG = re.compile(r"<[^>]*>")
_SPEAKER_LINE = re.compile(r"^([A-Z][\w .'-]{0,40}):\s+(\S.*)$")  # "Alice: words" in SRT
_VTT_BLOCKS = ("NOTE", "STYLE", "REGION")


@dataclass(frozen=True)
class Cue:
    start: float  # seconds
    text: str
    speaker: str | None = None


def transcript_text(body: bytes, url: str, content_type: str | None = None) -> str:
    """A transcript file's words as paragraphs, the speaker named where it changes
    ("" when the file holds none); ExtractError when an HTML one cannot be read."""
    text = body.decode("utf-8-sig", "replace").replace("\r\n", "\n").replace("\r", "\n")
    head = text.lstrip()[:64]
    if head.startswith(("{", "[")):
        return _said(_json_cues(text))
    if head.startswith("WEBVTT") or any(_TIMING.match(line) for line in text.split("\n", 4)):
        return _said(list(_timed_cues(text)))
    if head.startswith("<"):
        from digest.extract import extract  # lxml: only when an HTML transcript comes

        charset = (content_type or "").partition(";")[2]  # the server's, if it says one
        return extract(body, url=url, content_type=f"text/html;{charset}").text
    return "\n\n".join(part.strip() for part in text.split("\n\n") if part.strip())


def _timed_cues(text: str) -> Iterator[Cue]:
    """SRT and WebVTT: blocks apart by blank lines, each a timing line then its text."""
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip("\n").split("\n")
        timing = next((i for i, line in enumerate(lines) if _TIMING.match(line)), None)
        if timing is None or lines[0].startswith(_VTT_BLOCKS):
            continue
        match = _TIMING.match(lines[timing])
        assert match is not None
        hours, minutes, seconds, fraction = match.groups()
        start = int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds) + int(fraction) / 1000
        words = " ".join(lines[timing + 1 :])
        voice = _VOICE.match(words)
        words = " ".join(_TAG.sub("", words).split())
        speaker = voice[1].strip() if voice else None
        if speaker is None and (named := _SPEAKER_LINE.match(words)):
            speaker, words = named[1], named[2]
        if words:
            yield Cue(start, words, speaker)


def _json_cues(text: str) -> list[Cue]:
    """The podcast namespace's JSON: {"segments": [{"speaker", "startTime", "body"}]}."""
    try:
        document: Any = json.loads(text)
    except ValueError:
        return []
    segments = document.get("segments") if isinstance(document, dict) else document
    cues = []
    for segment in segments if isinstance(segments, list) else []:
        if not isinstance(segment, dict) or not isinstance(segment.get("body"), str):
            continue
        start = segment.get("startTime")
        speaker = segment.get("speaker")
        cues.append(
            Cue(
                float(start) if isinstance(start, int | float) else 0.0,
                " ".join(segment["body"].split()),
                speaker.strip() or None if isinstance(speaker, str) else None,
            )
        )
    return [cue for cue in cues if cue.text]


def _said(cues: Sequence[Cue]) -> str:
    """The cues as paragraphs of a minute (said_text, as a video's), each speaker named
    where the voice changes."""
    snippets, last = [], None
    for cue in cues:
        named = cue.speaker is not None and cue.speaker != last
        last = cue.speaker or last
        text = f"{cue.speaker}: {cue.text}" if named else cue.text
        snippets.append(FetchedTranscriptSnippet(text=text, start=cue.start, duration=0.0))
    return said_text(snippets, ())


async def episode_transcripts(
    fetcher: Fetcher, episodes: Sequence[SavedItem]
) -> tuple[dict[str, str], list[str]]:
    """The text of each episode whose transcript could be read, by the episode's store
    key (its title first), and why the others could not be (one line each)."""
    texts: dict[str, str] = {}
    problems: list[str] = []

    async def read(episode: SavedItem) -> None:
        assert episode.transcript is not None
        try:
            said = await _read_transcript(fetcher, episode.transcript)
        except DigestError as exc:
            problems.append(str(exc))  # it names the transcript
            return
        except Exception as exc:  # a bug: this episode keeps its description, the run goes on
            problems.append(unit_bug(f"the transcript {episode.transcript!r}", exc))
            return
        if not said:
            problems.append(f"{episode.transcript}: no words in it")
            return
        texts[item_key(episode)] = "\n\n".join(part for part in (episode.title, said) if part)

    await run_together(read(episode) for episode in episodes if episode.transcript)
    return texts, problems


async def _read_transcript(fetcher: Fetcher, url: str) -> str:
    """The transcript's words; the feed's credentials are not sent (it may be elsewhere)."""
    result = await fetcher.get(url, skip_binary=True)
    check_status(result)
    return transcript_text(result.content, result.final_url, result.headers.get("content-type"))
