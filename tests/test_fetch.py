from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import re
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import httpx
import pytest

import digest
from digest.clock import Waits
from digest.config import FetchConfig
from digest.errors import BlockedAddress, FetchError
from digest.fetch.client import Fetcher, FetchResult, check_status
from digest.fetch.guard import AddressPolicy, GuardedTransport, embedded_ipv4, is_public_address
from loopback import LoopbackServer, Request, Response, serving

LOOPBACK_ONLY = ["127.0.0.1/32"]
# trafilatura's downloader retries without certificate checks and has no address guard
DOWNLOADER = re.compile(
    r"trafilatura\.(?:downloads|fetch_url|fetch_response)|import [^\n]*\bfetch_(?:url|response)\b"
)


def settings(**overrides: Any) -> FetchConfig:
    defaults = {"allow_private_addresses": True, "timeout_s": 5, "per_host_delay_s": 0}
    return FetchConfig(**(defaults | overrides))


def fetch(
    url: str, headers: dict[str, str] | None = None, sink: io.BytesIO | None = None, **config: Any
) -> FetchResult:
    async def run() -> FetchResult:
        async with Fetcher(settings(**config)) as fetcher:
            return await fetcher.get(url, headers, sink=sink)

    return asyncio.run(run())


def result(status: int, headers: dict[str, str] | None = None) -> FetchResult:
    return FetchResult("http://x.test/a", "http://x.test/a", status, headers or {}, b"", None)


# -- plain responses and status ------------------------------------------------


def test_200_returns_body_headers_and_sends_user_agent(server: LoopbackServer) -> None:
    server.routes["/page"] = Response(200, "<p>hello</p>", headers={"X-Thing": "1"})

    got = fetch(server.url("/page"), user_agent="digest-test/1")

    assert (got.status, got.content) == (200, b"<p>hello</p>")
    assert got.final_url == got.url == server.url("/page")
    assert got.headers["x-thing"] == "1"
    assert got.permanent_redirect is None
    assert server.hits("/page")[0].headers["user-agent"] == "digest-test/1"


def test_404_is_a_result_and_check_status_makes_it_permanent(server: LoopbackServer) -> None:
    got = fetch(server.url("/missing"))

    assert got.status == 404
    with pytest.raises(FetchError) as caught:
        check_status(got)
    assert caught.value.permanent
    assert str(caught.value) == f"fetch failed: {server.url('/missing')!r}: HTTP 404"


@pytest.mark.parametrize("status", [200, 204, 304])
def test_success_and_not_modified_pass_check_status(status: int) -> None:
    check_status(result(status))  # raises no FetchError


@pytest.mark.parametrize("status", [400, 403, 410, 451])
def test_client_errors_are_permanent(status: int) -> None:
    with pytest.raises(FetchError) as caught:
        check_status(result(status))
    assert caught.value.permanent and caught.value.retry_after is None


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503])
def test_timeouts_throttling_and_server_errors_are_transient(status: int) -> None:
    with pytest.raises(FetchError) as caught:
        check_status(result(status))
    assert not caught.value.permanent


@pytest.mark.parametrize("status", [403, 429, 503])
def test_a_cloudflare_challenge_is_never_a_permanent_failure(status: int) -> None:
    """A feed behind a challenge is tried again, not given up as refused."""
    with pytest.raises(FetchError) as caught:
        check_status(result(status, {"cf-mitigated": "challenge"}))
    assert not caught.value.permanent
    assert "bot challenge" in str(caught.value)


def test_429_retry_after_seconds_is_parsed(server: LoopbackServer) -> None:
    server.routes["/busy"] = Response(429, "slow down", headers={"Retry-After": "120"})

    with pytest.raises(FetchError) as caught:
        check_status(fetch(server.url("/busy")))

    assert caught.value.retry_after == 120
    assert not caught.value.permanent


