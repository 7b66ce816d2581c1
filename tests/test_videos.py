"""Videos by their words: a saved YouTube link takes its transcript (youtube-transcript-api,
through its requests-session seam to a loopback stand-in for the video site, with recorded
caption files), its note made from what was said; without one, its description."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from click.testing import CliRunner
from requests.adapters import HTTPAdapter

from digest.cli import cli
from digest.clock import Waits
from digest.config import Config, FetchConfig
from digest.fetch.guarded_requests import guarded_session
from digest.fetch.stage import FetchRun
from digest.fetch.videos import (
    YOUTUBE_HOSTS,
    Chapter,
    chapters_in,
    youtube_video_id,
)
from digest.lifecycle import items_due_for_fetch
from digest.models import SavedItem
from digest.store import Store, open_store
from loopback import LoopbackServer, Request, Response

T0 = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
CAPTIONS = Path(__file__).parent / "fixtures" / "videos"
WITH_WORDS, WITHOUT = "c0ntainer5x", "n0capt1onsx"
DESCRIPTION = (
    "How Modal starts containers in a second.\\n\\n0:00 Intro\\n1:05 Images\\n2:10 Snapshots"
)


def watch_page(request: Request) -> Response:
    video = parse_qs(urlsplit(request.path).query).get("v", [""])[0]
    title = "How containers work in Modal" if video == WITH_WORDS else "A talk without captions"
    html = (
        f"<html><head><title>{title} - YouTube</title>"
        f'<meta property="og:title" content="{title}">'
        f'<meta property="og:description" content="How Modal starts containers.">'
        "</head><body>"
        '<span itemprop="author" itemscope><link itemprop="name" content="Modal Labs"></span>'
        f'<script>var ytcfg = {{"INNERTUBE_API_KEY": "loopkey"}};'
        f'var ytInitialPlayerResponse = {{"videoDetails": {{"shortDescription": "{DESCRIPTION}"}}}};'
        "</script></body></html>"
    )
    return Response(200, html, {"Content-Type": "text/html; charset=utf-8"})


def player(request: Request) -> Response:
    video = json.loads(request.body or b"{}").get("videoId")
    if video != WITH_WORDS:
        return Response(200, json.dumps({"playabilityStatus": {"status": "OK"}}))
    tracks = [
        {
            "baseUrl": f"https://www.youtube.com/api/timedtext?v={video}&lang=en&kind=asr",
            "name": {"runs": [{"text": "English (auto-generated)"}]},
            "languageCode": "en",
            "kind": "asr",
        },
        {
            "baseUrl": f"https://www.youtube.com/api/timedtext?v={video}&lang=en",
            "name": {"runs": [{"text": "English"}]},
            "languageCode": "en",
        },
    ]
    answer = {
        "playabilityStatus": {"status": "OK"},
        "captions": {"playerCaptionsTracklistRenderer": {"captionTracks": tracks}},
    }
    return Response(200, json.dumps(answer), {"Content-Type": "application/json"})


def captions(request: Request) -> Response:
    generated = "kind=asr" in request.path
    name = "containers.en-asr.xml" if generated else "containers.en.xml"
    return Response(200, (CAPTIONS / name).read_text(), {"Content-Type": "text/xml"})


class ToLoopback(HTTPAdapter):
    """The library's requests, sent to the loopback stand-in instead of YouTube."""

    def __init__(self, server: LoopbackServer) -> None:
        super().__init__()
        self.base = server.url("").rstrip("/")

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        request.url = (request.url or "").replace("https://www.youtube.com", self.base)
        return super().send(request, **kwargs)


async def youtube_here(host: str, port: int) -> list[tuple[Any, ...]]:
    """Our fetcher's name lookups: the video site on loopback (the address guard allows it)."""
    assert host == "www.youtube.com"
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "digest.db") as opened:
        yield opened


