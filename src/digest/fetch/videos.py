"""What a video said: a saved YouTube video's transcript (youtube-transcript-api), manual
captions first, then generated ones, in the configured languages or English; split into the
chapters its description lists ("0:00 Intro", "4:12 The scheduler").

The library speaks HTTP through the requests session it is given: ours goes only to
YouTube's hosts, through the address guard (no private address unless allowed, the address
checked is the one connected to: fetch/guarded_requests.py), with the run's timeout and size
cap. Tests hand it a session that leads to a loopback stand-in."""

from __future__ import annotations

import asyncio
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import parse_qs, urlsplit

import requests
from youtube_transcript_api import (
    CouldNotRetrieveTranscript,
    FetchedTranscriptSnippet,
    NoTranscriptFound,
    YouTubeTranscriptApi,
)

from digest.config import FetchConfig
from digest.errors import unit_bug
from digest.fetch.guarded_requests import guarded_session
from digest.models import WALLS, Extracted

YOUTUBE_HOSTS = frozenset(
    {"youtube.com", "www.youtube.com", "m.youtube.com", "music.youtube.com", "youtu.be"}
)
_VIDEO_ID = re.compile(r"[A-Za-z0-9_-]{11}")
_PATH_KINDS = ("shorts", "live", "embed", "v")
_CHAPTER = re.compile(r"^\s*(?:(\d{1,2}):)?(\d{1,2}):(\d{2})\s*[-–—:|]?\s+(\S.{0,120})$")
PARAGRAPH_SECONDS = 60.0  # a transcript without chapters is cut into paragraphs this long


def youtube_video_id(url: str) -> str | None:
    """The video a YouTube link shows (watch?v=, youtu.be/, /shorts/, /live/, /embed/)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    segments = [segment for segment in parts.path.split("/") if segment]
    if host == "youtu.be":
        candidate = segments[0] if segments else ""
    elif host not in YOUTUBE_HOSTS:
        return None
    elif parts.path == "/watch":
        candidate = parse_qs(parts.query).get("v", [""])[0]
    else:
        kind_and_id = len(segments) >= 2 and segments[0] in _PATH_KINDS
        candidate = segments[1] if kind_and_id else ""
    return candidate if _VIDEO_ID.fullmatch(candidate) else None


@dataclass(frozen=True)
class Chapter:
    start: float  # seconds
    title: str


def chapters_in(description: str) -> list[Chapter]:
    """The chapters a description lists: lines that open with a time, the first at 0:00."""
    found = []
    for line in description.splitlines():
        if match := _CHAPTER.match(line):
            hours, minutes, seconds, title = match.groups()
            start = int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
            found.append(Chapter(float(start), title.strip()))
    ordered = all(a.start < b.start for a, b in zip(found, found[1:], strict=False))
    return found if len(found) >= 2 and found[0].start == 0 and ordered else []


@dataclass(frozen=True)
class Said:
    text: str
    language: str
    generated: bool  # YouTube's speech recognition, not captions someone wrote


class Transcripts:
    """Transcripts through youtube-transcript-api over `session`, in `languages` (English
    added last when missing)."""

    def __init__(self, session: requests.Session, languages: Sequence[str]) -> None:
        self.api = YouTubeTranscriptApi(http_client=session)
        self.languages = [*languages, *(["en"] if "en" not in languages else [])]

    def said(self, video_id: str, chapters: Sequence[Chapter] = ()) -> Said | None:
        """What the video says, None when it has no transcript in the languages asked or
        YouTube would not give one (blocked, unavailable, unreachable)."""
        try:
            listing = self.api.list(video_id)
            for find in (
                listing.find_manually_created_transcript,
                listing.find_generated_transcript,
            ):
                try:
                    transcript = find(self.languages)
                except NoTranscriptFound:
                    continue
                snippets = list(transcript.fetch())
                text = said_text(snippets, chapters)
                return (
                    Said(text, transcript.language_code, transcript.is_generated) if text else None
                )
        except (CouldNotRetrieveTranscript, requests.RequestException, ValueError):
            return None
        return None


def said_text(snippets: Sequence[FetchedTranscriptSnippet], chapters: Sequence[Chapter]) -> str:
    """The snippets as paragraphs: one per chapter under its title, else one a minute."""
    starts = [chapter.start for chapter in chapters]
    groups: dict[int, list[str]] = {}
    for snippet in snippets:
        if chapters:
            index = bisect_right(starts, snippet.start) - 1
        else:
            index = int(snippet.start // PARAGRAPH_SECONDS)
        groups.setdefault(index, []).append(" ".join(snippet.text.split()))
    parts = []
    for index, words in groups.items():
        if text := " ".join(word for word in words if word):
            parts.extend([chapters[index].title, text] if chapters and index >= 0 else [text])
    return "\n\n".join(parts)


class VideoWords:
    """The fetch stage's transcripts: a YouTube page's text becomes what the video said,
    its title first (a page that was a wall or thin is read so too); a video without one
    keeps its page, counted for one line."""

    def __init__(self, config: FetchConfig, session: requests.Session | None = None) -> None:
        self.config = config
        self.session = session
        self.transcripts: Transcripts | None = None
        self.without = 0  # videos noted from their description: no transcript

    async def read(self, url: str, page: Extracted) -> Extracted:
        video = youtube_video_id(url)
        if video is None:
            return page
        if self.transcripts is None:
            session = self.session or guarded_session(self.config, YOUTUBE_HOSTS)
            self.transcripts = Transcripts(session, self.config.transcript_languages)
        try:
            said = await asyncio.to_thread(self.transcripts.said, video, chapters_in(page.text))
        except Exception as exc:  # a bug: the video keeps its description, the run goes on
            unit_bug(f"the transcript of {url}", exc)
            said = None
        if said is None:
            self.without += 1
            return page
        title = None if page.quality in WALLS else page.title  # a consent wall's is no title
        text = "\n\n".join(part for part in (title, said.text) if part)
        return replace(
            page,
            text=text,
            title=title,
            language=said.language,
            extractor="youtube-transcript",
            quality=None,  # what was said is the article, whatever the page was
        )

    def line(self) -> str | None:
        """The quiet line for the videos without a transcript, if any."""
        if not self.without:
            return None
        videos = "1 video" if self.without == 1 else f"{self.without} videos"
        return f"{videos} without a transcript: noted from the description"
