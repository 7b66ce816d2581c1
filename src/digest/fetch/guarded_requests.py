"""The address guard for a `requests` session (what youtube-transcript-api speaks through),
on the same rule as GuardedBackend's for httpx: the host is resolved once, when a
connection is made, the addresses the policy refuses are dropped (none left: refused), and
the socket connects to an address that was checked. urllib3 never resolves the name
itself, so a name that answers a public address to a check and a private one to the
connect (DNS rebinding) has no window. TLS still uses the host name (SNI, certificate).

Every answer is read as a stream and given up past the size cap, not read whole first.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Collection, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from ipaddress import ip_address
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import HTTPError, NameResolutionError, NewConnectionError
from urllib3.response import BaseHTTPResponse
from urllib3.util.connection import create_connection

from digest.config import FetchConfig
from digest.fetch.guard import AddressPolicy, AddressRefused

AddressLookup = Callable[[str, None], Sequence[tuple[Any, ...]]]  # socket.getaddrinfo's shape
CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class _Guard:
    policy: AddressPolicy
    lookup: AddressLookup


_guard: ContextVar[_Guard | None] = ContextVar("requests_guard", default=None)


def _connect(connection: HTTPConnection) -> socket.socket:
    """A socket to one of the host's allowed addresses, resolved here and only here."""
    guard = _guard.get()
    if guard is None:  # a connection made outside GuardedAdapter.send: none at all
        raise NewConnectionError(connection, "not connected through the address guard")
    host = connection.host
    try:
        infos = guard.lookup(host, None)
    except socket.gaierror as exc:
        raise NameResolutionError(host, connection, exc) from exc
    except OSError as exc:
        raise NewConnectionError(connection, f"cannot resolve {host}: {exc}") from exc
    found = list(dict.fromkeys(ip_address(str(info[4][0]).split("%")[0]) for info in infos))
    allowed = [address for address in found if guard.policy.allows(address)]
    if not allowed:
        refused = AddressRefused(str(found[0]) if found else host)
        raise NewConnectionError(connection, f"{host}: {refused}")
    error: OSError | None = None
    for address in allowed:
        try:
            return create_connection(
                (str(address), connection.port),
                connection.timeout,
                source_address=connection.source_address,
                socket_options=connection.socket_options,
            )
        except OSError as exc:
            error = exc
    raise NewConnectionError(connection, f"cannot connect to {host}: {error}")


class _GuardedHTTPConnection(HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return _connect(self)


class _GuardedHTTPSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        return _connect(self)


class _GuardedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _GuardedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    """requests to `hosts` only, each connection made to an address the guard checked,
    every request bounded by the run's timeout and size cap."""

    def __init__(self, config: FetchConfig, hosts: Collection[str], lookup: AddressLookup) -> None:
        super().__init__(max_retries=0)
        self.hosts = hosts
        self.guard = _Guard(AddressPolicy(config.allow_private_addresses), lookup)
        self.timeout_s = config.timeout_s
        self.max_bytes = config.max_bytes

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _GuardedHTTPPool,
            "https": _GuardedHTTPSPool,
        }

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        host = urlsplit(request.url or "").hostname or ""
        if host not in self.hosts:
            raise requests.ConnectionError(f"{host}: not a host this session may reach")
        deadline = time.monotonic() + self.timeout_s
        token = _guard.set(self.guard)
        try:
            options = {**kwargs, "timeout": self.timeout_s, "stream": True}
            response = super().send(request, **options)
            try:
                response._content = self._body(response.raw, deadline)
            except BaseException:
                response.close()
                raise
            response.raw.release_conn()
        finally:
            _guard.reset(token)
        return response

    def _body(self, raw: BaseHTTPResponse, deadline: float) -> bytes:
        """The body as it comes: given up as soon as it is past the size cap or the time."""
        chunks: list[bytes] = []
        size = 0
        while chunk := _read_some(raw):
            size += len(chunk)
            if size > self.max_bytes:
                raise requests.ConnectionError(f"answer larger than {self.max_bytes} bytes")
            if time.monotonic() > deadline:
                raise requests.ConnectionError(f"answer slower than {self.timeout_s:g} s")
            chunks.append(chunk)
        return b"".join(chunks)


def _read_some(raw: BaseHTTPResponse) -> bytes:
    """What has come of the body (b"" at its end), decoded; urllib3's errors as requests'."""
    try:
        return raw.read1(CHUNK_BYTES, decode_content=True)
    except (HTTPError, OSError) as exc:
        raise requests.ConnectionError(f"reading the answer: {exc}") from exc


def guarded_session(
    config: FetchConfig, hosts: Collection[str], lookup: AddressLookup = socket.getaddrinfo
) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # no proxy or netrc from the environment, as our fetcher
    adapter = GuardedAdapter(config, hosts, lookup)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    session.headers.update({"User-Agent": config.user_agent})
    return session
