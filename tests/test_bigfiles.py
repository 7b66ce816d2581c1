"""Big files are streamed: the same items as a whole read, in memory that does not grow
with the file (the 200 MB figure is in bench/import.py)."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.collect import bigfiles, formats
from digest.collect.filesave import FileReport
from digest.collect.inbox import collect_file_source
from digest.config import SourceConfig
from digest.store import Store, open_store
from importing import import_file

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)
UTC_ZONE = ZoneInfo("UTC")


def journal(links: int, newline: str = "\n") -> str:
    lines = ["---", "title: TIL", "---"]
    for n in range(links):
        if n % 20 == 0:
            lines.append(f"## 2026-11-{1 + n // 20 % 17:02d}")
        if n % 7 == 0:
            lines += ["- [A title that goes on", f"over two lines](https://join.test/{n})"]
        elif n % 11 == 0:
            lines += ["```", f"https://fence.test/{n}", "```"]
        else:
            lines.append(f"- [Link {n}](https://many.test/{n}) and `code https://code.test/{n}`")
    lines += ["- [ref][r]", "[r]: https://ref.test/r"]
    return newline.join(lines) + newline


def rows(store: Store) -> list[tuple[str | None, str | None, datetime]]:
    return sorted((item.url, item.title, item.saved_at) for item in store.all_items())


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_streamed_journal_gives_what_a_whole_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, newline: str
) -> None:
    path = tmp_path / "til.md"
    path.write_bytes(journal(300, newline).encode())
    whole, streamed = open_store(tmp_path / "whole.db"), open_store(tmp_path / "streamed.db")
    import_file(whole, path, source_id=whole.ensure_source("i", "file"), zone=UTC_ZONE, now=NOW)
    monkeypatch.setattr(bigfiles, "STREAM_BYTES", 1024)
    monkeypatch.setattr(bigfiles, "READ_BLOCK", 7)  # line ends cut across blocks, \r\n too
    report = import_file(
        streamed, path, source_id=streamed.ensure_source("i", "file"), zone=UTC_ZONE, now=NOW
    )

    assert rows(streamed) == rows(whole)
    assert report.new == len(rows(whole)) > 250
    assert not any("fence.test" in (url or "") for url, _, _ in rows(whole))
    assert ("https://ref.test/r", "ref", datetime(2026, 11, 15, tzinfo=UTC)) in rows(whole)


def url_list(links: int, newline: str = "\n") -> str:
    lines = []
    for n in range(links):
        if n % 50 == 0:
            lines += ["# a comment", "", "not a url"]
        lines.append(f"https://many.test/{n} Title {n}" if n % 3 else f"- https://many.test/{n}")
    lines.append("javascript:alert(1)")
    return newline.join(lines) + newline


def learning_list(links: int, newline: str = "\n") -> str:
    lines = ["Learning list", "Things I thought were interesting."]
    for n in range(links):
        if n % 30 == 0:
            lines += [f"Topic {n}", "A description of it, long enough to be no topic at all."]
        if n % 4 == 0:
            lines.append(f"- Short note {n}")  # the next entry is a comment on it
            lines.append(f"- A longer comment on the note above it that goes on with words {n}")
        elif n % 4 == 1:
            lines.append(f"- Flash attention {n} https://list.test/{n}")
        else:
            lines.append(f"- Entry {n} - with a comment of its own")
    return newline.join(lines) + newline


FORMATS = {"journal": journal, "urls": url_list, "list": learning_list}


@pytest.mark.parametrize("name", ["urls", "list"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_streamed_list_gives_what_a_whole_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, newline: str
) -> None:
    path = tmp_path / f"saved.{name}"
    path.write_bytes(FORMATS[name](300, newline).encode())
    whole, streamed = open_store(tmp_path / "whole.db"), open_store(tmp_path / "streamed.db")
    read_whole = import_file(
        whole,
        path,
        source_id=whole.ensure_source("i", "file"),
        zone=UTC_ZONE,
        now=NOW,
        forced_format=name,
    )
    monkeypatch.setattr(bigfiles, "STREAM_BYTES", 1024)
    monkeypatch.setattr(bigfiles, "READ_BLOCK", 7)
    monkeypatch.setattr(formats, "STREAM_BLOCK", 3)  # blocks cut between a note and its comment
    report = import_file(
        streamed,
        path,
        source_id=streamed.ensure_source("i", "file"),
        zone=UTC_ZONE,
        now=NOW,
        forced_format=name,
    )

    assert report.format == name
    assert full_rows(streamed) == full_rows(whole)
    assert report.new == len(full_rows(whole)) > 200
    assert problems(report) == problems(read_whole) != ([], [])


def problems(
    report: FileReport,
) -> tuple[list[tuple[int | None, str]], list[tuple[int | None, str]]]:
    return [(r.line, r.reason) for r in report.rejected], [
        (r.line, r.reason) for r in report.skipped
    ]


def full_rows(store: Store) -> list[tuple[str, ...]]:
    return sorted(
        tuple(str(field) for field in (item.url, item.title, item.topic, item.context))
        for item in store.all_items()
    )


def peak_import_bytes(tmp_path: Path, links: int, name: str = "journal") -> tuple[int, int]:
    path = tmp_path / f"saved-{links}.{name}"
    path.write_text(FORMATS[name](links))
    store = open_store(tmp_path / f"{links}.db")
    source_id = store.ensure_source("i", "file")
    tracemalloc.start()
    try:
        import_file(store, path, source_id=source_id, zone=UTC_ZONE, now=NOW, forced_format=name)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        store.close()
    return path.stat().st_size, peak


@pytest.mark.slow
@pytest.mark.parametrize("name", ["journal", "urls", "list"])
def test_memory_does_not_grow_with_the_size_of_a_streamed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(bigfiles, "STREAM_BYTES", 64 * 1024)
    monkeypatch.setattr(bigfiles, "READ_BLOCK", 16 * 1024)  # both files many blocks long
    monkeypatch.setattr(formats, "STREAM_BLOCK", 200)
    small_size, small_peak = peak_import_bytes(tmp_path, 2_000, name)
    big_size, big_peak = peak_import_bytes(tmp_path, 12_000, name)

    assert big_size > 5 * small_size
    assert big_peak < 1.5 * small_peak  # six times the file, about the same memory
    assert big_peak < big_size  # less than the file itself


def test_a_big_file_source_that_grows_is_read_on_from_where_it_was_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bigfiles, "STREAM_BYTES", 1024)
    path = tmp_path / "til.md"
    path.write_text(journal(100) + "- [half](https://half.example/writ")
    source = SourceConfig(name="inbox", kind="file", path=path)
    store = open_store(tmp_path / "digest.db")
    source_id = store.ensure_source("inbox", "file", path=str(path))

    first = collect_file_source(store, source, source_id, UTC_ZONE, NOW)
    with path.open("a") as file:
        file.write("ten)\n- [more](https://more.example/1)\n")
    second = collect_file_source(store, source, source_id, UTC_ZONE, NOW)

    urls = {item.url for item in store.all_items()}
    store.close()
    assert "https://half.example/writ" not in urls
    assert {"https://half.example/written", "https://more.example/1"} <= urls
    assert second.done == 2 and first.done > 80
    assert "2 new" in second.info[0]


def test_a_big_list_source_that_grew_is_read_whole_since_a_comment_joins_the_entry_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bigfiles, "STREAM_BYTES", 1024)
    path = tmp_path / "list.txt"
    path.write_text(learning_list(100) + "- Last short note\n")
    source = SourceConfig(name="inbox", kind="file", path=path, format="list")
    store = open_store(tmp_path / "digest.db")
    source_id = store.ensure_source("inbox", "file", path=str(path))
    collect_file_source(store, source, source_id, UTC_ZONE, NOW)
    with path.open("a") as file:
        file.write("- A comment on the last short note, long enough and in enough words\n")
    second = collect_file_source(store, source, source_id, UTC_ZONE, NOW)

    store.close()
    assert ", 0 duplicates," not in second.info[0]  # every entry read again, the note's too
