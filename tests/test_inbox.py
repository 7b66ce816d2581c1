"""File and folder sources re-scanned on every collect: what is read again, and what not."""

from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.collect.inbox import collect_file_source
from digest.config import SourceConfig
from digest.models import StageReport
from digest.store import Store

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
ZONE = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 1, 12, 9, 0, tzinfo=UTC)


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
    for path in folder.rglob("*"):
        settle(path)
    return folder


def settle(path: Path) -> None:
    """Date the file a day back, as a file saved earlier: its stat can then be trusted."""
    a_day_ago = time.time_ns() - 86_400 * 10**9
    os.utime(path, ns=(a_day_ago, a_day_ago))


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


def test_file_of_unknown_format_is_a_failure_line_while_others_import(
    store: Store, inbox: Path
) -> None:
    (inbox / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    (inbox / "shopping.txt").write_text("milk, as https://example.org/milk says\n")
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
    assert source.status == "failing"


def test_a_folder_whose_every_file_fails_marks_the_source_failing(
    store: Store, tmp_path: Path
) -> None:
    folder = tmp_path / "junk"
    folder.mkdir()
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    (folder / "shopping.txt").write_text("milk, as https://example.org/milk says\n")
    _, report = collect(store, folder)
    assert len(report.failures) == 2
    (source,) = store.list_sources()
    assert source.status == "failing"
    assert (source.last_error or "").startswith("every file failed (2), last: ")


def test_a_folder_with_one_good_file_among_bad_ones_stays_healthy(
    store: Store, tmp_path: Path
) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "shopping.txt").write_text("milk, as https://example.org/milk says\n")
    (folder / "links.urls").write_text("https://example.org/one\n")
    _, report = collect(store, folder)
    assert report.done == 1 and len(report.failures) == 1
    (source,) = store.list_sources()
    assert source.status == "ok"


