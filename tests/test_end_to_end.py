"""The whole pipeline through the real CLI, against loopback feed and page servers."""

from __future__ import annotations

import email
import email.message
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope
from click.testing import CliRunner, Result

from digest.cli import cli
from fake_openai import FakeOpenAI
from loopback import Handler, LoopbackServer, Request, Response, free_port, serving

WEEK = "2026-W47"  # Monday 16 to Sunday 22 November 2026


def article(title: str, sentences: int = 12) -> str:
    body = "".join(
        f"<p>{title} matters because of reason number {n}. Engineers measured the effect of"
        f" {title.lower()} on latency in experiment {n} and wrote down what they saw.</p>"
        for n in range(sentences)
    )
    return (
        f"<html><head><title>{title}</title><meta name='author' content='Ada'></head><body>"
        f"<nav>Home | About</nav><article><h1>{title}</h1>{body}</article>"
        f"<footer>Copyright</footer></body></html>"
    )


def rss(server: LoopbackServer, entries: list[tuple[str, str, str]]) -> str:
    items = "".join(
        f"<item><title>{title}</title><link>{server.url(path)}</link>"
        f"<pubDate>{date}</pubDate><description>About {title}.</description></item>"
        for title, path, date in entries
    )
    return (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>Loop blog</title>'
        f"<link>{server.url('/')}</link><description>d</description>{items}</channel></rss>"
    )


def atom(server: LoopbackServer, entries: list[tuple[str, str, str]]) -> str:
    body = "".join(
        f"<entry><title>{title}</title><link href='{server.url(path)}'/><id>{path}</id>"
        f"<updated>{date}</updated><summary>About {title}.</summary></entry>"
        for title, path, date in entries
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>Loop atom</title><id>urn:loop</id><updated>2026-11-18T10:00:00Z</updated>{body}</feed>"
    )


def conditional(body: str, etag: str, content_type: str) -> Handler:
    def handler(request: Request) -> Response:
        if request.headers.get("if-none-match") == etag:
            return Response(304, b"", headers={"ETag": etag})
        return Response(200, body, headers={"ETag": etag}, content_type=content_type)

    return handler


@dataclass
class Rig:
    server: LoopbackServer
    config: Path
    data: Path

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(
            cli, [*args, "--config", str(self.config)], catch_exceptions=False
        )

    def page_hits(self) -> int:
        return sum(1 for r in self.server.requests if r.path.startswith("/posts/"))

    def db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.data / "digest.db")

    def digest(self) -> str:
        return (self.data / "digests" / f"{WEEK}.md").read_text()

    def log(self) -> str:
        return (self.data / "digest-log.md").read_text()


RSS_ENTRIES = [
    ("Kernel fusion", "/posts/fusion", "Mon, 16 Nov 2026 09:00:00 GMT"),
    ("Paged attention", "/posts/paged", "Tue, 17 Nov 2026 09:00:00 GMT"),
]
ATOM_ENTRIES = [
    ("Speculative decoding", "/posts/specdec", "2026-11-18T10:00:00Z"),
    ("Quantization", "/posts/quant", "2026-11-18T11:00:00Z"),
]


def serve_site(server: LoopbackServer, rss_entries: list[tuple[str, str, str]]) -> None:
    server.routes["/rss.xml"] = conditional(
        rss(server, rss_entries), f'"rss-{len(rss_entries)}"', "application/rss+xml"
    )
    server.routes["/atom.xml"] = conditional(
        atom(server, ATOM_ENTRIES), '"atom-1"', "application/atom+xml"
    )
    for title, path, _ in [*rss_entries, *ATOM_ENTRIES]:
        server.routes[path] = Response(200, article(title))
    for path in ("/posts/journal-one", "/posts/bookmarked"):
        server.routes[path] = Response(
            200, article(path.rsplit("/", 1)[1].replace("-", " ").title())
        )


