"""The daemon's jobs on a real store, injected clock: catch-up, revisions, the draft file."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from aiosmtpd.smtp import Envelope, Session

from digest.config import (
    Config,
    DigestSection,
    EmailConfig,
    FetchConfig,
    ScheduleConfig,
    SourceConfig,
)
from digest.daemon import Jobs, missed_fire_time, run_daemon
from digest.jobs import daemon_jobs
from digest.periods import cron_trigger
from digest.store import open_store
from loopback import LoopbackServer
from mailrig import Sink, smtp_server

UTC_ZONE = ZoneInfo("UTC")
MONDAY_8 = "0 8 * * mon"
NEVER = "0 0 1 1 *"


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


def make_config(tmp_path: Path, **sections: Any) -> Config:
    return Config(
        digest=DigestSection(data_dir=tmp_path / "data"),
        sources=[SourceConfig(name="journal", kind="file", path=tmp_path / "journal.md")],
        fetch=FetchConfig(allow_private_addresses=["127.0.0.1/32"], per_host_delay_s=0),
        **sections,
    )


def save_links(tmp_path: Path, server: LoopbackServer, *days: str) -> None:
    """Append a dated heading with one link for each day to the journal."""
    with (tmp_path / "journal.md").open("a") as journal:
        for day in days:
            journal.write(f"\n## {day}\n- [Saved on {day}]({server.url(f'/{day}')})\n")


def log_markers(config: Config) -> list[str]:
    """'2026-W45 revision 1' for each revision appended to the log, in order."""
    if not config.log_path.exists():
        return []
    lines = config.log_path.read_text().splitlines()
    return [" ".join(line.split()[2:5]) for line in lines if line.startswith("<!-- digest ")]


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    guard = threading.Timer(60, event.set)  # never hang the suite if the job misbehaves
    guard.start()
    yield event
    guard.cancel()


def test_two_missed_weeks_are_delivered_once_at_start_and_not_again_on_restart(
    tmp_path: Path, server: LoopbackServer, stop: threading.Event
) -> None:
    config = make_config(tmp_path)
    clock = Clock(datetime(2026, 11, 4, 12, 0, tzinfo=UTC))  # W45: W44 is delivered
    save_links(tmp_path, server, "2026-10-27", "2026-11-03", "2026-11-10")
    daemon_jobs(config, stop, clock).digest()
    assert log_markers(config) == ["2026-W44 revision 1"]

    clock.now = datetime(2026, 11, 18, 12, 0, tzinfo=UTC)  # W47: W45 and W46 were missed
    state_path = tmp_path / "daemon-state.json"
    state_path.write_text(json.dumps({"last_digest_run": "2026-11-02T08:00:00+00:00"}))
    jobs = daemon_jobs(config, stop, clock)
    ran: list[str] = []

    def digest_then_stop() -> None:
        try:
            jobs.digest()
            ran.append("digest")
        finally:
            stop.set()

    code = run_daemon(
        ScheduleConfig(collect=NEVER, digest=MONDAY_8),
        Jobs(collect=jobs.collect, digest=digest_then_stop),
        zone=UTC_ZONE,
        lock_dir=config.data_dir,
        state_path=state_path,
        now=clock,
        stop=stop,
    )

    assert code == 0 and ran == ["digest"]
    # the link dated in the future was saved into W45, when it was collected: W46 is empty,
    # and an empty week is not logged (digest.publish_empty)
    expected = ["2026-W44 revision 1", "2026-W45 revision 1"]
    assert log_markers(config) == expected
    last_run = datetime.fromisoformat(json.loads(state_path.read_text())["last_digest_run"])
    assert missed_fire_time(cron_trigger(MONDAY_8, UTC_ZONE), last_run, clock.now) is None
    stop.clear()
    jobs.digest()  # what a restart would run, were the state lost
    assert log_markers(config) == expected


def test_an_item_saved_into_a_delivered_week_gives_it_one_new_revision(
    tmp_path: Path, server: LoopbackServer, stop: threading.Event
) -> None:
    config = make_config(tmp_path)
    clock = Clock(datetime(2026, 11, 16, 8, 0, tzinfo=UTC))  # Monday of W47
    save_links(tmp_path, server, "2026-11-10")
    jobs = daemon_jobs(config, stop, clock)
    jobs.digest()
    assert log_markers(config) == ["2026-W46 revision 1"]

    save_links(tmp_path, server, "2026-11-15")  # a Sunday entry, polled after the digest
    clock.now += timedelta(hours=1)
    jobs.collect()
    clock.now = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    jobs.digest()
    jobs.digest()

    assert log_markers(config) == [  # W47 has nothing: not logged
        "2026-W46 revision 1",
        "2026-W46 revision 2",
    ]
    assert "Saved on 2026-11-15" in (config.digests_dir / "2026-W46.md").read_text()


def test_the_collect_job_rewrites_this_weeks_file_without_delivering_it(
    tmp_path: Path, server: LoopbackServer, stop: threading.Event
) -> None:
    config = make_config(tmp_path)
    clock = Clock(datetime(2026, 11, 18, 12, 0, tzinfo=UTC))
    save_links(tmp_path, server, "2026-11-17")
    jobs = daemon_jobs(config, stop, clock)
    jobs.collect()
    draft = config.digests_dir / "2026-W47.md"
    assert "Saved on 2026-11-17" in draft.read_text()

    save_links(tmp_path, server, "2026-11-18")
    clock.now += timedelta(hours=1)
    jobs.collect()

    assert "Saved on 2026-11-18" in draft.read_text()
    assert not config.log_path.exists()
    store = open_store(config.db_path)
    try:
        assert store.digest_record("2026-W47") is None
    finally:
        store.close()


@dataclass
class RefusingWhileStopping(Sink):
    """Answers 451 to every MAIL and asks the daemon to stop, as a SIGTERM would."""

    stop: threading.Event = field(default_factory=threading.Event)
    events: list[str] = field(default_factory=list)

    async def handle_MAIL(
        self, server: Any, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        self.events.append("refused")
        self.stop.set()
        return "451 4.3.0 try later"


def test_stop_during_a_mail_retry_pause_ends_the_retries(
    tmp_path: Path, server: LoopbackServer, stop: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    handler = RefusingWhileStopping(stop=stop)
    with smtp_server(handler) as port:
        email = EmailConfig(
            enabled=True,
            host="127.0.0.1",
            port=port,
            security="none",
            sender="digest@example.org",
            to=["me@example.org"],
            retries=3,
            retry_backoff_s=1,
        )
        config = make_config(tmp_path, email=email)
        save_links(tmp_path, server, "2026-11-10")
        clock = Clock(datetime(2026, 11, 16, 8, 0, tzinfo=UTC))
        with caplog.at_level(logging.WARNING, logger="digest"):
            daemon_jobs(config, stop, clock).digest()
        handler.events.append("job returned")

    assert handler.events == ["refused", "job returned"]
    assert any("the run is stopping" in record.message for record in caplog.records)
    store = open_store(config.db_path)
    try:
        [record] = store.deliveries(["failed"])
    finally:
        store.close()
    assert record.channel == "email" and "the run is stopping" in (record.error or "")
