"""Highlights from KOReader (JSON and markdown exports), Karakeep and Omnivore, in the shapes
those tools write (our own samples, with duplicates and notes): each kept once, attached to
its book or page, shown under it and exported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.collect.highlight_exports import (
    KARAKEEP,
    KOREADER_JSON,
    KOREADER_MARKDOWN,
    OMNIVORE,
)
from digest.collect.highlights import Highlights, highlights_format, read_highlights

SAMPLES = Path(__file__).parent / "fixtures" / "highlight_exports"
UTC_ZONE = ZoneInfo("UTC")
OMNIVORE_FILE = SAMPLES / "omnivore" / "highlights" / "how-sqlite-is-tested-18c0a1.md"


def read(path: Path, expected_format: str) -> Highlights:
    text = path.read_text(encoding="utf-8")
    assert highlights_format(text, None, path) == expected_format
    return read_highlights(text, expected_format, UTC_ZONE, path)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "digest.toml"
    path.write_text('[digest]\ndata_dir = "data"\ntimezone = "UTC"\n')
    shutil.copytree(SAMPLES, tmp_path / "exports")
    return path


def run(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config)], catch_exceptions=False)


def exported_highlights(config: Path) -> dict[str, list[str]]:
    rows = [json.loads(line) for line in run(config, "export").output.splitlines()]
    return {row["title"]: row["highlights"] for row in rows if row.get("highlights")}


def test_a_koreader_json_export_of_two_books_is_read_once_with_its_notes() -> None:
    found = read(SAMPLES / "koreader.json", KOREADER_JSON)

    assert [(h.item.title, h.text[:24], h.note, h.location) for h in found.found] == [
        (
            "Designing Data-Intensive Applications — Martin Kleppmann",
            "Leader-based replication",
            "Kafka and RabbitMQ too",  # the duplicate's note joins the highlight kept
            "152",
        ),
        (
            "Designing Data-Intensive Applications — Martin Kleppmann",
            "The goal of partitioning",
            "skew = hot spots",
            "201",
        ),
        (
            "The Mythical Man-Month — Frederick P. Brooks Jr.",
            "Adding manpower to a lat",
            None,
            "25",
        ),
    ]
    assert found.duplicates == 1
    assert [(r.line, r.reason) for r in found.rejected] == [(4, "no highlighted text")]
    assert found.found[0].highlighted_at is not None
    assert found.found[0].highlighted_at.isoformat() == "2026-11-10T08:40:00+00:00"


def test_a_koreader_markdown_export_is_read_without_its_styles() -> None:
    found = read(SAMPLES / "koreader.md", KOREADER_MARKDOWN)

    assert [(h.text, h.note, h.location) for h in found.found] == [
        ("A system is more than the sum of its parts.", None, "17"),
        ("Stocks change over time through the actions of a flow.", "bathtub", "25"),
        ("Paradigms are the sources of systems.", None, "145"),
    ]
    assert {h.item.title for h in found.found} == {"Thinking in Systems — Donella H. Meadows"}
    assert found.duplicates == 1
    assert [(r.line, r.reason) for r in found.rejected] == [(17, "no highlighted text")]
    assert str(found.found[1].highlighted_at) == "2026-11-03 20:30:11+00:00"


def test_karakeep_highlights_find_their_page_in_the_export_beside_them() -> None:
    found = read(SAMPLES / "karakeep" / "highlights.json", KARAKEEP)

    assert [(h.item.url, h.text[:20], h.note) for h in found.found] == [
        ("https://raft.example/paper.html", "Raft separates the k", "why it is easier to teach"),
        ("https://raft.example/paper.html", "Servers retry RPCs i", None),
    ]
    assert found.found[0].text.endswith("such as leader election.")  # the longer one kept
    assert found.duplicates == 1
    assert [(r.line, r.reason) for r in found.rejected] == [
        (4, "its bookmark is in no Karakeep export in this folder (export it beside)")
    ]


def test_karakeep_highlights_alone_name_each_highlight_without_its_page(tmp_path: Path) -> None:
    alone = tmp_path / "highlights.json"
    shutil.copy(SAMPLES / "karakeep" / "highlights.json", alone)
    found = read(alone, KARAKEEP)

    assert found.found == [] and len(found.rejected) == 4


def test_an_omnivore_highlights_file_takes_its_page_from_the_exports_metadata() -> None:
    found = read(OMNIVORE_FILE, OMNIVORE)

    assert {(h.item.url, h.item.title) for h in found.found} == {
        ("https://sqlite.example/testing.html", "How SQLite Is Tested")
    }
    assert [(h.text[:26], h.note) for h in found.found] == [
        ("Omnivore page note: read t", None),
        ("The SQLite library has 590", "impressive ratio"),  # labels left out
        ("Branch coverage is 100%.\n\n", None),
    ]
    assert found.duplicates == 1 and not found.rejected


def test_an_omnivore_file_outside_its_export_is_not_taken_for_one(tmp_path: Path) -> None:
    loose = tmp_path / "highlights" / OMNIVORE_FILE.name
    loose.parent.mkdir()
    shutil.copy(OMNIVORE_FILE, loose)
    text = loose.read_text()

    assert highlights_format(text, None, loose) is None
    forced = read_highlights(text, OMNIVORE, UTC_ZONE, loose)
    assert forced.found == []
    assert [r.reason for r in forced.rejected] == ["no metadata_*.json beside it names this slug"]


def test_imported_exports_attach_highlights_once_to_their_items(config: Path) -> None:
    exports = config.parent / "exports"
    first = run(config, "import", str(exports))
    again = run(config, "import", str(exports / "koreader.json"), str(exports / "karakeep"))

    assert first.exit_code == 0, first.output
    assert "format koreader-json: 3 new highlights, 1 known or duplicate" in first.output
    assert "format koreader-markdown: 3 new highlights, 1 known or duplicate" in first.output
    assert "format karakeep-highlights: 2 new highlights, 1 known or duplicate" in first.output
    assert "format omnivore-highlights: 3 new highlights, 1 known or duplicate" in first.output
    assert "0 new highlights, 4 known or duplicate" in again.output  # koreader.json again
    assert "0 new highlights, 3 known or duplicate" in again.output  # karakeep again
    highlights = exported_highlights(config)
    assert highlights["In Search of an Understandable Consensus Algorithm"] == [
        "Raft separates the key elements of consensus, such as leader election.",
        "Servers retry RPCs if they do not receive a response in a timely manner.",
    ]
    assert len(highlights["How SQLite Is Tested"]) == 3
    assert highlights["The Mythical Man-Month — Frederick P. Brooks Jr."] == [
        "Adding manpower to a late software project makes it later."
    ]
