"""Mail to each recipient: a refused one does not stop the others, and a message the
server finds too large (552) goes once more as its text part alone."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from aiosmtpd.smtp import Envelope, Session
from click.testing import CliRunner

from digest.cli import cli
from digest.deliver.channel import content_hash
from digest.deliver.outbox import deliver_digest, resend_email
from digest.periods import parse_week
from digest.store import Store
from mailrig import Sink, make_config, part, smtp_server

PERIOD = parse_week("2026-W47", ZoneInfo("UTC"))
NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
DIGEST = (
    "# Digest for 2026-W47\n\n## Tools\n\n- [A tool](https://tool.example/)\n  Why it matters.\n"
)
GOOD, BAD = "good@example.org", "bad@example.org"


@dataclass
class PickySink(Sink):
    """Refuses the recipients in `refused` (550); answers 552 to a message with an HTML
    part while `html_too_large`, or to every message while `all_too_large`."""

    refused: set[str] = field(default_factory=set)
    html_too_large: bool = False
    all_too_large: bool = False
    data_replies: list[str] = field(default_factory=list)

    async def handle_RCPT(
        self, server: Any, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        if address in self.refused:
            return "550 5.1.1 no such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        content = envelope.original_content or b""
        too_large = self.all_too_large or (self.html_too_large and b"text/html" in content)
        reply = "552 5.3.4 message too big" if too_large else "250 Message accepted"
        self.data_replies.append(reply)
        return reply if too_large else await super().handle_DATA(server, session, envelope)


@pytest.fixture
def picky() -> Iterator[tuple[PickySink, int]]:
    handler = PickySink()
    with smtp_server(handler) as port:
        yield handler, port


def record(store: Store) -> tuple[str, str | None]:
    found = store.delivery("2026-W47", "email", content_hash(DIGEST))
    assert found is not None
    return found.status, found.error


def test_a_refused_recipient_does_not_stop_the_others_and_resend_can_reach_it(
    tmp_path: Path, store: Store, picky: tuple[PickySink, int]
) -> None:
    handler, port = picky
    handler.refused = {BAD}
    config = make_config(tmp_path, port, to=[BAD, GOOD])
    outcome = deliver_digest(store, config, PERIOD, DIGEST, NOW)
    assert outcome.delivered[-1] == "email"
    [failure] = outcome.failures
    assert f"refused for {BAD} (550 5.1.1 no such user here); the others got it" in failure
    assert f"digest resend --week 2026-W47 --to {BAD}" in failure
    assert [envelope.rcpt_tos for envelope in handler.envelopes] == [[GOOD]]
    assert record(store)[0] == "sent" and BAD in (record(store)[1] or "")

    handler.refused = set()
    resent = resend_email(store, config, PERIOD, NOW + timedelta(hours=1), to=[BAD])
    assert resent.delivered == ["email"] and resent.failures == []
    assert [envelope.rcpt_tos for envelope in handler.envelopes] == [[GOOD], [BAD]]


def test_when_every_recipient_is_refused_nobody_gets_it_and_it_is_rejected(
    tmp_path: Path, store: Store, picky: tuple[PickySink, int]
) -> None:
    handler, port = picky
    handler.refused = {BAD, GOOD}
    outcome = deliver_digest(
        store, make_config(tmp_path, port, to=[BAD, GOOD]), PERIOD, DIGEST, NOW
    )
    assert "email" not in outcome.delivered and handler.envelopes == []
    assert f"RCPT TO {BAD} answered 550" in outcome.failures[0]
    assert record(store)[0] == "rejected"


def test_a_message_too_large_goes_once_more_as_its_text_part(
    tmp_path: Path, store: Store, picky: tuple[PickySink, int]
) -> None:
    handler, port = picky
    handler.html_too_large = True
    outcome = deliver_digest(store, make_config(tmp_path, port), PERIOD, DIGEST, NOW)
    assert outcome.failures == [] and outcome.delivered[-1] == "email"
    assert handler.data_replies == ["552 5.3.4 message too big", "250 Message accepted"]
    sent = store.delivery("2026-W47", "email", content_hash(DIGEST))
    assert sent is not None and (sent.status, sent.attempts) == ("sent", 2)
    [message] = handler.messages()
    assert not message.is_multipart()
    text = part(message, "text/plain")
    assert "too large for the mail server; the full digest:" in text and "A tool" in text


def test_a_message_too_large_even_as_text_is_reported_after_one_retry(
    tmp_path: Path, store: Store, picky: tuple[PickySink, int]
) -> None:
    handler, port = picky
    handler.all_too_large = True
    outcome = deliver_digest(store, make_config(tmp_path, port), PERIOD, DIGEST, NOW)
    [failure] = outcome.failures
    assert "552 5.3.4 message too big (also as the text part alone)" in failure
    assert len(handler.data_replies) == 2 and record(store)[0] == "rejected"


def test_resend_with_a_refused_recipient_exits_3(
    tmp_path: Path, store: Store, picky: tuple[PickySink, int]
) -> None:
    handler, port = picky
    config = make_config(tmp_path, port, to=[GOOD])
    deliver_digest(store, config, PERIOD, DIGEST, NOW)
    handler.refused = {BAD}
    toml = tmp_path / "digest.toml"
    toml.write_text(
        f'[digest]\ndata_dir = "data"\n\n[email]\nenabled = true\nhost = "127.0.0.1"\n'
        f'port = {port}\nsecurity = "none"\nto = ["{GOOD}"]\n'
    )
    args = ["resend", "--week", "2026-W47", "--to", BAD, "--to", GOOD, "--config", str(toml)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 3, result.output
    assert f"mailed 2026-W47 revision 1 to {BAD}, {GOOD}" in result.output
    assert f"refused for {BAD}" in result.output


def test_two_addresses_in_one_string_are_both_mailed(
    tmp_path: Path, store: Store, picky: tuple[PickySink, int]
) -> None:
    handler, port = picky
    config = make_config(tmp_path, port, to=[f"{GOOD}, Other One <other@example.org>"])

    outcome = deliver_digest(store, config, PERIOD, DIGEST, NOW)

    assert outcome.failures == [] and "email" in outcome.delivered
    assert [envelope.rcpt_tos for envelope in handler.envelopes] == [[GOOD, "other@example.org"]]


@pytest.mark.parametrize(
    ("to", "why"),
    [
        ('["a@example.org b@example.org"]', "is not an email address"),
        ('["me@example.org, garbage"]', "'garbage' is not an email address"),
        ('["me@example.org\\nBcc: evil@example.org"]', "is not an email address"),
    ],
)
def test_a_recipient_that_is_not_an_address_is_a_config_error_with_key_and_line(
    tmp_path: Path, to: str, why: str
) -> None:
    (tmp_path / "digest.toml").write_text(f"[email]\nenabled = true\nto = {to}\n")

    result = CliRunner().invoke(cli, ["config", "path", "--config", str(tmp_path / "digest.toml")])

    assert result.exit_code == 1
    assert f"config error: {tmp_path / 'digest.toml'}:3: email.to: " in result.stderr
    assert why in result.stderr
