"""Newsletters from Maildir and mbox sources, through the real CLI: each letter read once, a
roundup split into its stories and merged with a feed's, footers and sponsors left out."""

from __future__ import annotations

import json
import mailbox
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.collect.mail.links import clean_link
from digest.collect.mail.roundup import read_body
from letters import late_letter, mailbox_letters, read_letter, roundup
from loopback import LOOPBACK_FETCH, LoopbackServer, Response

WEEK = "2026-W47"
STORY_PATHS = ["/posts/fusion", "/posts/paged", "/s/sqlite", "/s/rust", "/s/go"]


def page(title: str) -> str:
    body = "".join(
        f"<p>{title} matters for reason {n}: engineers measured it and wrote it down.</p>"
        for n in range(10)
    )
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{body}</article></body></html>"


def serve(server: LoopbackServer) -> list[str]:
    """A feed holding the first two stories, and every story's page; the stories' URLs."""
    urls = [server.url(path) for path in STORY_PATHS]
    items = "".join(
        f"<item><title>{title}</title><link>{url}</link>"
        "<pubDate>Tue, 17 Nov 2026 10:00:00 +0000</pubDate></item>"
        for title, url in (("Kernel fusion", urls[0]), ("Paged attention", urls[1]))
    )
    server.routes["/rss.xml"] = Response(
        200,
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>Loop</title>'
        f"<link>{server.url('/')}</link><description>d</description>{items}</channel></rss>",
        {"Content-Type": "application/rss+xml"},
    )
    for path in STORY_PATHS:
        server.routes[path] = Response(200, page(path.rsplit("/", 1)[1].title()))
    return urls


def write_config(tmp_path: Path, server: LoopbackServer, kind: str, path: Path) -> Path:
    config = tmp_path / "digest.toml"
    config.write_text(
        f"""
[digest]
data_dir = "data"
timezone = "UTC"

[[sources]]
name = "loop feed"
kind = "feed"
url = "{server.url("/rss.xml")}"

[[sources]]
name = "letters"
kind = "{kind}"
path = "{path}"

{LOOPBACK_FETCH}"""
    )
    return config


def run(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config)], catch_exceptions=False)


def lines(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.output.splitlines()]


def maildir_box(path: Path) -> Callable[[bytes], None]:
    box = mailbox.Maildir(path, create=True)

    def add(raw: bytes) -> None:
        box.add(raw)

    return add


def mbox_box(path: Path) -> Callable[[bytes], None]:
    def add(raw: bytes) -> None:
        box = mailbox.mbox(path)
        box.lock()
        box.add(raw)
        box.flush()
        box.unlock()

    return add


def rows(db_path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db_path) as db:
        return db.execute(sql).fetchall()


