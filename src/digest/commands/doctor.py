"""`digest doctor`: is this installation able to run? One line per check, with the fix.

Checks the config, the data folder, the database, the sources, the prompt files, the voice of the audio
edition when it is enabled, the network (DNS for
every feed host, and one feed), a login to each IMAP source, the LLM endpoint and the SMTP server, each with our
own timeouts. It writes nothing: the data folder is checked with access(2), the
database is opened read-only (never created or migrated), no mail is sent. The config
comes first: without it nothing else can be checked.
"""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai

from digest.audio.voices import NoVoice, voice_for
from digest.clock import utc_now
from digest.collect.mail.boxes import imap_reachable
from digest.config import MAIL_KINDS, Config, SourceConfig, load_config, user_config_path
from digest.deliver.mail import UNREACHABLE, check_server
from digest.errors import DeliveryError, DigestError, FetchError, SourceError
from digest.notes.prompts import PROMPT_FILE_KEYS, PromptProblem, check_prompt_file
from digest.store import open_store_read_only, schema_differences
from digest.urls import holds_secret

Resolver = Callable[[str, int], Any]  # socket.getaddrinfo's shape: raises OSError if unknown
DNS_TIMEOUT_S = 10.0
SAVED_HOSTS_CHECKED = 3  # with no feed source: hosts of unread saved pages looked up


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str  # what was found
    fix: str = ""  # what to do, for a problem

    def line(self) -> str:
        if self.ok:
            return f"{self.name}: ok ({self.detail})"
        return f"{self.name}: problem: {self.detail}; fix: {self.fix}"


class Problem(Exception):
    def __init__(self, detail: str, fix: str):
        super().__init__(detail)
        self.detail, self.fix = detail, fix


def run_checks(
    config_path: Path | None, *, local: bool = False, resolve: Resolver = socket.getaddrinfo
) -> Iterator[Check]:
    """Each check as it finishes; a config that does not load ends the list.

    `local` leaves out the network, the LLM and SMTP servers: a health check that runs
    every few minutes must not spend tokens or open mail sessions.
    """
    try:
        config = load_config(config_path)
    except DigestError as exc:
        yield Check("config", False, str(exc), "correct the file at the place named")
        return
    yield Check("config", True, str(config.path) if config.path else _no_config_file())
    yield from secrets_exposed(config)
    yield _checked("data dir", check_data_dir, config)
    yield _checked("database", check_database, config)
    feeds = _feed_sources(config)
    yield from check_sources(config, feeds)
    yield from check_prompt_files(config)
    if config.audio.enabled:
        yield _checked("audio", check_audio, config)
    if local:
        return
    yield from check_network(config, feeds, resolve)
    yield from check_mailboxes(config)
    yield _checked("llm", check_llm, config)
    yield _checked("smtp", check_smtp, config)


def _no_config_file() -> str:
    return f"no config file, built-in defaults; `digest init` writes {user_config_path()}"


def secrets_exposed(config: Config) -> Iterator[Check]:
    """A problem for the config file, and the database that keeps its feeds' URLs, when
    a source URL holds a password or token and others may read the file."""
    holding = [s.name for s in config.sources if s.url and holds_secret(s.url)]
    if not holding:
        return
    for name, path in (("config secrets", config.path), ("database secrets", config.db_path)):
        mode = path.stat().st_mode if path is not None and path.exists() else 0
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            yield Check(
                name,
                False,
                f"{path} is readable by others (mode {stat.S_IMODE(mode):o}) and holds a"
                f" password or token (source {holding[0]!r})",
                f"chmod 600 {path}",
            )


def _checked(name: str, check: Callable[[Config], str], config: Config) -> Check:
    try:
        return Check(name, True, check(config))
    except Problem as problem:
        return Check(name, False, problem.detail, problem.fix)


def check_data_dir(config: Config) -> str:
    """Writable, or creatable by the first run; asked of the kernel, nothing written."""
    folder = config.data_dir
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        raise Problem(f"{existing} is a file, not a folder", "move it aside or set data_dir")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise Problem(
            f"{existing} is not writable",
            f"create {folder} and give the user running digest (uid {os.getuid()}) write access",
        )
    return str(folder) if existing == folder else f"{folder}, created by the first run"


