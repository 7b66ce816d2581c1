"""`digest import` and `digest add` through their functions, against a real SQLite store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from digest.collect.files import add_url, describe, import_files
from digest.collect.filesave import FileReport
from digest.collect.finding import Unimported
from digest.errors import ImportFormatError
from digest.models import Rejected
from digest.store import Store
from importing import import_file

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
ZONE = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 1, 12, 9, 0, tzinfo=UTC)


# -- digest import -----------------------------------------------------------------


def test_a_file_error_carries_the_file_as_data_and_names_it_once(
    store: Store, tmp_path: Path
) -> None:
    binary = tmp_path / "photo.md"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))

    with pytest.raises(ImportFormatError) as raised:
        import_file(store, binary, source_id=store.ensure_source("t", "import"), zone=ZONE, now=NOW)
    [report] = import_files(store, [binary], zone=ZONE, now=NOW)

    assert (raised.value.path, raised.value.reason) == (binary, "a binary file, not text")
    assert str(raised.value) == f"{binary}: a binary file, not text"
    assert describe(report) == [f"{binary}: a binary file, not text"]


def test_import_files_reports_each_file(store: Store) -> None:
    reports = import_files(
        store, [FIXTURES / "til.md", FIXTURES / "til_older.md"], zone=ZONE, now=NOW
    )
    assert [(r.format, r.new, r.duplicates) for r in reports if isinstance(r, FileReport)] == [
        ("journal", 11, 3),
        ("journal", 2, 2),
    ]
    assert {item.sources for item in store.all_items()} == {("import",)}


def test_an_unreadable_file_is_named_and_the_others_are_imported(
    store: Store, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.md"
    reports = import_files(store, [FIXTURES / "til.md", missing], zone=ZONE, now=NOW)
    assert isinstance(reports[0], FileReport) and reports[0].new == 11
    assert reports[1] == Unimported(missing, "no such file or folder")
    assert describe(reports[1]) == [f"{missing}: no such file or folder"]


def test_an_empty_file_says_it_is_empty_and_is_not_a_failure(store: Store, tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    assert import_files(store, [empty], zone=ZONE, now=NOW) == [
        Unimported(empty, "an empty file, nothing to import", failed=False)
    ]


def test_a_folder_imports_every_file_below_it(store: Store, tmp_path: Path) -> None:
    (tmp_path / "saved" / "old").mkdir(parents=True)
    (tmp_path / "saved" / "a.urls").write_text("https://example.org/a\n")
    (tmp_path / "saved" / "old" / "b.urls").write_text("https://example.org/b\n")
    (tmp_path / "saved" / ".hidden.urls").write_text("https://example.org/hidden\n")
    reports = import_files(store, [tmp_path / "saved"], zone=ZONE, now=NOW)
    assert [(r.path.name, r.new) for r in reports if isinstance(r, FileReport)] == [
        ("a.urls", 1),
        ("b.urls", 1),
    ]


def test_a_one_line_file_with_one_url_imports(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "one.txt"
    path.write_text("https://example.org/only")  # no final newline
    (report,) = import_files(store, [path], zone=ZONE, now=NOW)
    assert isinstance(report, FileReport) and report.new == 1


@pytest.mark.parametrize(
    ("encoding", "newline"),
    [("cp1252", "\n"), ("latin-1", "\r\n"), ("utf-16", "\r\n"), ("utf-8-sig", "\r\n")],
)
def test_legacy_encodings_boms_and_crlf_are_read_right(
    store: Store, tmp_path: Path, encoding: str, newline: str
) -> None:
    title = (
        "Caf\u00e9 \u201cnotes\u201d \u20ac5" if encoding == "cp1252" else "Caf\u00e9 na\u00efve"
    )
    text = newline.join(["## 2026-01-05", f"- [{title}](https://example.org/a)", ""])
    path = tmp_path / "journal.md"
    path.write_bytes(text.encode(encoding))
    (report,) = import_files(store, [path], zone=ZONE, now=NOW)
    assert isinstance(report, FileReport) and (report.format, report.new) == ("journal", 1)
    (item,) = store.all_items()
    assert (item.title, item.url) == (title, "https://example.org/a")
    assert item.saved_at.astimezone(ZONE).date().isoformat() == "2026-01-05"


def test_forced_format_overrides_sniffing(store: Store) -> None:
    reports = import_files(
        store, [FIXTURES / "reading.urls"], zone=ZONE, now=NOW, forced_format="list"
    )
    assert isinstance(reports[0], FileReport) and reports[0].format == "list"


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
    assert lines[12] == "  skipped 1 (line 20): not a web link (javascript:)"


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


def test_the_url_as_saved_is_kept_for_display_and_its_canonical_form_is_the_key(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "links.urls"
    path.write_text("HTTPS://Example.org:443/Post?utm_source=rss&id=7#comments\n")
    import_files(store, [path], zone=ZONE, now=NOW)
    (item,) = store.all_items()
    assert item.url == "HTTPS://Example.org:443/Post?utm_source=rss&id=7#comments"
    assert item.key == "https://example.org/Post?id=7"
