"""A feed episode with a <podcast:transcript> is noted from what was said: a loopback
server serves the episode feed and a transcript of each kind (SRT, WebVTT, the podcast
namespace's JSON, HTML); an episode without one keeps its description, as before."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from digest.cli import cli
from digest.collect.feeds import collect_feeds
from digest.collect.transcripts import transcript_text
from digest.config import FetchConfig, SourceConfig
from digest.fetch.client import Fetcher
from digest.models import Item, ItemState, StageReport
from digest.store import Store, open_store
from loopback import LoopbackServer, Response

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

SRT = """1
00:00:00,000 --> 00:00:04,200
Alice: Welcome back to Systems Talk. Today, how containers start in under a second.

2
00:00:04,200 --> 00:00:09,000
Bob: The trick is that images are built once
and cached by the hash of their layers.

3
00:01:05,000 --> 00:01:09,000
Memory snapshots go further: a warm process is restored, not booted.
"""

VTT = """WEBVTT Kind: captions

NOTE recorded live, not edited

intro
00:00.000 --> 00:03.500 align:start
<v Carol>Garbage collectors trade <i>pause time</i> for throughput.</v>

00:03.500 --> 00:07.000
<v Dan>And generational ones bet that most objects die young.

STYLE
::cue { color: yellow }
"""

JSON_TRANSCRIPT = {
    "version": "1.0.0",
    "segments": [
        {"speaker": "Erin", "startTime": 0.5, "endTime": 3.1, "body": "Postgres vacuums"},
        {"speaker": "Erin", "startTime": 3.1, "endTime": 5.0, "body": "dead tuples lazily."},
        {"speaker": "Frank", "startTime": 5.0, "endTime": 8.0, "body": "Autovacuum tunes it."},
        {"startTime": 9.0, "body": ""},
        "not a segment",
    ],
}

HTML_TRANSCRIPT = """<!doctype html><html><head><title>Transcript</title></head><body>
<article><h1>Episode 4 transcript</h1>
<p><cite>Grace:</cite> Rust's borrow checker rejects aliasing of mutable references at
compile time, which is why data races cannot happen in safe code.</p>
<p><cite>Heidi:</cite> Lifetimes are how the compiler proves a reference never outlives
the value it points to, and most of them are inferred without annotations.</p>
<p><cite>Grace:</cite> Unsafe blocks are where those proofs are handed to the programmer,
and a good crate keeps them small and documented.</p>
</article></body></html>"""

EPISODES = (
    ("srt", "containers", "application/x-subrip"),
    ("vtt", "collectors", "text/vtt"),
    ("json", "vacuum", "application/json"),
    ("html", "borrowing", "text/html"),
)


def episode_feed(base: str) -> str:
    items = [
        f"""<item><title>Episode {name}</title><link>{base}/episodes/{name}</link>
        <guid>{name}</guid><description>Show notes for {name}.</description>
        <podcast:transcript url="/transcripts/{name}.{kind}" type="{media}" language="en"/>
        </item>"""
        for kind, name, media in EPISODES
    ]
    items.append(
        f"""<item><title>Episode quiet</title><link>{base}/episodes/quiet</link>
        <guid>quiet</guid><description>No transcript for this one.</description></item>"""
    )
    items.append(
        f"""<item><title>Episode lost</title><link>{base}/episodes/lost</link>
        <guid>lost</guid><description>Its transcript went missing.</description>
        <podcast:transcript url="/transcripts/lost.srt" type="application/x-subrip"/></item>"""
    )
    return f"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:podcast="https://podcastindex.org/namespace/1.0">
<channel><title>Systems Talk</title><link>{base}/</link>{"".join(items)}</channel></rss>"""


def serve_podcast(server: LoopbackServer) -> None:
    server.routes["/feed.xml"] = Response(
        body=episode_feed(server.url("")), content_type="application/rss+xml"
    )
    bodies = {
        "srt": SRT,
        "vtt": VTT,
        "json": json.dumps(JSON_TRANSCRIPT),
        "html": HTML_TRANSCRIPT,
    }
    for kind, name, media in EPISODES:
        server.routes[f"/transcripts/{name}.{kind}"] = Response(
            body=bodies[kind], content_type=media
        )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "digest.db") as opened:
        yield opened


def collect(store: Store, server: LoopbackServer, **overrides: Any) -> StageReport:
    settings = FetchConfig(
        **({"allow_private_addresses": True, "timeout_s": 5, "per_host_delay_s": 0} | overrides)
    )
    url = server.url("/feed.xml")
    feed = (
        store.ensure_source("talk", "feed", url=url),
        SourceConfig(name="talk", kind="feed", url=url),
    )

    async def run() -> StageReport:
        async with Fetcher(settings) as fetcher:
            return await collect_feeds(store, fetcher, [feed], settings, NOW)

    return asyncio.run(run())