def check_database(config: Config) -> str:
    path = config.db_path
    if not path.exists():
        return f"{path} not created yet; the first run creates it"
    try:
        store = open_store_read_only(path)
    except DigestError as exc:
        raise Problem(str(exc), "check the file's permissions, or move it aside") from exc
    with store:
        try:
            problems = store.integrity_problems()
            pending, unknown = schema_differences(store)
            items = store.count_items() if not pending else None
        except DigestError as exc:
            raise Problem(str(exc), "restore the database from a backup, or move it aside") from exc
    if problems:
        raise Problem(
            f"{path} fails integrity_check: {problems[0]}",
            "restore it from a backup, or `sqlite3 digest.db .recover` into a new file",
        )
    if unknown:
        raise Problem(
            f"{path} was used by a newer digest (schema step {unknown[-1]})",
            "upgrade digest, or restore a backup made before the upgrade",
        )
    if pending:
        return f"{path}, {len(pending)} schema steps to apply on the next run"
    return f"{path}, schema up to date, {items} items"


def _feed_sources(config: Config) -> list[SourceConfig]:
    """The config's feeds and, when the database can be read, the feeds imported into it."""
    feeds = [source for source in config.sources if source.kind == "feed"]
    if not config.db_path.exists():
        return feeds
    from digest.collect.feedlists import imported_feed_sources

    try:
        with open_store_read_only(config.db_path) as store:
            return feeds + [source for _, source in imported_feed_sources(store, config.sources)]
    except DigestError:
        return feeds  # the database check has said why


def check_sources(config: Config, feeds: list[SourceConfig]) -> Iterator[Check]:
    """A line per file source that cannot be read and per feed URL that does not parse."""
    problems = [
        *(
            _file_source_problem(source)
            for source in config.sources
            if source.kind in ("file", "maildir", "mbox")
        ),
        *(_feed_url_problem(source) for source in feeds),
    ]
    yield from filter(None, problems)
    if not any(problems):
        files = sum(source.kind == "file" for source in config.sources)
        mail = sum(source.kind in MAIL_KINDS for source in config.sources)
        mailboxes = f", mailboxes: {mail}" if mail else ""
        yield Check("sources", True, f"feeds: {len(feeds)}, file sources: {files}{mailboxes}")


def check_mailboxes(config: Config) -> Iterator[Check]:
    """A line per IMAP source: logged in, or why not (a refused login names the source)."""
    for source in config.sources:
        if source.kind == "imap" and not source.paused:
            try:
                yield Check(f"source {source.name!r}", True, imap_reachable(source))
            except SourceError as exc:
                fix = "check host, port, security, user and the password it names"
                yield Check(f"source {source.name!r}", False, str(exc), fix)


def _file_source_problem(source: SourceConfig) -> Check | None:
    path = source.path
    assert path is not None  # the config requires it for a file source
    name = f"source {source.name!r}"
    if not path.exists():
        return Check(name, False, f"{path} does not exist", "create it, or correct its path")
    wanted = os.R_OK | (os.X_OK if path.is_dir() else 0)
    if not os.access(path, wanted):
        return Check(name, False, f"{path} is not readable", f"give uid {os.getuid()} read access")
    return None


def _feed_url_problem(source: SourceConfig) -> Check | None:
    url = source.url or ""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018  (raises ValueError on a malformed port)
    except ValueError as exc:
        reason = str(exc)
    else:
        reason = "" if parts.scheme in ("http", "https") else "not an http(s) URL"
        reason = reason or ("" if parts.hostname else "no host name")
    if not reason:
        return None
    return Check(f"source {source.name!r}", False, f"{url!r}: {reason}", "correct its url")


def _host(source: SourceConfig) -> str | None:
    """The feed's host name, when its URL parses (see _feed_url_problem)."""
    if _feed_url_problem(source) is not None:
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
        yield _checked("network", lambda cfg: _fetch_one(cfg, reachable[0]), config)


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


def check_prompt_files(config: Config) -> Iterator[Check]:
    """Each prompt file of [llm]: one that does not parse or uses a variable it is not
    given is a problem (a run uses the built-in prompt instead, and exits 3)."""
    for key in PROMPT_FILE_KEYS:
        try:
            check_prompt_file(config.llm, key)
        except PromptProblem as problem:
            fix = "correct the file at the line named; `digest prompts export DIR` writes working ones"
            yield Check(f"llm.{key}", False, str(problem), fix)
        else:
            if (path := getattr(config.llm, key)) is not None:
                yield Check(f"llm.{key}", True, str(path))


def check_audio(config: Config) -> str:
    """A voice that can speak the audio edition (a Piper model is loaded, nothing spoken)."""
    try:
        return f"{voice_for(config.audio).name} speaks the audio edition"
    except NoVoice as exc:
        raise Problem(
            str(exc).removeprefix("audio: "),
            "apt-get install espeak-ng, or set [audio] voice to a Piper voice model",
        ) from exc


def check_smtp(config: Config) -> str:
    email = config.email
    if not email.enabled:
        return "email disabled"
    try:
        return check_server(email)
    except DeliveryError as exc:
        raise Problem(str(exc), exc.fix or UNREACHABLE) from exc
