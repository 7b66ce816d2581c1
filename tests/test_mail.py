"""The email as mail clients see it, and what happens when the server says no (aiosmtpd)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from aiosmtpd.smtp import Envelope, Session

from digest.config import OutputConfig
from digest.deliver.channel import content_hash
from digest.deliver.message import MAX_HTML_PART_BYTES, clean_header, render_email
from digest.deliver.outbox import deliver_digest, resend_email
from digest.deliver.plaintext import markdown_to_text
from digest.errors import DeliveryError
from digest.models import Period
from digest.periods import parse_week
from digest.store import Store
from mailrig import HangUpServer, Sink, elements, make_config, part, smtp_server

PERIOD: Period = parse_week("2026-W47", ZoneInfo("UTC"))
NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
DIGEST = (
    "# Digest for 2026-W47\n\n## Tools\n\n- [A tool](https://tool.example/)\n  Why it matters.\n"
)
INJECTION = "=?utf-8?q?x=0D=0ABcc:_evil@x?="


@dataclass
class RefusingSink(Sink):
    """Answers the scripted error replies first ((step, reply) with step MAIL or DATA)."""

    refusals: list[tuple[str, str]] = field(default_factory=list)
    attempts: int = 0

    def _refusal(self, step: str) -> str | None:
        if self.refusals and self.refusals[0][0] == step:
            return self.refusals.pop(0)[1]
        return None

    async def handle_MAIL(
        self, server: Any, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        self.attempts += 1
        if refusal := self._refusal("MAIL"):
            return refusal
        envelope.mail_from = address
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        return self._refusal("DATA") or await super().handle_DATA(server, session, envelope)


@pytest.fixture
def refusing() -> Iterator[tuple[RefusingSink, int]]:
    handler = RefusingSink()
    with smtp_server(handler) as port:
        yield handler, port


def email_record(store: Store, markdown: str = DIGEST) -> tuple[str, int]:
    record = store.delivery("2026-W47", "email", content_hash(markdown))
    assert record is not None
    return record.status, record.attempts


# -- what the message looks like ------------------------------------------------------------------


def test_an_encoded_word_in_the_subject_adds_no_header_and_no_recipient(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    config = make_config(tmp_path, port, subject=f"Digest {{period}} {INJECTION}")
    outcome = deliver_digest(store, config, PERIOD, DIGEST, NOW)
    assert outcome.failures == []
    [message] = handler.messages()
    assert message["Bcc"] is None
    assert "evil@x" not in str(message.keys())
    assert "Bcc:" not in message["Subject"].split("\n")[0][:5]
    assert handler.envelopes[0].rcpt_tos == ["me@example.org"]
    raw = handler.envelopes[0].original_content
    assert isinstance(raw, bytes) and b"\r\nBcc:" not in raw


def test_clean_header_leaves_one_line_and_no_encoded_word() -> None:
    cleaned = clean_header(f"Title {INJECTION}\r\nX-Evil: 1\x00")
    assert "\r" not in cleaned and "\n" not in cleaned and "\x00" not in cleaned
    assert "=?" not in cleaned
    assert cleaned.startswith("Title = ?utf-8?q?x=0D=0ABcc:_evil@x?=")


def test_every_element_of_the_html_part_has_an_inline_style() -> None:
    markdown = DIGEST + "\n## More\n\n1. *one* **two** `three`\n\n> quoted\n"
    message = render_email(
        markdown,
        config=make_config(Path("."), 25).email,
        period=PERIOD,
        message_id="<x@y>",
        allowed_urls=["https://tool.example/"],
        full_copy="/data/digests/2026-W47.md",
    )
    html = part(message, "text/html")
    styled = {"body", "h1", "h2", "p", "ul", "ol", "li", "a", "code", "blockquote"}
    found = [(tag, attrs) for tag, attrs in elements(html) if tag in styled]
    assert {tag for tag, _ in found} == styled
    assert all(attrs.get("style") for _, attrs in found)
    assert "<style" not in html


def test_a_long_week_is_cut_below_gmails_clipping_limit_with_a_link_to_the_whole(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    entries = [
        f"- [Item {n}](https://site.example/{n})\n  {'A long note. ' * 30}" for n in range(400)
    ]
    markdown = "# Digest for 2026-W47\n\n## Everything\n\n" + "\n\n".join(entries) + "\n"
    urls = {f"https://site.example/{n}" for n in range(400)}
    config = make_config(tmp_path, port).model_copy(
        update={"output": OutputConfig(public_url="https://me.example/digests/")}
    )
    deliver_digest(store, config, PERIOD, markdown, NOW, allowed_urls=urls)
    [message] = handler.messages()
    [html_part] = [p for p in message.walk() if p.get_content_type() == "text/html"]
    encoded = html_part.get_payload()
    assert isinstance(encoded, str) and len(encoded) <= MAX_HTML_PART_BYTES < 102_000
    html = part(message, "text/html")
    assert "Item 0<" in html and "Item 399<" not in html
    assert 'href="https://me.example/digests/2026-W47.md"' in html
    view_online = "View online <https://me.example/digests/2026-W47.md>\n\n"
    assert part(message, "text/plain") == view_online + markdown_to_text(markdown)  # whole


def test_without_a_public_url_a_cut_email_names_the_digest_file(tmp_path: Path) -> None:
    markdown = "# Digest\n\n" + "\n\n".join(f"Paragraph {n}. " * 40 for n in range(400))
    message = render_email(
        markdown,
        config=make_config(tmp_path, 25).email,
        period=PERIOD,
        message_id="<x@y>",
        allowed_urls=[],
        full_copy="/var/lib/digest/digests/2026-W47.md",
    )
    assert "the full digest is at <code" in part(message, "text/html")
    assert "/var/lib/digest/digests/2026-W47.md" in part(message, "text/html")


# -- what the server says ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "refusals",
    [
        [("MAIL", "421 4.3.2 Service not available, try later")] * 2,
        [("DATA", "451 4.3.0 Mail server temporarily rejected message")] * 2,
    ],
)
def test_a_4xx_reply_is_retried_and_the_mail_goes_out_once(
    tmp_path: Path,
    store: Store,
    refusing: tuple[RefusingSink, int],
    refusals: list[tuple[str, str]],
) -> None:
    handler, port = refusing
    handler.refusals = list(refusals)
    outcome = deliver_digest(store, make_config(tmp_path, port, retries=3), PERIOD, DIGEST, NOW)
    assert outcome.failures == []
    assert "email" in outcome.delivered
    assert len(handler.envelopes) == 1
    assert email_record(store) == ("sent", 3)


def test_4xx_replies_past_the_retries_fail_and_the_next_run_tries_again(
    tmp_path: Path, store: Store, refusing: tuple[RefusingSink, int]
) -> None:
    handler, port = refusing
    handler.refusals = [("DATA", "451 4.3.0 try later")] * 3
    config = make_config(tmp_path, port, retries=1)
    first = deliver_digest(store, config, PERIOD, DIGEST, NOW)
    [failure] = first.failures
    assert "451" in failure and "tried 2 times" in failure
    assert email_record(store)[0] == "failed"
    second = deliver_digest(store, config, PERIOD, DIGEST, NOW + timedelta(hours=1))
    assert second.delivered == ["email"]
    assert len(handler.envelopes) == 1


def test_a_5xx_reply_is_reported_not_retried_and_resend_sends_it(
    tmp_path: Path, store: Store, refusing: tuple[RefusingSink, int]
) -> None:
    handler, port = refusing
    handler.refusals = [("DATA", "550 5.7.1 Message rejected as spam")]
    config = make_config(tmp_path, port)
    outcome = deliver_digest(store, config, PERIOD, DIGEST, NOW)
    [failure] = outcome.failures
    assert "550 5.7.1 Message rejected as spam" in failure and "digest resend" in failure
    assert handler.attempts == 1
    assert email_record(store) == ("rejected", 1)
    rerun = deliver_digest(store, config, PERIOD, DIGEST, NOW + timedelta(hours=1))
    assert rerun.failures == [] and handler.attempts == 1

    resent = resend_email(store, config, PERIOD, NOW + timedelta(hours=2))
    assert resent.delivered == ["email"] and resent.revision == 1
    assert len(handler.envelopes) == 1
    assert email_record(store) == ("sent", 2)


def test_an_unknown_delivery_is_sent_again_only_by_resend(
    tmp_path: Path, store: Store, hangup: HangUpServer, sink: tuple[Sink, int]
) -> None:
    deliver_digest(store, make_config(tmp_path, hangup.port), PERIOD, DIGEST, NOW)
    assert email_record(store)[0] == "unknown"
    handler, port = sink
    working = make_config(tmp_path, port)
    assert deliver_digest(store, working, PERIOD, DIGEST, NOW).delivered == []
    assert handler.envelopes == []

    resend_email(store, working, PERIOD, NOW)
    [message] = handler.messages()
    assert message["Message-ID"] == f"<digest-2026-W47-{content_hash(DIGEST)[:16]}@digest.local>"
    assert email_record(store) == ("sent", 2)


def test_resend_of_a_week_without_a_digest_says_what_to_run(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    with pytest.raises(DeliveryError, match=re.escape("run `digest now --week 2026-W47`")):
        resend_email(store, make_config(tmp_path, sink[1]), PERIOD, NOW)
