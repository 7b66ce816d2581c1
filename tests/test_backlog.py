"""The backlog sections: unread items from earlier weeks, and the same week a year ago."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from click.testing import CliRunner

from digest.cli import cli
from digest.compose.backlog import backlog_for
from digest.compose.digest import Backlog, compose
from digest.config import Config, DigestSection
from digest.lifecycle import item_read
from digest.models import Item, SavedItem, WeekSummary
from digest.periods import parse_week, year_earlier
from digest.store import Store

UTC_ZONE = ZoneInfo("UTC")
W47 = parse_week("2026-W47", UTC_ZONE)
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def save(store: Store, *saved: tuple[str, datetime]) -> list[Item]:
    source = store.ensure_source("inbox", "file", path="/inbox")
    items = [SavedItem(url=url, title=url.rsplit("/", 1)[1], saved_at=at) for url, at in saved]
    store.save_items(source, items, NOW)
    return store.all_items()


def config(tmp_path: Path, **digest: object) -> Config:
    return Config(digest=DigestSection(data_dir=tmp_path / "data", **digest))


def test_unread_items_from_earlier_weeks_come_oldest_first_a_few_at_a_time(
    tmp_path: Path, store: Store
) -> None:
    save(
        store,
        ("https://a.example/newest", W47.start - timedelta(days=1)),
        ("https://a.example/oldest", W47.start - timedelta(days=30)),
        ("https://a.example/middle", W47.start - timedelta(days=10)),
        ("https://a.example/read", W47.start - timedelta(days=40)),
        ("https://a.example/this-week", W47.start + timedelta(days=1)),
    )
    store.apply_read(item_read("https://A.example/read#top", NOW))  # any form of the saved URL

    backlog = backlog_for(store, config(tmp_path, backlog_unread=2), W47)

    assert [item.title for item in backlog.unread] == ["oldest", "middle"]
    assert backlog.year_ago == []


def test_the_backlog_is_off_unless_configured(tmp_path: Path, store: Store) -> None:
    save(store, ("https://a.example/old", W47.start - timedelta(days=400)))
    assert backlog_for(store, config(tmp_path), W47) == Backlog([], [])


def test_one_year_ago_is_the_same_iso_week_of_the_year_before(tmp_path: Path, store: Store) -> None:
    last_year = parse_week("2025-W47", UTC_ZONE)
    save(
        store,
        ("https://a.example/then", last_year.start + timedelta(days=2)),
        ("https://a.example/week-after", last_year.end + timedelta(hours=1)),
    )
    backlog = backlog_for(store, config(tmp_path, one_year_ago=True), W47)
    assert [item.title for item in backlog.year_ago] == ["then"]


def test_week_53_looks_back_to_week_52_in_a_year_without_53() -> None:
    assert year_earlier(parse_week("2026-W53", UTC_ZONE), UTC_ZONE).label == "2025-W52"
    assert year_earlier(W47, UTC_ZONE).label == "2025-W47"


def test_mark_read_by_id_and_unknown_refs(store: Store) -> None:
    [item] = save(store, ("https://a.example/x", NOW))
    marked = store.apply_read(item_read(str(item.id), NOW))
    assert marked is not None and marked.id == item.id
    assert store.unread_saved_before(NOW + timedelta(days=1), 10) == []
    assert store.apply_read(item_read("999", NOW)) is None
    assert store.apply_read(item_read("https://a.example/unknown", NOW)) is None
    assert store.apply_read(item_read("not a url", NOW)) is None


def test_the_digest_shows_the_backlog_sections_after_the_week(store: Store) -> None:
    last_year = parse_week("2025-W47", UTC_ZONE)
    items = save(
        store,
        ("https://a.example/unread", W47.start - timedelta(days=8)),
        ("https://a.example/then", last_year.start + timedelta(days=1)),
    )
    unread, then = sorted(items, key=lambda item: item.title or "", reverse=True)

    markdown = compose(
        W47, [], WeekSummary(()), zone=UTC_ZONE, backlog=Backlog([unread, then], [then])
    )

    tail = markdown.split("Nothing was saved this week.\n", 1)[1]
    assert tail == (
        "\n## Still unread from earlier weeks\n\n"
        "- [unread](https://a.example/unread) (saved 8 November 2026)\n"
        "\n## One year ago\n\n"
        "- [then](https://a.example/then) (saved 18 November 2025)\n"
    )


def test_digest_read_marks_items_and_names_those_it_cannot_find(
    tmp_path: Path, store: Store
) -> None:
    [item] = save(store, ("https://a.example/x", NOW))
    config_file = tmp_path / "digest.toml"
    config_file.write_text(f'[digest]\ndata_dir = "{tmp_path / "data"}"\n')

    result = CliRunner().invoke(cli, ["read", str(item.id), "--config", str(config_file)])
    assert result.exit_code == 0, result.output
    assert result.output == f"read: {item.id} x\n"

    missing = CliRunner().invoke(
        cli, ["read", "https://a.example/nope", "--config", str(config_file)]
    )
    assert missing.exit_code == 1
    assert missing.output.strip().splitlines() == [
        "digest: no saved item with id or URL 'https://a.example/nope'; ids are in `digest search` and `digest export`"
    ]


def test_still_unread_shows_its_full_count_when_some_are_also_a_year_ago(
    tmp_path: Path, store: Store
) -> None:
    last_year = parse_week("2025-W47", UTC_ZONE)
    save(
        store,
        ("https://a.example/then", last_year.start + timedelta(days=1)),
        ("https://a.example/older", W47.start - timedelta(days=30)),
        ("https://a.example/old", W47.start - timedelta(days=20)),
    )
    settings = config(tmp_path, backlog_unread=2, one_year_ago=True)
    backlog = backlog_for(store, settings, W47)
    markdown = compose(W47, [], WeekSummary(()), zone=UTC_ZONE, backlog=backlog)
    unread = markdown.split("## Still unread from earlier weeks\n\n", 1)[1].split("\n\n")[0]
    assert unread.splitlines() == [
        "- [older](https://a.example/older) (saved 17 October 2026)",
        "- [old](https://a.example/old) (saved 27 October 2026)",
    ]
