"""What a private feed sends: its login, headers and cookies, read from where the config
points (the environment or a file) at the moment of the request, never kept anywhere.

The credentials go only to the site of the URL the config names: a redirect to another
host, or a permanent move remembered from one, gets the public headers alone.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from digest.config import ENV_PREFIX, BasicAuth, BearerAuth, Config, SourceConfig
from digest.errors import SourceError
from digest.urls import DEFAULT_PORTS
from digest.userfiles import UserFileError, read_small_text


@dataclass(frozen=True)
class Credentials:
    """Headers for one site only: that of `url`."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)

    def for_url(self, url: str) -> Mapping[str, str]:
        return self.headers if same_site(self.url, url) else {}


@dataclass(frozen=True)
class Access:
    """A source's requests: `headers` for every hop, `credentials` for its own site."""

    headers: Mapping[str, str] = field(default_factory=dict)
    credentials: Credentials | None = None


PUBLIC = Access()


def same_site(origin: str, target: str) -> bool:
    """Same host and port; http to https on their default ports counts as the same."""
    a, b = urlsplit(origin), urlsplit(target)
    if (a.hostname or "").lower() != (b.hostname or "").lower() or not a.hostname:
        return False
    port_a = a.port or DEFAULT_PORTS.get(a.scheme.lower())
    port_b = b.port or DEFAULT_PORTS.get(b.scheme.lower())
    upgrade = (a.scheme.lower(), port_a, port_b) == ("http", 80, 443) and b.scheme == "https"
    return port_a == port_b or upgrade


def source_access(source: SourceConfig) -> Access:
    """The headers of `source`'s requests; SourceError naming the setting whose secret is
    missing (never its value)."""
    headers = {"User-Agent": source.user_agent} if source.user_agent else {}
    if not source.is_private or not source.url:
        return Access(headers)
    private = {name: _value(source, f"headers.{name}", v) for name, v in source.headers.items()}
    if source.cookies:
        pairs = (f"{n}={_value(source, f'cookies.{n}', v)}" for n, v in source.cookies.items())
        private["Cookie"] = "; ".join(pairs)
    if source.auth is not None:
        private["Authorization"] = _authorization(source)
    return Access(headers, Credentials(source.url, private))


def access_hint(source: SourceConfig) -> str:
    """What to check when the feed answers 401 or 403."""
    where = f"[[sources]] {source.name!r}"
    auth = source.auth
    if isinstance(auth, BasicAuth):
        secret = f"${auth.password_env}" if auth.password_env else str(auth.password_file)
        return f"check {where} auth: username {auth.username!r} and the password in {secret}"
    if isinstance(auth, BearerAuth):
        secret = f"${auth.token_env}" if auth.token_env else str(auth.token_file)
        return f"check {where} auth: the token in {secret}"
    if source.headers or source.cookies:
        return f"check {where} headers and cookies"
    return f"a private feed: give {where} auth, headers or cookies"


def secrets_of(source: SourceConfig) -> list[str]:
    """The secret values `source` sends (for masking in logs); those unset are left out."""
    try:
        access = source_access(source)
    except SourceError:
        return []
    sent = access.credentials.headers.values() if access.credentials else ()
    return [value for value in sent if value]


def config_secrets(config: Config) -> list[str]:
    """The secret values the config points at (they live in the environment or in files):
    the mail password, the API key and what private feeds send, for the log to mask."""
    sources = [secret for source in config.sources for secret in secrets_of(source)]
    return [secret for secret in (config.email.password, config.llm.api_key) if secret] + sources


def basic_login(source: SourceConfig) -> tuple[str, str] | None:
    """The user name and password of a basic `auth`, None for another kind or none."""
    auth = source.auth
    if not isinstance(auth, BasicAuth):
        return None
    return auth.username, _secret(source, "auth.password", auth.password_env, auth.password_file)


def _authorization(source: SourceConfig) -> str:
    if (login := basic_login(source)) is not None:
        return "Basic " + base64.b64encode(":".join(login).encode()).decode("ascii")
    auth = source.auth
    assert isinstance(auth, BearerAuth)
    return "Bearer " + _secret(source, "auth.token", auth.token_env, auth.token_file)


def _value(source: SourceConfig, key: str, value: str) -> str:
    if value.startswith(ENV_PREFIX):
        return _secret(source, key, value.removeprefix(ENV_PREFIX), None)
    return value


def _secret(source: SourceConfig, key: str, env: str | None, file: Path | None) -> str:
    where = f"feed {source.name!r}: {key}"
    if env is not None:
        value = os.environ.get(env, "")
        if not value:
            raise SourceError(f"{where}: the environment variable {env} is not set")
        return _one_line(value, f"{where}: ${env}", header=key != "auth.password")
    assert file is not None
    text = _secret_file(file, where).strip()
    if not text:
        raise SourceError(f"{where}: {file} is empty")
    return _one_line(text, f"{where}: {file}", header=key != "auth.password")


def _secret_file(file: Path, where: str) -> str:
    """A password or token file's text: a regular file (a FIFO would block the run) of at
    most 64 KB."""
    try:
        return read_small_text(file, "a secret")
    except UserFileError as exc:
        raise SourceError(f"{where}: {exc}") from exc


def _one_line(value: str, where: str, *, header: bool = True) -> str:
    """`value`, one line; ASCII when it goes into a header as it is (`header`: a basic
    auth's password is base64-encoded from UTF-8)."""
    if any(ord(c) < 32 and c != "\t" or ord(c) == 127 for c in value):
        raise SourceError(f"{where} holds a line break or control character")
    if header and not value.isascii():
        raise SourceError(f"{where} holds characters HTTP headers cannot carry (not ASCII)")
    return value