def test_429_retry_after_http_date_is_parsed(server: LoopbackServer) -> None:
    now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(minutes=5), usegmt=True)
    server.routes["/busy"] = Response(429, headers={"Retry-After": later})

    with pytest.raises(FetchError) as caught:
        check_status(fetch(server.url("/busy")), now=now)

    assert caught.value.retry_after == 300


@pytest.mark.parametrize(("value", "expected"), [("999999", 86400), ("-5", None), ("soon", None)])
def test_retry_after_is_clamped_or_ignored_when_unreadable(value: str, expected: float) -> None:
    with pytest.raises(FetchError) as caught:
        check_status(result(503, {"retry-after": value}))
    assert caught.value.retry_after == expected


def test_retry_after_date_in_the_past_means_now() -> None:
    past = format_datetime(datetime(2000, 1, 1, tzinfo=UTC), usegmt=True)
    with pytest.raises(FetchError) as caught:
        check_status(result(503, {"retry-after": past}))
    assert caught.value.retry_after == 0


# -- redirects -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "permanent"),
    [
        ([301], True),
        ([308], True),
        ([301, 308], True),
        ([302], False),
        ([307], False),
        ([303], False),
        ([301, 302], False),
    ],
)
def test_redirect_is_followed_and_remembered_only_when_every_hop_is_permanent(
    server: LoopbackServer, statuses: list[int], permanent: bool
) -> None:
    for hop, status in enumerate(statuses):
        server.routes[f"/hop{hop}"] = Response(status, headers={"Location": f"/hop{hop + 1}"})
    server.routes[f"/hop{len(statuses)}"] = Response(200, "arrived")

    got = fetch(server.url("/hop0"))

    assert (got.status, got.content) == (200, b"arrived")
    assert got.url == server.url("/hop0")
    assert got.final_url == server.url(f"/hop{len(statuses)}")
    assert got.permanent_redirect == (got.final_url if permanent else None)


def test_redirect_carries_request_headers(server: LoopbackServer) -> None:
    server.routes["/old"] = Response(301, headers={"Location": "/new"})
    server.routes["/new"] = Response(200, "ok")

    fetch(server.url("/old"), headers={"If-None-Match": '"v1"'})

    assert server.hits("/new")[0].headers["if-none-match"] == '"v1"'


def test_redirect_loop_stops(server: LoopbackServer) -> None:
    server.routes["/a"] = Response(302, headers={"Location": "/b"})
    server.routes["/b"] = Response(302, headers={"Location": "/a"})

    with pytest.raises(FetchError, match="redirect loop"):
        fetch(server.url("/a"), max_redirects=10)

    assert len(server.requests) == 2


def test_too_many_redirects_stop(server: LoopbackServer) -> None:
    for hop in range(10):
        server.routes[f"/r{hop}"] = Response(302, headers={"Location": f"/r{hop + 1}"})

    with pytest.raises(FetchError, match="more than 3 redirects"):
        fetch(server.url("/r0"), max_redirects=3)

    assert len(server.requests) == 4


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/file", "file:///etc/passwd", "data:,hi"])
def test_non_http_urls_are_refused(url: str) -> None:
    with pytest.raises(FetchError, match="only http and https") as caught:
        fetch(url)
    assert caught.value.permanent


def test_redirect_to_a_file_url_is_refused(server: LoopbackServer) -> None:
    server.routes["/sneaky"] = Response(302, headers={"Location": "file:///etc/passwd"})

    with pytest.raises(FetchError, match=r"bad redirect to 'file:///etc/passwd': not a web link"):
        fetch(server.url("/sneaky"))


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("http://user:secret@example.org/", "user name or password"),
        ("http://example.org:99999/", "bad port"),
        ("http://[fe80::1%25eth0]/", "zone id"),
    ],
)
def test_a_redirect_goes_through_the_url_parser(
    server: LoopbackServer, location: str, reason: str
) -> None:
    server.routes["/hop"] = Response(302, headers={"Location": location})
    with pytest.raises(FetchError, match=reason) as caught:
        fetch(server.url("/hop"))
    assert caught.value.permanent


