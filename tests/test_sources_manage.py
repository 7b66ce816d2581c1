"""`digest sources add|remove|pause|resume|rename` on a commented config file and on
imported feeds, and OPML export that round-trips, through the real CLI."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.collect.importers.opml import Feed, parse_opml
from digest.config import load_config
from loopback import LoopbackServer, Response
from stores import store_at

RSS = (
    '<?xml version="1.0"?><rss version="2.0"><channel><title>{slug}</title>'
    "<link>{site}</link><description>d</description>"
    "<item><title>{slug} post</title><link>{site}posts/{slug}</link>"
    "<pubDate>Mon, 16 Nov 2026 09:00:00 GMT</pubDate></item></channel></rss>"
)
CONFIG = """# My digest: hand-written, with comments to keep.
[digest]
data_dir = "data"   # next to this file

# The blogs I follow
[[sources]]         # the first one
name = "Blog"       # shown in `sources list`
kind = "feed"
url = "{blog}"
# topic = "later"   # a thought about Blog

[[sources]]
name = "Other"
kind = "feed"
url = "{other}"

[fetch]             # loopback only
allow_private_addresses = ["127.0.0.1/32"]
timeout_s = 30  # loopback pages answer at once: a wide margin for a loaded machine
per_host_delay_s = 0
"""


@dataclass
class Rig:
    server: LoopbackServer
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "digest.toml"

    def run(self, *args: str, ok: bool = True) -> Result:
        result = CliRunner().invoke(cli, [*args, "--config", str(self.config)])
        if ok:
            assert result.exit_code == 0, result.output
        return result

    def feed(self, slug: str) -> str:
        return self.server.url(f"/{slug}.xml")

    def listed(self) -> dict[str, list[str]]:
        _, *rows = self.run("sources", "list").output.splitlines()
        return {row.split("  ")[0]: row.split() for row in rows}

    def item_count(self) -> int:
        with sqlite3.connect(self.root / "data" / "digest.db") as db:
            return int(db.execute("SELECT count(*) FROM items").fetchone()[0])


@pytest.fixture
def rig(tmp_path: Path, server: LoopbackServer) -> Iterator[Rig]:
    for slug in ("blog", "other", "new", "listed"):
        server.routes[f"/{slug}.xml"] = Response(
            200,
            RSS.format(slug=slug, site=server.url("/")),
            content_type="application/rss+xml",
        )
    rig = Rig(server, tmp_path)
    rig.config.write_text(CONFIG.format(blog=rig.feed("blog"), other=rig.feed("other")))
    store_at(tmp_path / "data" / "digest.db").close()
    yield rig


def test_add_appends_a_feed_to_the_config_and_keeps_every_comment(rig: Rig) -> None:
    before = rig.config.read_text()

    result = rig.run("sources", "add", rig.feed("new"), "--category", "Tech/AI")

    text = rig.config.read_text()
    assert result.output.strip() == f"added feed '127.0.0.1' ({rig.feed('new')}) to {rig.config}"
    assert text.startswith(before.split("[fetch]")[0])  # every earlier line as it was
    assert "[fetch]             # loopback only" in text
    assert (
        f'name = "127.0.0.1"\nkind = "feed"\nurl = "{rig.feed("new")}"\ntopic = "Tech/AI"' in text
    )
    assert rig.listed()["127.0.0.1"][2] == "config"
    rig.run("collect")
    assert rig.server.hits("/new.xml")


def test_adding_a_feed_already_there_is_refused_naming_it(rig: Rig) -> None:
    result = rig.run("sources", "add", rig.feed("blog") + "?utm_source=x", ok=False)

    assert result.exit_code == 1
    assert f"{rig.feed('blog')}?utm_source=x is already a source: 'Blog'" in result.output


def test_pause_stops_collecting_and_resume_gives_back_the_same_file(rig: Rig) -> None:
    before = rig.config.read_text()

    rig.run("sources", "pause", "Blog")
    paused = rig.config.read_text()
    rig.run("collect")
    rig.run("sources", "resume", "Blog")

    assert f'url = "{rig.feed("blog")}"\npaused = true\n# topic = "later"' in paused
    assert rig.server.hits("/blog.xml") == [] and rig.server.hits("/other.xml")
    assert rig.config.read_text() == before


def test_rename_keeps_the_items_and_comments(rig: Rig) -> None:
    rig.run("collect")

    rig.run("sources", "rename", "Blog", "Best blog")

    text = rig.config.read_text()
    assert 'name = "Best blog"       # shown in `sources list`' in text
    listed = rig.listed()
    assert "Blog" not in listed and listed["Best blog"][3] == "config"  # "Best", "blog", kind
    assert listed["Best blog"][5] == "1"  # its item went with it
    rig.run("collect")
    assert rig.item_count() == 2  # nothing collected twice under the new name


def test_remove_drops_the_table_and_keeps_the_items(rig: Rig) -> None:
    rig.run("collect")

    result = rig.run("sources", "remove", "Other")
    rig.run("collect")

    text = rig.config.read_text()
    assert result.output.strip() == f"removed 'Other' from {rig.config}; its 1 items are kept"
    assert 'name = "Other"' not in text and "# The blogs I follow" in text
    assert "Other" not in rig.listed()
    assert rig.item_count() == 2 and len(rig.server.hits("/other.xml")) == 1


def test_imported_feeds_are_paused_renamed_and_removed_in_the_store(rig: Rig) -> None:
    opml = rig.root / "feeds.opml"
    opml.write_text(
        '<opml version="2.0"><body><outline text="Listed" type="rss"'
        f' xmlUrl="{rig.feed("listed")}" htmlUrl="https://listed.example/"/></body></opml>'
    )
    rig.run("import", str(opml))
    before = rig.config.read_text()

    rig.run("sources", "pause", "Listed")
    assert rig.listed()["Listed"][3] == "paused"
    rig.run("collect")
    assert rig.server.hits("/listed.xml") == []
    rig.run("sources", "resume", "Listed")
    rig.run("sources", "rename", "Listed", "Kept")
    rig.run("collect")
    rig.run("sources", "remove", "Kept")

    assert len(rig.server.hits("/listed.xml")) == 1
    assert "Kept" not in rig.listed() and rig.item_count() == 3
    assert rig.config.read_text() == before
    assert "1 feed added" in rig.run("import", str(opml)).output  # it can come back


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("remove", "Nope"), "no source named 'Nope' (`digest sources list` names them)"),
        (("pause", "manual"), "'manual' holds the links saved with `digest add`"),
        (("rename", "Blog", "Other"), "a source named 'Other' exists"),
        (("rename", "Blog", "import"), "'import' is reserved"),
    ],
)
def test_bad_names_are_one_line_errors(rig: Rig, args: tuple[str, ...], message: str) -> None:
    before = rig.config.read_text()

    result = rig.run("sources", *args, ok=False)

    assert result.exit_code == 1 and message in result.output
    assert rig.config.read_text() == before


def test_opml_export_keeps_sites_and_folders_and_round_trips(rig: Rig, tmp_path: Path) -> None:
    opml = rig.root / "feeds.opml"
    opml.write_text(
        '<opml version="2.0"><body><outline text="Tech"><outline text="AI">'
        f'<outline text="Listed" type="rss" xmlUrl="{rig.feed("listed")}"'
        ' htmlUrl="https://listed.example/"/></outline></outline>'
        '<outline text="Flat" type="rss" xmlUrl="https://flat.example/rss" category="/Food"/>'
        "</body></opml>"
    )
    rig.run("import", str(opml))
    exported = rig.run("sources", "export", "--opml").output

    assert Feed("Listed", rig.feed("listed"), "Tech/AI", "https://listed.example/") in (
        parse_opml(exported)
    )
    assert Feed("Flat", "https://flat.example/rss", "Food") in parse_opml(exported)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "digest.toml").write_text('[digest]\ndata_dir = "data"\n')
    (elsewhere / "feeds.opml").write_text(exported)
    again = CliRunner()
    config = ["--config", str(elsewhere / "digest.toml")]
    assert again.invoke(cli, ["import", str(elsewhere / "feeds.opml"), *config]).exit_code == 0
    assert again.invoke(cli, ["sources", "export", "--opml", *config]).output == exported


def test_opml_export_leaves_secrets_out_unless_asked(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BLOG_PASSWORD", "p@ss word")
    text = rig.config.read_text().replace(
        'url = "' + rig.feed("blog") + '"',
        f'url = "{rig.feed("blog")}"\n'
        'auth = { type = "basic", username = "me", password_env = "BLOG_PASSWORD" }',
    )
    rig.config.write_text(text)

    plain = parse_opml(rig.run("sources", "export", "--opml").output)
    secret = parse_opml(rig.run("sources", "export", "--opml", "--include-secrets").output)

    assert plain[0].url == rig.feed("blog")
    assert secret[0].url == rig.feed("blog").replace("http://", "http://me:p%40ss%20word@")


def test_without_a_config_file_an_added_feed_is_kept_in_the_store(tmp_path: Path) -> None:
    runner = CliRunner()  # no --config, none in the (isolated) home: built-in defaults

    added = runner.invoke(cli, ["sources", "add", "https://feeds.example/rss", "--name", "Ex"])
    listed = runner.invoke(cli, ["sources", "list"])
    paused = runner.invoke(cli, ["sources", "pause", "Ex"])

    assert added.exit_code == 0, added.output
    assert "no config file, so it is kept in the store" in added.output
    (row,) = [line.split() for line in listed.output.splitlines()[1:]]
    assert row[:3] == ["Ex", "feed", "cli"] and row[-1] == "https://feeds.example/rss"
    assert paused.exit_code == 0
    assert "paused" in runner.invoke(cli, ["sources", "list"]).output
    assert not (tmp_path / "config").exists()


def test_a_polled_feed_gives_its_site_to_the_opml_export(rig: Rig) -> None:
    before = parse_opml(rig.run("sources", "export", "--opml").output)
    rig.run("collect")

    after = parse_opml(rig.run("sources", "export", "--opml").output)

    assert before[0] == Feed("Blog", rig.feed("blog"))
    assert after[0] == Feed("Blog", rig.feed("blog"), html_url=rig.server.url("/"))


RULED = """[digest]
data_dir = "data"

