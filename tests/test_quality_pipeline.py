"""Pages that are no article, through the real CLI against loopback servers: each item is
marked, noted from the feed's summary with a label saying why, and noted again when a
better copy arrives."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from loopback import LoopbackServer, Response
from test_extract_quality import CLOUDFLARE, CONSENT, PAYWALL

WEEK = "2026-W47"
THIN = "<html><head><title>Gallery</title></head><body><div id='app'><p>Loading…</p></div></body></html>"
SUMMARIES = {
    "/posts/walled": "Ferry timetables change in December for the winter season.",
    "/posts/paid": "The council votes in March on moving the ferry terminal.",
    "/posts/consent": "Lighthouse keepers' cottages go up for auction next spring.",
    "/posts/thin": "Photographs of the storm that flooded the quay last week.",
}
PAGES = {"/posts/walled": CLOUDFLARE, "/posts/paid": PAYWALL, "/posts/consent": CONSENT}
REASONS = {
    "/posts/walled": "(from saved context — the page was a bot check)",
    "/posts/paid": "(from saved context — the page was a paywall)",
    "/posts/consent": "(from saved context — the page was a consent wall)",
    "/posts/thin": "(from saved context — the page had too little text)",
}


# What Cloudflare's managed challenge answers (abridged): 403, `cf-mitigated: challenge`.
CHALLENGE_PAGE = """<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<meta http-equiv="X-UA-Compatible" content="IE=Edge"><meta name="robots" content="noindex,nofollow">
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>*{box-sizing:border-box;margin:0;padding:0}html{line-height:1.15}</style>
<meta http-equiv="refresh" content="390"></head><body class="no-js">
<div class="main-wrapper" role="main"><div class="main-content">
<noscript><div id="challenge-error-title"><div class="h2"><span id="challenge-error-text">
Enable JavaScript and cookies to continue</span></div></div></noscript></div></div>
<script>(function(){window._cf_chl_opt={cvId: '3',cZone: "harbour.example",cType: 'managed',
cRay: '8e2f6c1d9a7b3c4d',cH: 'Xy.z1',cUPMDTk: "\\/posts\\/challenged?__cf_chl_tk=abc",
cFPWv: 'b',cITimeS: '1763888400'};var cpo=document.createElement('script');
cpo.src='/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1?ray=8e2f6c1d9a7b3c4d';
document.getElementsByTagName('head')[0].appendChild(cpo);}());</script></body></html>"""
CHALLENGE_HEADERS = {
    "cf-mitigated": "challenge",
    "server": "cloudflare",
    "cf-ray": "8e2f6c1d9a7b3c4d-AMS",
    "cache-control": "private, max-age=0, no-store, no-cache, must-revalidate",
    "critical-ch": "Sec-CH-UA-Bitness, Sec-CH-UA-Arch, Sec-CH-UA-Full-Version",
}


def article(title: str) -> str:
    body = "".join(
        f"<p>{title} is the subject of paragraph {n}. Reporters walked the harbour wall and"
        f" spoke to the people who work there about what paragraph {n} should say.</p>"
        for n in range(10)
    )
    return f"<html><head><title>{title}</title></head><body><article>{body}</article></body></html>"


def feed(server: LoopbackServer, summaries: dict[str, str]) -> str:
    items = "".join(
        f"<item><title>Story {path.rsplit('/', 1)[1]}</title><link>{server.url(path)}</link>"
        f"<guid>{path}</guid><pubDate>Tue, 17 Nov 2026 09:00:00 GMT</pubDate>"
        f"<description>{summary}</description></item>"
        for path, summary in summaries.items()
    )
    return (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>Harbour</title>'
        f"<link>{server.url('/')}</link><description>d</description>{items}</channel></rss>"
    )


@dataclass
class Rig:
    server: LoopbackServer
    config: Path
    data: Path

    def run(self) -> Result:
        args = ["now", "--week", WEEK, "--config", str(self.config)]
        return CliRunner().invoke(cli, args, catch_exceptions=False)

    def serve_feed(self, summaries: dict[str, str]) -> None:
        self.server.routes["/rss.xml"] = Response(
            200, feed(self.server, summaries), content_type="application/rss+xml"
        )

    def rows(self) -> dict[str, sqlite3.Row]:
        with sqlite3.connect(self.data / "digest.db") as db:
            db.row_factory = sqlite3.Row
            found = db.execute(
                "SELECT i.url, i.quality, i.state, i.error, i.next_attempt_at, i.note_id,"
                " n.basis, n.summary FROM items i"
                " LEFT JOIN notes n ON n.id = i.note_id"
            ).fetchall()
        return {row["url"].split(str(self.server.port))[1]: row for row in found}

    def digest(self) -> str:
        return (self.data / "digests" / f"{WEEK}.md").read_text()


@pytest.fixture
def rig(tmp_path: Path, server: LoopbackServer) -> Iterator[Rig]:
    for path, page in PAGES.items():
        server.routes[path] = Response(200, page)
    server.routes["/posts/thin"] = Response(200, THIN)
    config = tmp_path / "digest.toml"
    config.write_text(
        f"""
