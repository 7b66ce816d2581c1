"""Set up once and leave running: where config and data live, status, doctor, exit codes, modes."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.commands.doctor import run_checks
from digest.config import NO_SOURCES_FIX, Config, parse_config
from digest.errors import ConfigError, FailureKind
from digest.lifecycle import FetchFailed, ItemState
from digest.models import SavedItem
from digest.store import open_store
from loopback import LoopbackServer, Response, free_port
from mailrig import Sink, smtp_server

REPO = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 1, 7, 12, tzinfo=UTC)


def digest(*args: str, **env: str) -> Result:
    return CliRunner(env=env or None).invoke(cli, list(args))


@pytest.fixture
def home(isolated: Path) -> Path:
    return isolated / "home"


@pytest.fixture
def elsewhere(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with no config/ in it."""
    folder = isolated / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


# -- where config and data live ---------------------------------------------------------------


def test_init_writes_the_user_config_once_and_config_path_shows_it(
    home: Path, elsewhere: Path
) -> None:
    user_config = home / ".config" / "digest" / "digest.toml"
    data = home / ".local" / "share" / "digest"

    first = digest("init")
    user_config.write_text(user_config.read_text() + "# mine\n")
    second = digest("init")
    shown = digest("config", "path")

    assert first.exit_code == 0 and str(user_config) in first.output
    assert second.exit_code == 0 and "left as it is" in second.output
    assert user_config.read_text().endswith("# mine\n")  # never overwritten
    assert shown.output.splitlines() == [
        f"config: {user_config} (the user config)",
        f"data: {data}",
    ]
    assert parse_config(user_config.read_text(), user_config).data_dir == data
    assert (data / "inbox").is_dir()  # the config's file source, ready for files
    healthy = digest("doctor", "--local")
    assert healthy.exit_code == 0, healthy.output


def test_init_in_a_folder_with_its_own_config_says_which_one_digest_reads_there(
    home: Path, elsewhere: Path
) -> None:
    (elsewhere / "config").mkdir()
    (elsewhere / "config" / "digest.toml").write_text('[digest]\ndata_dir = "data"\n')

    result = digest("init")

    assert result.exit_code == 0
    assert str(home / ".config" / "digest" / "digest.toml") in result.stdout
    assert f"here digest reads {elsewhere / 'config' / 'digest.toml'} instead" in result.stderr


def test_a_run_from_another_folder_uses_the_user_config_and_its_data(
    home: Path, elsewhere: Path
) -> None:
    assert digest("init").exit_code == 0
    inbox = home / ".local" / "share" / "digest" / "inbox"
    (inbox / "links.txt").write_text("https://example.org/a\n")

    result = digest("now", "--verbose")

    assert result.exit_code == 0, result.output
    user_config = home / ".config" / "digest" / "digest.toml"
    data = home / ".local" / "share" / "digest"
    assert result.stderr.splitlines()[0] == (
        f"digest: config: {user_config} (the user config); data: {data}"
    )
    written = Path(result.stdout.splitlines()[-1])
    assert written.parent == data / "digests"
    assert "example.org/a" in written.read_text()
    assert not (elsewhere / "data").exists()


def test_with_no_config_the_data_goes_to_xdg_data_home(elsewhere: Path, tmp_path: Path) -> None:
    result = digest("config", "path", XDG_DATA_HOME=str(tmp_path / "xdg-data"))

    assert result.output.splitlines() == [
        "config: - (no config file: built-in defaults)",
        f"data: {tmp_path / 'xdg-data' / 'digest'}",
    ]


def test_digest_config_wins_over_the_user_config(home: Path, elsewhere: Path) -> None:
    assert digest("init").exit_code == 0
    mine = elsewhere / "mine.toml"
    mine.write_text('[digest]\ndata_dir = "d"\n')

    result = digest("config", "path", DIGEST_CONFIG=str(mine))

    assert result.output.splitlines()[0] == f"config: {mine} ($DIGEST_CONFIG)"


def test_the_config_help_names_every_place_it_looks() -> None:
    text = " ".join(digest("now", "--help").output.split())

    for place in (
        "$DIGEST_CONFIG",
        "./config/digest.toml",
        "$XDG_CONFIG_HOME/digest/digest.toml",
        "~/.config/digest/digest.toml",
        "$XDG_DATA_HOME/digest",
    ):
        assert place in text


