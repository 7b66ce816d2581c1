"""File and folder sources, `digest import` and `digest add`, against a real SQLite store."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.collect.files import (
    FileReport,
    add_url,
    collect_file_source,
    describe,
    import_file,
    import_files,
)
from digest.config import SourceConfig
from digest.errors import ImportFormatError, SourceError
from digest.models import Rejected, StageReport
from digest.store import Store, open_store

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
ZONE = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 1, 12, 9, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(tmp_path / "data" / "digest.db")
    yield opened
    opened.close()


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    """A folder of saved files in every format, a nested folder, and a hidden file."""
    folder = tmp_path / "inbox"
    (folder / "browsers").mkdir(parents=True)
    (folder / ".cache").mkdir()
    for name in ("til.md", "til_older.md", "learning_list.txt", "reading.urls"):
        shutil.copy(FIXTURES / name, folder / name)
    for name in ("chrome_bookmarks.html", "firefox_bookmarks.html"):
        shutil.copy(FIXTURES / name, folder / "browsers" / name)
    (folder / ".hidden.urls").write_text("https://example.org/hidden\n")
    (folder / ".cache" / "x.urls").write_text("https://example.org/cached\n")
    return folder


def file_source(path: Path) -> SourceConfig:
    return SourceConfig(name="inbox", kind="file", path=path)


def collect(store: Store, path: Path) -> tuple[int, StageReport]:
    source = file_source(path)
    source_id = store.ensure_source(source.name, "file", path=str(path))
    return source_id, collect_file_source(store, source, source_id, ZONE, NOW)


def snapshot(folder: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def test_folder_source_imports_every_file_in_every_format(store: Store, inbox: Path) -> None:
    _, report = collect(store, inbox)
    urls = {item.url for item in store.all_items()}
    assert "https://modal.com/blog/reverse-engineer-flash-attention-4" in urls  # nested folder
    assert "https://fasterthanli.me/articles/pin-and-suffering" in urls
    assert (
        "https://docs.vllm.ai/en/stable/features/lora.html#dynamically-serving-lora-adapters"
        in urls
    )
    assert "https://www.jmeiners.com/think-in-math/" in urls
    assert any(item.context == "DST Book" for item in store.all_items())
    assert report.done == store.count_items()


def test_hidden_files_and_folders_are_left_out(store: Store, inbox: Path) -> None:
    collect(store, inbox)
    urls = {item.url for item in store.all_items()}
    assert "https://example.org/hidden" not in urls
    assert "https://example.org/cached" not in urls


def test_a_link_in_two_journal_files_is_one_item_dated_by_its_earliest_save(
    store: Store, inbox: Path
) -> None:
    collect(store, inbox)
    (item,) = [i for i in store.all_items() if i.url == "http://joschu.net/blog/kl-approx.html"]
    assert item.saved_at == datetime(2025, 10, 27, tzinfo=ZONE)


def test_collecting_never_changes_the_files(store: Store, inbox: Path) -> None:
    before = snapshot(inbox)
    collect(store, inbox)
    collect(store, inbox)
    assert snapshot(inbox) == before


def test_unchanged_file_is_not_parsed_again(store: Store, inbox: Path) -> None:
    _, first = collect(store, inbox)
    state = store.file_state(str((inbox / "til.md").absolute()))
    assert state is not None
    _, second = collect(store, inbox)
    assert second.done == 0
    assert second.info == []  # no file was imported again
    assert second.failures == []  # nor its bad lines re-reported
    assert store.file_state(str((inbox / "til.md").absolute())) == state
    assert first.info


def test_touched_but_unchanged_file_is_not_imported_again(store: Store, inbox: Path) -> None:
    collect(store, inbox)
    target = inbox / "reading.urls"
    os.utime(target, ns=(1_800_000_000_000_000_000, 1_800_000_000_000_000_000))
    _, report = collect(store, inbox)
    assert report.info == []
    state = store.file_state(str(target.absolute()))
    assert state is not None and state["mtime_ns"] == 1_800_000_000_000_000_000


def test_edit_keeping_size_and_mtime_is_still_seen_by_its_fingerprint(
    store: Store, inbox: Path
) -> None:
    target = inbox / "reading.urls"
    target.write_text("https://example.org/aaaa\n")
    collect(store, inbox)
    stat = target.stat()
    target.write_text("https://example.org/bbbb\n")  # same size
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
    _, report = collect(store, inbox)
    assert report.done == 1
    assert "https://example.org/bbbb" in {item.url for item in store.all_items()}


def test_appended_lines_are_imported_on_the_next_collect(store: Store, inbox: Path) -> None:
    collect(store, inbox)
    with (inbox / "til.md").open("a", encoding="utf-8") as journal:
        journal.write("\n## 2026-01-11\n- [New one](https://example.org/new-one)\n")
    _, report = collect(store, inbox)
    assert report.done == 1
    (item,) = [i for i in store.all_items() if i.url == "https://example.org/new-one"]
    assert item.saved_at == datetime(2026, 1, 11, tzinfo=ZONE)


def test_file_of_unknown_format_is_a_failure_line_while_others_import(
    store: Store, inbox: Path
) -> None:
    (inbox / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (inbox / "shopping.txt").write_text("milk\n")
    _, report = collect(store, inbox)
    failures = report.failures
    assert any(line.startswith(f"{inbox / 'photo.png'}: ") for line in failures)
    assert any(
        line.startswith(f"{inbox / 'shopping.txt'}: format not recognised") for line in failures
    )
    assert report.done > 0
    assert "https://gwern.net/scaling-hypothesis" in {item.url for item in store.all_items()}


def test_lines_not_understood_are_failure_lines_with_file_and_line(
    store: Store, inbox: Path
) -> None:
    _, report = collect(store, inbox)
    failures = report.failures
    assert f"{inbox / 'reading.urls'}:5: not a URL: not a url at all" in failures
    assert any(line.startswith(f"{inbox / 'til.md'}:14: not an absolute URL") for line in failures)


def test_single_file_source_is_collected(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "links.urls"
    path.write_text("https://example.org/one\nhttps://example.org/two\n")
    _, report = collect(store, path)
    assert report.done == 2


def test_missing_source_path_is_a_failure_and_marks_the_source_failing(
    store: Store, tmp_path: Path
) -> None:
    _, report = collect(store, tmp_path / "nowhere")
    assert report.failures == [f"inbox: {tmp_path / 'nowhere'}: no such file or folder"]
    (source,) = store.list_sources()
    assert source["status"] == "failing"


def test_source_topic_is_given_to_items_without_one(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "links.urls"
    path.write_text("https://example.org/one\n")
    source = SourceConfig(name="inbox", kind="file", path=path, topic="Reading")
    source_id = store.ensure_source("inbox", "file", path=str(path))
    collect_file_source(store, source, source_id, ZONE, NOW)
    assert [item.topic for item in store.all_items()] == ["Reading"]


# -- digest import -----------------------------------------------------------------


def test_import_files_reports_each_file(store: Store) -> None:
    reports = import_files(
        store, [FIXTURES / "til.md", FIXTURES / "til_older.md"], zone=ZONE, now=NOW
    )
    assert [(r.format, r.new) for r in reports] == [("journal", 11), ("journal", 2)]
    assert reports[1].duplicates == 2
    assert {item.sources for item in store.all_items()} == {("import",)}


def test_import_stops_before_saving_anything_when_a_file_is_unreadable(
    store: Store, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.md"
    with pytest.raises(SourceError, match=f"cannot read {missing}"):
        import_files(store, [FIXTURES / "til.md", missing], zone=ZONE, now=NOW)
    assert store.count_items() == 0


def test_forced_format_overrides_sniffing(store: Store) -> None:
    reports = import_files(
        store, [FIXTURES / "reading.urls"], zone=ZONE, now=NOW, forced_format="list"
    )
    assert reports[0].format == "list"


def test_latin1_file_is_decoded(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    lines = [f"- Café Résumé naïve façade {n} https://example.org/é{n}" for n in range(10)]
    path.write_bytes(("Lectures\n" + "\n".join(lines) + "\n").encode("latin-1"))
    report = import_file(
        store, path, source_id=store.ensure_source("t", "import"), zone=ZONE, now=NOW
    )
    assert report.new == 10
    titles = {item.title for item in store.all_items()}
    assert "Café Résumé naïve façade 0" in titles


def test_describe_lists_ten_problem_lines_then_counts_the_rest() -> None:
    report = FileReport(
        path=Path("saved.urls"),
        format="urls",
        new=1,
        duplicates=1,
        notes=2,
        rejected=[Rejected(n, f"junk {n}", "not a URL") for n in range(1, 13)],
        skipped=[Rejected(20, "Bookmarklet", "not a web link (javascript:): javascript:x")],
    )
    lines = describe(report)
    assert lines[0] == (
        "saved.urls: format urls: 1 new, 1 duplicate, 2 notes without URL,"
        " 12 lines not understood, 1 skipped"
    )
    assert lines[1] == "  line 1: not a URL: junk 1"
    assert lines[10] == "  line 10: not a URL: junk 10"
    assert lines[11] == "  … and 2 more"
    assert lines[12] == "  skipped 1: not a web link (javascript:)"


# -- digest add ----------------------------------------------------------------------


def test_add_url_saves_a_new_link_in_the_manual_source(store: Store) -> None:
    saved_at = datetime(2026, 1, 10, 18, 30, tzinfo=ZONE)
    assert add_url(
        store,
        "https://example.org/a?utm_source=x",
        title="A",
        note="why",
        saved_at=saved_at,
        now=NOW,
    )
    (item,) = store.all_items()
    assert (item.title, item.context, item.saved_at, item.sources) == (
        "A",
        "why",
        saved_at,
        ("manual",),
    )


def test_adding_a_known_link_again_returns_false_and_keeps_one_item(store: Store) -> None:
    add_url(store, "https://example.org/a", title=None, note=None, saved_at=None, now=NOW)
    again = add_url(
        store,
        "https://example.org/a#part",
        title=None,
        note="second thought",
        saved_at=None,
        now=NOW,
    )
    assert again is False
    (item,) = store.all_items()
    assert item.context == "second thought"


@pytest.mark.parametrize("bad", ["htp//bad", "http://", "ftp://example.org/x", "example.org"])
def test_add_url_refuses_what_is_not_a_web_address(store: Store, bad: str) -> None:
    with pytest.raises(ImportFormatError, match="cannot save"):
        add_url(store, bad, title=None, note=None, saved_at=None, now=NOW)
    assert store.count_items() == 0
