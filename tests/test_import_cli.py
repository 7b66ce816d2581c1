"""`digest import` and `digest sources` through the real CLI, with feeds on a loopback server."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.collect.importers.opml import Feed, parse_opml
from loopback import LOOPBACK_FETCH, LoopbackServer, Response
from stores import store_at

RSS = (
    '<?xml version="1.0"?><rss version="2.0"><channel><title>{title}</title>'
    "<link>{site}</link><description>d</description>"
    "<item><title>{title} post</title><link>{site}posts/{slug}</link>"
    "<pubDate>Mon, 16 Nov 2026 09:00:00 GMT</pubDate></item></channel></rss>"
)


@dataclass
class Rig:
    server: LoopbackServer
    root: Path

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(cli, [*args, "--config", str(self.root / "digest.toml")])

    def feed_url(self, slug: str) -> str:
        return self.server.url(f"/{slug}.xml")

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(text, encoding="utf-8")
        return path

    def urls(self) -> set[str]:
        with sqlite3.connect(self.root / "data" / "digest.db") as db:
            return {row[0] for row in db.execute("SELECT url FROM items")}


@pytest.fixture
def rig(tmp_path: Path, server: LoopbackServer) -> Iterator[Rig]:
    for slug in ("configured", "imported", "nested"):
        server.routes[f"/{slug}.xml"] = Response(
            200,
            RSS.format(title=slug.title(), site=server.url("/"), slug=slug),
            content_type="application/rss+xml",
        )
    rig = Rig(server, tmp_path)
    rig.write(
        "digest.toml",
        f"""
[digest]
data_dir = "data"

[[sources]]
name = "Configured"
kind = "feed"
url = "{rig.feed_url("configured")}"

{LOOPBACK_FETCH}""",
    )
    store_at(tmp_path / "data" / "digest.db").close()
    yield rig


def opml(rig: Rig) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0"><head><title>My feeds</title></head><body>
  <outline text="Configured, again" type="rss" xmlUrl="{rig.feed_url("configured")}?utm_source=x"/>
  <outline text="Tech">
    <outline text="Configured" type="rss" xmlUrl="{rig.feed_url("nested")}"/>
  </outline>
  <outline text="Imported &amp; co" type="rss" xmlUrl="{rig.feed_url("imported")}"/>
  <outline text="Gopher" type="rss" xmlUrl="gopher://example.org/feed"/>
</body></opml>
"""


# -- OPML -------------------------------------------------------------------------


def test_opml_import_adds_feeds_and_counts_the_known_ones(rig: Rig) -> None:
    feeds = rig.write("feeds.opml", opml(rig))
    result = rig.run("import", str(feeds))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{feeds}: format opml: 2 feeds added, 1 already known",
        "  feed 'Gopher': not a web link (gopher:): gopher://example.org/feed",
    ]
    again = rig.run("import", str(feeds))
    assert again.output.splitlines()[0] == f"{feeds}: format opml: 0 feeds added, 3 already known"


def test_imported_opml_feeds_are_polled_by_collect(rig: Rig) -> None:
    rig.run("import", str(rig.write("feeds.opml", opml(rig))))
    result = rig.run("collect")
    assert result.exit_code == 0, result.output
    assert rig.server.hits("/imported.xml") and rig.server.hits("/nested.xml")
    assert len(rig.server.hits("/configured.xml")) == 1  # the config's, not polled twice
    assert {rig.server.url(f"/posts/{slug}") for slug in ("imported", "nested")} <= rig.urls()


def test_sources_list_shows_configured_and_imported_sources(rig: Rig) -> None:
    rig.run("import", str(rig.write("feeds.opml", opml(rig))))
    result = rig.run("sources", "list")
    assert result.exit_code == 0, result.output
    header, *rows = result.output.splitlines()
    assert header.split() == ["name", "kind", "origin", "status", "items", "location"]
    assert [row.split("  ")[0].strip() for row in rows] == [
        "Configured",
        "Configured (2)",  # a name the config holds is not taken over
        "Imported & co",
        "import",
    ]
    assert "config" in rows[0] and rig.feed_url("configured") in rows[0]
    assert "opml" in rows[1] and rig.feed_url("nested") in rows[1]
    assert "not collected yet" in rows[1]  # imported, never polled


def test_sources_export_prints_every_feed_as_valid_opml(rig: Rig) -> None:
    rig.run("import", str(rig.write("feeds.opml", opml(rig))))
    result = rig.run("sources", "export", "--opml")
    assert result.exit_code == 0, result.output
    assert sorted((feed.name, feed.url) for feed in parse_opml(result.output)) == [
        ("Configured", rig.feed_url("configured")),
        ("Configured (2)", rig.feed_url("nested")),
        ("Imported & co", rig.feed_url("imported")),
    ]
    assert Feed("Configured (2)", rig.feed_url("nested"), "Tech") in parse_opml(result.output)


def test_sources_export_without_a_format_is_a_usage_error(rig: Rig) -> None:
    result = rig.run("sources", "export")
    assert result.exit_code == 2
    assert "--opml" in result.stderr