def test_the_sample_config_is_the_one_init_writes_and_polls_nothing_live() -> None:
    sample = REPO / "config" / "digest.toml"
    packaged = REPO / "src" / "digest" / "default.toml"

    config = parse_config(sample.read_text(), sample)

    assert sample.read_text() == packaged.read_text()
    assert [source.kind for source in config.sources] == ["file"]


DEPRECATED_KEYS = {("llm", "note_sentences")}  # read from old configs, never written


def test_the_sample_config_lists_every_key_with_its_default() -> None:
    sample = REPO / "config" / "digest.toml"
    text = sample.read_text()
    config, defaults = parse_config(text, sample), Config()

    assert re.search(r"(?m)^interests = \[\]", text) and "# [[rules]]" in text
    for section in Config.model_fields:
        if section in ("sources", "rules", "interests"):  # lists: an example each, above
            continue
        ours, default = getattr(config, section), getattr(defaults, section)
        for key, field in type(ours).model_fields.items():
            name = field.alias or key
            if (section, name) in DEPRECATED_KEYS:
                continue
            written = rf"(?m)^#? ?({name} *=|\[{section}\.{name}\])"  # a key, or a table
            assert re.search(written, text), f"[{section}] {name} is not in the sample"
            if (section, name) != ("digest", "data_dir"):
                assert getattr(ours, key) == getattr(default, key), f"[{section}] {name}"


# -- config errors in our words ----------------------------------------------------------------


def test_every_config_error_is_reported_at_once_in_our_words(tmp_path: Path) -> None:
    path = tmp_path / "digest.toml"
    text = (
        '[digest]\ntimezon = "UTC"\n\n[fetch]\nconcurrency = "many"\ntimeout_s = 0\n\n'
        '[[sources]]\nname = "a"\nkind = "blog"\n\n[emial]\nenabled = true\n'
    )
    with pytest.raises(ConfigError) as raised:
        parse_config(text, path)

    assert str(raised.value).splitlines() == [
        f"config error: {path}:2: digest.timezon: unknown key; did you mean 'timezone'?",
        f"config error: {path}:10: sources[1].kind: must be one of 'feed', 'file', 'imap', 'maildir' or 'mbox', not 'blog'",
        f"config error: {path}:5: fetch.concurrency: must be a whole number, not 'many'",
        f"config error: {path}:6: fetch.timeout_s: must be more than 0 and at most 600, not 0",
        f"config error: {path}:12: emial: unknown key; did you mean 'email'?",
    ]


def test_the_cli_prints_each_config_error_on_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "digest.toml"
    path.write_text("[fetch]\nconcurency = 4\n[llm]\nprovder = 'openai'\n")

    result = digest("status", "--config", str(path))

    assert result.exit_code == 1
    assert [line.split(": ")[-1] for line in result.stderr.splitlines()] == [
        "unknown key; did you mean 'concurrency'?",
        "unknown key; did you mean 'provider'?",
    ]


def test_note_sentences_is_read_from_offline_and_still_from_llm_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "digest.toml"

    current = parse_config("[offline]\nnote_sentences = 2\n", path)
    old = parse_config("[llm]\nnote_sentences = 5\n", path)

    assert (current.offline.note_sentences, current.llm.note_sentences) == (2, 2)
    assert (old.offline.note_sentences, old.llm.note_sentences) == (5, 5)
    [warning] = caplog.messages
    assert warning == f"config: {path}:2: [llm] note_sentences is deprecated; move it to [offline]"


# -- status ------------------------------------------------------------------------------------


def failed_items(config: Path, count: int) -> None:
    store = open_store(parse_config(config.read_text(), config).db_path)
    try:
        source = store.ensure_source("reading list", "file", path="/x/list.txt", now=NOW)
        store.save_items(
            source,
            [SavedItem(f"https://example.org/{i}/{'long-path-' * 12}") for i in range(count)],
            NOW,
        )
        for item in store.all_items():
            error = f"fetch failed: {item.url!r}: HTTP 503 {'Service Unavailable ' * 5}"
            store.apply_fetch(
                FetchFailed(item.id, error, ItemState.FAILED, NOW + timedelta(hours=1))
            )
    finally:
        store.close()


