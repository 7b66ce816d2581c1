"""The one HTTP client: limits, politeness, caps, deadlines and manual redirects.

Every connection goes through the private-address guard of `digest.fetch.guard`. Bodies
are read within bounds by `digest.fetch.bodies`: only gzip and deflate are asked for and
accepted (no bounded brotli decoder ships with Python, so `br` is neither advertised nor
read).
"""

from __future__ import annotations

import asyncio
import functools
import io
import ssl
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from types import TracebackType
from urllib.parse import urlsplit

import httpx

from digest.clock import REAL_WAITS, Waits, utc_now
from digest.config import FetchConfig
from digest.errors import BlockedAddress, FailureKind, FetchError, NoNetwork
from digest.fetch.access import Credentials
from digest.fetch.bodies import BinaryGate, Sink, read_capped
from digest.fetch.guard import (
    AddressPolicy,
    AddressRefused,
    GuardedTransport,
    Resolver,
    UnresolvedHost,
)
from digest.fetch.retry_after import retry_after_s
from digest.urls import BadURL, parse_url, without_userinfo

HTTP = FailureKind.HTTP
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
PERMANENT_REDIRECTS = frozenset({301, 308})
CLIENT_MAX_CONNECTIONS = 16  # one httpx client stalls above ~32 (httpx#3215): use several
# Hosts are spread over at least this many clients, so that idle connections to about
# 8 × 16 hosts stay open: a host's next request, a per-host delay later, reuses one
# (in bench/fetch_extract.py: a fifth less CPU in the fetching process).
MIN_CLIENTS = 8
MAX_RETRY_AFTER_S = 86400.0
ACCEPT_ENCODING = "gzip, deflate"
# Cloudflare's managed challenge ("Just a moment..."): a bot wall, not a refusal
CHALLENGE_STATUSES = frozenset({403, 429, 503})


@dataclass(frozen=True)
class FetchResult:
    url: str  # as requested
    final_url: str  # after redirects
    status: int
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    content: bytes  # decoded (gzip/deflate undone), at most max_bytes; b"" if streamed to a sink
    permanent_redirect: str | None  # the final URL when every redirect hop was 301/308
    truncated: bool = False  # cut at max_bytes (only when get() was asked to cut, not refuse)


# -- status and Retry-After ------------------------------------------------


def is_challenge(result: FetchResult) -> bool:
    """A bot wall's challenge (Cloudflare's `cf-mitigated: challenge` on a 403, 429 or 503):
    no answer about the page, which a later fetch may well get."""
    mitigated = {part.strip() for part in result.headers.get("cf-mitigated", "").lower().split(",")}
    return result.status in CHALLENGE_STATUSES and "challenge" in mitigated


def check_status(result: FetchResult, *, now: datetime | None = None) -> None:
    """Raise FetchError unless the response is 2xx or 304; 4xx (but 408/429 and a bot
    challenge) are permanent."""
    status = result.status
    if 200 <= status < 300 or status == 304:
        return
    challenge = is_challenge(result)
    reason = f"HTTP {status} (a bot challenge)" if challenge else f"HTTP {status}"
    if 400 <= status < 500 and status not in (408, 429) and not challenge:
        raise FetchError(reason, url=result.url, permanent=True, kind=HTTP, status=status)
    retry_after = retry_after_s(result.headers, now or utc_now(), cap_s=MAX_RETRY_AFTER_S)
    raise FetchError(reason, url=result.url, retry_after=retry_after, kind=HTTP, status=status)


# -- the fetcher -----------------------------------------------------------


@functools.cache
def ca_context() -> ssl.SSLContext:
    """The certificate authorities, loaded once per process: loading them takes ~30 ms,
    and every run opens a fetcher (the daemon: every collect)."""
    return httpx.create_ssl_context(trust_env=False)


