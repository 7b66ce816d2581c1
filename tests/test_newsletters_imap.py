"""Newsletters from a real IMAP server (dovecot on loopback): each letter read once over two
collects, never marked or moved unless configured, a refused login one line naming the
source in `collect`, `status` and `doctor`."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from imaprig import PASSWORD, USER, Dovecot, dovecot
from letters import late_letter, mailbox_letters
from loopback import LOOPBACK_FETCH, LoopbackServer
from test_newsletters import serve


@pytest.fixture(scope="module")
def imap_server() -> Iterator[Dovecot]:
    with dovecot() as server:
        yield server


@pytest.fixture
def folder(imap_server: Dovecot) -> str:
    """A folder of its own for each test, on the module's one server."""
    name = f"News-{uuid.uuid4().hex[:8]}"
    with imap_server.mailbox() as box:
        box.folder.create(name)
    return name


def append(server: Dovecot, folder: str, *letters: bytes) -> None:
    with server.mailbox() as box:
        for raw in letters:
            box.append(raw, folder, flag_set=())


def flags(server: Dovecot, folder: str) -> list[tuple[str, ...]]:
    with server.mailbox() as box:
        box.folder.set(folder, readonly=True)
        return [message.flags for message in box.fetch("ALL", mark_seen=False, headers_only=True)]


def write_config(
    tmp_path: Path, server: LoopbackServer, imap: Dovecot, folder: str, extra: str = ""
) -> Path:
    config = tmp_path / "digest.toml"
    config.write_text(
        f"""
[digest]
data_dir = "data"
timezone = "UTC"

[[sources]]
name = "loop feed"
kind = "feed"
url = "{server.url("/rss.xml")}"

[[sources]]
name = "mailbox"
kind = "imap"
host = "127.0.0.1"
port = {imap.port}
security = "none"
user = "{USER}"
password_env = "DIGEST_TEST_IMAP_PASSWORD"
folder = "{folder}"
{extra}

{LOOPBACK_FETCH}"""
    )
    return config


def run(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config)], catch_exceptions=False)


def count(tmp_path: Path, sql: str) -> int:
    with sqlite3.connect(tmp_path / "data" / "digest.db") as db:
        return int(db.execute(sql).fetchone()[0])


@pytest.fixture
def password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIGEST_TEST_IMAP_PASSWORD", PASSWORD)


@pytest.mark.usefixtures("password")
def test_each_letter_is_read_once_over_two_collects_and_left_unread(
    tmp_path: Path, server: LoopbackServer, imap_server: Dovecot, folder: str
) -> None:
    urls = serve(server)
    append(imap_server, folder, *mailbox_letters(urls))
    config = write_config(tmp_path, server, imap_server, folder)

    first = run(config, "collect")

    assert first.exit_code == 0, first.output
    assert "mailbox: 4 new letters, 5 stories from 1 roundup(s)" in first.output
    assert count(tmp_path, "SELECT count(*) FROM items") == 7
    assert count(tmp_path, "SELECT count(*) FROM items WHERE kind = 'newsletter'") == 2
    assert all("\\Seen" not in found for found in flags(imap_server, folder))

    append(imap_server, folder, late_letter())
    second = run(config, "collect")

    assert "mailbox: 1 new letter" in second.output, second.output
    assert count(tmp_path, "SELECT count(*) FROM items") == 8
    assert count(tmp_path, "SELECT count(*) FROM mail_letters") == 5
    assert count(tmp_path, "SELECT last_uid FROM mail_folders") == 5
    assert len(flags(imap_server, folder)) == 5  # nothing moved either


@pytest.mark.usefixtures("password")
def test_a_folder_made_anew_is_read_again_by_message_id(
    tmp_path: Path, server: LoopbackServer, imap_server: Dovecot, folder: str
) -> None:
    urls = serve(server)
    append(imap_server, folder, *mailbox_letters(urls))
    config = write_config(tmp_path, server, imap_server, folder)
    run(config, "collect")
    with imap_server.mailbox() as box:  # a new UIDVALIDITY, the same letters
        box.folder.delete(folder)
        box.folder.create(folder)
    append(imap_server, folder, late_letter(), *mailbox_letters(urls))

    result = run(config, "collect")

    assert "mailbox: 1 new letter" in result.output, result.output
    assert count(tmp_path, "SELECT count(*) FROM items") == 8


@pytest.mark.usefixtures("password")
def test_letters_are_marked_and_moved_only_when_configured(
    tmp_path: Path, server: LoopbackServer, imap_server: Dovecot, folder: str
) -> None:
    serve(server)
    done = f"{folder}-read"
    with imap_server.mailbox() as box:
        box.folder.create(done)
    append(imap_server, folder, late_letter())
    extra = f'mark_seen = true\nmove_to = "{done}"\nsenders = ["systems.example"]'
    config = write_config(tmp_path, server, imap_server, folder, extra)

    assert run(config, "collect").exit_code == 0

    assert flags(imap_server, folder) == []
    assert ["\\Seen" in found for found in flags(imap_server, done)] == [True]


@pytest.mark.usefixtures("password")
def test_a_sender_filter_reads_only_its_letters(
    tmp_path: Path, server: LoopbackServer, imap_server: Dovecot, folder: str
) -> None:
    urls = serve(server)
    append(imap_server, folder, *mailbox_letters(urls))
    config = write_config(
        tmp_path, server, imap_server, folder, 'lists = ["weekly.changelog.example"]'
    )

    run(config, "collect")

    assert count(tmp_path, "SELECT count(*) FROM items WHERE kind = 'newsletter'") == 0
    assert count(tmp_path, "SELECT count(*) FROM item_newsletters") == 5


def test_a_refused_login_is_one_line_naming_the_source(
    tmp_path: Path,
    server: LoopbackServer,
    imap_server: Dovecot,
    folder: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    serve(server)
    monkeypatch.setenv("DIGEST_TEST_IMAP_PASSWORD", "not-the-password")
    config = write_config(tmp_path, server, imap_server, folder)

    collected = run(config, "collect")
    status = json.loads(run(config, "status", "--json").output)
    doctor = run(config, "doctor")

    assert collected.exit_code == 0
    failures = [line for line in collected.output.splitlines() if "login failed" in line]
    assert len(failures) == 1 and "mailbox: IMAP reader@127.0.0.1" in failures[0]
    assert PASSWORD not in collected.output and "not-the-password" not in collected.output
    (mailbox,) = [source for source in status["sources"] if source["name"] == "mailbox"]
    assert mailbox["status"] == "failing" and "login failed" in mailbox["last_error"]
    assert mailbox["location"] == f"imap://127.0.0.1:{imap_server.port}/{folder}"
    listed = run(config, "sources", "list").output
    assert "mailbox" in listed and "imap" in listed and "failing" in listed
    problems = [line for line in doctor.output.splitlines() if "login failed" in line]
    assert len(problems) == 1 and problems[0].startswith("source 'mailbox': problem:")
