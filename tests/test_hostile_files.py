"""A bad entry costs only that entry: file names that are not UTF-8 or hold terminal
escapes, a folder that cannot be read, control characters in titles, hostile OPML and a
full disk, through the real CLI on real files."""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from digest.cli import cli
from digest.text import for_terminal

LINKS = "- https://{host}/a first link\n- https://{host}/b second\n- https://{host}/c third\n"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")  # what must never reach a terminal as it is


def run(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(root / "digest.toml")])


def titles(root: Path) -> list[str]:
    with sqlite3.connect(root / "data" / "digest.db") as db:
        return sorted(row[0] or "" for row in db.execute("SELECT title FROM items"))


def urls(root: Path) -> set[str]:
    with sqlite3.connect(root / "data" / "digest.db") as db:
        return {row[0] for row in db.execute("SELECT url FROM items")}


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "good.md").write_text(LINKS.format(host="good.example"))
    (tmp_path / "digest.toml").write_text(
        '[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "inbox"\nkind = "file"\n'
        'path = "inbox"\n'
    )
    return tmp_path


def test_a_file_name_that_is_not_utf8_is_imported_and_shown_escaped(inbox: Path) -> None:
    with open(os.fsencode(inbox / "inbox") + b"/caf\xe9.md", "w") as saves:
        saves.write(LINKS.format(host="cafe.example"))

    result = run(inbox, "collect")

    assert result.exit_code == 0, result.output
    assert "inbox/caf\\xe9.md: format urls: 3 new" in result.stderr
    assert "https://cafe.example/a" in urls(inbox) and "Traceback" not in result.output


def test_terminal_escapes_in_a_file_name_are_shown_escaped(inbox: Path) -> None:
    (inbox / "inbox" / "\x1b]52;c;QUFBQQ==\x07clip\x9b1m.md").write_text(
        LINKS.format(host="clip.example")
    )

    result = run(inbox, "collect")

    assert "inbox/\\x1b]52;c;QUFBQQ==\\x07clip\\x9b1m.md: format urls: 3 new" in result.stderr
    assert not any(raw in result.output for raw in RAW)


