"""Private feeds: a login, a token, cookies and headers from the environment or a file,
sent only to the feed's own host and never stored."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from digest.collect.feeds import collect_feeds
from digest.commands.doctor import run_checks
from digest.config import Config, FetchConfig, SourceConfig, parse_config
from digest.errors import ConfigError
from digest.fetch.access import config_secrets, same_site, source_access
from digest.fetch.client import Fetcher
from digest.models import StageReport
from digest.store import Store
from loopback import LoopbackServer, Request, Response, serving
from stores import store_at

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
RSS = """<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>Private</title>
<item><title>Members only</title><link>https://private.test/1</link></item>
</channel></rss>"""
PASSWORD = "pa55-w0rd"
TOKEN = "t0ken-abc"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = store_at(tmp_path / "digest.db")
    yield opened
    opened.close()


def source(tmp_path: Path, url: str, settings: str) -> SourceConfig:
    """The one [[sources]] of a config file holding `settings`."""
    text = f'[[sources]]\nname = "private"\nkind = "feed"\nurl = "{url}"\n{settings}\n'
    return parse_config(text, tmp_path / "digest.toml").sources[0]


def collect(store: Store, feed: SourceConfig) -> StageReport:
    settings = FetchConfig(allow_private_addresses=True, timeout_s=5, per_host_delay_s=0)
    assert feed.url is not None
    source_id = store.ensure_source(feed.name, "feed", url=feed.url)

    async def run() -> StageReport:
        async with Fetcher(settings) as fetcher:
            return await collect_feeds(store, fetcher, [(source_id, feed)], settings, NOW)

    return asyncio.run(run())


def wanting(header: str, value: str) -> object:
    def handler(request: Request) -> Response:
        if request.headers.get(header) != value:
            return Response(401, "log in", headers={"WWW-Authenticate": 'Basic realm="x"'})
        return Response(200, RSS, content_type="application/rss+xml")

    return handler


def test_basic_auth_reads_the_password_from_the_environment(
    server: LoopbackServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEED_PASSWORD", PASSWORD)
    expected = "Basic " + base64.b64encode(f"me:{PASSWORD}".encode()).decode()
    server.routes["/feed"] = wanting("authorization", expected)  # type: ignore[assignment]
    auth = 'auth = { type = "basic", username = "me", password_env = "FEED_PASSWORD" }'

    report = collect(store, source(tmp_path, server.url("/feed"), auth))

    assert (report.done, report.failures) == (1, [])


def test_bearer_token_is_read_from_a_file_named_by_the_config(
    server: LoopbackServer, store: Store, tmp_path: Path
) -> None:
    (tmp_path / "token.txt").write_text(TOKEN + "\n")
    server.routes["/feed"] = wanting("authorization", f"Bearer {TOKEN}")  # type: ignore[assignment]
    auth = 'auth = { type = "bearer", token_file = "token.txt" }'

    report = collect(store, source(tmp_path, server.url("/feed"), auth))

    assert (report.done, report.failures) == (1, [])


def test_cookies_headers_and_user_agent_reach_the_feed(
    server: LoopbackServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEED_SESSION", "s3ss10n")
    server.routes["/feed"] = wanting("cookie", "session=s3ss10n; lang=en")  # type: ignore[assignment]
    settings = (
        'cookies = { session = "env:FEED_SESSION", lang = "en" }\n'
        'headers = { X-Api-Client = "digest" }\nuser_agent = "MyReader/2"'
    )

    report = collect(store, source(tmp_path, server.url("/feed"), settings))

    assert (report.done, report.failures) == (1, [])
    (request,) = server.hits("/feed")
    assert request.headers["x-api-client"] == "digest"
    assert request.headers["user-agent"] == "MyReader/2"


def test_credentials_do_not_follow_a_redirect_to_another_host(
    server: LoopbackServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEED_PASSWORD", PASSWORD)
    monkeypatch.setenv("FEED_SESSION", "s3ss10n")
    with serving("127.0.0.2") as other:
        other.routes["/feed"] = Response(200, RSS, content_type="application/rss+xml")
        server.routes["/feed"] = Response(302, headers={"Location": other.url("/feed")})
        settings = (
            'auth = { type = "basic", username = "me", password_env = "FEED_PASSWORD" }\n'
            'cookies = { session = "env:FEED_SESSION" }\nheaders = { X-Key = "env:FEED_SESSION" }'
        )

        report = collect(store, source(tmp_path, server.url("/feed"), settings))

        assert report.done == 1
        (first,) = server.hits("/feed")
        (moved,) = other.hits("/feed")
    assert {"authorization", "cookie", "x-key"} <= set(first.headers)
    assert not {"authorization", "cookie", "x-key"} & set(moved.headers)
    assert PASSWORD not in str(moved.headers) and "s3ss10n" not in str(moved.headers)


def test_a_refused_login_names_the_source_and_the_setting_and_no_secret(
    server: LoopbackServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEED_PASSWORD", "wrong-" + PASSWORD)
    server.routes["/feed"] = wanting("authorization", "Basic nope")  # type: ignore[assignment]
    auth = 'auth = { type = "basic", username = "me", password_env = "FEED_PASSWORD" }'

    (failure,) = collect(store, source(tmp_path, server.url("/feed"), auth)).failures

    assert failure.startswith("feed 'private' (")
    assert "HTTP 401; check [[sources]] 'private' auth: username 'me' and the password in" in (
        failure
    )
    assert "$FEED_PASSWORD" in failure and PASSWORD not in failure
    assert PASSWORD.encode() not in (tmp_path / "digest.db").read_bytes()


def test_a_feed_refusing_a_source_without_login_says_to_give_one(
    server: LoopbackServer, store: Store, tmp_path: Path
) -> None:
    server.routes["/feed"] = Response(403, "members only")

    (failure,) = collect(store, source(tmp_path, server.url("/feed"), "")).failures

    assert "HTTP 403; a private feed: give [[sources]] 'private' auth, headers or cookies" in (
        failure
    )


def test_an_unset_variable_is_named_and_nothing_is_sent(
    server: LoopbackServer, store: Store, tmp_path: Path
) -> None:
    server.routes["/feed"] = Response(200, RSS, content_type="application/rss+xml")
    auth = 'auth = { type = "bearer", token_env = "FEED_TOKEN" }'

    (failure,) = collect(store, source(tmp_path, server.url("/feed"), auth)).failures

    assert "feed 'private': auth.token: the environment variable FEED_TOKEN is not set" in failure
    assert server.hits("/feed") == []


def test_source_secrets_are_masked_in_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEED_TOKEN", TOKEN)
    feed = source(
        tmp_path, "https://private.test/feed", 'auth = {type="bearer", token_env="FEED_TOKEN"}'
    )

    assert f"Bearer {TOKEN}" in config_secrets(Config(sources=[feed]))


@pytest.mark.parametrize(
    ("origin", "target", "same"),
    [
        ("https://a.test/feed", "https://a.test/other", True),
        ("https://a.test/feed", "https://A.TEST:443/x", True),
        ("http://a.test/feed", "https://a.test/feed", True),  # an upgrade
        ("https://a.test/feed", "https://b.test/feed", False),
        ("https://a.test/feed", "https://a.test:8443/feed", False),
        ("https://a.test/feed", "https://sub.a.test/feed", False),
        ("http://a.test:8080/feed", "https://a.test/feed", False),
    ],
)
def test_same_site_is_host_and_port(origin: str, target: str, same: bool) -> None:
    assert same_site(origin, target) is same


def test_a_public_source_sends_only_its_user_agent(tmp_path: Path) -> None:
    access = source_access(source(tmp_path, "https://a.test/feed", 'user_agent = "R/1"'))

    assert access.headers == {"User-Agent": "R/1"} and access.credentials is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            'auth = { type = "basic", username = "me" }',
            "give password_env (an environment variable) or password_file, one of them",
        ),
        ('auth = { type = "digest" }', "sources[1].auth"),
        ('headers = { "Bad Name" = "x" }', "'Bad Name' is not a valid header or cookie name"),
        ('headers = { Host = "x" }', "'Host' is set by digest itself"),
        ('user_agent = "a\\nb"', "holds a line break"),
        (
            'headers = { X-Api-Key = "clé☃" }',
            "sources[1].headers: the value of 'X-Api-Key' holds 'é'",
        ),
        ('cookies = { session = "ü" }', "which HTTP headers cannot carry: only visible ASCII"),
        ('user_agent = "bot ☃"', "holds '☃', which HTTP headers cannot carry"),
    ],
)
def test_bad_access_settings_are_config_errors(tmp_path: Path, settings: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        source(tmp_path, "https://a.test/feed", settings)

    assert message in str(raised.value)


def test_access_settings_on_a_file_source_are_refused(tmp_path: Path) -> None:
    text = '[[sources]]\nname = "inbox"\nkind = "file"\npath = "inbox"\ncookies = { a = "b" }\n'

    with pytest.raises(ConfigError, match="auth, headers, cookies and user_agent are for feed"):
        parse_config(text, tmp_path / "digest.toml")


def test_doctor_asks_a_private_feed_with_its_login_and_names_the_setting_on_401(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.routes["/feed"] = wanting("authorization", f"Bearer {TOKEN}")  # type: ignore[assignment]
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n[fetch]\nallow_private_addresses = true\n'
        f'[[sources]]\nname = "private"\nkind = "feed"\nurl = "{server.url("/feed")}"\n'
        'auth = { type = "bearer", token_env = "FEED_TOKEN" }\n'
    )

    monkeypatch.setenv("FEED_TOKEN", TOKEN)
    answered = [check.line() for check in run_checks(config)]
    monkeypatch.setenv("FEED_TOKEN", "wrong")
    refused = [check.line() for check in run_checks(config) if not check.ok]

    assert "network: ok (DNS resolves every feed host; feed 'private' answered)" in answered
    assert refused[0].endswith("fix: check [[sources]] 'private' auth: the token in $FEED_TOKEN")


def test_a_feed_that_sets_a_cookie_on_a_redirect_gets_it_back(
    server: LoopbackServer, store: Store, tmp_path: Path
) -> None:
    def handler(request: Request) -> Response:
        if "visited=yes" in request.headers.get("cookie", ""):
            return Response(200, RSS, content_type="application/rss+xml")
        return Response(
            302, headers={"Location": "/feed?welcome", "Set-Cookie": "visited=yes; Path=/"}
        )

    server.routes["/feed"] = handler

    report = collect(store, source(tmp_path, server.url("/feed"), ""))

    assert (report.done, report.failures) == (1, [])
    assert [("cookie" in hit.headers) for hit in server.hits("/feed")] == [False, True]


def test_a_token_file_that_is_a_fifo_fails_that_feed_at_once(
    server: LoopbackServer, store: Store, tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "token.fifo")
    server.routes["/feed"] = wanting("authorization", f"Bearer {TOKEN}")  # type: ignore[assignment]
    auth = 'auth = { type = "bearer", token_file = "token.fifo" }'

    started = time.monotonic()
    report = collect(store, source(tmp_path, server.url("/feed"), auth))

    assert time.monotonic() - started < 30  # wide for a loaded machine; a FIFO read blocks forever
    (failure,) = report.failures
    assert "auth.token: " in failure and "token.fifo is not a regular file (a FIFO" in failure
    assert not server.requests


def test_a_token_file_too_large_to_be_a_secret_is_refused(
    server: LoopbackServer, store: Store, tmp_path: Path
) -> None:
    (tmp_path / "token.txt").write_text("x" * 100_000)
    auth = 'auth = { type = "bearer", token_file = "token.txt" }'

    report = collect(store, source(tmp_path, server.url("/feed"), auth))

    assert "token.txt is over 64 KB: not a secret" in report.failures[0]


def test_a_header_from_the_environment_that_is_not_ascii_fails_that_feed_in_one_line(
    server: LoopbackServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEED_KEY", "clé☃")

    report = collect(
        store, source(tmp_path, server.url("/feed"), 'headers = { X-Key = "env:FEED_KEY" }')
    )

    assert "$FEED_KEY holds characters HTTP headers cannot carry" in report.failures[0]