def test_source_topic_is_given_to_items_without_one(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "links.urls"
    path.write_text("https://example.org/one\n")
    source = SourceConfig(name="inbox", kind="file", path=path, topic="Reading")
    source_id = store.ensure_source("inbox", "file", path=str(path))
    collect_file_source(store, source, source_id, ZONE, NOW)
    assert [item.topic for item in store.all_items()] == ["Reading"]


# -- re-scanning -------------------------------------------------------------------


def edit_keeping_stat(path: Path, old: bytes, new: bytes) -> None:
    """Change bytes in place (same inode), same size, and put the mtime back."""
    assert len(old) == len(new)
    before = path.stat()
    with path.open("r+b") as file:
        data = file.read()
        file.seek(0)
        file.write(data.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )


def test_unchanged_files_import_and_report_nothing_on_the_next_collect(
    store: Store, inbox: Path
) -> None:
    _, first = collect(store, inbox)
    _, second = collect(store, inbox)
    assert first.info and first.failures
    assert (second.done, second.info, second.failures) == (0, [], [])


def test_a_file_whose_stat_is_unchanged_is_not_read_at_all(store: Store, inbox: Path) -> None:
    target = inbox / "reading.urls"
    collect(store, inbox)
    edit_keeping_stat(target, b"blog.ezyang.com", b"blog.EZYANG.org")  # unseen unless read
    _, report = collect(store, inbox)
    assert report.info == []
    assert "https://blog.EZYANG.org/2019/05/pytorch-internals/" not in urls(store)
    os.utime(target)  # now the stat differs: the file is read and the edit seen
    _, report = collect(store, inbox)
    assert report.done == 1
    assert "https://blog.EZYANG.org/2019/05/pytorch-internals/" in urls(store)


def urls(store: Store) -> set[str | None]:
    return {item.url for item in store.all_items()}


def test_a_touched_but_unchanged_file_is_not_imported_again(store: Store, inbox: Path) -> None:
    target = inbox / "reading.urls"
    collect(store, inbox)
    os.utime(target, ns=(1_800_000_000_000_000_000, 1_800_000_000_000_000_000))
    _, report = collect(store, inbox)
    assert (report.done, report.info, report.failures) == (0, [], [])
    state = store.file_state(str(target.absolute()))
    assert state is not None and state.mtime_ns == 1_800_000_000_000_000_000


def test_an_edit_right_after_a_read_that_keeps_size_and_mtime_is_still_seen(
    store: Store, tmp_path: Path
) -> None:
    target = tmp_path / "reading.urls"
    target.write_text("https://example.org/aaaa\n")  # written just now: its mtime is racy
    collect(store, target)
    edit_keeping_stat(target, b"aaaa", b"bbbb")
    _, report = collect(store, target)
    assert report.done == 1
    assert "https://example.org/bbbb" in {item.url for item in store.all_items()}


def test_a_grown_journal_imports_only_its_new_lines_dated_by_their_heading(
    store: Store, inbox: Path
) -> None:
    journal = inbox / "til.md"
    collect(store, inbox)
    with journal.open("a", encoding="utf-8") as file:
        file.write(
            "- [Appended](https://example.org/appended)\nhttps://gwern.net/scaling-hypothesis\n"
        )
    _, report = collect(store, inbox)
    assert report.done == 1
    assert report.info == [
        f"{journal}: format journal: 1 new, 1 duplicate, 0 notes without URL,"
        " 0 lines not understood"
    ]
    assert report.failures == []  # the old bad lines are not reported again
    (item,) = [i for i in store.all_items() if i.url == "https://example.org/appended"]
    assert item.saved_at == datetime(2025, 10, 27, tzinfo=ZONE)  # the last day heading


def test_lines_appended_under_a_new_heading_take_its_date(store: Store, inbox: Path) -> None:
    collect(store, inbox)
    with (inbox / "til.md").open("a", encoding="utf-8") as journal:
        journal.write("\n## 2026-01-11\n- [New one](https://example.org/new-one)\n")
    _, report = collect(store, inbox)
    assert report.done == 1
    (item,) = [i for i in store.all_items() if i.url == "https://example.org/new-one"]
    assert item.saved_at == datetime(2026, 1, 11, tzinfo=ZONE)


def test_a_rewritten_file_is_imported_whole_and_only_its_new_links_count_as_new(
    store: Store, inbox: Path
) -> None:
    target = inbox / "reading.urls"
    collect(store, inbox)
    old = target.read_text()
    target.write_text("https://example.org/first-now\n" + old)
    _, report = collect(store, inbox)
    assert report.info == [
        f"{target}: format urls: 1 new, 2 duplicates, 0 notes without URL, 2 lines not understood"
    ]


def test_a_grown_list_is_read_whole_since_a_comment_joins_the_entry_above(
    store: Store, inbox: Path
) -> None:
    target = inbox / "learning_list.txt"
    _, first = collect(store, inbox)
    with target.open("a", encoding="utf-8") as file:
        file.write("- https://example.org/one-more\n")
    _, report = collect(store, inbox)
    line, *skips = report.info
    assert all(skip.startswith(f"{target}: skipped ") for skip in skips)
    assert line.startswith(f"{target}: format list: 1 new, ")
    assert ", 0 duplicates," not in line


def test_a_new_file_in_the_folder_is_imported_and_the_others_left_alone(
    store: Store, inbox: Path
) -> None:
    collect(store, inbox)
    added = inbox / "more.urls"
    added.write_text("https://example.org/brand-new\n")
    _, report = collect(store, inbox)
    assert report.done == 1
    assert report.info == [
        f"{added}: format urls: 1 new, 0 duplicates, 0 notes without URL, 0 lines not understood"
    ]


def test_an_empty_file_in_a_folder_source_is_no_failure(store: Store, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "empty.md").write_text("")
    (inbox / "links.urls").write_text("https://example.org/a\n")
    source = SourceConfig(name="inbox", kind="file", path=inbox)
    report = collect_file_source(store, source, store.ensure_source("inbox", "file"), ZONE, NOW)
    assert (report.done, report.failures) == (1, [])