[digest]
data_dir = "data"
timezone = "UTC"

[[sources]]
name = "harbour"
kind = "feed"
url = "{server.url("/rss.xml")}"

[fetch]
allow_private_addresses = ["127.0.0.1/32"]
timeout_s = 30  # loopback pages answer at once: a wide margin for a loaded machine
retry_base_s = 0
per_host_delay_s = 0
"""
    )
    rig = Rig(server, config, tmp_path / "data")
    rig.serve_feed(SUMMARIES)
    yield rig


def test_walls_and_thin_pages_are_marked_and_noted_from_the_feed_summary(rig: Rig) -> None:
    result = rig.run()

    assert result.exit_code == 0, result.output
    rows = rig.rows()
    assert {path: row["quality"] for path, row in rows.items()} == {
        "/posts/walled": "blocked",
        "/posts/paid": "paywalled",
        "/posts/consent": "consent",
        "/posts/thin": "thin",
    }
    for path, row in rows.items():
        assert row["basis"] == "saved context", path
        assert "Checking if the site" not in row["summary"]
        assert "partners use cookies" not in row["summary"]
    digest = rig.digest()
    for path, reason in REASONS.items():
        assert digest.count(reason) == 1, path
    assert "Ferry timetables change in December" in digest
    assert "Lighthouse keepers' cottages" in digest


def test_a_later_good_copy_of_a_walled_page_is_noted_from_its_text(rig: Rig) -> None:
    rig.run()
    rig.server.routes["/posts/walled"] = Response(200, article("Winter ferry timetable"))

    result = rig.run()

    assert result.exit_code == 0, result.output
    walled = rig.rows()["/posts/walled"]
    assert (walled["quality"], walled["basis"]) == (None, "full text")
    assert "Winter ferry timetable is the subject" in walled["summary"]
    assert REASONS["/posts/walled"] not in rig.digest()
    assert REASONS["/posts/paid"] in rig.digest()  # still a paywall: still labelled


def test_a_feed_update_with_a_new_summary_notes_a_paywalled_item_again(rig: Rig) -> None:
    rig.run()
    first = rig.rows()["/posts/paid"]["summary"]
    walled_note = rig.rows()["/posts/walled"]["note_id"]
    rig.serve_feed(
        {**SUMMARIES, "/posts/paid": "Update: the ferry terminal vote is postponed to May."}
    )

    result = rig.run()

    assert result.exit_code == 0, result.output
    paid = rig.rows()["/posts/paid"]
    assert paid["summary"] != first
    assert "postponed to May" in paid["summary"]
    assert paid["basis"] == "saved context"
    assert rig.rows()["/posts/walled"]["note_id"] == walled_note  # its summary did not change


@pytest.mark.parametrize("status", [403, 429, 503])
def test_a_cloudflare_challenge_is_a_bot_wall_checked_again_never_given_up(
    rig: Rig, status: int
) -> None:
    rig.server.routes["/posts/challenged"] = Response(
        status, CHALLENGE_PAGE, headers=CHALLENGE_HEADERS
    )
    summaries = {**SUMMARIES, "/posts/challenged": "The harbour master retires after 30 years."}
    rig.serve_feed(summaries)

    for run in range(5):  # more than the three tries a permanent refusal gets
        result = rig.run()
        assert result.exit_code == 0, result.output
        challenged = rig.rows()["/posts/challenged"]
        assert challenged["quality"] == "blocked" and challenged["error"] is None, run
        assert challenged["state"] == rig.rows()["/posts/walled"]["state"], run  # as a 200 wall
        assert challenged["next_attempt_at"], run

    assert len(rig.server.hits("/posts/challenged")) == 5
    assert challenged["basis"] == "saved context"
    digest = rig.digest()
    assert "The harbour master retires after 30 years." in digest
    assert digest.count("(from saved context — the page was a bot check)") == 2
    assert "Just a moment" not in digest and "access denied" not in digest
