"""The one HTTP client: limits, caps, manual redirects and the private-address guard.

The guard sits in the network backend, so it judges the address actually connected
to (after DNS), on every hop and every new connection: no DNS-rebinding gap.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from ipaddress import IPv4Address, IPv6Address, IPv6Network, ip_address, ip_network
from types import TracebackType
from typing import Any

import httpcore
import httpx

from digest.config import FetchConfig
from digest.errors import BlockedAddress, FetchError

IPAddress = IPv4Address | IPv6Address
Network = Any  # IPv4Network | IPv6Network; `in` on a mixed union does not type-check

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
PERMANENT_REDIRECTS = frozenset({301, 308})
CLIENT_MAX_CONNECTIONS = 16  # one httpx client stalls above ~32 (httpx#3215): use several
DEADLINE_FACTOR = 3  # a whole fetch may take this many times timeout_s, however it trickles
MAX_RETRY_AFTER_S = 86400.0
_SHARED_ADDRESS_SPACE = ip_network("100.64.0.0/10")
_NAT64 = IPv6Network("64:ff9b::/96")
_GUARD_HINT = "(set fetch.allow_private_addresses to allow)"


@dataclass(frozen=True)
class FetchResult:
    url: str  # as requested
    final_url: str  # after redirects
    status: int
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    content: bytes  # decoded (gzip/deflate undone), at most max_bytes
    permanent_redirect: str | None  # the final URL when every redirect hop was 301/308


# -- the address guard (pure) ----------------------------------------------


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


class _AddressRefused(BlockedAddress):
    """Raised inside the transport, which does not know the URL; get() names it."""

    def __init__(self, address: str) -> None:
        super().__init__(f"{address} is a private address {_GUARD_HINT}")
        self.address = address


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves the host itself, refuses disallowed addresses, connects to a vetted IP.

    TLS still uses the host name: httpcore calls start_tls with the origin's host.
    """

    def __init__(self, policy: AddressPolicy, inner: httpcore.AsyncNetworkBackend | None = None):
        self.policy = policy
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await _resolve(host, port)
        allowed = [address for address in addresses if self.policy.allows(address)]
        if not allowed:
            raise _AddressRefused(str(addresses[0]))
        error: Exception | None = None
        for address in allowed:
            try:
                return await self.inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
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


async def _resolve(host: str, port: int) -> list[IPAddress]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise httpcore.ConnectError(f"cannot resolve {host!r}: {exc}") from exc
    addresses = [ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    return list(dict.fromkeys(addresses))


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with our backend plugged into its httpcore pool."""

    def __init__(self, policy: AddressPolicy, limits: httpx.Limits, ssl_context: ssl.SSLContext):
        super().__init__(verify=ssl_context, trust_env=False, limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy),
        )


# -- status and Retry-After ------------------------------------------------


def check_status(result: FetchResult, *, now: datetime | None = None) -> None:
    """Raise FetchError unless the response is 2xx or 304; 4xx (but 408/429) are permanent."""
    status = result.status
    if 200 <= status < 300 or status == 304:
        return
    message = f"fetch failed: {result.url!r}: HTTP {status}"
    if 400 <= status < 500 and status not in (408, 429):
        raise FetchError(message, permanent=True)
    retry_after = parse_retry_after(result.headers.get("retry-after"), now or datetime.now(UTC))
    raise FetchError(message, permanent=False, retry_after=retry_after)


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds from a Retry-After of seconds or an HTTP-date, clamped to [0, 86400]."""
    if not value or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - now).total_seconds()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


# -- the fetcher -----------------------------------------------------------