def item_rows(lines: list[str]) -> list[str]:
    return [line for line in lines if re.match(r"\d+ +failed +unread +2026-01-07 13:00 ", line)]


@pytest.fixture
def config_with_failures(tmp_path: Path) -> Path:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\n')
    failed_items(config, 120)
    return config


def test_status_at_80_columns_fits_and_totals_the_failed_items(config_with_failures: Path) -> None:
    result = digest("status", "--config", str(config_with_failures), COLUMNS="80")

    lines = result.output.splitlines()
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in lines) <= 80
    assert "Items: 120 (120 failed); 0 read, 120 unread" in lines
    assert "Items to look at: 120" in result.output
    assert len(item_rows(lines)) == 20  # one line per item, no wrapping
    assert "… and 100 more (--all lists them, --json for scripts)" in lines


ERRORS = {  # a recorded fetch error, and what the status table says first
    "ConnectError: [Errno -2] Name or service not known": "host unreachable",
    "timeout: took longer than 30s": "the site did not answer in time",
    "HTTP 404": "page not found",
    "HTTP 503": "the site had an error",
}
KINDS = [  # what the fetcher recorded with each: the table reads these, not the text
    (FailureKind.UNRESOLVED, None),
    (FailureKind.TIMEOUT, None),
    (FailureKind.HTTP, 404),
    (FailureKind.HTTP, 503),
]


def test_status_at_80_columns_says_why_before_the_error_and_json_keeps_it_whole(
    tmp_path: Path,
) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\n')
    with open_store(parse_config(config.read_text(), config).db_path) as store:
        source = store.ensure_source(
            "Simon Willison's Weblog",
            "feed",
            url=f"https://simonwillison.net/atom/{'entries/' * 6}",
            now=NOW,
        )
        store.save_items(
            source,
            [SavedItem(f"https://example.org/{i}/{'long-path-' * 12}") for i in range(4)],
            NOW,
        )
        for item, error, (kind, status) in zip(store.all_items(), ERRORS, KINDS, strict=True):
            recorded = f"fetch failed: {item.url!r}: {error}"
            later = NOW + timedelta(hours=1)
            store.apply_fetch(FetchFailed(item.id, recorded, ItemState.FAILED, later, kind, status))

    table = digest("status", "--config", str(config), COLUMNS="80").output.splitlines()
    data = json.loads(digest("status", "--json", "--config", str(config)).stdout)

    assert max(len(line) for line in table) <= 80
    rows = item_rows(table)
    for row, why in zip(rows, ERRORS.values(), strict=True):
        assert why in row, row
    headers = table[
        [line.strip() for line in table].index("Sources") + 1
    ].split()  # short columns keep their names whole
    assert headers == [
        "name",
        "kind",
        "status",
        "items",
        "last",
        "checked",
        "at",
        "last",
        "error",
        "location",
    ]
    errors = [item["error"] for item in data["items_to_look_at"]["items"]]
    assert [error.split("': ", 1)[1] for error in errors] == list(ERRORS)
    assert all(error.startswith("fetch failed: 'https://example.org/") for error in errors)
    kinds = [
        (item["error_kind"], item["error_status"]) for item in data["items_to_look_at"]["items"]
    ]
    assert kinds == [(kind.value, status) for kind, status in KINDS]


def test_status_all_lists_every_failed_item(config_with_failures: Path) -> None:
    result = digest(
        "status", "--all", "--failed", "--config", str(config_with_failures), COLUMNS="80"
    )

    assert len(item_rows(result.output.splitlines())) == 120
    assert "more" not in result.output


def test_status_json_is_versioned_with_totals(config_with_failures: Path) -> None:
    result = digest("status", "--json", "--config", str(config_with_failures))

    data = json.loads(result.stdout)
    assert (data["schema"], data["version"]) == ("digest-status", 1)
    assert data["items"] == {
        "total": 120,
        "by_state": {"failed": 120},
        "by_quality": {},
        "read": 0,
        "unread": 120,
    }
    block = data["items_to_look_at"]
    assert (block["total"], block["listed"], len(block["items"])) == (120, 20, 20)
    assert set(block["items"][0]) == {
        "error_kind",
        "error_status",
        "id",
        "url",
        "sources",
        "state",
        "quality",
        "read",
        "attempts",
        "next_attempt_at",
        "error",
        "note_attempts",
        "note_next_attempt_at",
        "note_error",
    }
    assert block["items"][0]["sources"] == ["reading list"]


