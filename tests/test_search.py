"""`digest search` over a store filled by the real importers and a feed on a loopback server."""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from sqlite_utils import Database

from digest.cli import cli
from digest.commands.search import show_hits
from digest.errors import BadSearch
from digest.lifecycle import FetchSucceeded, ItemState
from digest.models import Extracted, ItemKind, SavedItem
from digest.store import SearchFilter, SearchHit, Store, open_store
from digest.store.migrations import migration_set
from digest.store.search import MARK_END, MARK_START
from loopback import LOOPBACK_FETCH, LoopbackServer, Response, serving

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
PAGES = {
    "/serving": (
        "Inference serving at scale",
        "Continuous batching keeps the accelerators busy. Paged attention stores the cache in"
        " blocks, which ends fragmentation. Latency stays low under load.",
    ),
    "/kernels": (
        "Writing GPU kernels by hand",
        "A kernel that fuses attention with the softmax saves memory traffic. We measured"
        " latency and throughput; quantization to eight bits halves the traffic again.",
    ),
}
JOURNAL = """---
title: "Today I Learned"
---

## 2026-11-17
### Databases
- [Crème brûlée and the café's SQLite tricks](https://sqlite.example.org/tricks)
- A plain note about write-ahead logging with no link at all

## 2026-11-03
- [Older post on serving latency](https://old.example.org/latency)
"""


def page(title: str, text: str) -> str:
    paragraphs = "".join(
        f"<p>{text} Paragraph {n} repeats it for the extractor.</p>" for n in range(6)
    )
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{paragraphs}</article></body></html>"


def rss(server: LoopbackServer) -> str:
    entries = "".join(
        f"<item><title>{title}</title><link>{server.url(path)}</link>"
        "<pubDate>Tue, 17 Nov 2026 09:00:00 GMT</pubDate><description>From the blog.</description></item>"
        for path, (title, _) in PAGES.items()
    )
    return (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>Loop blog</title>'
        f"<link>{server.url('/')}</link><description>d</description>{entries}</channel></rss>"
    )


