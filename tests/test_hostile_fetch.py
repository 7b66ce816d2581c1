"""Hostile servers: downgrading redirects, binary bodies, hosts that ask us to back off."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from digest.collect.feeds import collect_feeds
from digest.config import FetchConfig, SourceConfig
from digest.errors import FetchError
from digest.fetch import Fetcher
from digest.models import StageReport
from digest.store import Store, open_store
from loopback import LoopbackServer, Response, serving

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
RSS = """<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>
<item><title>One</title><link>https://one.test/1</link></item></channel></rss>"""


def settings(**overrides: Any) -> FetchConfig:
    defaults = {"allow_private_addresses": True, "timeout_s": 5, "per_host_delay_s": 0}
    return FetchConfig(**(defaults | overrides))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(tmp_path / "digest.db")
    yield opened
    opened.close()


@pytest.fixture
def tls_server(
    certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[LoopbackServer]:
    """A loopback server speaking https with a certificate the fetcher is made to trust."""
    cert, key = certificate
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    monkeypatch.setattr(httpx, "create_ssl_context", lambda **_: trusting)
    server = LoopbackServer()
    server.httpd.socket = tls.wrap_socket(server.httpd.socket, server_side=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def https_url(server: LoopbackServer, path: str) -> str:
    return f"https://127.0.0.1:{server.port}{path}"


def test_https_page_redirecting_to_http_is_refused_for_good_without_a_request(
    tls_server: LoopbackServer,
) -> None:
    with serving() as plain:
        plain.routes["/page"] = Response(200, "downgraded")
        tls_server.routes["/page"] = Response(302, headers={"Location": plain.url("/page")})

        async def run() -> None:
            async with Fetcher(settings()) as fetcher:
                await fetcher.get(https_url(tls_server, "/page"))

        with pytest.raises(FetchError, match="from https down to http") as refused:
            asyncio.run(run())
        assert refused.value.permanent
        assert plain.requests == []


def test_feed_moved_permanently_to_http_keeps_polling_its_https_url(
    tls_server: LoopbackServer, store: Store
) -> None:
    with serving() as plain:
        plain.routes["/feed"] = Response(200, RSS, content_type="application/rss+xml")
        tls_server.routes["/feed"] = Response(301, headers={"Location": plain.url("/feed")})
        url = https_url(tls_server, "/feed")
        source_id = store.ensure_source("blog", "feed", url=url)
        config = settings()

        async def run() -> StageReport:
            async with Fetcher(config) as fetcher:
                feeds = [(source_id, SourceConfig(name="blog", kind="feed", url=url))]
                return await collect_feeds(store, fetcher, feeds, config, NOW)

        report = asyncio.run(run())
        assert plain.requests == []
    assert store.feed_state(source_id).url == url
    assert "from https down to http" in report.failures[0]


def test_http_feed_moved_permanently_to_https_is_remembered(
    tls_server: LoopbackServer, store: Store, server: LoopbackServer
) -> None:
    tls_server.routes["/feed"] = Response(200, RSS, content_type="application/rss+xml")
    server.routes["/feed"] = Response(301, headers={"Location": https_url(tls_server, "/feed")})
    source_id = store.ensure_source("blog", "feed", url=server.url("/feed"))
    config = settings()

    async def run() -> StageReport:
        async with Fetcher(config) as fetcher:
            feeds = [(source_id, SourceConfig(name="blog", kind="feed", url=server.url("/feed")))]
            return await collect_feeds(store, fetcher, feeds, config, NOW)

    assert asyncio.run(run()).done == 1
    assert store.feed_state(source_id).url == https_url(tls_server, "/feed")
