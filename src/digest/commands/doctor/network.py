"""The checks that reach out, each within our own timeouts: DNS for every feed host and one
feed fetched, a login to each IMAP source, the LLM endpoint and the SMTP server (no mail
sent)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any
from urllib.parse import urlsplit

import openai

from digest.clock import utc_now
from digest.collect.mail.boxes import imap_reachable
from digest.commands.doctor.check import Check, Problem, checked
from digest.commands.doctor.local import feed_url_problem
from digest.config import Config, SourceConfig
from digest.deliver.mail import UNREACHABLE, check_server
from digest.errors import DeliveryError, DigestError, FetchError, SourceError
from digest.store import open_store_read_only

Resolver = Callable[[str, int], Any]  # socket.getaddrinfo's shape: raises OSError if unknown
DNS_TIMEOUT_S = 10.0
SAVED_HOSTS_CHECKED = 3  # with no feed source: hosts of unread saved pages looked up


def check_mailboxes(config: Config) -> Iterator[Check]:
    """A line per IMAP source: logged in, or why not (a refused login names the source)."""
    for source in config.sources:
        if source.kind == "imap" and not source.paused:
            try:
                yield Check(f"source {source.name!r}", True, imap_reachable(source))
            except SourceError as exc:
                fix = "check host, port, security, user and the password it names"
                yield Check(f"source {source.name!r}", False, str(exc), fix)


def _host(source: SourceConfig) -> str | None:
    """The feed's host name, when its URL parses (see feed_url_problem)."""
    if feed_url_problem(source) is not None:
        return None
    return urlsplit((source.url or "").strip()).hostname


def check_network(config: Config, feeds: list[SourceConfig], resolve: Resolver) -> Iterator[Check]:
    """A line per feed host DNS cannot resolve; then one feed fetched, as a collect would."""
    hosts: dict[str, str] = {}  # host -> the first feed naming it
    for source in feeds:
        if (host := _host(source)) is not None:
            hosts.setdefault(host, source.name)
    if not hosts:
        yield _saved_hosts_check(config, resolve)
        return
    unresolved = _unresolved_hosts(list(hosts), resolve)
    for host, why in unresolved.items():
        yield Check(
            f"source {hosts[host]!r}",
            False,
            f"host {host!r} does not resolve ({why})",
            "check the url, and the machine's DNS and network",
        )
    reachable = [s for s in feeds if _host(s) in hosts and _host(s) not in unresolved]
    if reachable:
        yield checked("network", lambda cfg: _fetch_one(cfg, reachable[0]), config)


def _saved_hosts_check(config: Config, resolve: Resolver) -> Check:
    """With no feed to fetch, DNS checked on the hosts of the pages saved and not read."""
    hosts = sorted(set(_saved_hosts(config)))[:SAVED_HOSTS_CHECKED]
    if not hosts:
        return Check("network", True, "nothing to reach yet: no feed sources, no saved pages")
    unresolved = _unresolved_hosts(hosts, resolve)
    if len(unresolved) < len(hosts):
        resolved = ", ".join(host for host in hosts if host not in unresolved)
        return Check(
            "network", True, f"no feed sources; DNS resolves saved pages' hosts ({resolved})"
        )
    host, why = next(iter(unresolved.items()))
    return Check(
        "network",
        False,
        f"DNS resolves none of the {len(hosts)} hosts of saved pages ({host!r}: {why})",
        "check the machine's DNS and network; the pages are fetched when it is back",
    )


def _saved_hosts(config: Config) -> list[str]:
    if not config.db_path.exists():
        return []
    try:
        with open_store_read_only(config.db_path) as store:
            items = store.unread_saved_before(utc_now(), SAVED_HOSTS_CHECKED * 4)
    except DigestError:
        return []  # the database check has said why
    return [host for item in items if item.url and (host := urlsplit(item.url).hostname)]


def _unresolved_hosts(hosts: list[str], resolve: Resolver) -> dict[str, str]:
    """Host -> why DNS failed, looked up side by side, each within DNS_TIMEOUT_S."""
    with ThreadPoolExecutor(max_workers=min(8, len(hosts))) as pool:
        lookups = {host: pool.submit(resolve, host, 443) for host in hosts}
        failed: dict[str, str] = {}
        for host, lookup in lookups.items():
            try:
                lookup.result(timeout=DNS_TIMEOUT_S)
            except FutureTimeout:
                failed[host] = f"no answer within {DNS_TIMEOUT_S:.0f} s"
            except OSError as exc:
                failed[host] = exc.strerror or str(exc)
    return failed


def _fetch_one(config: Config, source: SourceConfig) -> str:
    from digest.fetch.access import access_hint, source_access
    from digest.fetch.client import Fetcher, check_status

    async def fetch() -> None:
        access = source_access(source)  # a private feed is asked with its login
        async with Fetcher(config.fetch) as fetcher:
            url = source.url or ""
            check_status(
                await fetcher.get(
                    url, access.headers, credentials=access.credentials, userinfo=True
                )
            )

    try:
        asyncio.run(fetch())
    except FetchError as exc:
        login = exc.status in (401, 403) and exc.permanent
        fix = access_hint(source) if login else "check the url, and that this machine can reach it"
        raise Problem(f"feed {source.name!r}: {exc}", fix) from exc
    except DigestError as exc:
        raise Problem(
            f"feed {source.name!r}: {exc}", "check the url, and that this machine can reach it"
        ) from exc
    return f"DNS resolves every feed host; feed {source.name!r} answered"


def check_llm(config: Config) -> str:
    llm = config.llm
    if llm.provider == "offline":
        return "offline summariser, no network needed"
    if llm.api_key is None and not llm.effective_base_url:
        raise Problem(
            f"no API key: ${llm.api_key_env} is not set",
            f"set {llm.api_key_env} in the environment, or base_url for a local server",
        )
    client = openai.OpenAI(
        api_key=llm.api_key or "not-needed",
        base_url=llm.effective_base_url,
        timeout=llm.timeout_s,
        max_retries=0,
    )
    try:
        client.chat.completions.create(
            model=llm.model, messages=[{"role": "user", "content": "ping"}], max_tokens=1
        )
    except openai.APIError as exc:
        raise Problem(
            f"{llm.model} at {_endpoint(config)}: {_api_error(exc)}", _llm_fix(exc)
        ) from exc
    finally:
        client.close()
    return f"{llm.model} at {_endpoint(config)} answered"


def _endpoint(config: Config) -> str:
    return config.llm.effective_base_url or "https://api.openai.com/v1"


def _api_error(exc: openai.APIError) -> str:
    status = getattr(exc, "status_code", None)
    message = " ".join(str(getattr(exc, "message", exc)).split())
    return f"{status} {message}" if status else message


def _llm_fix(exc: openai.APIError) -> str:
    if isinstance(exc, openai.AuthenticationError):
        return "check the key in the variable named by [llm] api_key_env"
    if isinstance(exc, openai.NotFoundError):
        return "set [llm] model to a model the server offers"
    if isinstance(exc, openai.APIConnectionError | openai.APITimeoutError):
        return "check [llm] base_url and that the server is up"
    return "see the server's message; `digest now` falls back to offline notes meanwhile"


def check_smtp(config: Config) -> str:
    email = config.email
    if not email.enabled:
        return "email disabled"
    try:
        return check_server(email)
    except DeliveryError as exc:
        raise Problem(str(exc), exc.fix or UNREACHABLE) from exc