@dataclass
class Rig:
    root: Path

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(cli, [*args, "--config", str(self.root / "digest.toml")])

    def search(self, *args: str) -> list[dict[str, object]]:
        result = self.run("search", *args, "--json")
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in result.stdout.splitlines()]

    def titles(self, *args: str) -> list[object]:
        return [hit["title"] for hit in self.search(*args)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store made by `digest collect`, `extract` and `summarize` (offline notes): the feed's
    two pages and the journal's three entries. Copied for each test that writes."""
    root = tmp_path_factory.mktemp("search")
    (root / "inbox").mkdir()
    (root / "inbox" / "til.md").write_text(JOURNAL, encoding="utf-8")
    with serving() as server:
        server.routes["/feed.xml"] = Response(200, rss(server), content_type="application/rss+xml")
        for path, (title, text) in PAGES.items():
            server.routes[path] = Response(200, page(title, text))
        (root / "digest.toml").write_text(
            f"""
[digest]
data_dir = "data"

[[sources]]
name = "blog"
kind = "feed"
url = "{server.url("/feed.xml")}"

[[sources]]
name = "inbox"
kind = "file"
path = "inbox"

{LOOPBACK_FETCH}""",
            encoding="utf-8",
        )
        rig = Rig(root)
        for command in ("collect", "extract", "summarize"):
            result = rig.run(command)
            assert result.exit_code == 0, result.output
    yield root


@pytest.fixture
def rig(built: Path, tmp_path: Path) -> Rig:
    copy = tmp_path / "rig"
    (copy / "data").mkdir(parents=True)
    (copy / "digest.toml").write_text((built / "digest.toml").read_text())
    with (
        sqlite3.connect(built / "data" / "digest.db") as source,
        sqlite3.connect(copy / "data" / "digest.db") as target,
    ):
        source.backup(target)
    return Rig(copy)


def test_words_are_found_stemmed_in_page_text_with_the_title_match_first(rig: Rig) -> None:
    assert set(rig.titles("serve")) == {
        "Inference serving at scale",
        "Older post on serving latency",
    }
    assert rig.titles("latency")[:1] == ["Older post on serving latency"]  # title over text
    assert set(rig.titles("latency")) >= {t for t, _ in PAGES.values()}


def test_a_phrase_matches_only_the_words_together(rig: Rig) -> None:
    assert rig.titles('"paged attention"') == ["Inference serving at scale"]
    assert len(rig.titles("attention")) == 2


def test_prefix_and_boolean_syntax_pass_through(rig: Rig) -> None:
    assert rig.titles("quantiz*") == ["Writing GPU kernels by hand"]
    assert rig.titles("attention NOT softmax") == ["Inference serving at scale"]
    assert rig.titles("title:latency OR fragmentation") == [
        "Older post on serving latency",
        "Inference serving at scale",
    ]


def test_accents_context_host_and_notes_are_searched(rig: Rig) -> None:
    assert rig.titles("creme brulee") == ["Crème brûlée and the café's SQLite tricks"]
    assert rig.titles("host:sqlite") == ["Crème brûlée and the café's SQLite tricks"]
    assert len(rig.titles('"write-ahead"')) == 1  # a note saved without a link
    assert rig.titles("note:fragmentation") == ["Inference serving at scale"]  # offline note


def test_filters_narrow_by_week_since_source_kind_state_and_read(rig: Rig) -> None:
    assert rig.titles("latency", "--week", "2026-W45") == ["Older post on serving latency"]
    assert "Older post on serving latency" not in rig.titles("latency", "--since", "2026-11-10")
    assert rig.titles("latency", "--since", "2026-W47") == rig.titles(
        "latency", "--week", "2026-W47"
    )
    assert set(rig.titles("latency", "--source", "blog")) == {t for t, _ in PAGES.values()}
    assert rig.search("logging", "--kind", "note")[0]["kind"] == "note"
    assert rig.titles("logging", "--kind", "link") == []
    assert set(rig.titles("latency", "--state", "noted")) == {t for t, _ in PAGES.values()}
    first = rig.search("latency")[0]
    assert rig.run("read", str(first["id"])).exit_code == 0
    assert first["title"] not in rig.titles("latency", "--unread")


def test_json_hits_carry_id_date_host_and_the_marked_snippet(rig: Rig) -> None:
    (hit,) = rig.search('"paged attention"')
    assert hit["saved_at"] == "2026-11-17T09:00:00+00:00"
    assert hit["host"] == "127.0.0.1"
    assert "**Paged attention**" in str(hit["snippet"])


def test_lines_show_id_date_title_host_and_snippet(rig: Rig) -> None:
    result = rig.run("search", "fragmentation")
    head, snippet = result.stdout.splitlines()
    assert head.split()[1:3] == ["2026-11-17", "Inference"] and head.endswith("(127.0.0.1)")
    assert "ends fragmentation." in snippet and "**" not in snippet  # a pipe gets no markdown


def test_a_snippet_that_only_repeats_the_title_or_host_is_left_out(rig: Rig) -> None:
    rig.run("add", "https://fasterthanli.me/articles/rust-bench", "--title", "Benchmarks in Rust")

    by_title = rig.run("search", "title:rust").stdout.splitlines()
    by_host = rig.run("search", "host:fasterthanli.me").stdout.splitlines()

    assert len(by_title) == 1 and by_title[0].endswith("Benchmarks in Rust  (fasterthanli.me)")
    assert len(by_host) == 1 and "fasterthanli.me" in by_host[0]


def test_a_query_fts5_cannot_parse_is_one_line_and_exit_2(rig: Rig) -> None:
    for query in ('"unterminated', "attention AND", "nosuchcolumn:word", "(c++"):
        result = rig.run("search", query)
        assert result.exit_code == 2, query
        assert result.stdout == ""
        assert len(result.stderr.splitlines()) == 1
        assert result.stderr.startswith(f"digest: search query {query!r}")


def test_plain_words_with_punctuation_are_searched_as_phrases(rig: Rig) -> None:
    assert (
        rig.run("add", "https://zym.example.org/x", "--title", "Zymurgy c++ notes").exit_code == 0
    )
    for query in ("zym.example.org", "c++ zymurgy"):
        result = rig.run("search", query, "--json")
        assert result.exit_code == 0, result.output
        assert "Zymurgy c++ notes" in result.stdout, query
        assert "(plain words, not FTS5 syntax)" in result.stderr


def test_an_item_added_after_the_index_was_built_is_found(rig: Rig) -> None:
    assert (
        rig.run("add", "https://new.example.org/x", "--title", "Zymurgy explained").exit_code == 0
    )
    assert rig.titles("zymurgy") == ["Zymurgy explained"]
    assert rig.titles("zymurgy", "--source", "manual") == ["Zymurgy explained"]


def test_a_changed_item_is_found_by_its_new_words_only(tmp_path: Path) -> None:
    with open_store(tmp_path / "digest.db") as store:
        source = store.ensure_source("inbox", "file", path="/inbox", now=NOW)
        store.save_items(source, [SavedItem("https://a.example/p", title="Draft")], NOW)
        (item,) = store.all_items()
        extracted = Extracted("Finished words about zeppelins.", title="Airships")
        store.apply_fetch(FetchSucceeded(item.id, extracted, "h", NOW, ItemState.FETCHED, None))
        assert [hit.id for hit in store.search("zeppelin airships", SearchFilter(), 5)] == [1]
        store.apply_fetch(
            FetchSucceeded(item.id, Extracted("Balloons only."), "h2", NOW, ItemState.FETCHED, None)
        )
        assert store.search("zeppelins", SearchFilter(), 5) == []
        assert [hit.id for hit in store.search("balloons", SearchFilter(), 5)] == [1]


def test_a_store_of_the_previous_schema_is_indexed_when_migrated(tmp_path: Path) -> None:
    path = tmp_path / "digest.db"
    db = Database(sqlite3.connect(path))
    migration_set().apply(db, stop_before="m022a_search_index")
    db.table("items").insert(
        {
            "key": "https://old.example/p",
            "url": "https://old.example/p",
            "kind": "link",
            "title": "Saved before search existed",
            "text": "Marmalade recipes from the archive.",
            "saved_at": NOW.isoformat(),
            "collected_at": NOW.isoformat(),
        }
    )
    db.conn.commit()
    db.conn.close()

    with open_store(path) as store:
        (hit,) = store.search("marmalade", SearchFilter(), 5)
        assert (hit.title, hit.host) == ("Saved before search existed", "old.example")
        assert "\x02Marmalade\x03" in hit.snippet


def test_star_and_unstar_by_id_and_an_unknown_id_is_named(rig: Rig) -> None:
    (hit,) = rig.search('"paged attention"')
    title = hit["title"]
    assert rig.run("star", str(hit["id"])).stdout == f"starred: {hit['id']} {title}\n"
    assert rig.run("star", "--unstar", str(hit["id"])).stdout == f"unstarred: {hit['id']} {title}\n"
    result = rig.run("star", "9999")
    assert result.exit_code == 1
    assert result.stderr.startswith("digest: no saved item with id or URL '9999';")


def vocabulary(conn: sqlite3.Connection, table: str) -> list[tuple[str, int, int]]:
    """Each term of the FTS5 `table` with the rows and times it occurs (fts5vocab)."""
    conn.execute(f"CREATE VIRTUAL TABLE temp.{table}_terms USING fts5vocab(main, {table}, 'row')")
    return conn.execute(f"SELECT term, doc, cnt FROM temp.{table}_terms ORDER BY term").fetchall()


def test_the_index_kept_current_equals_one_built_afresh(tmp_path: Path) -> None:
    """New items (a key twice in one batch), a changed page, a merge: the index stays exact."""
    path = tmp_path / "digest.db"
    with open_store(path) as store:
        source = store.ensure_source("inbox", "file", path="/inbox", now=NOW)
        store.save_items(source, [SavedItem("https://a.example/1", title="First alpha")], NOW)
        twice = [
            SavedItem("https://a.example/2", title="Later beta", context="gamma"),
            SavedItem("https://a.example/2", title="Earlier delta", saved_at=NOW.replace(day=1)),
            SavedItem("https://a.example/1", title="Renamed epsilon", context="zeta"),
        ]
        store.save_items(source, twice, NOW)
        store.apply_fetch(
            FetchSucceeded(
                2, Extracted("Eta theta.", title="Iota"), "h", NOW, ItemState.FETCHED, None
            )
        )
        first = next(item.key for item in store.all_items() if item.id == 1)
        store.move_to_key(2, first)  # item 2 merges into item 1
        assert [hit.id for hit in store.search("zeta alpha", SearchFilter(), 5)] == [1]
        assert store.search("theta OR delta", SearchFilter(), 5) == []  # gone with item 2
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE VIRTUAL TABLE afresh USING fts5(title, text, note, context, tags, host,"
            " content = 'item_search', content_rowid = 'id',"
            " tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        conn.execute(
            "INSERT INTO afresh (rowid, title, text, note, context, tags, host)"
            " SELECT id, title, text, note, context, tags, host FROM item_search"
        )
        assert vocabulary(conn, "item_index") == vocabulary(conn, "afresh")


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    with open_store(tmp_path_factory.mktemp("fuzz") / "digest.db") as store:
        source = store.ensure_source("inbox", "file", path="/inbox", now=NOW)
        store.save_items(source, [SavedItem("https://a.example/1", title="Café au lait")], NOW)
        yield store


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_any_query_gives_hits_or_one_bad_search_line(small_store: Store, query: str) -> None:
    try:
        small_store.search(query, SearchFilter(), 5)
    except BadSearch as exc:
        assert len(str(exc).splitlines()) == 1


def test_a_terminal_shows_the_matched_words_in_bold_and_no_control_characters() -> None:
    hit = SearchHit(
        7,
        NOW,
        "Title with \x1b[31mescape" + " and many more words" * 5,
        "https://a.example/p",
        "a.example",
        ItemKind.LINK,
        ItemState.NOTED,
        False,
        f"about {MARK_START}paged{MARK_END} memory",
    )
    terminal = Console(file=io.StringIO(), force_terminal=True, color_system="standard")
    show_hits([hit], ZoneInfo("UTC"), terminal)
    out = terminal.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[1mpaged\x1b[0m" in out and "\x1b[31m" not in out
    plain = Console(file=io.StringIO(), force_terminal=False)
    show_hits([hit], ZoneInfo("UTC"), plain)
    head, snippet = plain.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert head.endswith("words  (a.example)")  # a long line is not cut at the width
    assert snippet == "        about paged memory"


def test_json_and_lines_mask_a_token_in_the_url_and_in_a_title_that_falls_back_to_it(
    rig: Rig,
) -> None:
    secret = "s3cretTOKENvalue"
    added = rig.run("add", f"https://leaky.example/p?token={secret}&x=1")
    assert added.exit_code == 0, added.output

    as_json = rig.run("search", "leaky", "--json")
    as_lines = rig.run("search", "leaky")

    (hit,) = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert hit["url"] == "https://leaky.example/p?token=***&x=1"
    assert hit["title"].endswith("token=***&x=1")  # named by its address, masked the same
    assert secret not in as_json.output and secret not in as_lines.output
    assert "leaky.example/p?token=***" in as_lines.stdout


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["kernels", "--limit", "9223372036854775808"], "--limit"),
        (["kernels", "--limit", "0"], "--limit"),
        ([" OR ".join(f"w{n}" for n in range(3200))], "characters; at most 1,000"),
        ([" OR ".join(f"w{n}" for n in range(100))], "terms; at most 64"),
        (["x" * 1001], "characters; at most 1,000"),
    ],
)
def test_a_query_or_limit_past_its_bounds_is_refused_before_sqlite(
    rig: Rig, args: list[str], why: str
) -> None:
    result = rig.run("search", *args)

    assert result.exit_code == 2 and why in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""


def test_a_title_with_terminal_escapes_reaches_the_terminal_escaped(rig: Rig) -> None:
    rig.run("add", "https://esc.example/a", "--title", "Evil \x1b]52;c;QUFB\x07 \u202egpj.exe\nrow")

    result = rig.run("search", "evil")

    (head,) = result.stdout.splitlines()  # the snippet, only its title again, is left out
    assert head.endswith("gpj.exe\\x0arow  (esc.example)")  # the newline forges no row
    assert not set(result.output) & {"\x1b", "\x07", "\u202e"}
