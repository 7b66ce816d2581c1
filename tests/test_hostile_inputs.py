"""No input stops a run: a journal, a bookmarks file and a feed each carry good links among
hostile ones, through `digest now` against a loopback server."""

from __future__ import annotations

import html
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from digest.cli import cli
from digest.collect.formats import REGISTRY, register
from digest.urls import without_userinfo
from loopback import LoopbackServer, Response

WEEK = "2026-W47"
# Refused by the URL parser, each with its reason: IPv6 brackets and zone ids, ports,
# IDNA, no host, 20,000 characters, 3,000 `[`, schemes that are not the web.
REFUSED = [
    "http://[::1",
    "https://[fe80::1%25eth0]/x",
    "http://[v1.x]/",
    "http://[::1]junk/",
    "http://[:::1]/",
    "http://[::1]:99999/",
    "http://example.org:99999/",
    "http://example.org:8o/",
    "http://example.org:0/",
    "https://\u2603.net/",
    "https://a..b/",
    "http:///path",
    "https://",
    "http://999.1.1.1/",
    "https://example.org/" + "a" * 20_000,
    "http://" + "[" * 3000,
    "javascript:alert(1)",
    "file:///etc/passwd",
    "data:text/html,<script>alert(1)</script>",
    "ftp://example.org/file",
]
# Valid URLs of private addresses: saved, then refused by the address guard, never reached.
PRIVATE = [
    "http://10.0.0.1/admin",
    "http://user:secret@10.0.0.3/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:9/",
    "http://[::ffff:192.168.0.1]/",
]
HOSTILE = REFUSED + PRIVATE
# feedparser itself rewrites this link to "http://path", a valid URL whose lookup would leave
# the machine: left out of the feed.
FEEDPARSER_FIXES = {"http:///path"}


# Each good page tells its own story: pages alike in all but their title are one story (a copy)
STORIES = {
    "Good journal": "tomatoes ripen sooner when gardeners mulch the soil with compost",
    "Good bookmark": "orbital telescopes photograph distant galaxies through infrared filters",
    "Good feed entry": "bakers proof sourdough overnight so its crust blisters in hot ovens",
}


def page(title: str) -> str:
    sentences = "".join(f"<p>{title}: {STORIES[title]}, part {n}.</p>" for n in range(8))
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{sentences}</article></body></html>"


def write_inputs(root: Path, server: LoopbackServer) -> Path:
    inbox = root / "inbox"
    inbox.mkdir()
    journal = ["## 2026-11-17", f"- [Good journal]({server.url('/good/journal')})"]
    journal += [f"- {url}" for url in HOSTILE]
    (inbox / "til.md").write_bytes(
        "\n".join(journal).encode("utf-8") + b"\n- caf\xe9 latin-1 bytes\n"
    )
    marks = [
        f'<DT><A HREF="{server.url("/good/bookmark")}" ADD_DATE="1795003200">Good bookmark</A>'
    ]
    marks += [
        f'<DT><A HREF="{url}" ADD_DATE="1795003200">hostile {n}</A>'
        for n, url in enumerate(HOSTILE)
    ]
    (inbox / "bookmarks.html").write_text(
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n" + "\n".join(marks) + "\n</DL><p>\n"
    )
    entries = [(server.url("/good/feed"), "Good feed entry")]
    entries += [
        (url, f"hostile {n}") for n, url in enumerate(HOSTILE) if url not in FEEDPARSER_FIXES
    ]
    items = "".join(
        f"<item><title>{title}</title><link>{html.escape(url)}</link>"
        "<pubDate>Tue, 17 Nov 2026 09:00:00 GMT</pubDate></item>"
        for url, title in entries
    )
    server.routes["/feed.xml"] = Response(
        200,
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>f</title>{items}</channel></rss>',
        content_type="application/rss+xml",
    )
    for path, title in (
        ("/good/journal", "Good journal"),
        ("/good/bookmark", "Good bookmark"),
        ("/good/feed", "Good feed entry"),
    ):
        server.routes[path] = Response(200, page(title))
    config = root / "digest.toml"
    config.write_text(
        f'[digest]\ndata_dir = "data"\ntimezone = "UTC"\n\n'
        f'[[sources]]\nname = "feed"\nkind = "feed"\nurl = "{server.url("/feed.xml")}"\n\n'
        '[[sources]]\nname = "inbox"\nkind = "file"\npath = "inbox"\n\n'
        '[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\ntimeout_s = 30\nper_host_delay_s = 0\n'
    )
    return config