# -- the private-address guard ----------------------------------------------------


def test_guard_refuses_loopback_and_no_request_reaches_the_server(
    server: LoopbackServer,
) -> None:
    server.routes["/"] = Response(200, "secret")

    with pytest.raises(BlockedAddress) as caught:
        fetch(server.url("/"), allow_private_addresses=False)

    assert str(caught.value) == (
        f"fetch refused: {server.url('/')!r}: 127.0.0.1 is a private address"
        " (set fetch.allow_private_addresses to allow)"
    )
    assert caught.value.permanent
    assert server.requests == []


def test_the_guard_sits_in_the_pool_httpx_sends_through(server: LoopbackServer) -> None:
    # The transport as httpx.AsyncClient uses it, with no Fetcher around it: should a request
    # ever go out through a pool without the guard's backend, it would reach the server.
    server.routes["/"] = Response(200, "secret")
    transport = GuardedTransport(
        AddressPolicy([]), httpx.Limits(max_connections=1), ssl.create_default_context()
    )

    async def send() -> None:
        async with httpx.AsyncClient(transport=transport) as client:
            await client.get(server.url("/"))

    with pytest.raises(BlockedAddress):
        asyncio.run(send())
    assert server.requests == []


def test_guard_checks_every_redirect_hop_against_the_allowed_networks(
    server: LoopbackServer,
) -> None:
    with serving("127.0.0.2") as other:
        other.routes["/"] = Response(200, "internal")
        server.routes["/jump"] = Response(302, headers={"Location": other.url("/")})

        with pytest.raises(BlockedAddress, match="127.0.0.2 is a private address"):
            fetch(server.url("/jump"), allow_private_addresses=LOOPBACK_ONLY)

        assert len(server.hits("/jump")) == 1
        assert other.requests == []


def test_a_name_that_rebinds_to_a_refused_address_is_caught_on_its_next_connection(
    server: LoopbackServer,
) -> None:
    # DNS rebinding: the name answered an allowed address, then a refused one. The guard
    # judges each connection's own answer, not an earlier check of the name.
    answers = iter(["127.0.0.1", "127.0.0.2"])

    async def rebinding(host: str, port: int) -> list[tuple[Any, ...]]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    async def run(first: str) -> FetchResult:
        config = settings(allow_private_addresses=LOOPBACK_ONLY)
        async with Fetcher(config, Waits(lookup=rebinding)) as fetcher:
            return await fetcher.get(first)

    with serving("127.0.0.2") as other:
        other.routes["/"] = Response(200, "internal")
        server.routes["/"] = Response(
            302, headers={"Location": f"http://rebind.test:{other.port}/"}
        )

        with pytest.raises(BlockedAddress, match="127.0.0.2 is a private address"):
            asyncio.run(run(f"http://rebind.test:{server.port}/"))

        assert len(server.hits("/")) == 1
        assert other.requests == []


def test_redirect_to_cloud_metadata_address_is_refused(server: LoopbackServer) -> None:
    server.routes["/meta"] = Response(302, headers={"Location": "http://169.254.169.254/latest"})

    with pytest.raises(BlockedAddress, match="169.254.169.254 is a private address"):
        fetch(server.url("/meta"), allow_private_addresses=LOOPBACK_ONLY)


def test_allowed_network_lets_loopback_through(server: LoopbackServer) -> None:
    server.routes["/"] = Response(200, "fine")

    assert fetch(server.url("/"), allow_private_addresses=LOOPBACK_ONLY).content == b"fine"


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "127.0.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "224.0.0.1",
        "240.0.0.1",
        "0.0.0.0",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b::7f00:1",
        "2002:7f00:1::",
        "2002:a00:1::1",
        "2002:a9fe:a9fe::",
    ],
)
def test_non_public_addresses_are_refused_also_when_wrapped_in_ipv6(address: str) -> None:
    assert not is_public_address(ip_address(address))
    assert not AddressPolicy(False).allows(ip_address(address))