class Fetcher:
    """`async with Fetcher(config) as f: await f.get(url)`; limits shared by every get.

    Per host: at most `per_host_concurrency` requests at once, their starts at least
    `per_host_delay_s` apart. In all: `concurrency` requests, spread over several
    clients of at most CLIENT_MAX_CONNECTIONS each.
    """

    def __init__(self, config: FetchConfig, waits: Waits = REAL_WAITS) -> None:
        """`waits` spaces out the requests to one host (per_host_delay_s)."""
        self.config = config
        self.monotonic = waits.monotonic
        self.sleep = waits.sleep
        self.policy = AddressPolicy(config.allow_private_addresses)
        self.resolver = Resolver(waits.lookup)
        self.deadline_s = config.timeout_s  # wall clock for one fetch, redirects included
        self._slots = asyncio.Semaphore(config.concurrency)
        self._host_slots: dict[str, asyncio.Semaphore] = {}
        self._unresolved: dict[str, str] = {}  # host -> why DNS failed, earlier in this run
        self._held_off: dict[str, float] = {}  # host -> when (self.monotonic) its Retry-After ends
        self._host_next_start: dict[str, float] = {}
        self._clients: list[httpx.AsyncClient] = []
        self._client_slots: list[asyncio.Semaphore] = []

    async def __aenter__(self) -> Fetcher:
        count = max(-(-self.config.concurrency // CLIENT_MAX_CONNECTIONS), MIN_CLIENTS)
        limits = httpx.Limits(
            max_connections=CLIENT_MAX_CONNECTIONS, max_keepalive_connections=CLIENT_MAX_CONNECTIONS
        )
        ssl_context = ca_context()
        self._clients = [
            httpx.AsyncClient(
                transport=GuardedTransport(self.policy, limits, ssl_context, self.resolver),
                timeout=httpx.Timeout(self.config.timeout_s),
                headers={"User-Agent": self.config.user_agent, "Accept-Encoding": ACCEPT_ENCODING},
                follow_redirects=False,
                trust_env=False,  # an environment proxy would route around the guard
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

    async def get(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        sink: Sink | None = None,
        skip_binary: bool = False,
        truncate: bool = False,
        credentials: Credentials | None = None,
        userinfo: bool = False,
    ) -> FetchResult:
        """GET `url`, following redirects; any HTTP status is a result, see check_status.

        `credentials` are added to the requests to their own site only, never to a host a
        redirect leads to. A user name and password in `url` are sent only with `userinfo`
        (a configured source's own URL); a saved link is requested without them, and a
        redirect carrying any is refused.

        With a `sink`, the final body is written there as it arrives, not kept in memory.
        With `truncate`, a body over max_bytes is cut there (`truncated`), not refused.
        With `skip_binary`, a body whose headers and first bytes say binary is not read on:
        SkippedContent. A host that answered 429 or 503 with Retry-After gets no request
        until that time: FetchError at once, carrying what is left of the wait.
        """
        if not self._clients:
            raise RuntimeError("use Fetcher as an async context manager")
        budget = self.deadline_s  # time spent on the network, not waiting for a slot
        hop_url = url if userinfo else without_userinfo(url)
        seen, permanent = {hop_url}, True
        for hops in range(self.config.max_redirects + 1):
            host = _checked_host(hop_url)
            self._check_reachable(url, host)
            # the host's slot first: a queue for one busy host must not hold global slots
            async with self._host_slot(host):
                self._check_reachable(url, host)  # again, each time after a wait
                await self._space_out(host)
                async with self._slots:
                    self._check_reachable(url, host)
                    self._check_held_off(url, host)
                    sent = {
                        **(headers or {}),
                        **(credentials.for_url(hop_url) if credentials else {}),
                    }
                    hop, spent = await self._hop(
                        hop_url, host, sent, budget, sink, (skip_binary, truncate)
                    )
            budget -= spent
            self._hold_off_if_asked(host, hop)
            location = _redirect_location(hop)
            if location is None:
                moved = hop_url if permanent and hops > 0 else None
                return replace(hop, url=url, permanent_redirect=moved)
            permanent = permanent and hop.status in PERMANENT_REDIRECTS
            hop_url = _no_downgrade(hop_url, _redirect_target(hop_url, location))
            if hop_url in seen:
                raise FetchError(f"redirect loop at {hop_url!r}", url=url, permanent=True)
            seen.add(hop_url)
        raise FetchError(
            f"more than {self.config.max_redirects} redirects", url=url, permanent=True
        )

    def _host_slot(self, host: str) -> asyncio.Semaphore:
        slot = self._host_slots.get(host)
        if slot is None:
            slot = self._host_slots[host] = asyncio.Semaphore(self.config.per_host_concurrency)
        return slot

    @property
    def offline(self) -> str | None:
        """Why no name resolves, when the fetches so far found that out; else None."""
        return self.resolver.offline

    def _check_reachable(self, url: str, host: str) -> None:
        """NoNetwork once names do not resolve at all; the host's DNS failure, if it had one."""
        if (offline := self.resolver.offline) is not None:
            raise NoNetwork(offline, url=url)
        if (why := self._unresolved.get(host)) is not None:
            raise FetchError(why, url=url, kind=FailureKind.UNRESOLVED)

    def _check_held_off(self, url: str, host: str) -> None:
        left = self._held_off.get(host, 0.0) - self.monotonic()
        if left > 0:
            raise FetchError(
                f"fetch postponed: {url!r}: {host} asked to wait {left:.0f} s more (Retry-After)",
                retry_after=left,
                kind=HTTP,
                status=429,
            )

    def _hold_off_if_asked(self, host: str, hop: FetchResult) -> None:
        """A 429 or 503 with Retry-After holds back the whole host for the time asked."""
        if hop.status not in (429, 503):
            return
        wait = retry_after_s(hop.headers, utc_now(), cap_s=MAX_RETRY_AFTER_S)
        if wait:
            self._held_off[host] = self.monotonic() + wait

    async def _space_out(self, host: str) -> None:
        """Wait until `per_host_delay_s` has passed since the last request to `host` began."""
        now = self.monotonic()
        start = max(now, self._host_next_start.get(host, now))
        self._host_next_start[host] = start + self.config.per_host_delay_s
        if start > now:
            await self.sleep(start - now)

    async def _hop(
        self,
        url: str,
        host: str,
        headers: Mapping[str, str] | None,
        budget: float,
        sink: Sink | None,
        body_options: tuple[bool, bool],  # skip_binary, truncate
    ) -> tuple[FetchResult, float]:
        """One request and its body; also the seconds it took, for the fetch's deadline."""
        index = zlib.crc32(host.encode()) % len(self._clients)
        client, clock = self._clients[index], asyncio.get_running_loop().time
        try:
            async with self._client_slots[index]:  # queue here, not in the pool (PoolTimeout)
                started = clock()
                async with asyncio.timeout(max(budget, 0.0)):
                    result = await self._request(client, url, headers, sink, *body_options)
                return result, clock() - started
        except AddressRefused as exc:
            raise BlockedAddress(str(exc), url=url) from exc
        except TimeoutError as exc:
            raise FetchError(
                f"timeout: took longer than {self.deadline_s:g}s", url=url, kind=FailureKind.TIMEOUT
            ) from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            why, kind = describe_error(exc), _failure_kind(exc)
            if kind is FailureKind.UNRESOLVED:
                self._unresolved[host] = why  # its other URLs fail at once, not spaced out
            raise FetchError(why, url=url, kind=kind) from exc

    async def _request(
        self,
        client: httpx.AsyncClient,
        url: str,
        headers: Mapping[str, str] | None,
        sink: Sink | None,
        skip_binary: bool,
        truncate: bool,
    ) -> FetchResult:
        async with client.stream("GET", url, headers=dict(headers or {})) as response:
            response_headers = {k.lower(): v for k, v in response.headers.items()}
            status = response.status_code
            kept = io.BytesIO()
            redirect = status in REDIRECT_STATUSES and "location" in response_headers
            target: Sink = kept if sink is None or redirect else sink
            if skip_binary and not redirect and 200 <= status < 300:
                target = BinaryGate(url, response_headers.get("content-type"), target)
            cut = await read_capped(response, url, self.config.max_bytes, target.write, truncate)
            if isinstance(target, BinaryGate):
                target.close()
            return FetchResult(url, url, status, response_headers, kept.getvalue(), None, cut)


def _failure_kind(exc: httpx.HTTPError | httpx.InvalidURL) -> FailureKind:
    if _caused_by(exc, UnresolvedHost):
        return FailureKind.UNRESOLVED
    if isinstance(exc, httpx.TimeoutException):
        return FailureKind.TIMEOUT
    if isinstance(exc, httpx.NetworkError):  # refused, reset, broken
        return FailureKind.REFUSED
    return FailureKind.OTHER


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, kind):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _redirect_location(hop: FetchResult) -> str | None:
    return hop.headers.get("location") if hop.status in REDIRECT_STATUSES else None


def _checked_host(url: str) -> str:
    """The host of an http(s) URL, else FetchError (permanent: ftp:, file:, data: ...)."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise FetchError(f"invalid URL ({exc})", url=url, permanent=True) from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise BlockedAddress("only http and https URLs are fetched", url=url)
    return parsed.host


def _redirect_target(current: str, location: str) -> str:
    """Where a redirect leads, read by urls.parse_url like every URL that comes in."""
    try:
        target = str(httpx.URL(current).join(location.strip()))
    except httpx.InvalidURL as exc:
        raise FetchError(f"bad redirect to {location[:200]!r}", url=current) from exc
    if isinstance(checked := parse_url(target, credentials=False), BadURL):
        raise FetchError(
            f"bad redirect to {location[:200]!r}: {checked.reason}", url=current, permanent=True
        )
    return target


def _no_downgrade(current: str, target: str) -> str:
    """`target`, unless it leaves https for plain http: refused for good, never requested."""
    if urlsplit(current).scheme.lower() == "https" and urlsplit(target).scheme.lower() == "http":
        raise FetchError(
            f"fetch refused: {current!r}: redirect from https down to http ({target!r})",
            permanent=True,
        )
    return target


def describe_error(problem: object) -> str:
    """`Type: message` on one line, the message cut at 200 characters; the type alone when
    the message says nothing more."""
    name = type(problem).__name__
    detail = " ".join(str(problem).split())[:200]
    return f"{name}: {detail}" if detail and detail != name else name