@pytest.mark.parametrize("kind", ["maildir", "mbox"])
def test_each_letter_is_read_once_and_a_roundup_gives_its_stories(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    urls = serve(server)
    path = tmp_path / ("Mail" if kind == "maildir" else "letters.mbox")
    add = maildir_box(path) if kind == "maildir" else mbox_box(path)
    for raw in mailbox_letters(urls):
        add(raw)
    config = write_config(tmp_path, server, kind, path)
    db = tmp_path / "data" / "digest.db"

    first = run(config, "collect")

    assert first.exit_code == 0, first.output
    assert "4 new letters, 5 stories from 1 roundup(s), 1 with nothing but sponsor" in first.output
    letters = rows(
        db, "SELECT title, state, text FROM items WHERE kind = 'newsletter' ORDER BY title"
    )
    assert [(title, state) for title, state, _ in letters] == [
        ("Résultats de la semaine", "fetched"),
        ("Why containers start slowly", "fetched"),
    ]
    latin_text, plain_text = str(letters[0][2]), str(letters[1][2])
    assert "lazy loading reads only the files" in plain_text
    assert "Unsubscribe" not in plain_text and "View in browser" not in plain_text
    assert "Le café du matin" in latin_text and "\ufffd" not in latin_text
    stories = rows(db, "SELECT url, title, context FROM items WHERE kind = 'link' ORDER BY url")
    assert sorted(str(url) for url, _, _ in stories) == sorted(urls)  # trackers unwrapped
    assert all("minute read" not in str(title) for _, title, _ in stories)
    assert all(str(context).startswith("The story of") for _, _, context in stories)
    assert not rows(
        db, "SELECT 1 FROM items WHERE url LIKE '%ads.example%' OR title LIKE '%sponsor%'"
    )
    in_feed_and_letter = rows(
        db,
        "SELECT i.url FROM items i JOIN item_newsletters n ON n.item_id = i.id"
        " WHERE (SELECT count(*) FROM item_sources s WHERE s.item_id = i.id) = 2",
    )
    assert sorted(str(url) for (url,) in in_feed_and_letter) == sorted(urls[:2])

    add(late_letter())
    second = run(config, "collect")

    assert second.exit_code == 0, second.output
    assert "letters: 1 new letter" in second.output
    assert rows(db, "SELECT count(*) FROM items WHERE kind = 'newsletter'") == [(3,)]
    assert rows(db, "SELECT count(*) FROM items") == [(8,)]
    assert rows(db, "SELECT count(*) FROM mail_letters") == [(5,)]
    assert run(config, "collect").exit_code == 0
    assert rows(db, "SELECT count(*) FROM items") == [(8,)]


def test_the_week_names_the_newsletter_a_story_came_in(
    tmp_path: Path, server: LoopbackServer
) -> None:
    urls = serve(server)
    add = maildir_box(tmp_path / "Mail")
    for raw in mailbox_letters(urls):
        add(raw)
    config = write_config(tmp_path, server, "maildir", tmp_path / "Mail")

    result = run(config, "now", "--week", WEEK)

    assert result.exit_code == 0, result.output
    text = (tmp_path / "data" / "digests" / f"{WEEK}.md").read_text()
    assert text.count("*also in: Changelog Weekly*") == 5
    assert "- **Why containers start slowly**" in text
    assert "*from: Systems Notes*" in text
    assert "Acme" not in text and "Unsubscribe" not in text


def test_a_missing_mailbox_is_one_line_naming_the_source(
    tmp_path: Path, server: LoopbackServer
) -> None:
    serve(server)
    config = write_config(tmp_path, server, "maildir", tmp_path / "nowhere")

    result = run(config, "collect")

    assert result.exit_code == 0
    assert "letters: " in result.output and "nowhere does not exist" in result.output


def test_a_malformed_letter_is_read_as_it_is_and_the_others_too(
    tmp_path: Path, server: LoopbackServer
) -> None:
    urls = serve(server)
    add = maildir_box(tmp_path / "Mail")
    add(b"From: x@y.example\r\nMessage-ID: <bad@y>\r\nContent-Type: text/html\r\n\r\n" + b"<p>" * 5)
    for raw in mailbox_letters(urls):
        add(raw)
    config = write_config(tmp_path, server, "maildir", tmp_path / "Mail")

    result = run(config, "collect")

    assert result.exit_code == 0 and "0 failed" in result.output
    assert rows(tmp_path / "data" / "digest.db", "SELECT count(*) FROM mail_letters") == [(5,)]


# -- the reading of one letter -------------------------------------------------------


def test_tracking_links_are_unwrapped_and_cleaned() -> None:
    target = "https://blog.example/post?id=7"
    assert (
        clean_link(f"https://t.example/r?url={target.replace('?', '%3F').replace('=', '%3D')}")
        == target
    )
    assert (
        clean_link("https://x.example/CL0/https:%2F%2Fblog.example%2Fa%3Futm_source=n/1/z")
        == "https://blog.example/a"
    )
    assert (
        clean_link("https://blog.example/a?utm_medium=email&fbclid=1") == "https://blog.example/a"
    )
    assert clean_link("mailto:someone@example.org") is None


def test_a_hacker_newsletter_list_is_a_roundup() -> None:
    items = "".join(
        f'<p><a href="https://site{n}.example/story">Show HN: a tool number {n} for logs</a>'
        f" — a small tool that reads logs faster than grep does, in {n} ways."
        f' <a href="https://news.ycombinator.com/item?id={n}">comments</a></p>'
        for n in range(6)
    )
    body = read_body(
        f"<html><body><h2>#Favorites</h2>{items}{'<p>Unsubscribe here</p>'}</body></html>", None
    )
    assert [story.url for story in body.stories] == [
        f"https://site{n}.example/story" for n in range(6)
    ]
    assert body.stories[0].blurb.startswith("a small tool that reads logs")


def test_a_letter_of_prose_with_a_few_links_is_kept_whole() -> None:
    prose = "".join(
        f"<p>Paragraph {n} explains the design at length, and <a href='https://ref{n}.example/'>"
        f"a reference</a> supports it with a study of the matter done last year.</p>"
        for n in range(5)
    )
    body = read_body(prose, None)
    assert body.stories == ()
    assert body.text.count("Paragraph") == 5


def test_a_letter_with_nothing_readable_is_empty() -> None:
    letter = read_letter(b"Message-ID: <e@x>\r\nContent-Type: image/png\r\n\r\nxx")
    assert read_body(letter.html, letter.plain).text == ""
    assert letter.sender == "(unknown sender)" and letter.subject == "(no subject)"


def test_a_plain_text_roundup_is_split() -> None:
    text = "\n\n".join(
        f"Story number {n} about databases\nhttps://db{n}.example/post\nA blurb on story {n}"
        f" that says what it is about, in one sentence."
        for n in range(4)
    )
    body = read_body(None, text)
    assert [story.title for story in body.stories][:1] == ["Story number 0 about databases"]
    assert len(body.stories) == 4


def test_the_roundup_fixture_holds_five_stories() -> None:
    letter = read_letter(roundup([f"https://s{n}.example/" for n in range(5)]))
    body = read_body(letter.html, letter.plain)
    assert len(body.stories) == 5
    assert letter.sender == "Changelog Weekly"
    assert letter.list_id and "weekly.changelog.example" in letter.list_id


def test_newsletters_in_search_export_and_rules(tmp_path: Path, server: LoopbackServer) -> None:
    urls = serve(server)
    add = maildir_box(tmp_path / "Mail")
    for raw in mailbox_letters(urls):
        add(raw)
    config = write_config(tmp_path, server, "maildir", tmp_path / "Mail")
    assert run(config, "collect").exit_code == 0

    letters = lines(run(config, "search", "containers", "--kind", "newsletter", "--json"))
    stories = lines(run(config, "search", "story", "--kind", "newsletter", "--json"))
    exported = lines(run(config, "export"))

    assert [hit["title"] for hit in letters] == ["Why containers start slowly"]
    assert len(stories) == 5 and {hit["kind"] for hit in stories} == {"link"}
    by_letter = [row for row in exported if row["newsletters"] == ["Changelog Weekly"]]
    assert len(by_letter) == 5
    assert {row["kind"] for row in exported if row["newsletters"] != ["Changelog Weekly"]} == {
        "newsletter"
    }

    with config.open("a") as file:
        file.write('\n[[rules]]\nname = "no letters"\nkind = "newsletter"\nmute = true\n')
    assert run(config, "now", "--week", WEEK).exit_code == 0
    text = (tmp_path / "data" / "digests" / f"{WEEK}.md").read_text()
    assert "Why containers" not in text and "Changelog Weekly" not in text