def write_config(
    tmp_path: Path, server: LoopbackServer, extra: str = "", timeout_s: float = 60
) -> Path:
    inbox = tmp_path / "inbox"
    inbox.mkdir(exist_ok=True)
    (inbox / "til.md").write_text(
        "---\ntitle: TIL\n---\n\n## 2026-11-19\n### Serving\n"
        f"- [Journal one]({server.url('/posts/journal-one')})\n"
        f"- [Kernel fusion, again]({server.url('/posts/fusion')}?utm_source=x)\n"
        "- A book with no link\n"
    )
    (inbox / "bookmarks.html").write_text(
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<TITLE>Bookmarks</TITLE><H1>Bookmarks</H1>\n<DL><p>\n"
        "<DT><H3>Reading</H3>\n<DL><p>\n"
        f'<DT><A HREF="{server.url("/posts/bookmarked")}" ADD_DATE="1795003200">Bookmarked</A>\n'
        "</DL><p>\n</DL><p>\n"
    )
    config = tmp_path / "digest.toml"
    config.write_text(
        f"""
[digest]
data_dir = "data"
timezone = "UTC"

[[sources]]
name = "rss"
kind = "feed"
url = "{server.url("/rss.xml")}"

[[sources]]
name = "atom"
kind = "feed"
url = "{server.url("/atom.xml")}"

[[sources]]
name = "inbox"
kind = "file"
path = "inbox"

[fetch]
allow_private_addresses = ["127.0.0.1/32"]
timeout_s = {timeout_s:g}  # loopback pages answer at once: wide for a loaded machine
per_host_delay_s = 0
{extra}
"""
    )
    return config


@pytest.fixture
def rig(tmp_path: Path, server: LoopbackServer) -> Iterator[Rig]:
    serve_site(server, RSS_ENTRIES)
    yield Rig(server, write_config(tmp_path, server), tmp_path / "data")


EXPECTED_TITLES = [
    "Kernel fusion",
    "Paged attention",
    "Speculative decoding",
    "Quantization",
    "Journal one",
    "Bookmarked",
]


def test_now_writes_the_week_with_every_item_once_and_a_note(rig: Rig) -> None:
    result = rig.run("now", "--week", WEEK)

    assert result.exit_code == 0, result.output
    digest_path = Path(result.stdout.strip().splitlines()[-1])
    assert digest_path == rig.data / "digests" / f"{WEEK}.md"
    text = rig.digest()
    for title in EXPECTED_TITLES:  # listed once (the week summary may cite it too)
        assert text.count(f"\n- **[{title}](") == 1, title
    assert "A book with no link" in text
    assert rig.log().count(f"digest {WEEK} revision 1") == 1
    with rig.db() as db:
        unnoted = db.execute("SELECT count(*) FROM items WHERE note_id IS NULL").fetchone()[0]
    assert unnoted == 0


def test_the_same_link_in_two_sources_is_one_item(rig: Rig) -> None:
    rig.run("now", "--week", WEEK)

    with rig.db() as db:
        rows = db.execute(
            "SELECT i.id, count(*) FROM items i JOIN item_sources s ON s.item_id = i.id"
            " WHERE i.key LIKE '%/posts/fusion' GROUP BY i.id"
        ).fetchall()
    assert len(rows) == 1 and rows[0][1] == 2  # saved by the rss feed and the journal
    entries = [line for line in rig.digest().splitlines() if line.startswith("- **[")]
    assert sum("/posts/fusion" in entry for entry in entries) == 1


def test_rerun_with_nothing_new_fetches_nothing_and_delivers_nothing(rig: Rig) -> None:
    rig.run("now", "--week", WEEK)
    pages_before, log_before = rig.page_hits(), rig.log()
    requests_before = len(rig.server.requests)

    result = rig.run("now", "--week", WEEK)

    assert result.exit_code == 0, result.output
    assert rig.page_hits() == pages_before
    feed_requests = rig.server.requests[requests_before:]
    assert {r.path for r in feed_requests} == {"/rss.xml", "/atom.xml"}
    assert all("if-none-match" in r.headers for r in feed_requests)
    assert rig.log() == log_before


def test_one_new_feed_entry_means_one_fetch_and_one_new_revision(rig: Rig) -> None:
    rig.run("now", "--week", WEEK)
    pages_before = rig.page_hits()
    serve_site(
        rig.server,
        [*RSS_ENTRIES, ("Prefix caching", "/posts/prefix", "Thu, 19 Nov 2026 09:00:00 GMT")],
    )

    result = rig.run("now", "--week", WEEK)

    assert result.exit_code == 0, result.output
    assert rig.page_hits() == pages_before + 1
    assert "[Prefix caching](" in rig.digest()
    assert rig.log().count(f"digest {WEEK} revision 2") == 1
    assert rig.log().count(f"digest {WEEK} revision 1") == 1


