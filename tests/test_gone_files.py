"""A file that leaves a file source is forgotten: its state, reading and the lines its
items came from; its items stay saved (issue 18)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.collect.inbox import collect_file_source
from digest.config import SourceConfig
from digest.models import StageReport
from digest.store import Store
from stores import store_at

ZONE = ZoneInfo("UTC")
NOW = datetime(2026, 1, 12, 9, 0, tzinfo=UTC)


def journal(host: str) -> str:
    return f"## 2026-01-05\n- [One](https://{host}/1)\n- [Two](https://{host}/2)\n"


def collect(store: Store, folder: Path) -> StageReport:
    source = SourceConfig(name="inbox", kind="file", path=folder)
    source_id = store.ensure_source(source.name, "file", path=str(folder))
    return collect_file_source(store, source, source_id, ZONE, NOW)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return store_at(tmp_path / "digest.db")


def test_a_file_gone_from_the_inbox_is_forgotten_and_its_items_stay(
    store: Store, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.md").write_text(journal("a.example"))
    (inbox / "b.md").write_text(journal("b.example"))
    (tmp_path / "inbox-old").mkdir()  # a neighbour whose name starts like the inbox's
    (tmp_path / "inbox-old" / "c.md").write_text(journal("c.example"))
    collect(store, tmp_path / "inbox-old")
    collect(store, inbox)
    assert store.file_paths(str(inbox)) == [str(inbox / "a.md"), str(inbox / "b.md")]

    (inbox / "a.md").unlink()
    collect(store, inbox)

    assert store.file_paths(str(inbox)) == [str(inbox / "b.md")]
    assert store.file_reading(str(inbox / "a.md")) is None
    assert store.file_paths(str(tmp_path / "inbox-old")) == [str(tmp_path / "inbox-old" / "c.md")]
    assert len(store.all_items()) == 6  # nothing unsaved


def test_a_file_put_back_is_read_again_without_new_items(store: Store, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.md").write_text(journal("a.example"))
    collect(store, inbox)
    (inbox / "a.md").rename(tmp_path / "a.md")
    collect(store, inbox)
    shutil.move(tmp_path / "a.md", inbox / "a.md")
    again = collect(store, inbox)
    assert again.done == 0
    assert "2 duplicates" in again.info[0]  # read again, its lines recorded again
    assert store.file_reading(str(inbox / "a.md")) is not None


def test_a_missing_source_folder_forgets_nothing(store: Store, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.md").write_text(journal("a.example"))
    collect(store, inbox)
    inbox.rename(tmp_path / "unmounted")
    assert collect(store, inbox).failures
    assert store.file_paths(str(inbox)) == [str(inbox / "a.md")]
