"""Compose reads the store and writes nothing to it: a week composed from a store opened
read-only (features made in memory, highlights brought back, the reader's history), and no
module of compose/ calls a store method that writes."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import digest.compose
from digest.compose.backlog import backlog_for
from digest.compose.digest import render_digest
from digest.compose.week import archive_before, reader_history, ruled_week, week_context
from digest.config import Config, DigestSection
from digest.lifecycle import FetchSucceeded, ItemRead, ItemStarred, ItemState, NoteAttached
from digest.models import Extracted, Highlight, Note, SavedItem, WeekSummary
from digest.periods import parse_week
from digest.store import open_store, open_store_read_only

W47 = parse_week("2026-W47", ZoneInfo("UTC"))
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
PAGE = "Astronomers found a comet whose orbit brings it close to the sun every seventy years. "
WRITING = ("save_", "apply_", "record_", "attach_", "retire_", "highlights_shown", "write")


def filled(path: Path) -> None:
    """A week's fetched and noted links (stored without features, as before issue 32), an
    older starred and an older read item, and a highlight due to come back in W47."""
    with open_store(path) as store:
        source = store.ensure_source("inbox", "file", path="/inbox")
        saved = [
            SavedItem(
                f"https://a.example/{n}",
                title=f"Comet {n}",
                saved_at=W47.start + timedelta(hours=n),
            )
            for n in range(1, 4)
        ]
        saved += [
            SavedItem(
                f"https://b.example/{n}",
                title=f"Old {n}",
                saved_at=W47.start - timedelta(days=20 + n),
            )
            for n in range(2)
        ]
        store.save_items(source, saved, NOW)
        items = {item.title: item for item in store.all_items()}
        for item in (items["Comet 1"], items["Comet 2"], items["Comet 3"]):
            page = Extracted(text=PAGE * 5, title=item.title)
            store.apply_fetch(FetchSucceeded(item.id, page, "hash", NOW, ItemState.FETCHED, None))
            note = Note(f"{PAGE}Item {item.id}.", tags=("comets",))
            store.attach_note(
                NoteAttached(item.id, f"k{item.id}", note, NOW, ItemState.NOTED, final=True)
            )
        store.apply_star(ItemStarred(items["Old 0"].id, NOW))
        store.apply_read(ItemRead(items["Old 1"].id, NOW))
        two_weeks_before = W47.start - timedelta(weeks=2)
        book = SavedItem("https://books.example/deep", title="Deep Work", saved_at=two_weeks_before)
        clarity = Highlight("Clarity about what matters.", book, highlighted_at=two_weeks_before)
        store.save_highlights(source, [clarity], NOW)


def test_a_week_is_composed_from_a_store_opened_read_only(tmp_path: Path) -> None:
    path = tmp_path / "digest.db"
    filled(path)
    config = Config(digest=DigestSection(data_dir=tmp_path, backlog_unread=5, one_year_ago=True))

    with open_store_read_only(path) as store:
        week = ruled_week(store, config, W47)
        history = reader_history(store)
        backlog = backlog_for(store, config, W47, week.shown)
        archive = archive_before(store, config, W47)
        context = week_context(config, W47, week, WeekSummary(()), history, backlog, None, archive)
        text = render_digest(context).text

    assert [item.title for item in week.shown] == ["Comet 1", "Comet 2", "Comet 3"]
    assert all(item.features is not None for item in week.shown)
    assert [item.title for item in history.starred] == ["Old 0"]
    assert "Clarity about what matters." in text and "Comet 1" in text


def test_no_module_of_compose_calls_a_store_method_that_writes() -> None:
    writes = {
        f"{path.name}:{node.lineno} {node.func.attr}"
        for path in Path(digest.compose.__file__).parent.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr.startswith(WRITING)
    }
    assert writes == set()
