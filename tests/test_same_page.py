"""URLs the way people mean them: code is not a link, references resolve, one page is one
item whatever its scheme or trailing slash, lookalike hosts are shown in punycode."""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlite_utils import Database

from digest.collect import bigfiles
from digest.collect.importers.common import lines_of
from digest.collect.importers.journal import JournalImporter
from digest.models import FileReading, SavedItem
from digest.store import open_store
from digest.store.migrations import migration_set
from digest.urls import for_display, normalize_url, same_page_key

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)

JOURNAL = """## 2026-11-17
- [Real](https://real.test/a)
- run `curl https://code.test/span` first
```bash
curl https://fence.test/inside
- [not a link](https://fence.test/link)
```
~~~~
x = "https://fence.test/tilde"
```
~~~~
- See [the guide][guide] and [Docs][]
- [Mixed `code` title](https://real.test/b)
- A [shortcut] to read

[guide]: https://ref.test/guide "The guide"
[docs]: <https://ref.test/docs>
[shortcut]: https://ref.test/short
- text with [brackets] only
"""


def test_code_spans_and_fences_are_not_links_and_references_resolve() -> None:
    result = JournalImporter().parse(JOURNAL, zone=ZoneInfo("UTC"))

    links = {item.url: item.title for item in result.items if item.url}
    notes = [item.context for item in result.items if item.url is None]
    assert links == {
        "https://real.test/a": "Real",
        "https://ref.test/guide": "the guide",
        "https://ref.test/docs": "Docs",
        "https://real.test/b": "Mixed `code` title",
        "https://ref.test/short": "shortcut",
    }
    assert notes == ["run `curl https://code.test/span` first", "text with [brackets] only"]
    assert result.rejected == []


def test_http_https_and_a_trailing_slash_of_one_page_are_one_item_kept_in_https(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path / "digest.db")
    source_id = store.ensure_source("inbox", "file", path="/inbox")
    for url in (
        "http://a.test/post/",
        "https://a.test/post",
        "http://A.test/post",
        "https://b.test/",
    ):
        store.save_items(source_id, [SavedItem(url)], NOW)

    urls = sorted(item.url or "" for item in store.all_items())
    store.close()
    assert urls == ["https://a.test/post", "https://b.test/"]


def test_an_http_only_page_keeps_its_http_url_to_fetch(tmp_path: Path) -> None:
    store = open_store(tmp_path / "digest.db")
    store.save_items(
        store.ensure_source("inbox", "file", path="/i"), [SavedItem("http://old.test/x/")], NOW
    )
    [item] = store.all_items()
    store.close()
    assert item.url == "http://old.test/x/" and item.key == "https://old.test/x"


def test_the_migration_gives_old_items_the_same_page_key_and_leaves_clashes(tmp_path: Path) -> None:
    path = tmp_path / "digest.db"
    db = Database(sqlite3.connect(path))
    migration_set().apply(db, stop_before="m012_same_page_keys")
    for key in ("http://a.test/x/", "https://a.test/x", "http://b.test/y"):
        db.conn.execute(
            "INSERT INTO items (key, url, kind, saved_at, collected_at) VALUES (?, ?, 'link', ?, ?)",
            (key, key, NOW.isoformat(), NOW.isoformat()),
        )
    db.conn.commit()
    db.conn.close()

    store = open_store(path)
    keys = sorted(item.key for item in store.all_items())
    store.save_items(
        store.ensure_source("f", "feed", url="https://f.test"), [SavedItem("http://b.test/y/")], NOW
    )
    count = len(store.all_items())
    store.close()

    assert keys == ["http://a.test/x/", "https://a.test/x", "https://b.test/y"]
    assert count == 3


@given(st.sampled_from(["http", "https"]), st.sampled_from(["", "/", "/p", "/p/", "/p/q/"]),
       st.sampled_from(["", "?a=1", "?a=/"]))  # fmt: skip
def test_same_page_key_is_idempotent_and_ignores_scheme_and_trailing_slash(
    scheme: str, path: str, query: str
) -> None:
    key = same_page_key(normalize_url(f"{scheme}://h.test{path}{query}"))
    assert same_page_key(key) == key
    assert key.startswith("https://h.test/")
    assert key == same_page_key(normalize_url(f"https://h.test{path.rstrip('/') or '/'}{query}"))


def test_hosts_that_mix_scripts_are_shown_in_punycode_and_others_as_written() -> None:
    text = "read https://pаypal.com/login (Cyrillic а), https://bücher.de/x and http://пример.рф/"
    shown = for_display(text)
    assert "https://xn--pypal-4ve.com/login" in shown
    assert "https://bücher.de/x" in shown and "http://пример.рф/" in shown


MARKDOWNISH = st.lists(
    st.sampled_from(
        [*'ab `~[]():#-\n\r"<>*', "https://x.test/", "```", "[r]: ", "## 2026-11-17", "é", "€"]
    ),
    max_size=60,
).map("".join)


@given(MARKDOWNISH)
def test_any_journal_text_parses(text: str) -> None:
    result = JournalImporter().parse(text, zone=ZoneInfo("UTC"))
    assert all(item.url is None or item.url.startswith("https://") for item in result.items)


@given(MARKDOWNISH, st.integers(min_value=1, max_value=9))
def test_a_file_read_in_blocks_splits_lines_as_the_whole_text_does(text: str, block: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "til.md"
        path.write_bytes(text.encode())
        big = bigfiles.BigFile(
            path,
            JournalImporter(),
            "utf-8-sig",
            FileReading("journal", True, "forced"),
            path.stat().st_size,
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(bigfiles, "READ_BLOCK", block)
            lines = bigfiles.FileLines(big)
            assert list(lines) == lines_of(text)
    assert lines.ended == len(lines_of(text)) - 1


@given(st.text(max_size=300))
def test_display_never_fails_and_is_stable(text: str) -> None:
    shown = for_display(text)
    assert for_display(shown) == shown
