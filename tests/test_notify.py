"""Push through Apprise ([notify] urls) to JSON endpoints on a loopback HTTP server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from digest.compose.entries import Entry, Topic
from digest.config import (
    Config,
    DigestSection,
    EmailConfig,
    FetchConfig,
    NotifyConfig,
    OutputConfig,
)
from digest.deliver.channel import DeliveryOutcome, Edition, content_hash
from digest.deliver.channels.notify import targets
from digest.deliver.outbox import deliver_digest
from digest.lifecycle import DeliveryBegun
from digest.models import DeliveryStatus, Item
from digest.periods import parse_week
from digest.store import Store
from loopback import LoopbackServer, Request, Response, serving
from stores import store_at
from weekitems import week_item

W47 = parse_week("2026-W47", ZoneInfo("UTC"))
AFTER = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)  # the week is over
DURING = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
FIRST = "# Digest for 2026-W47\n\n## The week\n\nOne link.\n"
SECOND = "# Digest for 2026-W47\n\n## The week\n\nTwo links.\n"
BRIEF = "**Rust** — fearless refactoring ([A post](https://a.example/1)).\n\nSecond line."
EDITION = Edition(
    "16–22 November 2026",
    BRIEF,
    [Topic("Rust", [Entry("A post", "https://site.example/1", "Note.", None, (), minutes=2)])],
)
PASSWORD = "hunter2-never-shown"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = store_at(tmp_path / "data" / "digest.db")
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def endpoints() -> Iterator[LoopbackServer]:
    with serving() as server:
        server.routes["/ok"] = Response(200, "{}", content_type="application/json")
        server.routes["/down"] = Response(500, "down", content_type="text/plain")
        yield server


def config(tmp_path: Path, urls: list[str], *, allow: bool = True, **notify: Any) -> Config:
    return Config(
        digest=DigestSection(data_dir=tmp_path / "data"),
        email=EmailConfig(send="every_revision"),
        fetch=FetchConfig(allow_private_addresses=allow),
        output=OutputConfig(public_url="https://me.example/digests"),
        notify=NotifyConfig(urls=urls, retry_backoff_s=0, timeout_s=5, **notify),
    )


def items() -> list[Item]:
    words = " ".join(["word"] * 460)  # two minutes at 230 words a minute
    return [week_item(1, W47.start, text=words), week_item(2, W47.start)]


def deliver(store: Store, cfg: Config, markdown: str, now: datetime = AFTER) -> DeliveryOutcome:
    return deliver_digest(store, cfg, W47, markdown, now, items=items(), edition=EDITION)


def messages(server: LoopbackServer, path: str) -> list[dict[str, Any]]:
    return [json.loads(request.body) for request in server.hits(path)]


def url(server: LoopbackServer, path: str, password: str = "") -> str:
    login = f"me:{password}@" if password else ""
    return f"json://{login}127.0.0.1:{server.port}{path}"


def test_one_message_per_revision_with_the_week_in_brief(
    tmp_path: Path, store: Store, endpoints: LoopbackServer
) -> None:
    cfg = config(tmp_path, [url(endpoints, "/ok")])

    first = deliver(store, cfg, FIRST)
    deliver(store, cfg, FIRST)  # a rerun: nothing new

    [sent] = messages(endpoints, "/ok")
    assert sent["title"] == "Digest for 2026-W47"
    assert sent["message"].splitlines() == [
        "16–22 November 2026",
        "Rust — fearless refactoring (A post).",
        "Second line.",
        "2 items · 2 min read",
        "https://me.example/digests/2026-W47.md",
    ]
    assert [line for line in first.delivered if line.startswith("notify")] == [
        f"notify json://127.0.0.1:{endpoints.port}/ok"
    ]
    deliver(store, cfg, SECOND)
    assert len(messages(endpoints, "/ok")) == 2


def test_a_failed_endpoint_is_retried_and_blocks_no_other(
    tmp_path: Path, store: Store, endpoints: LoopbackServer
) -> None:
    answers = iter([500, 503])

    def flaky(request: Request) -> Response:
        return Response(next(answers, 200), "{}", content_type="application/json")

    endpoints.routes["/flaky"] = flaky
    down, ok, again = (
        url(endpoints, "/down", PASSWORD),
        url(endpoints, "/ok"),
        url(endpoints, "/flaky"),
    )
    cfg = config(tmp_path, [down, ok, again], retries=2)

    outcome = deliver(store, cfg, FIRST)

    assert len(endpoints.hits("/down")) == 3  # tried, then twice more
    assert len(messages(endpoints, "/ok")) == 1
    assert len(endpoints.hits("/flaky")) == 3  # 500, 503, then sent
    [failure] = outcome.failures
    assert (
        f"notify json://***@127.0.0.1:{endpoints.port}/down for 2026-W47: Failed to send JSON POST notification: Internal server error., error=500."
        in failure
    )
    assert "tried 3 times, retried on the next run" in failure
    assert PASSWORD not in repr(outcome) + repr(store.deliveries())

    deliver(store, cfg, FIRST)  # the next run: only the failed one again
    assert len(endpoints.hits("/down")) == 6
    assert len(messages(endpoints, "/ok")) == 1
    assert len(endpoints.hits("/flaky")) == 3


def test_a_private_address_is_refused_unless_allowed(
    tmp_path: Path, store: Store, endpoints: LoopbackServer
) -> None:
    outcome = deliver(store, config(tmp_path, [url(endpoints, "/ok")], allow=False), FIRST)

    assert endpoints.hits("/ok") == []
    [failure] = outcome.failures
    assert "127.0.0.1 is at the private address 127.0.0.1" in failure
    assert "fetch.allow_private_addresses" in failure


def test_a_url_from_the_environment_is_never_shown(
    tmp_path: Path, store: Store, endpoints: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIGEST_TEST_NOTIFY", url(endpoints, "/down", PASSWORD))
    cfg = config(tmp_path, ["env:DIGEST_TEST_NOTIFY", "env:DIGEST_TEST_UNSET"], retries=0)

    outcome = deliver(store, cfg, FIRST)

    assert len(endpoints.hits("/down")) == 1
    assert len(outcome.failures) == 2
    assert "$DIGEST_TEST_UNSET is not set (notify URL 2)" in outcome.failures[1]
    assert PASSWORD not in repr(outcome) + repr(store.deliveries())


def test_once_a_week_the_message_waits_for_the_week_to_end(
    tmp_path: Path, store: Store, endpoints: LoopbackServer
) -> None:
    cfg = config(tmp_path, [url(endpoints, "/ok")])
    cfg = cfg.model_copy(update={"email": EmailConfig(send="once")})

    during = deliver(store, cfg, FIRST, DURING)
    deliver(store, cfg, FIRST, AFTER)
    later = deliver(store, cfg, SECOND, AFTER + timedelta(hours=1))

    assert len(messages(endpoints, "/ok")) == 1
    assert any("is pushed once, when the week is over" in line for line in during.held)
    assert any("was pushed before" in line for line in later.held)


def test_a_send_a_stopped_run_left_pending_is_not_resent(
    tmp_path: Path, store: Store, endpoints: LoopbackServer
) -> None:
    cfg = config(tmp_path, [url(endpoints, "/ok")])
    [target] = targets(cfg.notify)
    deliver_digest(store, cfg.model_copy(update={"notify": NotifyConfig()}), W47, FIRST, AFTER)
    store.apply_delivery(DeliveryBegun("2026-W47", target.channel, content_hash(FIRST), AFTER))

    outcome = deliver(store, cfg, FIRST)
    deliver(store, cfg, FIRST)

    assert endpoints.hits("/ok") == []
    [failure] = outcome.failures
    assert "outcome unknown, not resent" in failure
    record = store.delivery("2026-W47", target.channel, content_hash(FIRST))
    assert record is not None and record.status is DeliveryStatus.UNKNOWN