@pytest.mark.parametrize(
    "address",
    [
        "93.184.216.34",
        "1.1.1.1",
        "2606:4700::1111",
        "::ffff:1.1.1.1",
        "64:ff9b::101:101",
        "2002:101:101::",
    ],
)
def test_public_addresses_are_allowed_also_when_wrapped_in_ipv6(address: str) -> None:
    assert is_public_address(ip_address(address))


@pytest.mark.parametrize(
    ("wrapped", "inner"),
    [
        ("::ffff:10.1.2.3", "10.1.2.3"),
        ("64:ff9b::0a01:0203", "10.1.2.3"),
        ("2002:0a01:0203::1", "10.1.2.3"),
        ("2001:db8::1", None),
    ],
)
def test_embedded_ipv4_unwraps_mapped_nat64_and_6to4(wrapped: str, inner: str | None) -> None:
    expected = ip_address(inner) if inner else None
    assert embedded_ipv4(ip_address(wrapped)) == expected


def test_allow_list_matches_the_unwrapped_address_and_nothing_else() -> None:
    policy = AddressPolicy(["10.0.0.0/8"])

    assert policy.allows(ip_address("10.9.9.9"))
    assert policy.allows(ip_address("::ffff:10.9.9.9"))
    assert not policy.allows(ip_address("192.168.0.1"))
    assert AddressPolicy(True).allows(ip_address("192.168.0.1"))


# -- caps and deadlines -------------------------------------------------------------


def test_body_over_the_cap_is_refused(server: LoopbackServer) -> None:
    server.routes["/big"] = Response(200, b"x" * 50_000)

    with pytest.raises(FetchError, match="body larger than 10000 bytes"):
        fetch(server.url("/big"), max_bytes=10_000)


def test_body_at_the_cap_is_kept(server: LoopbackServer) -> None:
    server.routes["/exact"] = Response(200, b"x" * 10_000)

    assert len(fetch(server.url("/exact"), max_bytes=10_000).content) == 10_000


def test_gzip_body_is_decoded(server: LoopbackServer) -> None:
    server.routes["/gz"] = Response(
        200, gzip.compress(b"hello " * 100), headers={"Content-Encoding": "gzip"}
    )

    assert fetch(server.url("/gz")).content == b"hello " * 100


def test_gzip_bomb_stops_at_the_decoded_cap(server: LoopbackServer) -> None:
    bomb = gzip.compress(b"\0" * 50_000_000, compresslevel=9)  # ~50 KB on the wire
    server.routes["/bomb"] = Response(200, bomb, headers={"Content-Encoding": "gzip"})

    with pytest.raises(FetchError, match="body larger than 100000 bytes"):
        fetch(server.url("/bomb"), max_bytes=100_000)


