"""Every save read exactly once: real files in a temp inbox over several collects (issue 18).

Held-back last lines, posts that grow, one reading per file, folders holding other
documents, bad lines, and files the user never meant to share.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.collect.files import describe, import_files
from digest.collect.inbox import collect_file_source
from digest.config import SourceConfig
from digest.lifecycle import note_attached
from digest.models import Item, ItemKind, Note, StageReport
from digest.store import Store, open_store

ZONE = ZoneInfo("UTC")
NOW = datetime(2026, 1, 12, 9, 0, tzinfo=UTC)

# Pasted posts in the shape of the user's: no separators, t.co links, a closing arrow.
POSTS = """\
Read this to get started with GPU programming.
This is a friendly overview of what matters when you write your first kernels. It covers:
- memory
- occupancy
https://t.co/Abc123Def4
5 guides to understand how inference servers work
- What is batching?
- Paged attention and the KV cache
Links ↓
A plain story you might hear is that compilers are a solved problem and nothing is left.
It is not true, and here is why the next few years will be interesting for them.
"""
LAST_LINE = "The tools are better than ever, and the problems are bigger than ever."

LIST = """\
Reading list
Compilers
- Static Single Assignment
- Register Allocation - the chapter on graph colouring is the clearest I know
Kernels
- Flash Attention
- Mega Kernels from the future"""


def write(path: Path, text: str) -> Path:
    """Write `text` and date it a day back, as a file saved earlier (its stat then trusted)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    a_day_ago = time.time_ns() - 86_400 * 10**9
    os.utime(path, ns=(a_day_ago, a_day_ago))
    return path


def collect(store: Store, folder: Path, **options: object) -> StageReport:
    source = SourceConfig(name="inbox", kind="file", path=folder, **options)
    source_id = store.ensure_source(source.name, "file", path=str(folder))
    return collect_file_source(store, source, source_id, ZONE, NOW)


def titles(store: Store) -> list[str]:
    return sorted(item.title or "" for item in store.all_items())


def only(store: Store, starting: str) -> Item:
    [item] = [i for i in store.all_items() if (i.title or "").startswith(starting)]
    return item


# -- the last line ------------------------------------------------------------------------


def test_a_last_line_without_its_end_is_held_back_and_said_so(store: Store, tmp_path: Path) -> None:
    write(tmp_path / "inbox" / "list.txt", LIST)
    report = collect(store, tmp_path / "inbox")
    assert "1 line held back until the file is complete" in report.info[0]
    assert "Mega Kernels from the future" not in titles(store)


def test_a_held_back_entry_arrives_on_the_next_collect_without_duplicates(
    store: Store, tmp_path: Path
) -> None:
    write(tmp_path / "inbox" / "list.txt", LIST)
    collect(store, tmp_path / "inbox")
    second = collect(store, tmp_path / "inbox")
    assert "held back" not in second.info[0]
    assert second.done == 1
    assert len(store.all_items()) == 4
    collect(store, tmp_path / "inbox")
    assert len(store.all_items()) == 4


def test_a_collected_file_gives_what_digest_import_gives(store: Store, tmp_path: Path) -> None:
    path = write(tmp_path / "inbox" / "posts.txt", POSTS + LAST_LINE)
    collect(store, tmp_path / "inbox")
    collect(store, tmp_path / "inbox")
    collected = titles(store)
    imported_into = open_store(tmp_path / "imported.db")  # a fresh database for `digest import`
    import_files(imported_into, [path], zone=ZONE, now=NOW)
    assert titles(imported_into) == collected
    assert len(collected) == 3


def test_a_post_completed_by_its_last_line_is_one_item_with_its_note_renewed(
    store: Store, tmp_path: Path
) -> None:
    path = write(tmp_path / "inbox" / "posts.txt", POSTS + LAST_LINE)
    collect(store, tmp_path / "inbox")
    post = only(store, "A plain story")
    assert LAST_LINE not in (post.context or "")
    store.attach_note(note_attached(post, "k", Note("Compilers."), NOW, final=True))
    write(path, POSTS + LAST_LINE + "\n")  # the writer ends the line
    collect(store, tmp_path / "inbox")
    grown = only(store, "A plain story")
    assert grown.id == post.id
    assert LAST_LINE in (grown.context or "")
    assert grown.note is None  # due for a new note on its whole text
    assert sum(1 for item in store.all_items() if item.kind is ItemKind.POST) == 3


def test_a_post_that_grows_later_updates_its_item(store: Store, tmp_path: Path) -> None:
    path = write(tmp_path / "inbox" / "posts.txt", POSTS)
    collect(store, tmp_path / "inbox")
    before = only(store, "A plain story")
    write(path, POSTS + "The best part: nobody has to wait for the next release.\n")
    collect(store, tmp_path / "inbox")
    after = only(store, "A plain story")
    assert after.id == before.id and "nobody has to wait" in (after.context or "")
    assert len(store.all_items()) == 3


def test_the_report_says_which_format_and_why(store: Store, tmp_path: Path) -> None:
    path = write(tmp_path / "posts.txt", POSTS)
    [outcome] = import_files(store, [path], zone=ZONE, now=NOW)
    lines = describe(outcome)
    assert "format posts:" in lines[0]
    assert lines[-1].startswith("  read as posts: t.co links, closing lines (`Links ↓`)")
