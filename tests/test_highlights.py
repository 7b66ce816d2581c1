"""Highlights that come back: Kindle clippings and a Readwise CSV imported (duplicates once,
notes joined), shown under their item, brought back 1, 3, 8, 21 and 55 weeks after saving
unless their item was read since, retired with `digest highlight done`."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.collect.highlights import KINDLE, READWISE, highlights_format, read_highlights
from digest.lifecycle import RESURFACE_WEEKS, resurfacing_due

SAMPLES = Path(__file__).parent / "fixtures" / "highlights"
UTC_ZONE = ZoneInfo("UTC")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "digest.toml"
    path.write_text('[digest]\ndata_dir = "data"\ntimezone = "UTC"\n')
    for sample in SAMPLES.iterdir():
        shutil.copy(sample, tmp_path / sample.name)
    return path


def run(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config)], catch_exceptions=False)


def week(config: Path, label: str) -> str:
    assert run(config, "compose", "--week", label).exit_code == 0
    return (config.parent / "data" / "digests" / f"{label}.md").read_text()


def resurfaced(text: str) -> str:
    return text.split("## From your highlights", 1)[1] if "## From your highlights" in text else ""


def test_kindle_clippings_are_read_once_with_their_notes() -> None:
    text = (SAMPLES / "My Clippings.txt").read_text(encoding="utf-8")
    assert highlights_format(text, None) == KINDLE
    found = read_highlights(text, KINDLE, UTC_ZONE)

    assert [(h.item.title, h.text[:20], h.note) for h in found.found] == [
        ("Deep Work — Cal Newport", "Clarity about what m", "Try this with the weekly review."),
        ("The Pragmatic Programmer — David Thomas; Andrew Hunt", "Care about your craf", None),
    ]
    assert found.found[1].text.endswith("care about doing it well?")  # the longer form kept
    assert found.duplicates == 2  # the same highlight twice; one extended later
    assert [r.reason for r in found.rejected] == ["not a Kindle clipping"]
    assert found.found[0].highlighted_at == datetime(2026, 11, 2, 21, 3, 15, tzinfo=UTC_ZONE)


def test_a_readwise_export_is_read_once_and_a_row_without_text_is_named() -> None:
    text = (SAMPLES / "readwise.csv").read_text()
    assert highlights_format(text, None) == READWISE
    found = read_highlights(text, READWISE, UTC_ZONE)

    assert [(h.item.title, h.note) for h in found.found] == [
        ("Dealers of Lightning — Michael Hiltzik", "Alan Kay, quoted"),
        ("How caches work — Ada Writer", None),
    ]
    assert found.duplicates == 1
    assert [(r.line, r.reason) for r in found.rejected] == [(5, "no highlight or title")]


def test_imported_highlights_show_under_their_item_and_in_export(config: Path) -> None:
    first = run(config, "import", "My Clippings.txt", "readwise.csv")
    again = run(config, "import", "My Clippings.txt")

    assert first.exit_code == 0, first.output
    assert "format kindle-clippings: 2 new highlights, 2 known or duplicate" in first.output
    assert "format readwise-csv: 2 new highlights, 1 known or duplicate" in first.output
    assert "0 new highlights, 4 known or duplicate" in again.output
    text = week(config, "2026-W45")
    assert "> Clarity about what matters provides clarity about what does not." in text
    exported = [json.loads(line) for line in run(config, "export").output.splitlines()]
    by_title = {row["title"]: row["highlights"] for row in exported}
    assert by_title["Deep Work — Cal Newport"] == [
        "Clarity about what matters provides clarity about what does not."
    ]


def test_highlights_come_back_on_the_spaced_schedule(config: Path) -> None:
    run(config, "import", "My Clippings.txt")

    assert resurfaced(week(config, "2026-W45")) == ""  # saved that week: not yet
    w46 = resurfaced(week(config, "2026-W46"))  # a week after
    assert "Clarity about what matters" in w46 and "*Deep Work — Cal Newport*" in w46
    assert "highlighted 2 November 2026; your note: Try this with the weekly review." in w46
    assert resurfaced(week(config, "2026-W46")) == w46  # a later revision keeps them
    assert resurfaced(week(config, "2026-W47")) == ""  # the next step is 3 weeks after
    assert "Clarity about what matters" in resurfaced(week(config, "2026-W48"))

    with sqlite3.connect(config.parent / "data" / "digest.db") as db:
        (deep,) = db.execute("SELECT id FROM highlights WHERE text LIKE 'Clarity%'").fetchone()
        (book,) = db.execute("SELECT item_id FROM highlights WHERE text LIKE 'Care%'").fetchone()
    done = run(config, "highlight", "done", str(deep))
    assert done.exit_code == 0 and done.output.startswith(f"done: {deep} Clarity")
    assert run(config, "read", str(book)).exit_code == 0
    assert resurfaced(week(config, "2026-W48")) == ""  # retired, and read since: none come back
    assert run(config, "highlight", "done", "999").exit_code == 1


def test_the_schedule_on_an_injected_clock() -> None:
    saved = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    steps = [saved + timedelta(weeks=weeks) for weeks in RESURFACE_WEEKS]
    assert resurfacing_due(saved, None, None, saved + timedelta(days=6)) is None
    assert resurfacing_due(saved, None, None, steps[0]) == steps[0]
    assert resurfacing_due(saved, steps[0], None, steps[1] - timedelta(seconds=1)) is None
    assert resurfacing_due(saved, steps[0], None, steps[2]) == steps[2]  # a missed step: the latest
    assert resurfacing_due(saved, steps[4], None, steps[4] + timedelta(weeks=100)) is None
    read_later = saved + timedelta(days=2)
    assert resurfacing_due(saved, None, read_later, steps[3]) is None
    assert resurfacing_due(saved, None, saved - timedelta(days=1), steps[3]) == steps[3]
