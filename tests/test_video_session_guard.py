"""The requests session youtube-transcript-api speaks through: it connects to the address the
guard checked (a name that rebinds to a refused address between two connections is caught
on the second, as our httpx fetcher does), and an answer is read as it comes, given up at
the size cap or the time bound instead of read whole first."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from digest.config import FetchConfig
from digest.fetch.guarded_requests import guarded_session
from digest.fetch.videos import YOUTUBE_HOSTS
from loopback import LoopbackServer, Response, serving

LOOPBACK_ONLY = ["127.0.0.1/32"]


def answering(*addresses: str) -> Any:
    """A name lookup (getaddrinfo's shape) that answers `addresses`, one per call."""
    answers = iter(addresses)

    def lookup(host: str, port: None) -> list[tuple[Any, ...]]:
        assert host == "www.youtube.com"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), 0))]

    return lookup


def test_a_name_that_rebinds_to_a_refused_address_is_caught_on_its_next_connection(
    server: LoopbackServer,
) -> None:
    with serving("127.0.0.2") as other:
        other.routes["/"] = Response(200, "internal")
        server.routes["/watch"] = Response(
            302, headers={"Location": f"http://www.youtube.com:{other.port}/"}
        )
        session = guarded_session(
            FetchConfig(allow_private_addresses=LOOPBACK_ONLY),
            YOUTUBE_HOSTS,
            answering("127.0.0.1", "127.0.0.2"),
        )

        with pytest.raises(requests.ConnectionError, match="127.0.0.2 is a private address"):
            session.get(f"http://www.youtube.com:{server.port}/watch")

        assert len(server.hits("/watch")) == 1
        assert other.requests == []


def test_of_a_names_addresses_only_the_allowed_ones_are_connected_to(
    server: LoopbackServer,
) -> None:
    server.routes["/watch"] = Response(200, "the page")

    def both(host: str, port: None) -> list[tuple[Any, ...]]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, 0))
            for address in ("127.0.0.2", "127.0.0.1")
        ]

    config = FetchConfig(allow_private_addresses=LOOPBACK_ONLY)
    answer = guarded_session(config, YOUTUBE_HOSTS, both).get(
        f"http://www.youtube.com:{server.port}/watch"
    )

    assert answer.text == "the page"


@pytest.fixture
def raw_server() -> Iterator[tuple[int, list[bytes]]]:
    """A raw HTTP server on 127.0.0.1 that sends what the test puts in its list, in turn,
    0.1 s apart, then holds the connection open until the test ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    parts: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            for part in parts:
                if stop.wait(0.1):
                    return
                try:
                    connection.sendall(part)
                except OSError:
                    return
            stop.wait(30)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], parts
    stop.set()
    thread.join(timeout=2)
    listener.close()


def get_from(port: int, config: FetchConfig) -> requests.Response:
    session = guarded_session(config, YOUTUBE_HOSTS, answering("127.0.0.1"))
    return session.get(f"http://www.youtube.com:{port}/api/timedtext")


def test_an_answer_past_the_size_cap_is_given_up_when_it_gets_there(
    raw_server: tuple[int, list[bytes]],
) -> None:
    port, parts = raw_server
    parts += [b"HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n", b"x" * 300_000]
    config = FetchConfig(allow_private_addresses=LOOPBACK_ONLY, max_bytes=100_000, timeout_s=20)

    started = time.monotonic()
    with pytest.raises(requests.ConnectionError, match="answer larger than 100000 bytes"):
        get_from(port, config)

    assert time.monotonic() - started < 10  # not the 20 s the held connection would take


def test_a_trickling_answer_is_given_up_at_the_time_bound(
    raw_server: tuple[int, list[bytes]],
) -> None:
    port, parts = raw_server
    parts += [b"HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n", *[b"x"] * 100]
    config = FetchConfig(allow_private_addresses=LOOPBACK_ONLY, timeout_s=1)

    started = time.monotonic()
    with pytest.raises(requests.ConnectionError, match="answer slower than 1 s"):
        get_from(port, config)

    assert time.monotonic() - started < 8  # not the 10 s of the trickle