def episodes(store: Store) -> dict[str, Item]:
    return {(item.title or "").removeprefix("Episode "): item for item in store.all_items()}


def test_each_kind_of_transcript_becomes_the_episodes_text(
    store: Store, server: LoopbackServer
) -> None:
    serve_podcast(server)
    report = collect(store, server)

    assert report.done == 6 and not report.failures
    found = episodes(store)
    for kind, name, _ in EPISODES:
        assert found[name].state is ItemState.FETCHED, kind
        assert (found[name].text or "").startswith(f"Episode {name}\n\n"), kind
    assert found["containers"].text == (
        "Episode containers\n\nAlice: Welcome back to Systems Talk. Today, how containers start"
        " in under a second. Bob: The trick is that images are built once and cached by the"
        " hash of their layers.\n\nMemory snapshots go further: a warm process is restored,"
        " not booted."
    )
    assert found["collectors"].text == (
        "Episode collectors\n\nCarol: Garbage collectors trade pause time for throughput."
        " Dan: And generational ones bet that most objects die young."
    )
    assert found["vacuum"].text == (
        "Episode vacuum\n\nErin: Postgres vacuums dead tuples lazily. Frank: Autovacuum tunes it."
    )
    borrowing = found["borrowing"].text or ""
    assert "borrow checker rejects aliasing" in borrowing and "Unsafe blocks" in borrowing
    assert "<cite>" not in borrowing


def test_an_episode_without_a_readable_transcript_keeps_its_description(
    store: Store, server: LoopbackServer
) -> None:
    serve_podcast(server)
    report = collect(store, server)

    found = episodes(store)
    for name in ("quiet", "lost"):
        assert found[name].state is ItemState.NEW and found[name].text is None
    assert found["quiet"].context == "No transcript for this one."
    assert [line for line in report.info if "transcript" in line] == [
        "feed 'talk': 1 episode transcript(s) not read, noted from the description:"
        f" fetch failed: {server.url('/transcripts/lost.srt')!r}: HTTP 404"
    ]


def test_a_transcript_is_read_once_when_its_episode_is_new(
    store: Store, server: LoopbackServer
) -> None:
    serve_podcast(server)
    collect(store, server)
    asked = len([r for r in server.requests if r.path.startswith("/transcripts/")])
    collect(store, server)

    assert len([r for r in server.requests if r.path.startswith("/transcripts/")]) == asked == 5


def test_a_transcript_over_the_size_cap_is_not_read(store: Store, server: LoopbackServer) -> None:
    serve_podcast(server)
    words = "".join(
        f"{n}\n00:00:{n % 60:02},000 --> 00:00:59,000\nword {n}\n\n" for n in range(900)
    )
    server.routes["/transcripts/containers.srt"] = Response(body=words)
    report = collect(store, server, max_bytes=6000)

    found = episodes(store)
    assert found["containers"].text is None and found["containers"].state is ItemState.NEW
    assert any("2 episode transcript(s) not read" in line for line in report.info)


def test_the_note_is_made_from_what_was_said(
    store: Store, server: LoopbackServer, tmp_path: Path
) -> None:
    serve_podcast(server)
    collect(store, server)
    config = tmp_path / "digest.toml"
    config.write_text(f'[digest]\ndata_dir = "{tmp_path}"\n')
    result = CliRunner().invoke(cli, ["summarize", "--config", str(config)], catch_exceptions=False)

    assert result.exit_code == 0, result.output
    talk = episodes(store)["containers"]
    assert talk.note is not None and talk.note.basis.value == "full text"
    said = " ".join([talk.note.summary, *talk.note.key_points])
    assert any(phrase in said for phrase in ("second", "hash", "snapshots", "restored"))


def test_transcript_files_are_told_by_their_shape() -> None:
    url = "https://talk.test/t"
    assert transcript_text(b"\xef\xbb\xbf" + SRT.encode(), url).startswith("Alice: Welcome")
    assert transcript_text(VTT.replace("\n", "\r\n").encode(), url).startswith("Carol:")
    assert transcript_text(b"[]", url) == ""
    assert transcript_text(b'{"segments": 3}', url) == ""
    assert transcript_text(b"{not json", url) == ""
    assert transcript_text(b"Plain words.\n\nMore words.", url) == "Plain words.\n\nMore words."
    assert transcript_text(b"WEBVTT\n\n00:01.000 --> 00:02.000\n", url) == ""