class Fetcher:
    """`async with Fetcher(config) as f: await f.get(url)`; limits shared by every get."""

    def __init__(self, config: FetchConfig) -> None:
        self.config = config
        self.policy = AddressPolicy(config.allow_private_addresses)
        self.deadline_s = config.timeout_s * DEADLINE_FACTOR
        self._slots = asyncio.Semaphore(config.concurrency)
        self._host_slots: dict[str, asyncio.Semaphore] = {}
        self._clients: list[httpx.AsyncClient] = []
        self._client_slots: list[asyncio.Semaphore] = []

    async def __aenter__(self) -> Fetcher:
        count = -(-self.config.concurrency // CLIENT_MAX_CONNECTIONS)
        limits = httpx.Limits(
            max_connections=CLIENT_MAX_CONNECTIONS, max_keepalive_connections=CLIENT_MAX_CONNECTIONS
        )
        ssl_context = httpx.create_ssl_context(trust_env=False)  # loading CAs is slow: share it
        self._clients = [
            httpx.AsyncClient(
                transport=GuardedTransport(self.policy, limits, ssl_context),
                timeout=httpx.Timeout(self.config.timeout_s),
                headers={"User-Agent": self.config.user_agent, "Accept-Encoding": "gzip, deflate"},
                follow_redirects=False,
                trust_env=False,
            )
            for _ in range(count)
        ]
        self._client_slots = [asyncio.Semaphore(CLIENT_MAX_CONNECTIONS) for _ in range(count)]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        clients, self._clients = self._clients, []
        for client in clients:
            await client.aclose()

    async def get(self, url: str, headers: Mapping[str, str] | None = None) -> FetchResult:
        """GET `url`, following redirects; any HTTP status is a result, see check_status."""
        if not self._clients:
            raise RuntimeError("use Fetcher as an async context manager")
        budget = self.deadline_s  # time spent on the network, not waiting for a slot
        seen, hop_url, permanent = {url}, url, True
        for hops in range(self.config.max_redirects + 1):
            host = _checked_host(hop_url)
            # the host's slot first: a queue for one busy host must not hold global slots
            async with self._host_slot(host), self._slots:
                hop, spent = await self._hop(hop_url, host, headers, budget)
            budget -= spent
            location = hop.headers.get("location")
            if hop.status not in REDIRECT_STATUSES or not location:
                moved = hop_url if permanent and hops > 0 else None
                return replace(hop, url=url, permanent_redirect=moved)
            permanent = permanent and hop.status in PERMANENT_REDIRECTS
            hop_url = _redirect_target(hop_url, location)
            if hop_url in seen:
                raise FetchError(f"fetch failed: {url!r}: redirect loop at {hop_url!r}")
            seen.add(hop_url)
        raise FetchError(f"fetch failed: {url!r}: more than {self.config.max_redirects} redirects")

    def _host_slot(self, host: str) -> asyncio.Semaphore:
        slot = self._host_slots.get(host)
        if slot is None:
            slot = self._host_slots[host] = asyncio.Semaphore(self.config.per_host_concurrency)
        return slot

    async def _hop(
        self, url: str, host: str, headers: Mapping[str, str] | None, budget: float
    ) -> tuple[FetchResult, float]:
        """One request and its body; also the seconds it took, for the fetch's deadline."""
        index = zlib.crc32(host.encode()) % len(self._clients)
        client, clock = self._clients[index], asyncio.get_running_loop().time
        try:
            async with self._client_slots[index]:  # queue here, not in the pool (PoolTimeout)
                started = clock()
                async with asyncio.timeout(max(budget, 0.0)):
                    result = await self._request(client, url, headers)
                return result, clock() - started
        except _AddressRefused as exc:
            raise BlockedAddress(f"fetch refused: {url!r}: {exc}") from exc
        except TimeoutError as exc:
            raise FetchError(
                f"fetch failed: {url!r}: took longer than {self.deadline_s:g}s"
            ) from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise FetchError(f"fetch failed: {url!r}: {_describe(exc)}") from exc

    async def _request(
        self, client: httpx.AsyncClient, url: str, headers: Mapping[str, str] | None
    ) -> FetchResult:
        async with client.stream("GET", url, headers=dict(headers or {})) as response:
            response_headers = {k.lower(): v for k, v in response.headers.items()}
            content = await _read_capped(response, url, self.config.max_bytes)
            return FetchResult(url, url, response.status_code, response_headers, content, None)


def _checked_host(url: str) -> str:
    """The host of an http(s) URL, else FetchError (permanent: ftp:, file:, data: ...)."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise FetchError(f"fetch failed: {url!r}: invalid URL ({exc})", permanent=True) from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise FetchError(
            f"fetch refused: {url!r}: only http and https URLs are fetched", permanent=True
        )
    return parsed.host


def _redirect_target(current: str, location: str) -> str:
    try:
        return str(httpx.URL(current).join(location.strip()))
    except httpx.InvalidURL as exc:
        raise FetchError(f"fetch failed: {current!r}: bad redirect to {location!r}") from exc


def _describe(exc: Exception) -> str:
    detail = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {detail[:200]}" if detail and detail != name else name


async def _read_capped(response: httpx.Response, url: str, max_bytes: int) -> bytes:
    """The decoded body, stopping as soon as it would exceed max_bytes (gzip bombs too)."""
    decoder = _Decoder(response.headers.get("content-encoding", ""), url)
    chunks: list[bytes] = []
    size = 0
    async for raw in response.aiter_raw():
        for chunk in decoder.feed(raw, max_bytes - size + 1):
            size += len(chunk)
            if size > max_bytes:
                raise FetchError(f"fetch failed: {url!r}: body larger than {max_bytes} bytes")
            chunks.append(chunk)
    chunks.append(decoder.finish())
    if size + len(chunks[-1]) > max_bytes:
        raise FetchError(f"fetch failed: {url!r}: body larger than {max_bytes} bytes")
    return b"".join(chunks)


class _Decoder:
    """Undo gzip/deflate a bounded piece at a time: never more than `limit` bytes per step."""

    def __init__(self, encoding: str, url: str) -> None:
        codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise FetchError(f"fetch failed: {url!r}: unsupported Content-Encoding {encoding!r}")
        self.coding = codings[0] if codings else None
        self.url = url
        self._zlib: Any = None

    def feed(self, data: bytes, limit: int) -> Iterable[bytes]:
        if self.coding is None:
            yield data
            return
        while data:
            if self._zlib is None:
                self._zlib = zlib.decompressobj(self._wbits(data))
            try:
                out: bytes = self._zlib.decompress(data, max(limit, 1))
            except zlib.error as exc:
                raise FetchError(f"fetch failed: {self.url!r}: bad {self.coding} body") from exc
            yield out
            limit -= len(out)
            if not self._zlib.eof:
                data = self._zlib.unconsumed_tail
                continue
            data = self._zlib.unused_data  # gzip may hold several members; deflate one
            self._zlib = None
            if self.coding == "deflate" or not data.startswith(b"\x1f\x8b"):
                data = b""

    def finish(self) -> bytes:
        return bytes(self._zlib.flush()) if self._zlib is not None else b""

    def _wbits(self, head: bytes) -> int:
        if self.coding != "deflate":
            return 16 + zlib.MAX_WBITS
        zlib_header = len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0
        return zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS
