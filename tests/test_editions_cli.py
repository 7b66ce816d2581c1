"""The editions through `digest now`, as users run it: a push through Apprise to a loopback
server, the EPUB and the archive site. One run lands each once; a rerun with nothing new
pushes nothing and rewrites nothing; a push server that fails costs one line naming it and
what to do, while the book and the site still land. Read as a reader would: titles and links."""

from __future__ import annotations

import json
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import ebooklib
from click.testing import CliRunner, Result
from ebooklib import epub

from digest.cli import cli
from loopback import LoopbackServer, Response
from sampleweek import FIXTURES, PAGES, WEEK, page

DATES = "16–22 November 2026"
READ = {
    title: path for path, (title, _text) in PAGES.items() if path in ("/posts/pin", "/posts/tuning")
}


class Links(HTMLParser):
    """What a reader sees of a page: its headings and its links (text and where they go)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.headings: list[str] = []
        self._href: str | None = None
        self._heading = False
        self._text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href, self._text = dict(attrs).get("href") or "", []
        elif tag in ("h1", "h2"):
            self._heading = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append(("".join(self._text).strip(), self._href))
            self._href = None
        elif tag in ("h1", "h2"):
            self._heading = False

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)
        if self._heading and data.strip():
            self.headings.append(data.strip())


@dataclass
class Rig:
    server: LoopbackServer
    config: Path
    data: Path

    def now(self) -> Result:
        return CliRunner().invoke(
            cli, ["now", "--week", WEEK, "--config", str(self.config)], catch_exceptions=False
        )

    def pushes(self) -> list[dict[str, Any]]:
        return [json.loads(request.body) for request in self.server.hits("/hook")]

    def editions(self) -> dict[Path, tuple[int, bytes]]:
        """Each written edition's file: when it was last written, and what it holds."""
        paths = [
            self.data / "digests" / f"{WEEK}.md",
            self.data / "digests" / f"{WEEK}.epub",
            self.data / "site" / "index.html",
            self.data / "site" / f"{WEEK}.html",
        ]
        return {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in paths}


def rig_for(tmp_path: Path, server: LoopbackServer, hook: int) -> Rig:
    for path, (title, text) in PAGES.items():
        server.routes[path] = Response(200, page(title, text))
    server.routes["/hook"] = Response(hook, "{}", content_type="application/json")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for fixture in FIXTURES.glob("journal.*"):
        text = fixture.read_text(encoding="utf-8").replace("{base}", server.url("").rstrip("/"))
        (inbox / fixture.name).write_text(text, encoding="utf-8")
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\ntimezone = "UTC"\n\n'
        '[[sources]]\nname = "inbox"\nkind = "file"\npath = "inbox"\n\n'
        '[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\nper_host_delay_s = 0\n'
        "timeout_s = 60  # loopback pages that answer at once: the margin costs nothing\n\n"
        f'[notify]\nurls = ["json://127.0.0.1:{server.port}/hook"]\n'
        "retries = 1\nretry_backoff_s = 0\n\n"
        "[epub]\nenabled = true\n\n[site]\nenabled = true\n",
        encoding="utf-8",
    )
    return Rig(server, config, tmp_path / "data")


def assert_the_book_reads_as_the_week(rig: Rig) -> None:
    book = epub.read_epub(str(rig.data / "digests" / f"{WEEK}.epub"))
    assert book.get_metadata("DC", "title")[0][0] == f"Digest for {WEEK}"
    documents = {
        item.get_name(): Links(item.get_content().decode())
        for item in book.get_items_of_type(ebooklib.ITEM_DOCUMENT)
    }
    contents = [text for text, _href in documents["nav.xhtml"].links]
    assert contents[0] == f"Digest for {WEEK}"
    assert {"Rust Shenanigans", "Optimization", *READ} <= set(contents)
    assert DATES in (rig.data / "digests" / f"{WEEK}.md").read_text(encoding="utf-8")
    links = [link for name, page in documents.items() if name != "nav.xhtml" for link in page.links]
    for title, path in READ.items():  # each article under its title, linked to the page saved
        assert (title, rig.server.url(path)) in links


def assert_the_site_reads_as_the_week(rig: Rig) -> None:
    index = (rig.data / "site" / "index.html").read_text(encoding="utf-8")
    assert (WEEK, f"{WEEK}.html") in Links(index).links
    assert DATES in index
    week = Links((rig.data / "site" / f"{WEEK}.html").read_text(encoding="utf-8"))
    for title, path in READ.items():
        assert (title, rig.server.url(path)) in week.links
    assert "Rust Shenanigans" in week.headings


def test_one_now_pushes_once_and_writes_the_book_and_the_site_and_a_rerun_touches_none(
    tmp_path: Path, server: LoopbackServer
) -> None:
    rig = rig_for(tmp_path, server, hook=200)

    first = rig.now()

    assert first.exit_code == 0, first.output
    [push] = rig.pushes()
    assert push["title"] == f"Digest for {WEEK}"
    lines = push["message"].splitlines()
    assert lines[0] == DATES and lines[-1] == "8 items · 4 min read"
    assert any("Pin and suffering" in line for line in lines[1:-1])  # the week in brief
    assert_the_book_reads_as_the_week(rig)
    assert_the_site_reads_as_the_week(rig)
    written = rig.editions()

    again = rig.now()

    assert again.exit_code == 0, again.output
    assert len(rig.pushes()) == 1
    assert rig.editions() == written  # not rewritten: the same bytes, the same mtimes


def test_a_failing_push_server_costs_one_line_naming_it_and_the_book_and_the_site_land(
    tmp_path: Path, server: LoopbackServer
) -> None:
    rig = rig_for(tmp_path, server, hook=500)
    shown = f"json://127.0.0.1:{server.port}/hook"

    failed = rig.now()

    assert failed.exit_code == 3, failed.output  # done, with something to look at
    [line] = [line for line in failed.stderr.splitlines() if "notify" in line]
    assert line.startswith(f"  ! notify {shown} for {WEEK}: ") and "error=500" in line
    assert "tried 2 times, retried on the next run" in line
    assert "check that service, or notify URL 1 in [notify] urls" in line
    assert len(server.hits("/hook")) == 2  # the send, and its one retry
    assert_the_book_reads_as_the_week(rig)
    assert_the_site_reads_as_the_week(rig)
    written = rig.editions()
    server.routes["/hook"] = Response(200, "{}", content_type="application/json")

    recovered = rig.now()

    assert recovered.exit_code == 0, recovered.output
    assert "notify" not in recovered.stderr
    assert len(server.hits("/hook")) == 3 and len(rig.pushes()) == 3
    assert rig.editions() == written  # only the push was owed
