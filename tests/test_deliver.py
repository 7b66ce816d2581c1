"""Delivery against real SMTP servers on 127.0.0.1: aiosmtpd, and a raw one that hangs up."""

from __future__ import annotations

import re
import ssl
from datetime import UTC, datetime, timedelta
from email.header import decode_header, make_header
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from digest.atomic import write_atomic
from digest.deliver.channel import content_hash
from digest.deliver.channels.email import message_id_for
from digest.deliver.channels.log import append_log, log_entry
from digest.deliver.outbox import deliver_digest
from digest.deliver.plaintext import markdown_to_text
from digest.lifecycle import DeliveryBegun
from digest.models import Period
from digest.periods import parse_week
from digest.store import Store
from loopback import free_port
from mailrig import HangUpServer, Sink, elements, make_config, part

PERIOD: Period = parse_week("2026-W47", ZoneInfo("UTC"))
NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
FIRST = "# Digest for 2026-W47\n\n## The week\n\nOne link.\n"
SECOND = "# Digest for 2026-W47\n\n## The week\n\nTwo links.\n"
PASSWORD = "s3cret-never-shown"


def markers(log: Path) -> list[str]:
    return re.findall(r"^<!-- digest .* -->$", log.read_text(encoding="utf-8"), flags=re.M)


# -- files and log -------------------------------------------------------------


def test_write_atomic_replaces_the_file_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "digests" / "2026-W47.md"
    write_atomic(target, "first\n")
    write_atomic(target, "second ✓\n")
    assert target.read_text(encoding="utf-8") == "second ✓\n"
    assert [p.name for p in target.parent.iterdir()] == ["2026-W47.md"]


def test_append_log_does_not_double_an_entry(tmp_path: Path) -> None:
    log = tmp_path / "digest-log.md"
    entry = log_entry("2026-W47", 1, content_hash(FIRST), FIRST)
    append_log(log, entry)
    append_log(log, entry)
    assert log.read_text(encoding="utf-8") == entry
    assert entry.startswith("\n---\n\n<!-- digest 2026-W47 revision 1 sha256:")


def test_digest_quoting_a_marker_does_not_stop_its_own_log_entry(tmp_path: Path) -> None:
    log = tmp_path / "digest-log.md"
    first = log_entry("2026-W47", 1, "a" * 64, FIRST)
    quoting = log_entry("2026-W47", 2, "b" * 64, "See `<!-- digest 2026-W47 revision 2 sha256:`\n")
    append_log(log, first)
    append_log(log, quoting)
    assert log.read_text(encoding="utf-8") == first + quoting


# -- deliver_digest ------------------------------------------------------------


def test_digest_is_written_and_logged_without_email(tmp_path: Path, store: Store) -> None:
    config = make_config(tmp_path, None)
    outcome = deliver_digest(store, config, PERIOD, FIRST, NOW)
    assert outcome.revision == 1
    assert outcome.delivered == ["file", "log", "feed"]
    assert outcome.failures == []
    assert (config.digests_dir / "2026-W47.md").read_text(encoding="utf-8") == FIRST
    assert outcome.path == config.digests_dir / "2026-W47.md"
    assert markers(config.log_path) == [
        f"<!-- digest 2026-W47 revision 1 sha256:{content_hash(FIRST)} -->"
    ]


