"""Backfill (`now --since/--all`), `--retry`, and honest lines for pages a run could not read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.compose.digest import compose
from digest.compose.footer import Provenance
from digest.errors import FailureKind
from digest.models import (
    Item,
    ItemKind,
    ItemState,
    ModelUsage,
    Note,
    NoteBasis,
    Usage,
    WeekSummary,
)
from digest.periods import parse_week
from digest.store import open_store
from loopback import LoopbackServer, Response

ARTICLE = "<html><body><article>" + "<p>The harbour wall was rebuilt this spring.</p>" * 20


def write_config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "digest.toml"
    path.write_text(
        f'[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "journal"\nkind = "file"\n'
        f'path = "journal.md"\n\n[fetch]\nallow_private_addresses = ["127.0.0.0/8"]\n'
        f"per_host_delay_s = 0\nretry_base_s = 3600\n{extra}"
    )
    return path


def invoke(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config)])


def test_since_writes_every_week_with_items_one_line_each(tmp_path: Path) -> None:
    (tmp_path / "journal.md").write_text(
        "## 2026-09-29\n- A book about kilns\n\n## 2026-10-14\n- Call the harbour master\n"
        "- Draft the ferry letter\n\n## 2026-11-04\n- Kiln firing schedule\n"
    )
    config = write_config(tmp_path)
    result = invoke(config, "now", "--since", "2026-W42")
    assert result.exit_code == 0, result.output
    digests = tmp_path / "data" / "digests"
    assert result.stdout.splitlines() == [
        str(digests / "2026-W42.md"),
        str(digests / "2026-W45.md"),
    ]
    weeks = [line for line in result.stderr.splitlines() if line.startswith("2026-W")]
    assert weeks == ["2026-W42: 2 items", "2026-W45: 1 item"]
    assert "Draft the ferry letter" in (digests / "2026-W42.md").read_text()
    assert not (digests / "2026-W40.md").exists()
    everything = invoke(config, "now", "--all")
    assert everything.exit_code == 0, everything.output
    assert "2026-W40: 1 item" in everything.stderr
    assert everything.stdout.splitlines()[-1] == str(digests / "2026-W45.md")


def test_now_says_once_when_new_items_belong_to_earlier_weeks(tmp_path: Path) -> None:
    (tmp_path / "journal.md").write_text(
        "## 2026-09-29\n- A book about kilns\n\n## 2026-10-14\n- Call the harbour master\n"
    )
    config = write_config(tmp_path)

    first = invoke(config, "now")
    again = invoke(config, "now")

    assert first.exit_code == 0, first.output
    hint = "2 new items belong to earlier weeks (from 2026-W40): `digest now --since 2026-W40`"
    assert hint in first.stderr
    assert "earlier weeks" not in again.stderr  # nothing new: said once


def test_since_exits_3_when_a_weeks_digest_is_written_but_not_delivered(tmp_path: Path) -> None:
    (tmp_path / "journal.md").write_text("## 2026-10-14\n- Call the harbour master\n")
    config = write_config(tmp_path)
    (tmp_path / "data" / "digest-log.md").mkdir(parents=True)  # the log cannot be appended to

    result = invoke(config, "now", "--since", "2026-W42")

    assert result.exit_code == 3, result.output
    assert (tmp_path / "data" / "digests" / "2026-W42.md").exists()
    assert "digest-log.md" in result.stderr


def test_since_with_week_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "journal.md").write_text("")
    result = invoke(write_config(tmp_path), "now", "--since", "2026-W42", "--week", "2026-W43")
    assert result.exit_code == 2


def test_a_week_that_has_not_started_is_refused(tmp_path: Path) -> None:
    (tmp_path / "journal.md").write_text("")
    result = invoke(write_config(tmp_path), "now", "--week", "2030-W01")
    assert result.exit_code == 2 and "has not started yet" in result.output


@pytest.mark.parametrize("command", ["extract", "now"])
def test_retry_fetches_a_failed_page_now_instead_of_after_its_backoff(
    tmp_path: Path, server: LoopbackServer, command: str
) -> None:
    answers = iter([Response(503, "down"), Response(200, ARTICLE)])
    server.routes["/a"] = lambda request: next(answers)
    (tmp_path / "journal.md").write_text(f"## 2026-11-16\n- [Harbour]({server.url('/a')})\n")
    config = write_config(tmp_path)
    assert invoke(config, "collect").exit_code == 0
    invoke(config, "extract")
    invoke(config, "extract")  # not due yet: its backoff is an hour
    assert len(server.hits("/a")) == 1
    result = invoke(config, command, "--retry")
    assert result.exit_code == 0, result.output
    assert len(server.hits("/a")) == 2
    store = open_store(tmp_path / "data" / "digest.db")
    try:
        [item] = store.all_items()
    finally:
        store.close()
    assert item.state is ItemState.FETCHED


UNRESOLVED = "fetch failed: 'https://{0}.example/': ConnectError: cannot resolve '{0}.example'"


ZONE = ZoneInfo("UTC")
PERIOD = parse_week("2026-W47", ZONE)


def unread_item(note: Note | None) -> Item:
    return Item(
        id=1,
        key="https://arxiv.org/abs/1",
        url="https://arxiv.org/abs/1",
        title="Attention sinks",
        kind=ItemKind.LINK,
        saved_at=PERIOD.start + timedelta(hours=1),
        topic=None,
        context="read the appendix first",
        state=ItemState.FAILED,
        attempts=1,
        error=UNRESOLVED.format("arxiv"),
        error_kind=FailureKind.UNRESOLVED,
        next_attempt_at=datetime(2026, 11, 20, tzinfo=UTC),
        text=None,
        note=note,
    )


def test_a_page_not_read_says_why_and_when_instead_of_a_pretend_note() -> None:
    pretend = Note(
        "Read the appendix first.",
        basis=NoteBasis.SAVED_CONTEXT,
        model="offline",
        prompt_version="extractive-2-s3",
    )
    provenance = Provenance((ModelUsage("offline", "extractive-2-s3", 1, Usage()),))
    markdown = compose(
        PERIOD, [unread_item(pretend)], WeekSummary(()), zone=ZONE, provenance=provenance
    )
    assert (
        "  Read the appendix first. *(page not fetched: host unreachable;"
        " to be tried again later)*\n"
    ) in markdown
    assert "extractive summar" not in markdown
    assert "*1 item: 1 page not fetched (host unreachable).*" in markdown


def test_import_reports_the_dates_and_weeks_it_touched(tmp_path: Path) -> None:
    (tmp_path / "journal.md").write_text("")
    saved = tmp_path / "til.md"
    saved.write_text(
        "## 2025-09-30\n- [One](https://a.example/1)\n\n## 2025-11-7\n- [Two](https://a.example/2)\n"
    )
    result = invoke(write_config(tmp_path), "import", str(saved))
    assert result.exit_code == 0, result.output
    assert (
        "  saved 2025-09-30 to 2025-11-07: 2 weeks, 2025-W40 to 2025-W45;"
        " `digest now --since 2025-W40` writes them"
    ) in result.output.splitlines()
