"""The private-address guard: which addresses may be fetched, enforced at connect time.

The guard sits in httpx's network backend, so it judges the address actually connected
to (after DNS), on every hop and every new connection: no DNS-rebinding gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
import threading
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from ipaddress import IPv4Address, IPv6Address, IPv6Network, ip_address, ip_network
from typing import Any

import httpcore
import httpx

from digest.clock import Lookup
from digest.errors import BlockedAddress

IPAddress = IPv4Address | IPv6Address
Network = Any  # IPv4Network | IPv6Network; `in` on a mixed union does not type-check

_SHARED_ADDRESS_SPACE = ip_network("100.64.0.0/10")
_NAT64 = IPv6Network("64:ff9b::/96")
_GUARD_HINT = "(set fetch.allow_private_addresses to allow)"


def embedded_ipv4(address: IPAddress) -> IPv4Address | None:
    """The IPv4 address an IPv6 address wraps: IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4."""
    if isinstance(address, IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def is_public_address(address: IPAddress) -> bool:
    """False for private, loopback, link-local, shared (100.64/10), multicast, reserved,
    unspecified and other non-global addresses, also when wrapped in an IPv6 form."""
    inner = embedded_ipv4(address)
    if inner is not None:
        return is_public_address(inner)
    if address.version == 4 and address in _SHARED_ADDRESS_SPACE:
        return False
    return not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


class AddressPolicy:
    """`allow_private_addresses` made callable: True allows all, a list allows those networks."""

    def __init__(self, allow: bool | list[str]) -> None:
        self.allow_all = allow is True
        self.networks: list[Network] = (
            [ip_network(cidr, strict=False) for cidr in allow] if isinstance(allow, list) else []
        )

    def allows(self, address: IPAddress) -> bool:
        if self.allow_all or is_public_address(address):
            return True
        candidates = [address, embedded_ipv4(address)]
        return any(
            candidate is not None and candidate.version == net.version and candidate in net
            for candidate in candidates
            for net in self.networks
        )


class AddressRefused(BlockedAddress):
    """Raised inside the transport, which does not know the URL; get() names it."""

    def __init__(self, address: str) -> None:
        super().__init__(f"{address} is a private address {_GUARD_HINT}")
        self.address = address


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves the host itself, refuses disallowed addresses, connects to a vetted IP.

    TLS still uses the host name: httpcore calls start_tls with the origin's host.
    """

    def __init__(
        self,
        policy: AddressPolicy,
        resolver: Resolver,
        inner: httpcore.AsyncNetworkBackend | None = None,
    ):
        self.policy = policy
        self.resolver = resolver
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self.resolver.resolve(host, port)
        allowed = [address for address in addresses if self.policy.allows(address)]
        if not allowed:
            raise AddressRefused(str(addresses[0]))
        error: Exception | None = None
        for address in allowed:
            try:
                stream = await self.inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
                return _QuickStream(stream)
            except httpcore.ConnectError as exc:
                error = exc
        assert error is not None
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not fetched")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class UnresolvedHost(httpcore.ConnectError):
    """DNS has no address for the host: no other URL of that host will fare better this run."""


AddressInfo = tuple[Any, ...]  # one of getaddrinfo's answers
# Until a first name resolves, a lookup slower than this counts as unanswered: without a
# network a resolver waits out 5 s per try and server, and that is how a run crawled.
FIRST_ANSWER_S = 1.5
# Hosts that fail to resolve, none having resolved, for the network to be taken for down.
OFFLINE_AFTER_HOSTS = 3