@pytest.mark.slow
def test_good_links_among_hostile_lines_all_arrive_and_each_hostile_line_is_reported(
    tmp_path: Path, server: LoopbackServer
) -> None:
    assert len(HOSTILE) == 25
    config = write_inputs(tmp_path, server)
    result = CliRunner().invoke(cli, ["now", "--week", WEEK, "--config", str(config)])
    paths = [request.path for request in server.requests]
    assert result.exit_code == 0, result.output
    digest = (tmp_path / "data" / "digests" / f"{WEEK}.md").read_text()
    for title in ("Good journal", "Good bookmark", "Good feed entry"):
        assert f"[{title}](" in digest
    # each refused line, once; and the journal's line of latin-1 bytes, not UTF-8
    for name, broken in (("til.md", 1), ("bookmarks.html", 0)):
        (summary,) = [line for line in result.stderr.splitlines() if f"{name}: format" in line]
        reported = _reported(summary)
        assert reported == len(REFUSED) + broken, summary
    skipped = len(REFUSED) - len(FEEDPARSER_FIXES)
    assert f"feed 'feed': {skipped} entries without a usable link skipped (not web links: '" in (
        result.stderr
    ), result.stderr
    assert set(paths) <= {"/feed.xml", "/good/journal", "/good/bookmark", "/good/feed"}
    stored = [without_userinfo(url, mark=True) for url in PRIVATE]  # no password kept
    with sqlite3.connect(tmp_path / "data" / "digest.db") as db:
        private = db.execute(
            f"SELECT url, error FROM items WHERE url IN ({','.join('?' * len(stored))})", stored
        ).fetchall()
    assert {url for url, _ in private} == set(stored) and "http://***@10.0.0.3/" in stored
    assert all(error and "refused" in error for _, error in private), private


def _reported(summary: str) -> int:
    """Lines not understood plus lines skipped, from a file's summary line."""
    counts = {
        part.split(" ", 1)[1]: int(part.split(" ", 1)[0])
        for part in summary.split(": ")[-1].split(", ")
    }
    return counts.get("lines not understood", counts.get("line not understood", 0)) + counts.get(
        "skipped", 0
    )


class Explodes:
    """An importer with a bug: it raises on every file it is asked to read."""

    name = "explodes"
    description = "a test importer that raises"
    appendable = False

    def sniff(self, head: str) -> int:
        return 0

    def parse(self, text: str, *, zone: object) -> object:
        raise KeyError("a bug")


@pytest.mark.slow
@pytest.mark.bug_expected
def test_a_bug_in_one_file_source_is_recorded_and_the_other_sources_go_on(
    tmp_path: Path, server: LoopbackServer
) -> None:
    register(Explodes())  # type: ignore[arg-type]
    try:
        _run_with_a_broken_source(tmp_path, server)
    finally:
        REGISTRY.pop("explodes")


def _run_with_a_broken_source(tmp_path: Path, server: LoopbackServer) -> None:
    config = write_inputs(tmp_path, server)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "a.txt").write_text("https://example.org/x\n")
    config.write_text(
        config.read_text().replace(
            "[fetch]",
            '[[sources]]\nname = "broken"\nkind = "file"\npath = "broken"\nformat = "explodes"\n\n[fetch]',
        )
    )
    result = CliRunner().invoke(cli, ["now", "--week", WEEK, "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert (
        f"{tmp_path / 'broken' / 'a.txt'}: internal error (KeyError: 'a bug'); a bug in digest"
        in result.stderr
    )
    assert "[Good feed entry](" in (tmp_path / "data" / "digests" / f"{WEEK}.md").read_text()