# -- the report ----------------------------------------------------------------------


def test_import_report_gives_format_counts_and_the_first_ten_bad_lines(rig: Rig) -> None:
    bad = "\n".join(f"not a link {n}" for n in range(1, 13))
    saved = rig.write(
        "saved.urls",
        "https://example.org/a\nhttps://example.org/a#again\njavascript:alert(1)\n"
        f"file:///home/me/x.html\n{bad}\n"
        + "".join(f"https://example.org/{n}\n" for n in range(20)),
    )
    result = rig.run("import", str(saved))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        f"{saved}: format urls: 21 new, 1 duplicate, 0 notes without URL,"
        " 12 lines not understood, 2 skipped"
    )
    assert lines[1] == "  line 5: not a URL: not a link 1"
    assert lines[10] == "  line 14: not a URL: not a link 10"
    assert lines[11] == "  … and 2 more"
    assert lines[12:] == [
        "  skipped 1 (line 3): not a web link (javascript:)",
        "  skipped 1 (line 4): not a web link (file:)",
        "  read as urls: 67% of its lines start with a URL",
    ]


def test_import_report_counts_notes_without_url(rig: Rig) -> None:
    journal = rig.write(
        "til.md", "## 2026-11-16\n- [A](https://example.org/a)\n- A book to read\n- [Bad](htp//x)\n"
    )
    result = rig.run("import", str(journal))
    assert result.output.splitlines() == [
        f"{journal}: format journal: 2 new, 0 duplicates, 1 note without URL,"
        " 1 line not understood",
        "  line 4: not an absolute URL: htp//x",
        "  read as journal: `## YYYY-MM-DD` day headings, markdown links",
    ]


def test_firefox_place_links_are_skipped_and_counted(rig: Rig) -> None:
    bookmarks = rig.write(
        "bookmarks.html",
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n"
        '<DT><A HREF="https://example.org/kept" ADD_DATE="1700000000">Kept</A>\n'
        '<DT><A HREF="place:sort=8&maxResults=10">Recent Tags</A>\n'
        "</DL><p>\n",
    )
    result = rig.run("import", str(bookmarks))
    assert result.output.splitlines() == [
        f"{bookmarks}: format bookmarks: 1 new, 0 duplicates, 0 notes without URL,"
        " 0 lines not understood, 1 skipped",
        "  skipped 1 (line 4): not a web link (place:)",
        "  read as bookmarks: Netscape bookmark HTML (Chrome, Firefox, Safari, Pocket, Raindrop"
        " exports)",
    ]


# -- detection ----------------------------------------------------------------------


def test_unknown_format_names_the_file_lists_the_formats_and_the_others_import(
    rig: Rig,
) -> None:
    known = rig.write("known.urls", "https://example.org/never-saved\n")
    shopping = rig.write("shopping.txt", "milk\n")
    result = rig.run("import", str(known), str(shopping))
    assert result.exit_code == 0
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"digest: {shopping}: format not recognised; supported: ")
    for name in ("bookmarks", "journal", "opml", "pocket", "twitter", "urls"):
        assert name in line
    assert "--format" in line
    assert result.stdout.startswith(f"{known}: format urls: 1 new")
    assert "https://example.org/never-saved" in rig.urls()


def test_import_exits_1_when_every_file_failed_naming_each(rig: Rig) -> None:
    shopping = rig.write("shopping.txt", "milk\n")
    missing = rig.root / "missing.md"
    result = rig.run("import", str(shopping), str(missing))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[1] == f"digest: {missing}: no such file or folder"
    assert rig.urls() == set()


def test_import_of_an_empty_file_says_so_and_exits_0(rig: Rig) -> None:
    empty = rig.write("empty.md", "")
    result = rig.run("import", str(empty))
    assert (result.exit_code, result.stdout) == (0, f"{empty}: an empty file, nothing to import\n")


def test_format_option_forces_a_format_over_detection(rig: Rig) -> None:
    path = rig.write("reading.txt", "https://example.org/one\n- https://example.org/two\n")
    detected = rig.run("import", str(path))
    forced = rig.run("import", "--format", "list", str(path))
    assert detected.output.startswith(f"{path}: format urls:")
    assert forced.output.startswith(f"{path}: format list:")


def test_unknown_forced_format_is_a_usage_error_listing_the_formats(rig: Rig) -> None:
    path = rig.write("reading.txt", "https://example.org/one\n")
    result = rig.run("import", "--format", "kindle", str(path))
    assert result.exit_code == 2
    assert "--format: unknown format 'kindle'; supported: " in result.stderr
    assert "journal" in result.stderr and "pinboard" in result.stderr


def test_a_file_that_breaks_its_format_is_an_error_naming_the_file(rig: Rig) -> None:
    broken = rig.write("pinboard.json", '[{"href": "https://example.org/a", "extended": ""},')
    result = rig.run("import", str(broken))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"digest: {broken}: not a pinboard export: invalid JSON")