def fetch_videos(store: Store, server: LoopbackServer) -> list[str]:
    for path, handler in (("/watch", watch_page), ("/youtubei/v1/player", player)):
        server.routes[path] = handler
    server.routes["/api/timedtext"] = captions
    source = store.ensure_source("journal", "file", path="/journal")
    port = server.port
    store.save_items(
        source,
        [SavedItem(f"http://www.youtube.com:{port}/watch?v={v}") for v in (WITH_WORDS, WITHOUT)],
        T0,
    )
    config = FetchConfig(allow_private_addresses=["127.0.0.0/8"], per_host_delay_s=0, timeout_s=5)
    session = requests.Session()
    session.mount("https://www.youtube.com", ToLoopback(server))
    stage = FetchRun(
        store, config, lambda: T0, waits=Waits(lookup=youtube_here), video_session=session
    )
    report = asyncio.run(stage.run(items_due_for_fetch(store.fetch_candidates(), T0), []))
    return report.info


def test_a_video_is_read_by_its_transcript_in_chapters(
    store: Store, server: LoopbackServer
) -> None:
    info = fetch_videos(store, server)

    by_id = {youtube_video_id(item.url or ""): item for item in store.all_items()}
    talk, silent = by_id[WITH_WORDS], by_id[WITHOUT]
    assert talk.extracted_title == "How containers work in Modal"
    text = talk.text or ""
    assert text.startswith("How containers work in Modal\n\nIntro\n\nHi, I'm going to show")
    assert "Images\n\nImages are built once" in text
    assert "Snapshots\n\nMemory snapshots go further" in text
    assert "uh a container" not in text  # the manual captions, not the generated ones
    assert talk.language == "en"
    assert "Modal starts containers" in (silent.text or "")  # its description, as before
    assert info == ["1 video without a transcript: noted from the description"]


def test_the_note_is_made_from_what_was_said(
    store: Store, server: LoopbackServer, tmp_path: Path
) -> None:
    fetch_videos(store, server)
    config = tmp_path / "digest.toml"
    config.write_text(f'[digest]\ndata_dir = "{tmp_path}"\n')
    result = CliRunner().invoke(cli, ["summarize", "--config", str(config)], catch_exceptions=False)

    assert result.exit_code == 0, result.output
    talk = next(item for item in store.all_items() if WITH_WORDS in (item.url or ""))
    assert talk.note is not None and talk.note.basis.value == "full text"
    said = " ".join([talk.note.summary, *talk.note.key_points])
    assert any(phrase in said for phrase in ("lazily", "snapshot", "cached by the hash"))


def test_video_links_and_chapters_are_recognised() -> None:
    assert youtube_video_id("https://youtu.be/c0ntainer5x?t=30") == "c0ntainer5x"
    assert youtube_video_id("https://www.youtube.com/shorts/c0ntainer5x") == "c0ntainer5x"
    assert youtube_video_id("https://m.youtube.com/watch?v=c0ntainer5x&list=x") == "c0ntainer5x"
    assert youtube_video_id("https://www.youtube.com/@modal") is None
    assert youtube_video_id("https://vimeo.com/123") is None
    assert chapters_in("0:00 Intro\n1:05 Images\n1:02:10 - Questions") == [
        Chapter(0, "Intro"),
        Chapter(65, "Images"),
        Chapter(3730, "Questions"),
    ]
    assert chapters_in("1:05 Images\n2:10 Snapshots") == []  # not from 0:00: no chapters


def test_our_session_goes_to_youtube_only_and_never_to_a_private_address(
    server: LoopbackServer,
) -> None:
    server.routes["/watch"] = watch_page
    url = f"http://www.youtube.com:{server.port}/watch?v={WITHOUT}"

    def loopback(host: str, port: None) -> list[tuple[Any, ...]]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 0))]

    with pytest.raises(requests.ConnectionError, match="not a host this session may reach"):
        guarded_session(Config().fetch, YOUTUBE_HOSTS, loopback).get(server.url("/watch"))
    with pytest.raises(requests.ConnectionError, match="127.0.0.1 is a private address"):
        guarded_session(FetchConfig(), YOUTUBE_HOSTS, loopback).get(url)
    assert server.requests == []
    allowed = FetchConfig(allow_private_addresses=["127.0.0.0/8"])
    # past the guard, to the address it checked (not one urllib3 would look up again)
    answer = guarded_session(allowed, YOUTUBE_HOSTS, loopback).get(url)
    assert "A talk without captions" in answer.text
    assert [hit.headers["host"] for hit in server.hits("/watch")] == [
        f"www.youtube.com:{server.port}"
    ]
