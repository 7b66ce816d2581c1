"""Hostile servers: downgrading redirects, binary bodies, hosts that ask us to back off."""

from __future__ import annotations

import asyncio
import io
import ssl
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from digest.collect.feeds import collect_feeds
from digest.config import Config, FetchConfig, SourceConfig
from digest.errors import FetchError
from digest.fetch.client import Fetcher, ca_context
from digest.fetch.stage import FetchStage
from digest.models import ItemState, SavedItem, StageReport
from digest.runtime.context import RunContext
from digest.store import Store, open_store
from loopback import LoopbackServer, QuietHTTPServer, Response, serving
from stores import store_at
from test_extract import minimal_pdf

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
RSS = """<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>
<item><title>One</title><link>https://one.test/1</link></item></channel></rss>"""


def settings(**overrides: Any) -> FetchConfig:
    defaults = {"allow_private_addresses": True, "timeout_s": 5, "per_host_delay_s": 0}
    return FetchConfig(**(defaults | overrides))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = store_at(tmp_path / "digest.db")
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
    ca_context.cache_clear()  # the process's authorities, loaded again with the test's
    server = LoopbackServer()
    server.httpd.socket = tls.wrap_socket(server.httpd.socket, server_side=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        ca_context.cache_clear()


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


# -- binary bodies -----------------------------------------------------------------


class Streamed:
    """A server sending a big body a piece at a time, counting what it managed to send."""

    def __init__(self, head: bytes, size: int, content_type: str) -> None:
        self.sent = 0
        self.requests = 0
        self.answered = threading.Event()  # the handler stopped sending: hung up on, or done
        rig = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                rig.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(size))
                self.end_headers()
                body = head + b"\0" * (size - len(head))
                try:
                    for start in range(0, size, CHUNK):
                        self.wfile.write(body[start : start + CHUNK])
                        rig.sent += len(body[start : start + CHUNK])
                        time.sleep(0.005)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    rig.answered.set()

        self.httpd = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/video"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


CHUNK = 64 * 1024
VIDEO_BYTES = 9_000_000


@pytest.mark.parametrize(
    ("head", "content_type"),
    [
        (b"\x1aE\xdf\xa3video", "video/webm"),  # declared and signed
        (b"\x89PNG\r\n\x1a\n", "application/octet-stream"),  # known by its first bytes
        (b"\x1aE\xdf\xa3video", "text/html"),  # lying header: the signature wins
    ],
)
def test_binary_body_is_closed_after_its_first_bytes_and_given_up_for_good(
    tmp_path: Path, head: bytes, content_type: str
) -> None:
    video = Streamed(head, VIDEO_BYTES, content_type)
    store = open_store(tmp_path / "digest.db")
    try:
        source_id = store.ensure_source("inbox", "file", path="/inbox")
        store.save_items(source_id, [SavedItem(video.url)], NOW)
        config = Config(fetch=settings(max_bytes=20_000_000))
        [report] = asyncio.run(FetchStage().run(RunContext(store, config, lambda: NOW))).reports
        assert video.answered.wait(60)  # the server noticed the hang-up (or sent it all)
        [item] = store.all_items()
        later = RunContext(store, config, lambda: NOW + timedelta(days=30))
        [again] = asyncio.run(FetchStage().run(later)).reports
    finally:
        store.close()
        video.stop()
    assert "binary content" in report.failures[0] and "given up" in report.failures[0]
    assert video.sent < 2_000_000  # of 9 MB
    assert item.state is ItemState.FAILED and item.next_attempt_at is None
    assert video.requests == 1 and again.failures == []


def test_a_broken_pdf_served_as_html_is_read_once_within_the_cap_and_never_again(
    tmp_path: Path,
) -> None:
    pdf = Streamed(b"%PDF-1.4\n", 3_000_000, "text/html")
    store = open_store(tmp_path / "digest.db")
    try:
        source_id = store.ensure_source("inbox", "file", path="/inbox")
        store.save_items(source_id, [SavedItem(pdf.url)], NOW)
        config = Config(fetch=settings(max_bytes=5_000_000))
        [report] = asyncio.run(FetchStage().run(RunContext(store, config, lambda: NOW))).reports
        [item] = store.all_items()
        later = RunContext(store, config, lambda: NOW + timedelta(days=30))
        [again] = asyncio.run(FetchStage().run(later)).reports
    finally:
        store.close()
        pdf.stop()
    assert "unreadable PDF" in report.failures[0] and "given up" in report.failures[0]
    assert item.state is ItemState.FAILED and item.next_attempt_at is None
    assert pdf.requests == 1 and again.failures == []


def test_a_pdf_served_as_html_is_read_as_a_pdf(server: LoopbackServer, store: Store) -> None:
    server.routes["/paper"] = Response(
        200, minimal_pdf("Attention is all you need, a paper about transformer models.")
    )
    source_id = store.ensure_source("inbox", "file", path="/inbox")
    store.save_items(source_id, [SavedItem(server.url("/paper"))], NOW)
    config = Config(fetch=settings())
    asyncio.run(FetchStage().run(RunContext(store, config, lambda: NOW)))
    [item] = store.all_items()
    assert item.state is ItemState.FETCHED and "Attention is all you need" in (item.text or "")


@pytest.mark.parametrize("credentials", [False, True])
def test_a_password_in_a_url_is_sent_only_when_the_caller_says_so(
    server: LoopbackServer, credentials: bool
) -> None:
    server.routes["/private"] = Response(200, "ok")
    url = f"http://bob:PW'x@127.0.0.1:{server.port}/private"

    async def run() -> None:
        async with Fetcher(settings()) as fetcher:
            await fetcher.get(url, userinfo=credentials)

    asyncio.run(run())
    [request] = server.hits("/private")
    assert ("authorization" in request.headers) is credentials


def test_html_is_read_whole_through_the_binary_gate(server: LoopbackServer) -> None:
    page = "<html><body>" + "<p>words</p>" * 2000 + "</body></html>"
    server.routes["/page"] = Response(200, page)

    async def run() -> bytes:
        async with Fetcher(settings()) as fetcher:
            sink = io.BytesIO()
            await fetcher.get(server.url("/page"), sink=sink, skip_binary=True)
            return sink.getvalue()

    assert asyncio.run(run()) == page.encode()


# -- hosts asking us to wait -------------------------------------------------------


@pytest.mark.parametrize("status", [429, 503])
def test_a_host_answering_retry_after_gets_one_request_per_run(
    tmp_path: Path, server: LoopbackServer, status: int
) -> None:
    for n in range(8):  # answered slowly: a second request may not be under way by then
        server.routes[f"/page{n}"] = Response(
            status, "slow down", headers={"Retry-After": "3600"}, delay_s=0.3
        )
    store = open_store(tmp_path / "digest.db")
    try:
        source_id = store.ensure_source("inbox", "file", path="/inbox")
        store.save_items(source_id, [SavedItem(server.url(f"/page{n}")) for n in range(8)], NOW)
        # one request to a host at a time (with more, those begun before the answer still go)
        config = Config(fetch=settings(per_host_concurrency=1))
        [report] = asyncio.run(FetchStage().run(RunContext(store, config, lambda: NOW))).reports
        items = store.all_items()
    finally:
        store.close()
    assert len(server.requests) == 1
    assert len(report.failures) == 8
    assert all(
        item.next_attempt_at and item.next_attempt_at >= NOW + timedelta(minutes=59)
        for item in items
    )
