"""SMTP servers on 127.0.0.1 for the delivery tests: aiosmtpd sinks, a server that hangs up."""

from __future__ import annotations

import email
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import Message
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope, Session

from digest.config import Config, DigestSection, EmailConfig
from digest.store import Store
from loopback import free_port
from stores import store_at

# -- servers -------------------------------------------------------------------


@dataclass
class Sink:
    """An aiosmtpd handler that keeps every message it accepts."""

    envelopes: list[Envelope] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        self.envelopes.append(envelope)
        return "250 Message accepted"

    def messages(self) -> list[Message]:
        return [email.message_from_bytes(_bytes(e.original_content)) for e in self.envelopes]


def _bytes(content: bytes | str | None) -> bytes:
    assert content is not None
    return content if isinstance(content, bytes) else content.encode()


@contextmanager
def smtp_server(handler: object, **options: Any) -> Iterator[int]:
    """An aiosmtpd server with `handler` on 127.0.0.1, for the block; yields its port."""
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), **options)
    controller.start()
    try:
        yield controller.port
    finally:
        controller.stop()


@pytest.fixture
def sink() -> Iterator[tuple[Sink, int]]:
    handler = Sink()
    with smtp_server(handler) as port:
        yield handler, port


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """The store of `make_config(tmp_path, ...)`."""
    opened = store_at(tmp_path / "data" / "digest.db")
    try:
        yield opened
    finally:
        opened.close()


class HangUpServer:
    """Speaks just enough SMTP to take a whole message, then closes without the final reply."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.port: int = self.listener.getsockname()[1]
        self.connections = 0
        self.bodies: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            with conn, conn.makefile("rb") as lines:
                self.connections += 1
                self._session(conn, lines)

    def _session(self, conn: socket.socket, lines: Any) -> None:
        conn.sendall(b"220 hangup.test ESMTP\r\n")
        for line in lines:
            verb = line[:4].upper()
            if verb == b"DATA":
                conn.sendall(b"354 go ahead\r\n")
                body = b"".join(iter(lines.readline, b".\r\n"))
                self.bodies.append(body)
                return  # hang up: the client never hears 250
            conn.sendall(b"221 bye\r\n" if verb == b"QUIT" else b"250 hangup.test\r\n")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.listener.close()


@pytest.fixture
def hangup() -> Iterator[HangUpServer]:
    server = HangUpServer()
    try:
        yield server
    finally:
        server.close()


# -- helpers -------------------------------------------------------------------


def make_config(tmp_path: Path, port: int | None, **email_options: Any) -> Config:
    options: dict[str, Any] = {
        "enabled": port is not None,
        "host": "127.0.0.1",
        "port": port or 25,
        "security": "none",
        "sender": "digest@example.org",
        "to": ["me@example.org"],
        "timeout_s": 5,
        "retry_backoff_s": 0,
    }
    email_config = EmailConfig(**(options | email_options))
    return Config(digest=DigestSection(data_dir=tmp_path / "data"), email=email_config)


def part(message: Message, content_type: str) -> str:
    for sub in message.walk():
        if sub.get_content_type() == content_type:
            payload = sub.get_payload(decode=True)
            assert isinstance(payload, bytes)
            text = payload.decode(sub.get_content_charset() or "utf-8")
            return text.replace("\r\n", "\n")  # lines travel as CRLF
    raise AssertionError(f"no {content_type} part")


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    """The real elements of `html` (tag, attributes), not text that looks like them."""
    parser = _Elements()
    parser.feed(html)
    return parser.found