# About the blog
[[sources]]
name = "Blog"
kind = "feed"
url = "{blog}"

# My rules
[[rules]]
name = "ads"
words = ["sponsored"]
mute = true
"""


def test_removing_the_last_source_leaves_a_config_the_next_add_takes(rig: Rig) -> None:
    rig.config.write_text(RULED.format(blog=rig.feed("blog")))

    rig.run("sources", "remove", "Blog")
    after_remove = rig.config.read_text()
    rig.run("sources", "add", rig.feed("new"), "--name", "New")
    rig.run("sources", "add", rig.feed("other"), "--name", "Other")

    assert "sources = []" not in after_remove and "About the blog" not in after_remove
    assert "# My rules\n[[rules]]" in after_remove
    text = rig.config.read_text()
    assert text.index('name = "New"') < text.index('name = "Other"')
    assert "# My rules\n[[rules]]" in text
    assert sorted(rig.listed()) == ["New", "Other"]


def test_removing_a_source_keeps_the_comment_of_the_table_after_it(rig: Rig) -> None:
    rig.config.write_text(RULED.format(blog=rig.feed("blog")).replace("# My rules", "#  My rules"))
    rig.run("sources", "add", rig.feed("new"), "--name", "New")
    assert rig.config.read_text().index('name = "New"') < rig.config.read_text().index("My rules")

    rig.run("sources", "remove", "New")

    text = rig.config.read_text()
    assert "#  My rules\n[[rules]]" in text and 'name = "Blog"' in text and "New" not in text
    assert "# About the blog\n[[sources]]" in text


def test_a_config_the_user_cannot_write_is_refused_not_overwritten(rig: Rig) -> None:
    before = rig.config.read_text()
    rig.config.chmod(0o444)

    result = rig.run("sources", "add", rig.feed("new"), ok=False)

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"config error: {rig.config}: cannot edit: the file is read-only" in result.output
    assert rig.config.read_text() == before


def test_an_edit_keeps_the_config_files_mode(rig: Rig) -> None:
    rig.config.chmod(0o640)

    rig.run("sources", "pause", "Blog")

    assert rig.config.stat().st_mode & 0o777 == 0o640
    assert "paused = true" in rig.config.read_text()


@pytest.mark.slow
def test_twenty_concurrent_adds_keep_all_twenty(rig: Rig) -> None:
    adds = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "digest",
                "sources",
                "add",
                f"https://feeds{n}.example/rss",
                "--name",
                f"feed {n}",
                "--config",
                str(rig.config),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for n in range(20)
    ]
    outputs = [add.communicate(timeout=120)[0] for add in adds]

    assert [add.returncode for add in adds] == [0] * 20, outputs
    names = {source.name for source in load_config(rig.config).sources}
    assert {f"feed {n}" for n in range(20)} <= names


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_root_editing_a_users_config_leaves_it_the_users(rig: Rig) -> None:
    os.chown(rig.config, 65534, 65534)

    rig.run("sources", "rename", "Blog", "My blog")

    owner = rig.config.stat()
    assert (owner.st_uid, owner.st_gid) == (65534, 65534)
    assert 'name = "My blog"' in rig.config.read_text()