def test_status_source_filters_and_an_unknown_source_is_a_usage_error(
    config_with_failures: Path,
) -> None:
    mine = digest(
        "status", "--json", "--source", "reading list", "--config", str(config_with_failures)
    )
    other = digest("status", "--source", "nope", "--config", str(config_with_failures))

    assert json.loads(mine.stdout)["items_to_look_at"]["total"] == 120
    assert other.exit_code == 2 and "no source named 'nope'" in other.output


# -- doctor ------------------------------------------------------------------------------------


def test_doctor_names_a_missing_file_source_in_one_line_and_writes_nothing(
    tmp_path: Path,
) -> None:
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n[[sources]]\nname = "inbox"\nkind = "file"\npath = "gone"\n'
    )

    result = digest("doctor", "--local", "--config", str(config))

    assert result.exit_code == 1
    [line] = [line for line in result.output.splitlines() if "problem" in line]
    assert line == (
        f"source 'inbox': problem: {tmp_path / 'gone'} does not exist;"
        " fix: create it, or correct its path"
    )
    assert "database: ok (" in result.output and "not created yet" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["digest.toml"]


def test_doctor_names_an_unresolvable_feed_host_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n'
        '[[sources]]\nname = "gone"\nkind = "feed"\nurl = "https://feeds.gone.example/rss"\n'
    )

    def resolve(host: str, port: int) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    checks = list(run_checks(config, resolve=resolve))

    problems = [check.line() for check in checks if not check.ok]
    assert problems == [
        "source 'gone': problem: host 'feeds.gone.example' does not resolve (Name or service not"
        " known); fix: check the url, and the machine's DNS and network",
    ]


def test_doctor_without_feeds_checks_dns_on_the_saved_pages_hosts(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\n[llm]\nprovider = "offline"\n')
    with open_store(tmp_path / "data" / "digest.db") as store:
        source = store.ensure_source("inbox", "file", path="/inbox")
        store.save_items(source, [SavedItem("https://pages.gone.example/a")], NOW)
    looked_up: list[str] = []

    def resolve(host: str, port: int) -> Any:
        looked_up.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    lines = [check.line() for check in run_checks(config, resolve=resolve)]

    assert looked_up == ["pages.gone.example"]
    assert (
        "network: problem: DNS resolves none of the 1 hosts of saved pages ('pages.gone.example':"
        " Name or service not known); fix: check the machine's DNS and network; the pages are"
        " fetched when it is back"
    ) in lines


def test_doctor_names_a_malformed_feed_url_by_its_key(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n'
        '[[sources]]\nname = "broken"\nkind = "feed"\nurl = "https://exa mple.org:x/"\n'
    )

    problems = [check.line() for check in run_checks(config) if not check.ok]

    assert len(problems) == 1
    assert "digest.toml:6: sources[1].url: URL contains a space" in problems[0]


def test_doctor_fetches_one_feed_when_dns_answers(tmp_path: Path, server: LoopbackServer) -> None:
    server.routes["/feed.xml"] = Response(body="<rss><channel><title>t</title></channel></rss>")
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n[fetch]\nallow_private_addresses = true\n'
        f'[[sources]]\nname = "local"\nkind = "feed"\nurl = "{server.url("/feed.xml")}"\n'
    )

    lines = [check.line() for check in run_checks(config)]

    assert "network: ok (DNS resolves every feed host; feed 'local' answered)" in lines


def test_doctor_reads_the_database_without_migrating_or_touching_it(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\n')
    open_store(tmp_path / "data" / "digest.db").close()
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "data").iterdir()}

    result = digest("doctor", "--local", "--config", str(config))

    assert "database: ok (" in result.output and "schema up to date, 0 items" in result.output
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "data").iterdir()} == before


# -- exit codes --------------------------------------------------------------------------------


class RefusingSink(Sink):
    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        return "554 5.7.1 Relay access denied"


@pytest.fixture
def refusing_port() -> Iterator[int]:
    with smtp_server(RefusingSink()) as port:
        yield port


