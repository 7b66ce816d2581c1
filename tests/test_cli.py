"""The command line: config errors, defaults, the data commands."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from click.testing import CliRunner, Result

from digest.cli import cli
from digest.periods import week_label


def digest(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_an_unknown_key_exits_1_naming_the_key_the_file_and_the_line(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\n\n[fetch]\nconcurency = 4\n')

    result = digest("status", "--config", str(config))

    assert result.exit_code == 1
    assert (
        result.stderr.strip() == f"digest: config error: {config}:5: fetch.concurency: unknown key;"
        " did you mean 'concurrency'?"
    )


def test_a_wrong_type_names_the_key_of_the_nth_source(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text(
        '[[sources]]\nname = "a"\nkind = "feed"\nurl = "https://a.example/"\n\n'
        '[[sources]]\nname = "b"\nkind = "blog"\nurl = "https://b.example/"\n'
    )

    result = digest("--config", str(config), "collect")

    assert result.exit_code == 1
    assert f"{config}:8: sources[2].kind:" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_missing_config_file_exits_1_naming_it(tmp_path: Path) -> None:
    result = digest("now", "--config", str(tmp_path / "nope.toml"))

    assert result.exit_code == 1
    assert "nope.toml" in result.stderr and "cannot read" in result.stderr


def test_now_on_the_built_in_defaults_writes_this_weeks_digest(isolated: Path) -> None:
    result = digest("now")

    this_week = week_label(datetime.now(UTC), ZoneInfo("UTC"))
    expected = isolated / "home" / ".local" / "share" / "digest" / "digests" / f"{this_week}.md"
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == str(expected)
    assert expected.read_text().startswith(f"# Digest for {this_week}")


def test_a_bad_week_is_a_usage_error() -> None:
    result = digest("now", "--week", "2026-47")

    assert result.exit_code == 2
    assert "YYYY-Www" in result.stderr


def test_added_links_are_exported_with_every_field(tmp_path: Path) -> None:
    added = digest(
        "add",
        "https://example.org/post?utm_medium=x",
        "--title",
        "A post",
        "--note",
        "why I saved it",
        "--saved-at",
        "2026-11-17 10:00",
    )
    again = digest("add", "https://example.org/post")
    exported = digest("export", "--week", "2026-W47")

    assert added.exit_code == 0 and "saved" in added.stdout
    assert again.stdout.startswith("already saved")
    (row,) = [json.loads(line) for line in exported.stdout.splitlines()]
    assert {
        "url",
        "title",
        "saved_at",
        "source",
        "state",
        "error",
        "text",
        "note",
        "tags",
        "id",
        "context",
    } <= row.keys()
    assert row["context"] == "why I saved it"
    assert (row["title"], row["source"], row["state"]) == ("A post", "manual", "new")
    assert row["saved_at"].startswith("2026-11-17T10:00")


def test_status_json_reports_items_by_state_and_llm_usage() -> None:
    digest("add", "https://example.org/a")

    result = digest("status", "--json")

    data = json.loads(result.stdout)
    assert data["items"]["by_state"] == {"new": 1}
    assert data["llm"]["calls"] == 0


def test_python_dash_m_digest_runs_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "digest", "--help"], capture_output=True, text=True, check=False
    )

    assert result.returncode == 0
    assert "now" in result.stdout and "import" in result.stdout


def test_help_starts_without_importing_the_heavy_libraries() -> None:
    probe = "import sys; from digest.cli import main; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)

    loaded = {name.split(".")[0] for name in result.stdout.split()}
    assert "click" in loaded
    heavy = {"openai", "trafilatura", "lxml", "pydantic", "jinja2", "httpx", "importlib_metadata"}
    assert loaded & heavy == set()
    assert "importlib.metadata" not in result.stdout.split()


def test_version_is_printed_from_the_installed_package() -> None:
    result = CliRunner().invoke(cli, ["--version"])

    assert result.exit_code == 0
    assert result.output.startswith("digest, version ")


def test_a_source_named_like_a_built_in_one_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[[sources]]\nname = "manual"\nkind = "file"\npath = "saved.txt"\n')

    result = digest("status", "--config", str(config))

    assert result.exit_code == 1
    assert "'manual' is reserved" in result.stderr and str(config) in result.stderr


def test_a_data_dir_that_cannot_be_created_is_one_line_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "a-file/data"\n')
    for command in (["now"], ["status"], ["collect"]):
        result = digest("--config", str(config), *command)
        assert result.exit_code == 1, command
        assert result.stderr.splitlines() == [
            f"digest: cannot create the data folder {tmp_path / 'a-file' / 'data'}: Not a directory;"
            " set [digest] data_dir to a folder you can write"
        ]
    doctor = digest("--config", str(config), "doctor")
    assert doctor.exit_code == 1 and "Traceback" not in doctor.output
    assert "data dir: problem" in doctor.output


def test_a_bad_feed_url_in_the_config_is_refused_at_load_naming_key_and_line(
    tmp_path: Path,
) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[[sources]]\nname = "a"\nkind = "feed"\nurl = "http://[::1"\n')
    result = digest("--config", str(config), "status")
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"digest: config error: {config}:4: sources[1].url: unclosed [ in the host: 'http://[::1'"
    )


def test_a_week_that_is_not_one_says_which_words_are_weeks_too(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\n')

    result = digest("now", "--week", "lastweek", "--config", str(config))

    assert result.exit_code == 2
    assert "not an ISO week (YYYY-Www): 'lastweek'; or 'last' for last week" in result.stderr
