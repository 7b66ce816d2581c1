"""The mail behaves like a newsletter: headers and the "View online" link, read back with
the email package from what aiosmtpd received."""

from __future__ import annotations

from datetime import UTC, datetime
from email.message import Message
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from digest.config import Config, EmailConfig, OutputConfig, parse_config
from digest.deliver.outbox import deliver_digest, resend_email
from digest.errors import ConfigError
from digest.periods import parse_week
from digest.store import Store
from mailrig import Sink, make_config, part, smtp_server

W47 = parse_week("2026-W47", ZoneInfo("UTC"))
NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
FIRST = "# Digest for 2026-W47\n\n## The week\n\nOne [link](https://a.example/1).\n"
SECOND = "# Digest for 2026-W47\n\n## The week\n\nTwo links.\n"


def mailed(tmp_path: Path, store: Store, port: int, markdown: str, **options: Any) -> Config:
    output = options.pop("output", OutputConfig())
    config = make_config(tmp_path, port, send="every_revision", **options)
    config = config.model_copy(update={"output": output})
    deliver_digest(store, config, W47, markdown, NOW, allowed_urls=["https://a.example/1"])
    return config


def test_list_id_always_and_no_unsubscribe_unless_configured(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    mailed(tmp_path, store, port, FIRST, sender="Digest <digest@mail.example.org>")
    [message] = handler.messages()
    assert message["List-Id"] == "Weekly digest <digest.mail.example.org>"
    assert message["List-Unsubscribe"] is None and message["List-Unsubscribe-Post"] is None
    assert "View online" not in part(message, "text/plain")


@pytest.mark.parametrize(
    ("unsubscribe", "one_click"),
    [
        ("https://me.example/stop?list=digest", "List-Unsubscribe=One-Click"),
        ("mailto:me+stop@example.org", None),
    ],
)
def test_list_unsubscribe_with_one_click_for_a_url(
    tmp_path: Path, store: Store, sink: tuple[Sink, int], unsubscribe: str, one_click: str | None
) -> None:
    handler, port = sink
    mailed(tmp_path, store, port, FIRST, unsubscribe=unsubscribe)
    [message] = handler.messages()
    assert message["List-Unsubscribe"] == f"<{unsubscribe}>"
    assert message["List-Unsubscribe-Post"] == one_click


def test_view_online_at_the_top_and_a_message_id_stable_per_revision(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    output = OutputConfig(public_url="https://me.example/digests")
    config = mailed(tmp_path, store, port, FIRST, output=output)
    mailed(tmp_path, store, port, SECOND, output=output)
    first, second = handler.messages()

    link = "https://me.example/digests/2026-W47.md"
    assert part(first, "text/plain").startswith(f"View online <{link}>\n\n")
    html = part(first, "text/html")
    assert html.index(f'href="{link}"') < html.index("Digest for 2026-W47</h1>")
    assert first["Message-ID"] != second["Message-ID"]
    again = _resent(tmp_path, store, config)
    assert again["Message-ID"] == second["Message-ID"]  # the same revision, the same id


def _resent(tmp_path: Path, store: Store, config: Config) -> Message:
    handler = Sink()
    with smtp_server(handler) as port:
        email = config.email.model_copy(update={"port": port})
        resend_email(store, config.model_copy(update={"email": email}), W47, NOW)
    [message] = handler.messages()
    return message


def test_an_unsubscribe_that_is_neither_mailto_nor_https_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "digest.toml"
    with pytest.raises(ConfigError, match="unsubscribe"):
        parse_config('[email]\nunsubscribe = "http://plain.example/stop"\n', path)
    assert EmailConfig(unsubscribe="mailto:x@y.example").unsubscribe == "mailto:x@y.example"