async def system_lookup(host: str, port: int) -> list[AddressInfo]:
    """getaddrinfo in a daemon thread: a lookup given up on (FIRST_ANSWER_S) holds up
    neither the event loop's shutdown nor the process's exit, as an executor's would."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[list[AddressInfo]] = loop.create_future()

    def settle(outcome: list[AddressInfo] | BaseException) -> None:
        if answer.done():
            return
        if isinstance(outcome, BaseException):
            answer.set_exception(outcome)
        else:
            answer.set_result(outcome)

    def look_up() -> None:
        outcome: list[AddressInfo] | BaseException
        try:
            outcome = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            outcome = exc
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for it any more
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=look_up, name=f"lookup {host}", daemon=True).start()
    return await answer


class Resolver:
    """Names to addresses for one fetcher, and its verdict on the network: when at least
    OFFLINE_AFTER_HOSTS hosts were looked up, every lookup failed or gave no answer within
    FIRST_ANSWER_S and none is still under way, names do not resolve at all (`offline`).
    From the OFFLINE_AFTER_HOSTS-th failure on, new lookups wait for that verdict instead
    of trying more hosts."""

    def __init__(self, lookup: Lookup | None = None) -> None:
        self.lookup = lookup or system_lookup
        self.answered = False
        self.failed: list[str] = []  # hosts, while none has resolved
        self._under_way = 0
        self._settled = asyncio.Event()  # a name resolved, or the network is taken for down

    @property
    def offline(self) -> str | None:
        """Why the network is taken for down, or None."""
        if self.answered or self._under_way or len(self.failed) < OFFLINE_AFTER_HOSTS:
            return None
        more = len(self.failed) - OFFLINE_AFTER_HOSTS
        hosts = ", ".join(self.failed[:OFFLINE_AFTER_HOSTS]) + (f" and {more} more" if more else "")
        return f"no network: names do not resolve ({hosts})"

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            return [ip_address(host.strip("[]"))]  # an address: no lookup needed
        except ValueError:
            pass
        if not self.answered and len(self.failed) >= OFFLINE_AFTER_HOSTS:
            await self._settled.wait()
        if self.offline:
            raise UnresolvedHost(self.offline)
        self._under_way += 1
        try:
            async with asyncio.timeout(None if self.answered else FIRST_ANSWER_S):
                infos = await self.lookup(host, port)
        except TimeoutError:
            raise self._failed(host, f"no answer from DNS within {FIRST_ANSWER_S:g} s") from None
        except (OSError, UnicodeError) as exc:
            raise self._failed(host, str(exc)) from exc
        finally:
            self._under_way -= 1
            if not self._under_way and len(self.failed) >= OFFLINE_AFTER_HOSTS:
                self._settled.set()  # the verdict: offline
        self.answered = True
        self._settled.set()
        addresses = [ip_address(str(info[4][0]).split("%")[0]) for info in infos]
        return list(dict.fromkeys(addresses))

    def _failed(self, host: str, why: str) -> UnresolvedHost:
        if not self.answered and host not in self.failed:
            self.failed.append(host)
        return UnresolvedHost(f"cannot resolve {host!r}: {why}")


class GuardedTransport(httpx.AsyncBaseTransport):
    """httpx's requests sent through an httpcore pool whose network backend is the guard.

    Public API only (httpx's transport interface, httpcore's pool and network backend), so
    httpx can be upgraded. What httpx's own transport adds (proxies, HTTP/2, Unix sockets,
    retries) is not wanted here: a proxy would connect on the guard's behalf.
    """

    def __init__(
        self,
        policy: AddressPolicy,
        limits: httpx.Limits,
        ssl_context: ssl.SSLContext,
        resolver: Resolver | None = None,
    ):
        self.pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy, resolver or Resolver()),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        url = request.url
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = await self.pool.handle_async_request(core_request)
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseBody(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.pool.aclose()


class _ResponseBody(httpx.AsyncByteStream):
    def __init__(self, inner: AsyncIterable[bytes]) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for chunk in self.inner:
                yield chunk

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


# httpcore's errors and httpx's of the same name, as callers of httpx expect them
_HTTPX_ERRORS: dict[type[Exception], type[httpx.HTTPError]] = {
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.ProxyError: httpx.ProxyError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
}


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """httpcore's error as httpx's most specific one, the original kept as its cause
    (UnresolvedHost is found there); other errors, the guard's refusal among them, pass."""
    try:
        yield
    except Exception as exc:
        mapped = next((_HTTPX_ERRORS[k] for k in type(exc).__mro__ if k in _HTTPX_ERRORS), None)
        if mapped is None:
            raise
        raise mapped(str(exc)) from exc


class _QuickStream(httpcore.AsyncNetworkStream):
    """A connection whose "has the server closed it?" check is cheap.

    httpcore asks that of every idle connection each time it places a request, and
    anyio's answer builds a dict of attributes per call: with a pool of idle
    connections it was the parent's biggest cost in bench/fetch_extract.py.
    """

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self.inner = inner
        self.socket: socket.socket | None = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self.inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self.inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _QuickStream(await self.inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # on an idle connection: closed by the server, or broken
            return self.socket is None or _readable(self.socket)
        return self.inner.get_extra_info(info)


def _readable(sock: socket.socket) -> bool:
    if sock.fileno() < 0:
        return True
    if not hasattr(select, "poll"):  # Windows
        return bool(select.select([sock], [], [], 0)[0])
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))