@pytest.mark.slow
def test_failures_are_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    with serving() as server, serving("127.0.0.2") as private:
        serve_site(server, RSS_ENTRIES)
        private.routes["/secret"] = Response(200, article("Secret"))
        server.routes["/broken.xml"] = Response(
            200, "<rss><channel><item>", content_type="application/rss+xml"
        )
        server.routes["/posts/missing"] = Response(404, "gone")
        # far beyond the timeout, which a loaded machine's 404 still answers well within
        server.routes["/posts/slow"] = Response(200, article("Slow"), delay_s=300)
        server.routes["/posts/hop"] = Response(
            302, "", headers={"Location": private.url("/secret")}
        )
        config = write_config(tmp_path, server, timeout_s=6)  # the run waits it out once
        (tmp_path / "inbox" / "more.txt").write_text(
            "\n".join(server.url(p) for p in ("/posts/missing", "/posts/slow", "/posts/hop")) + "\n"
        )
        config.write_text(
            config.read_text()
            + f'\n[[sources]]\nname = "broken"\nkind = "feed"\nurl = "{server.url("/broken.xml")}"\n'
        )
        rig = Rig(server, config, tmp_path / "data")

        result = rig.run("now", "--week", WEEK)

        assert result.exit_code == 0, result.output
        assert private.requests == []  # the guard refused the hop before connecting
    with rig.db() as db:
        failed = dict(db.execute("SELECT url, error FROM items WHERE state = 'failed'").fetchall())
        broken = db.execute(
            "SELECT status, last_error FROM sources WHERE name = 'broken'"
        ).fetchone()
    assert "404" in failed[server.url("/posts/missing")]
    assert "imeout" in failed[server.url("/posts/slow")]
    assert "127.0.0.2" in failed[server.url("/posts/hop")]
    assert broken[0] == "failing" and broken[1]
    for title in EXPECTED_TITLES:
        assert f"[{title}](" in rig.digest()
    assert "404" in result.stderr and "broken" in result.stderr


@pytest.mark.slow
def test_notes_come_from_the_openai_server_and_a_rerun_makes_no_calls(
    tmp_path: Path, server: LoopbackServer
) -> None:
    with FakeOpenAI() as llm:
        serve_site(server, RSS_ENTRIES)
        llm.script(FakeOpenAI.rate_limited(retry_after="0"))  # a 429 first: the note still comes
        extra = f'[llm]\nprovider = "openai"\nmodel = "loop-model"\nbase_url = "{llm.base_url}"\n'
        rig = Rig(server, write_config(tmp_path, server, extra), tmp_path / "data")

        first = rig.run("now", "--week", WEEK)
        calls_after_first = len(llm.requests)
        second = rig.run("now", "--week", WEEK)

    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    with rig.db() as db:
        models = {
            row[0]
            for row in db.execute("SELECT n.model FROM items i JOIN notes n ON n.id = i.note_id")
        }
        recorded = db.execute("SELECT count(*) FROM llm_calls").fetchone()[0]
    assert models == {"loop-model"}
    items = len(EXPECTED_TITLES) + 1  # and the journal's note without a link
    assert calls_after_first == items + 2  # one note each, the retried 429, the week summary
    assert recorded == calls_after_first
    assert len(llm.requests) == calls_after_first  # the rerun made no call at all


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[email.message.Message] = []

    async def handle_DATA(self, server: object, session: object, envelope: Envelope) -> str:
        content = envelope.original_content or b""
        self.messages.append(
            email.message_from_bytes(content if isinstance(content, bytes) else content.encode())
        )
        return "250 OK"


@pytest.mark.parametrize(("send", "mails"), [("every_revision", 2), ("once", 1)])
def test_mail_is_sent_once_a_week_or_once_per_new_revision_with_both_parts(
    tmp_path: Path, server: LoopbackServer, send: str, mails: int
) -> None:
    mailbox = Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        serve_site(server, RSS_ENTRIES)
        extra = (
            f'[email]\nenabled = true\nhost = "127.0.0.1"\nport = {port}\nsecurity = "none"\n'
            f'send = "{send}"\n'
        )
        rig = Rig(server, write_config(tmp_path, server, extra), tmp_path / "data")
        rig.run("now", "--week", WEEK)
        rig.run("now", "--week", WEEK)
        assert len(mailbox.messages) == 1
        new_entry = ("Prefix caching", "/posts/prefix", "Thu, 19 Nov 2026 09:00:00 GMT")
        serve_site(rig.server, [*RSS_ENTRIES, new_entry])
        rig.run("now", "--week", WEEK)
    finally:
        controller.stop()

    assert len(mailbox.messages) == mails
    for message in mailbox.messages:
        parts = {part.get_content_type() for part in message.walk()}
        assert {"text/plain", "text/html"} <= parts
    plains = [p for p in mailbox.messages[-1].walk() if p.get_content_type() == "text/plain"]
    body = plains[0].get_payload(decode=True)
    assert isinstance(body, bytes)
    assert ("Prefix caching" in body.decode()) is (send == "every_revision")