def test_a_refused_mail_exits_3_with_the_digest_written(tmp_path: Path, refusing_port: int) -> None:
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\npublish_empty = true\n[email]\nenabled = true\n'
        f'host = "127.0.0.1"\nport = {refusing_port}\nsecurity = "none"\nretries = 0\n'
    )

    result = digest("now", "--week", "2026-W02", "--config", str(config))

    assert result.exit_code == 3, result.output
    assert "554 5.7.1 Relay access denied" in result.stderr
    assert Path(result.stdout.splitlines()[-1]).is_file()


def test_exit_codes_are_in_the_help() -> None:
    text = digest("--help").output

    assert "3  the digest was written, but a configured delivery" in text


# -- file modes --------------------------------------------------------------------------------


def test_digests_the_log_and_the_feed_follow_a_022_umask(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\npublish_empty = true\n')
    previous = os.umask(0o022)
    try:
        result = digest("now", "--week", "2026-w02", "--config", str(config))  # any case
    finally:
        os.umask(previous)

    assert result.exit_code == 0, result.output
    data = tmp_path / "data"
    for path in (
        data / "digests" / "2026-W02.md",
        data / "digest-log.md",
        data / "digests" / "feed.xml",
    ):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


def test_an_unreachable_model_exits_3_with_the_digest_written(tmp_path: Path) -> None:
    (tmp_path / "til.md").write_text("# 2026-01-07\n\n- Queues want backpressure, not retries\n")
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n'
        '[[sources]]\nname = "journal"\nkind = "file"\npath = "til.md"\n'
        f'[llm]\nprovider = "openai"\nbase_url = "http://127.0.0.1:{free_port()}/v1"\n'
        "max_retries = 0\ntimeout_s = 5\n"
    )

    result = digest("now", "--week", "2026-W02", "--config", str(config))

    assert result.exit_code == 3, result.output
    assert "LLM unavailable: cannot connect" in result.stderr
    assert "Queues want backpressure" in Path(result.stdout.splitlines()[-1]).read_text()


def test_doctor_with_no_config_says_where_init_would_write_one(home: Path, elsewhere: Path) -> None:
    result = digest("doctor", "--local")

    assert result.output.splitlines()[0] == (
        "config: ok (no config file, built-in defaults; `digest init` writes"
        f" {home / '.config' / 'digest' / 'digest.toml'})"
    )
    assert not (home / ".local").exists()  # doctor created no data folder


def test_a_fresh_machine_is_told_where_to_start_by_doctor_now_and_the_digest_alike(
    home: Path, elsewhere: Path
) -> None:
    fix = "run `digest init` (a config with an inbox folder for your saves"
    doctor = digest("doctor", "--local")
    assert doctor.exit_code == 0, doctor.output  # a warning: a run works, and finds nothing
    [line] = [line for line in doctor.output.splitlines() if line.startswith("sources:")]
    assert line.startswith(f"sources: warning: no sources yet, nothing to collect; fix: {fix}")
    assert line.endswith("or save a file with `digest import FILE` or a link with `digest add URL`")

    now = digest("now")

    assert now.exit_code == 0, now.output
    assert now.stderr.count("no sources yet") == 1
    assert f"  no sources yet: {fix}" in now.stderr
    written = Path(now.stdout.splitlines()[-1]).read_text(encoding="utf-8")
    assert "Nothing was saved this week." in written
    assert written.count("no sources yet") == 1
    assert "*No items: no sources yet; run digest init (a config with an inbox folder" in written
    status = json.loads(digest("status", "--json").output)
    assert status["next_step"] == f"no sources yet: {NO_SOURCES_FIX}"
    assert f"No sources yet: {NO_SOURCES_FIX}" in " ".join(digest("status").output.split())
    assert digest("add", "https://example.org/a-post").exit_code == 0
    assert "warning" not in digest("doctor", "--local").output  # something saved: no hint


def test_doctor_says_when_the_database_comes_from_a_newer_digest(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\n')
    open_store(tmp_path / "data" / "digest.db").close()
    with sqlite3.connect(tmp_path / "data" / "digest.db") as db:
        db.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at)"
            " VALUES ('digest', 'm999_from_the_future', '2027-01-01')"
        )
    db.close()

    result = digest("doctor", "--local", "--config", str(config))

    assert result.exit_code == 1
    assert (
        f"database: problem: {tmp_path / 'data' / 'digest.db'} was used by a newer digest"
        " (schema step m999_from_the_future); fix: upgrade digest" in result.output
    )