def deep_folder(parent: Path) -> Path:
    """A folder whose path is longer than PATH_MAX: no one, root included, can list it."""
    top = parent / "deep"
    top.mkdir()
    here = os.open(top, os.O_RDONLY)
    for _ in range(18):
        os.mkdir("x" * 250, dir_fd=here)
        inner = os.open("x" * 250, os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = inner
    with open(os.open("saves.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=here), "w") as f:
        f.write(LINKS.format(host="lost.example"))
    os.close(here)
    return top


def test_a_folder_nobody_can_list_is_reported_and_the_good_files_are_read(inbox: Path) -> None:
    deep_folder(inbox / "inbox")

    result = run(inbox, "collect")

    assert result.exit_code == 3, result.output
    (line,) = [text for text in result.stderr.splitlines() if "cannot be read" in text]
    assert line.startswith(f"  ! {inbox / 'inbox' / 'deep'}/")
    assert line.endswith(
        "a folder that cannot be read (File name too long): its files are left behind"
    )
    assert "https://good.example/a" in urls(inbox) and "Traceback" not in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder whatever its mode")
def test_a_folder_without_permissions_is_reported_and_the_good_files_are_read(
    inbox: Path,
) -> None:
    locked = inbox / "inbox" / "lost+found"
    locked.mkdir()
    (locked / "saves.md").write_text(LINKS.format(host="lost.example"))
    locked.chmod(0)
    try:
        result = run(inbox, "collect")
    finally:
        locked.chmod(0o755)

    assert result.exit_code == 3, result.output
    assert f"  ! {locked}: skipped: a folder that cannot be read (Permission denied)" in (
        result.stderr
    )
    assert "https://good.example/a" in urls(inbox)


def test_a_control_character_in_a_title_is_removed_and_the_save_kept(tmp_path: Path) -> None:
    (tmp_path / "digest.toml").write_text('[digest]\ndata_dir = "data"\n')
    (tmp_path / "pocket.csv").write_text(
        "title,url,time_added,tags,status\n"
        '"Bell \x07 and back\x08space",https://pocket.example/a,1700000000,,unread\n'
        '"Fine",https://pocket.example/b,1700000000,,unread\n'
    )
    (tmp_path / "bookmarks.html").write_text(
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<TITLE>Bookmarks</TITLE>\n<DL><p>\n"
        '<DT><A HREF="https://bm.example/a" ADD_DATE="1700000000">Ring \x07 the bell</A>\n'
        '<DT><A HREF="https://bm.example/b" ADD_DATE="1700000000">Fine too</A>\n</DL><p>\n'
    )

    result = run(tmp_path, "import", str(tmp_path / "pocket.csv"), str(tmp_path / "bookmarks.html"))

    assert result.exit_code == 0, result.output
    assert "format pocket: 2 new" in result.output and "format bookmarks: 2 new" in result.output
    assert titles(tmp_path) == ["Bell  and backspace", "Fine", "Fine too", "Ring the bell"]


OPML = (
    '<?xml version="1.0"?>\n<opml version="2.0"><head><title>t</title></head><body>\n{}\n'
    "</body></opml>\n"
)


def test_an_opml_with_control_bidi_and_newline_names_imports_every_feed_listed_escaped(
    tmp_path: Path,
) -> None:
    (tmp_path / "digest.toml").write_text('[digest]\ndata_dir = "data"\n')
    outlines = (
        '<outline text="Bell \x07 feed" type="rss" xmlUrl="https://opml.example/a.xml"/>\n'
        '<outline text="Invoice \u202egpj.exe" type="rss" xmlUrl="https://opml.example/b.xml"/>\n'
        '<outline text="two&#10;lines" type="rss" xmlUrl="https://opml.example/c.xml"/>'
    )
    (tmp_path / "feeds.opml").write_text(OPML.format(outlines))

    imported = run(tmp_path, "import", str(tmp_path / "feeds.opml"))
    listed = run(tmp_path, "sources", "list")

    assert "format opml: 3 feeds added" in imported.output, imported.output
    rows = listed.stdout.splitlines()
    assert len(rows) == 1 + 3 + 1  # the header, three feeds, `import`: no forged row
    assert any(row.startswith("Invoice \\u202egpj.exe ") for row in rows)
    assert any(row.startswith("two\\x0alines ") for row in rows)
    assert not any(raw in listed.output for raw in RAW)


def test_an_opml_nested_a_thousand_deep_is_read_without_recursion_errors(tmp_path: Path) -> None:
    (tmp_path / "digest.toml").write_text('[digest]\ndata_dir = "data"\n')
    feed = '<outline text="x" type="rss" xmlUrl="https://deep.example/x.xml"/>'
    nested = '<outline text="f">' * 1000 + feed + "</outline>" * 1000
    (tmp_path / "deep.opml").write_text(OPML.format(nested))

    result = run(tmp_path, "import", str(tmp_path / "deep.opml"))

    assert result.exit_code == 0, result.output
    assert "format opml: 1 feed added" in result.output and "Recursion" not in result.output


@pytest.mark.slow
def test_a_full_disk_while_saving_is_one_line_and_a_failed_run(inbox: Path) -> None:
    digest = [sys.executable, "-m", "digest", "collect", "--config", str(inbox / "digest.toml")]
    subprocess.run(digest, check=True, capture_output=True)  # the store, made
    lines = (f"- https://big.example/{n} a saved link, number {n}\n" for n in range(20_000))
    (inbox / "inbox" / "big.md").write_text("".join(lines))
    room = (inbox / "data" / "digest.db").stat().st_size + 200_000

    def full_disk() -> None:  # the file size limit fails writes as a full disk does
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (room, room))

    ran = subprocess.run(digest, capture_output=True, text=True, preexec_fn=full_disk)

    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stderr.splitlines() == ["digest: database error: disk I/O error"]


@given(st.text())
def test_for_terminal_leaves_no_control_bidi_zero_width_or_undecodable_character(text: str) -> None:
    shown = for_terminal(text)

    assert not any(
        unicodedata.category(char) in ("Cc", "Cs")
        or char in "\u061c\u200b\u200e\u200f\u2028\u2029\ufeff"
        or "\u202a" <= char <= "\u202e"
        or "\u2060" <= char <= "\u2069"
        for char in shown
    )


def test_for_terminal_masks_secrets_and_escapes_what_a_terminal_obeys() -> None:
    shown = for_terminal(
        "caf\udce9 \x1b]52;c;QQ==\x07 \x9b https://u:pw@x.example/?token=abc \u202e\n"
    )

    assert (
        shown == "caf\\xe9 \\x1b]52;c;QQ==\\x07 \\x9b https://***@x.example/?token=*** \\u202e\\x0a"
    )