def test_email_has_plain_and_html_parts(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    outcome = deliver_digest(store, make_config(tmp_path, port), PERIOD, FIRST, NOW)
    assert outcome.delivered == ["file", "log", "feed", "email"]
    [message] = handler.messages()
    assert message.get_content_type() == "multipart/alternative"
    assert part(message, "text/plain") == markdown_to_text(FIRST)
    assert ">Digest for 2026-W47</h1>" in part(message, "text/html")
    assert message["Message-ID"] == message_id_for("2026-W47", content_hash(FIRST))
    subject = make_header(decode_header(message["Subject"]))
    assert str(subject) == "Your digest, 16–22 Nov 2026"
    assert (message["From"], message["To"]) == ("digest@example.org", "me@example.org")
    assert message["Date"]
    assert handler.envelopes[0].rcpt_tos == ["me@example.org"]


def test_a_log_edited_in_another_encoding_is_appended_to_and_the_mail_still_goes(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    config = make_config(tmp_path, port)
    earlier = "# My reading log\n\nCaf\xe9 notes, saved by an editor in latin-1.\n".encode(
        "latin-1"
    )
    config.log_path.parent.mkdir(parents=True, exist_ok=True)
    config.log_path.write_bytes(earlier)

    outcome = deliver_digest(store, config, PERIOD, FIRST, NOW)

    assert outcome.delivered == ["file", "log", "feed", "email"] and outcome.failures == []
    assert config.log_path.read_bytes().startswith(earlier)  # earlier bytes never rewritten
    assert config.log_path.read_bytes().count(b"\n<!-- digest ") == 1
    assert len(handler.messages()) == 1


def test_rerun_with_same_content_sends_and_appends_nothing(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    config = make_config(tmp_path, port)
    deliver_digest(store, config, PERIOD, FIRST, NOW)
    log_before = config.log_path.read_bytes()
    again = deliver_digest(store, config, PERIOD, FIRST, NOW + timedelta(hours=1))
    assert again.revision is None
    assert again.delivered == []
    assert len(handler.envelopes) == 1
    assert config.log_path.read_bytes() == log_before


def test_new_content_is_a_new_revision_delivered_once(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    config = make_config(tmp_path, port, send="every_revision")
    deliver_digest(store, config, PERIOD, FIRST, NOW)
    log_before = config.log_path.read_bytes()
    later = NOW + timedelta(days=1)
    second = deliver_digest(store, config, PERIOD, SECOND, later)
    third = deliver_digest(store, config, PERIOD, SECOND, later + timedelta(hours=1))
    assert (second.revision, third.revision) == (2, None)
    assert second.delivered == ["file", "log", "feed", "email"]
    assert third.delivered == []
    assert len(handler.envelopes) == 2
    log_after = config.log_path.read_bytes()
    assert log_after.startswith(log_before)
    assert len(markers(config.log_path)) == 2
    assert log_after.decode("utf-8").count("# Digest for 2026-W47") == 1  # the week's text once
    assert "revision 2 changes" in log_after.decode("utf-8")  # then what changed


def test_a_week_is_mailed_once_and_later_revisions_update_files_log_and_feed(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    config = make_config(tmp_path, port)
    first = deliver_digest(store, config, PERIOD, FIRST, NOW)
    second = deliver_digest(store, config, PERIOD, SECOND, NOW + timedelta(days=1))
    assert first.delivered == ["file", "log", "feed", "email"]
    assert second.delivered == ["file", "log", "feed"]
    assert second.held == ["2026-W47 was mailed before; this revision is in the files and the feed"]
    assert len(handler.envelopes) == 1
    assert "Two links." in (config.digests_dir / "feed.xml").read_text(encoding="utf-8")


def test_a_week_still_running_is_not_mailed_until_it_is_over(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    config = make_config(tmp_path, port)
    during = deliver_digest(store, config, PERIOD, FIRST, PERIOD.end - timedelta(days=1))
    assert "email" not in during.delivered and during.held
    after = deliver_digest(store, config, PERIOD, SECOND, PERIOD.end + timedelta(hours=8))
    assert after.delivered[-1] == "email"
    assert len(handler.envelopes) == 1


@pytest.mark.parametrize("publish_empty", [False, True])
def test_an_empty_week_is_mailed_and_fed_only_when_asked(
    tmp_path: Path, store: Store, sink: tuple[Sink, int], publish_empty: bool
) -> None:
    handler, port = sink
    config = make_config(tmp_path, port)
    config = config.model_copy(
        update={"digest": config.digest.model_copy(update={"publish_empty": publish_empty})}
    )
    outcome = deliver_digest(store, config, PERIOD, FIRST, NOW, empty=True)
    assert (config.digests_dir / "2026-W47.md").exists()
    assert ("email" in outcome.delivered) is publish_empty
    assert config.log_path.exists() is publish_empty
    assert (config.digests_dir / "feed.xml").exists() is publish_empty
    assert len(handler.envelopes) == int(publish_empty)


def test_html_part_keeps_only_links_to_stored_urls_and_no_active_content(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    hostile = (
        "# Digest\n\n- [click](javascript:alert(1))\n  <script>alert(1)</script>"
        ' <img src=x onerror="alert(1)"> ![pixel](https://evil.example/p.png)'
        " [ok](https://fine.example/) <a href='javascript:alert(2)'>raw</a>"
        " [elsewhere](https://not-stored.example/) <https://not-stored.example/auto>\n"
        "<form action='https://evil.example/'><input></form><style>*{}</style>\n"
    )
    config = make_config(tmp_path, port)
    deliver_digest(store, config, PERIOD, hostile, NOW, allowed_urls={"https://fine.example/"})
    html = part(handler.messages()[0], "text/html")
    found = elements(html)
    body_tags = {tag for tag, _ in found} - {"html", "head", "meta", "title", "body"}
    assert body_tags <= {"h1", "ul", "li", "p", "a"}
    assert all(set(attrs) <= {"href", "style"} for tag, attrs in found if tag not in ("meta",))
    assert [attrs["href"] for tag, attrs in found if tag == "a"] == ["https://fine.example/"]
    assert ">elsewhere<" not in html and "elsewhere" in html  # the text stays, the link goes


def test_subject_with_newlines_cannot_inject_a_header(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    config = make_config(tmp_path, port, subject="Digest {period}\r\nBcc: evil@example.org\n")
    outcome = deliver_digest(store, config, PERIOD, FIRST, NOW)
    assert outcome.failures == []
    [message] = handler.messages()
    assert message["Bcc"] is None
    assert message["Subject"] == "Digest 2026-W47 Bcc: evil@example.org"
    assert handler.envelopes[0].rcpt_tos == ["me@example.org"]


def test_starttls_without_server_support_fails_without_sending_credentials(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIGEST_SMTP_PASSWORD", PASSWORD)
    attempts: list[object] = []

    def authenticator(*args: object) -> AuthResult:
        attempts.append(args)
        return AuthResult(success=False)

    handler = Sink()
    controller = Controller(
        handler,
        hostname="127.0.0.1",
        port=free_port(),
        authenticator=authenticator,
        auth_require_tls=False,
    )
    controller.start()
    try:
        config = make_config(tmp_path, controller.port, security="starttls", username="me")
        outcome = deliver_digest(store, config, PERIOD, FIRST, NOW)
    finally:
        controller.stop()
    [failure] = outcome.failures
    assert failure.startswith(f"mail to smtp://127.0.0.1:{config.email.port} failed: ")
    assert "STARTTLS" in failure and PASSWORD not in failure
    assert handler.envelopes == [] and attempts == []
    record = store.delivery("2026-W47", "email", content_hash(FIRST))
    assert record is not None and record.status == "failed"
    assert "email" not in outcome.delivered


def test_login_over_a_plain_connection_is_refused(
    tmp_path: Path, store: Store, sink: tuple[Sink, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIGEST_SMTP_PASSWORD", PASSWORD)
    handler, port = sink
    config = make_config(tmp_path, port, username="me")
    outcome = deliver_digest(store, config, PERIOD, FIRST, NOW)
    [failure] = outcome.failures
    assert "without TLS" in failure and PASSWORD not in failure
    assert handler.envelopes == []


def test_failed_email_is_retried_on_the_next_run(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    down = make_config(tmp_path, free_port())
    failed = deliver_digest(store, down, PERIOD, FIRST, NOW)
    assert failed.failures and "connection refused" in failed.failures[0]
    retried = deliver_digest(store, make_config(tmp_path, port), PERIOD, FIRST, NOW)
    assert retried.delivered == ["email"]
    assert len(handler.envelopes) == 1


def test_hang_up_after_data_is_recorded_unknown_and_not_resent(
    tmp_path: Path, store: Store, hangup: HangUpServer
) -> None:
    config = make_config(tmp_path, hangup.port)
    outcome = deliver_digest(store, config, PERIOD, FIRST, NOW)
    assert len(hangup.bodies) == 1
    [failure] = outcome.failures
    assert "outcome unknown" in failure
    record = store.delivery("2026-W47", "email", content_hash(FIRST))
    assert record is not None and record.status == "unknown"
    rerun = deliver_digest(store, config, PERIOD, FIRST, NOW + timedelta(hours=1))
    assert rerun.failures == [] and rerun.delivered == []
    assert hangup.connections == 1


def test_interrupted_send_found_pending_is_not_resent(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    config = make_config(tmp_path, port)
    store.record_digest("2026-W47", content_hash(FIRST), "x", NOW)
    store.apply_delivery(DeliveryBegun("2026-W47", "email", content_hash(FIRST), NOW))  # then died
    outcome = deliver_digest(store, config, PERIOD, FIRST, NOW + timedelta(hours=1))
    assert handler.envelopes == []
    assert "email" not in outcome.delivered
    record = store.delivery("2026-W47", "email", content_hash(FIRST))
    assert record is not None and record.status == "unknown"


def test_crash_after_log_append_does_not_double_the_entry(tmp_path: Path, store: Store) -> None:
    config = make_config(tmp_path, None)
    digest_hash = content_hash(FIRST)
    store.record_digest("2026-W47", digest_hash, "x", NOW)
    store.apply_delivery(DeliveryBegun("2026-W47", "log", digest_hash, NOW))
    append_log(config.log_path, log_entry("2026-W47", 1, digest_hash, FIRST))  # then the run died
    outcome = deliver_digest(store, config, PERIOD, FIRST, NOW + timedelta(hours=1))
    assert outcome.delivered == ["file", "log", "feed"]
    assert len(markers(config.log_path)) == 1
    record = store.delivery("2026-W47", "log", digest_hash)
    assert record is not None and record.status == "sent"


def test_a_rerender_a_reader_cannot_see_is_not_logged_again(tmp_path: Path, store: Store) -> None:
    config = make_config(tmp_path, None)
    restyled = FIRST.replace("## The week", "## This week")

    first = deliver_digest(store, config, PERIOD, FIRST, NOW, reader_view="a" * 64)
    again = deliver_digest(store, config, PERIOD, restyled, NOW, reader_view="a" * 64)
    changed = deliver_digest(store, config, PERIOD, SECOND, NOW, reader_view="b" * 64)

    assert "log" in first.delivered and "log" not in again.delivered
    assert again.revision == 2 and "file" in again.delivered  # the file shows the new look
    assert "log" in changed.delivered
    assert [marker.split()[4] for marker in markers(config.log_path)] == ["1", "3"]


def test_a_log_kept_by_content_is_not_appended_again_once_views_are_tracked(
    tmp_path: Path, store: Store
) -> None:
    config = make_config(tmp_path, None)
    deliver_digest(store, config, PERIOD, FIRST, NOW)  # as a digest before reader views
    deliver_digest(store, config, PERIOD, FIRST, NOW, reader_view="a" * 64)
    deliver_digest(store, config, PERIOD, FIRST + "\n", NOW, reader_view="a" * 64)

    assert len(markers(config.log_path)) == 1


@pytest.mark.parametrize("security", ["starttls", "ssl"])
def test_login_and_send_over_verified_tls(
    tmp_path: Path,
    store: Store,
    certificate: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    security: str,
) -> None:
    monkeypatch.setenv("DIGEST_SMTP_PASSWORD", PASSWORD)
    cert, key = certificate
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    logins: list[tuple[bytes, bytes]] = []

    def authenticator(
        server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        logins.append((data.login, data.password))
        return AuthResult(success=True)

    handler = Sink()
    # aiosmtpd only counts STARTTLS as TLS for AUTH; on implicit TLS it must be told.
    tls_option: dict[str, Any] = {"tls_context": server_tls}
    if security == "ssl":
        tls_option = {"ssl_context": server_tls, "auth_require_tls": False}
    controller = Controller(
        handler, hostname="127.0.0.1", port=free_port(), authenticator=authenticator, **tls_option
    )
    controller.start()
    try:
        config = make_config(
            tmp_path, controller.port, security=security, username="me", ca_file=cert
        )
        outcome = deliver_digest(store, config, PERIOD, FIRST, NOW)
    finally:
        controller.stop()
    assert outcome.failures == []
    assert outcome.delivered == ["file", "log", "feed", "email"]
    assert logins == [(b"me", PASSWORD.encode())]
    assert len(handler.envelopes) == 1


def test_untrusted_certificate_is_refused(
    tmp_path: Path, store: Store, certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    handler = Sink()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), tls_context=server_tls)
    controller.start()
    try:
        config = make_config(tmp_path, controller.port, security="starttls")
        outcome = deliver_digest(store, config, PERIOD, FIRST, NOW)
    finally:
        controller.stop()
    [failure] = outcome.failures
    assert "certificate" in failure
    assert handler.envelopes == []