@pytest.fixture
def trickling() -> Iterator[str]:
    """A raw server that promises 10 kB and sends one byte every 0.2 s."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n")
            while not stop.wait(0.2):
                try:
                    connection.sendall(b"x")
                except OSError:
                    return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    stop.set()
    thread.join(timeout=2)
    listener.close()


def test_trickling_server_hits_the_deadline(trickling: str) -> None:
    started = time.monotonic()

    with pytest.raises(FetchError, match="timeout: took longer than 0.5s"):
        fetch(trickling, timeout_s=0.5)

    assert time.monotonic() - started < 60  # a wide margin: the whole body would take 2000 s


def in_flight_counter(server: LoopbackServer, path: str, *, hold: threading.Barrier) -> list[int]:
    """Serve `path` after every request reached `hold` (or it broke); the number of requests
    in flight at each arrival, in arrival order."""
    seen: list[int] = []
    lock = threading.Lock()
    in_flight = 0

    def handle(request: Request) -> Response:
        nonlocal in_flight
        with lock:
            in_flight += 1
            seen.append(in_flight)
        with contextlib.suppress(threading.BrokenBarrierError):
            hold.wait()
        with lock:
            in_flight -= 1
        return Response(200, "ok")

    server.routes[path] = handle
    return seen


def test_fetches_run_concurrently_within_the_limits(server: LoopbackServer) -> None:
    seen = in_flight_counter(server, "/slow", hold=threading.Barrier(8, timeout=30))

    async def run() -> list[FetchResult]:
        async with Fetcher(settings(concurrency=8, per_host_concurrency=8)) as fetcher:
            return await asyncio.gather(*(fetcher.get(server.url("/slow")) for _ in range(8)))

    results = asyncio.run(run())

    assert [r.status for r in results] == [200] * 8
    assert max(seen) == 8  # all eight were in flight at once


def test_per_host_limit_serialises_requests_to_one_host(server: LoopbackServer) -> None:
    # The first request is held 0.3 s for a second one to arrive alongside it (none may).
    seen = in_flight_counter(server, "/slow", hold=threading.Barrier(2, timeout=0.3))

    async def run() -> None:
        async with Fetcher(settings(per_host_concurrency=1)) as fetcher:
            await asyncio.gather(*(fetcher.get(server.url("/slow")) for _ in range(4)))

    asyncio.run(run())

    assert seen == [1, 1, 1, 1]


def test_connection_refused_is_a_transient_fetch_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
    with pytest.raises(FetchError, match="ConnectError") as caught:
        fetch(f"http://127.0.0.1:{port}/")
    assert not caught.value.permanent


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("deflate", zlib.compress(b"plain text " * 50)),
        ("deflate", zlib.compress(b"plain text " * 50)[2:-4]),  # raw deflate, as some send
        ("gzip", gzip.compress(b"plain text " * 25) + gzip.compress(b"plain text " * 25)),
    ],
    ids=["zlib-deflate", "raw-deflate", "multi-member-gzip"],
)
def test_deflate_raw_deflate_and_multi_member_gzip_are_decoded(
    server: LoopbackServer, encoding: str, body: bytes
) -> None:
    server.routes["/z"] = Response(200, body, headers={"Content-Encoding": encoding})

    assert fetch(server.url("/z")).content == b"plain text " * 50


def test_unknown_content_encoding_is_a_fetch_error(server: LoopbackServer) -> None:
    server.routes["/br"] = Response(200, b"??", headers={"Content-Encoding": "br"})

    with pytest.raises(FetchError, match="unsupported Content-Encoding 'br'"):
        fetch(server.url("/br"))


def test_brotli_is_not_asked_for(server: LoopbackServer) -> None:
    server.routes["/"] = Response(200, "ok")

    fetch(server.url("/"))

    offered = server.hits("/")[0].headers["accept-encoding"]
    assert offered == "gzip, deflate"


def test_a_brotli_body_sent_anyway_is_refused_for_good(server: LoopbackServer) -> None:
    server.routes["/br"] = Response(200, b"\x1b" * 5000, headers={"Content-Encoding": "br"})

    with pytest.raises(FetchError, match="unsupported Content-Encoding") as caught:
        fetch(server.url("/br"))

    assert caught.value.permanent


def test_body_over_the_cap_is_a_permanent_failure(server: LoopbackServer) -> None:
    bomb = gzip.compress(b"\0" * 5_000_000)
    server.routes["/bomb"] = Response(200, bomb, headers={"Content-Encoding": "gzip"})

    with pytest.raises(FetchError) as caught:
        fetch(server.url("/bomb"), max_bytes=100_000)

    assert caught.value.permanent


def test_redirect_loops_and_long_chains_are_permanent_failures(server: LoopbackServer) -> None:
    server.routes["/a"] = Response(302, headers={"Location": "/a"})

    with pytest.raises(FetchError, match="redirect loop") as caught:
        fetch(server.url("/a"))

    assert caught.value.permanent


# -- streaming into a sink ------------------------------------------------------------


def test_body_streams_into_the_sink_and_redirect_bodies_do_not(server: LoopbackServer) -> None:
    server.routes["/old"] = Response(301, "moved away", headers={"Location": "/new"})
    server.routes["/new"] = Response(
        200, gzip.compress(b"article " * 1000), headers={"Content-Encoding": "gzip"}
    )
    sink = io.BytesIO()

    got = fetch(server.url("/old"), sink=sink)

    assert sink.getvalue() == b"article " * 1000
    assert got.content == b""
    assert (got.status, got.final_url) == (200, server.url("/new"))


# -- what must not happen: a proxy from the environment, insecure TLS, trafilatura's client --


def test_proxy_from_the_environment_is_ignored(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.routes["/page"] = Response(200, "direct")
    with serving("127.0.0.2") as proxy:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
            monkeypatch.setenv(name, proxy.url("/"))

        got = fetch(server.url("/page"))

        assert proxy.requests == []
    assert got.content == b"direct"


def test_an_untrusted_certificate_fails_without_an_insecure_retry(
    certificate: tuple[Path, Path],
) -> None:
    cert, key = certificate
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    server = LoopbackServer()
    server.routes["/"] = Response(200, "served without verification")
    server.httpd.socket = tls.wrap_socket(server.httpd.socket, server_side=True)
    server.start()
    try:
        with pytest.raises(FetchError, match="CERTIFICATE_VERIFY_FAILED"):
            fetch(f"https://127.0.0.1:{server.port}/")
    finally:
        server.stop()
    assert server.requests == []


def test_trafilaturas_own_downloader_is_never_used() -> None:
    sources = Path(digest.__file__).parent.rglob("*.py")
    users = [path.name for path in sources if DOWNLOADER.search(path.read_text())]

    assert users == []


# -- politeness -----------------------------------------------------------------------


def test_requests_to_one_host_start_the_configured_delay_apart(server: LoopbackServer) -> None:
    server.routes["/p"] = Response(200, "ok")
    waits: list[float] = []

    async def wait(seconds: float) -> None:  # the clock stands still: no real wait
        waits.append(seconds)

    async def run() -> None:
        config = settings(per_host_delay_s=30, per_host_concurrency=4)
        async with Fetcher(config, Waits(monotonic=lambda: 1000.0, sleep=wait)) as fetcher:
            await asyncio.gather(*(fetcher.get(server.url("/p")) for _ in range(4)))

    asyncio.run(run())

    assert sorted(waits) == [30, 60, 90]
    assert len(server.hits("/p")) == 4


def test_different_hosts_are_not_held_back_by_each_others_delay(
    server: LoopbackServer,
) -> None:
    with serving("127.0.0.2") as other:
        server.routes["/"] = other.routes["/"] = Response(200, "ok")

        async def run() -> list[FetchResult]:
            async with Fetcher(settings(per_host_delay_s=30)) as fetcher:
                first = [await fetcher.get(server.url("/")), await fetcher.get(other.url("/"))]
                return first

        with_timeout = asyncio.wait_for(run(), timeout=10)
        results = asyncio.run(with_timeout)

    assert [r.status for r in results] == [200, 200]


def test_a_host_dns_cannot_resolve_fails_its_other_urls_at_once() -> None:
    # "a..b" fails in the resolver's IDNA step, on this machine: no DNS query leaves it.
    async def run() -> list[str]:
        async with Fetcher(settings(per_host_delay_s=60)) as fetcher:
            errors = []
            for path in ("/one", "/two"):
                with pytest.raises(FetchError) as caught:
                    # a second attempt spaced out by the per-host delay would wait 60 s
                    await asyncio.wait_for(fetcher.get(f"http://a..b{path}"), timeout=30)
                errors.append(str(caught.value))
            return errors

    first, second = asyncio.run(run())

    assert "cannot resolve 'a..b'" in first
    assert second == first.replace("/one", "/two")
