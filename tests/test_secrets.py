"""Passwords and tokens in URLs never leave: every output shows them redacted."""

from __future__ import annotations

import re
import sqlite3
import string
from email.message import Message
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from digest.cli import cli
from digest.runtime.logs import redact
from digest.urls import for_display
from loopback import LOOPBACK_FETCH, LoopbackServer, Response
from mailrig import Sink

WEEK = "2026-W47"
# Each holds a `'`, legal in userinfo and in a query value, that once cut every redaction short.
SECRETS = (
    "feed'pw",
    "feed'token",
    "article'pw",
    "article'key",
    "broken'pw",
    "journal'pw",
    "gone'pw",
)


def test_redaction_masks_userinfo_and_secret_parameters_only() -> None:
    url = "https://ann:pw1@h.test/a?id=7&token=t1&API_KEY=k1&X-Amz-Signature=s1&monkey=ok#f"
    assert for_display(url) == (
        "https://***@h.test/a?id=7&token=***&API_KEY=***&X-Amz-Signature=***&monkey=ok#f"
    )
    message = "fetch failed: 'http://u:p@h.test/x?sig=abc': HTTP 500; mail a@b.test"
    assert (
        for_display(message)
        == "fetch failed: 'http://***@h.test/x?sig=***': HTTP 500; mail a@b.test"
    )
    assert for_display("https://h.test/plain?page=2") == "https://h.test/plain?page=2"


@given(st.text(alphabet="abc:@/?&=#", max_size=12), st.text(alphabet="xyz0", min_size=1))
def test_redaction_never_lets_a_password_through(noise: str, password: str) -> None:
    url = f"https://user:{password}SECRET@host.test/{noise}?token={password}SECRET"
    assert "SECRET" not in for_display(url)
    assert for_display(for_display(url)) == for_display(url)


# RFC 3986 userinfo: unreserved, sub-delims and ":" raw, anything else percent-encoded.
USERINFO_CHARS = string.ascii_letters + string.digits + "-._~!$&'()*+,;=:"
userinfo_text = st.lists(
    st.one_of(st.sampled_from(USERINFO_CHARS), st.from_regex(r"%[0-9A-Fa-f]{2}", fullmatch=True)),
    min_size=1,
    max_size=24,
).map("".join)


@pytest.mark.slow
@given(
    user=userinfo_text.filter(lambda user: ":" not in user),
    password=userinfo_text,
    path=st.sampled_from(["", "/", "/q", "/a/b?x=1", "?q=2", "#frag"]),
    before=st.sampled_from(["", "fetch failed: '", "<", "(", '"url": "', "see "]),
    after=st.sampled_from(["", "': HTTP 500", ">", ").", '",', " and more"]),
)
def test_no_legal_password_gets_through_for_display(
    user: str, password: str, path: str, before: str, after: str
) -> None:
    shown = for_display(f"{before}http://{user}:{password}@host.test{path}{after}")
    assert shown == f"{before}http://***@host.test{path}{after}"
    assert for_display(shown) == shown


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://bob:PW'x@host/q", "http://***@host/q"),
        (
            "http://bob:PW%27x@h.test?pass=p1&sid=s2;session=s3",
            "http://***@h.test?pass=***&sid=***;session=***",
        ),
        (
            "https://h.test/?auth=a&sig=b&code=c&PHPSESSID=d&apiKey=e&page=2",
            "https://h.test/?auth=***&sig=***&code=***&PHPSESSID=***&apiKey=***&page=2",
        ),
        (
            "https://h.test/cb#access_token=t&state=ok",
            "https://h.test/cb#access_token=***&state=ok",
        ),
        ("'https://h.test/?token=abc'", "'https://h.test/?token=***'"),
        (
            "mail bob@host.test, https://h.test/@bob?monkey=1",
            "mail bob@host.test, https://h.test/@bob?monkey=1",
        ),
    ],
)
def test_passwords_and_secret_query_values_are_redacted(url: str, shown: str) -> None:
    assert for_display(url) == shown


def test_hosts_mixing_scripts_are_shown_in_punycode() -> None:
    assert for_display("see https://p\u0430ypal.com/login") == "see https://xn--pypal-4ve.com/login"
    for single_script in (
        "https://bücher.example/",
        "https://日本のドメイン.jp/",
        "https://пример.рф/",
    ):
        assert for_display(single_script) == single_script


def test_the_log_filter_uses_the_same_redaction() -> None:
    assert (
        redact("see https://u:p@h.test/?access_token=abc")
        == "see https://***@h.test/?access_token=***"
    )


def feed(server: LoopbackServer) -> str:
    base = f"127.0.0.1:{server.port}"
    entries = [
        ("Fine article", f"http://alice:article'pw@{base}/posts/fine?api_key=article'key"),
        ("Broken article", f"http://bob:broken'pw@{base}/posts/broken"),
    ]
    items = "".join(
        f"<item><title>{title}</title><link>{link.replace('&', '&amp;')}</link>"
        "<pubDate>Tue, 17 Nov 2026 09:00:00 GMT</pubDate></item>"
        for title, link in entries
    )
    return (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>{items}</channel></rss>'
    )


def article(title: str) -> str:
    body = "".join(
        f"<p>{title} sentence {n} says something worth keeping here.</p>" for n in range(12)
    )
    return f"<html><head><title>{title}</title></head><body><article>{body}</article></body></html>"


def write_config(tmp_path: Path, server: LoopbackServer, smtp_port: int) -> Path:
    base = f"127.0.0.1:{server.port}"
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "til.md").write_text(
        "## 2026-11-18\n"
        f"- [Journal article](http://carol:journal'pw@{base}/posts/journal)\n"
        f"- [Journal broken](http://dave:journal'pw@{base}/posts/missing)\n"
    )
    config = tmp_path / "digest.toml"
    config.write_text(
        f"""
[digest]
data_dir = "data"

[[sources]]
name = "blog"
kind = "feed"
url = "http://reader:feed'pw@{base}/feed.xml?token=feed'token"

[[sources]]
name = "gone"
kind = "feed"
url = "http://old:gone'pw@{base}/missing.xml"

[[sources]]
name = "inbox"
kind = "file"
path = "inbox"

{LOOPBACK_FETCH}
[email]
enabled = true
host = "127.0.0.1"
port = {smtp_port}
security = "none"

[output]
notes_dir = "data/notes"
"""
    )
    return config


def mail_text(message: Message) -> str:
    parts = [part.get_payload(decode=True) for part in message.walk() if not part.is_multipart()]
    return "".join(part.decode() for part in parts if isinstance(part, bytes))


def run(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config)], catch_exceptions=False)


def test_passwords_in_feed_and_journal_urls_are_absent_from_every_output(
    tmp_path: Path, sink: tuple[Sink, int], server: LoopbackServer
) -> None:
    mailbox, smtp_port = sink
    server.routes["/feed.xml"] = Response(200, feed(server), content_type="application/rss+xml")
    server.routes["/posts/fine"] = Response(200, article("Fine article"))
    server.routes["/posts/journal"] = Response(200, article("Journal article"))
    server.routes["/posts/broken"] = Response(500, "down")
    config = write_config(tmp_path, server, smtp_port)
    results = [run(config, "now", "--week", WEEK)]
    results += [run(config, *command) for command in (["status"], ["status", "--json"])]
    results.append(run(config, "sources", "list"))
    results.append(run(config, "export"))

    article_requests = server.hits("/posts/fine") + server.hits("/posts/journal")
    feed_requests = server.hits("/feed.xml")

    data = tmp_path / "data"
    with sqlite3.connect(data / "digest.db") as db:
        errors = db.execute(
            "SELECT error FROM items UNION ALL SELECT last_error FROM sources"
            " UNION ALL SELECT error FROM deliveries"
        ).fetchall()
        stored_urls = [row[0] for row in db.execute("SELECT url FROM items")]
        places = database_places(db)
    outputs = {
        "stdout and stderr": "".join(r.output for r in results),
        "error columns": repr(errors),
        "digest, log and feed": "".join(
            p.read_text() for p in sorted(data.rglob("*")) if p.suffix in (".md", ".xml")
        ),
        "mail": "".join(mail_text(message) for message in mailbox.messages()),
    }
    assert "Fine article" in outputs["digest, log and feed"]
    assert list((data / "notes").glob("*fine-article*.md")), "the vault was written"
    assert "Fine article" in outputs["stdout and stderr"]  # the export too
    assert "HTTP 500" in outputs["error columns"] and "HTTP 404" in outputs["error columns"]
    assert (
        "https://***@" in outputs["stdout and stderr"]
        or "http://***@" in outputs["stdout and stderr"]
    )
    assert "Fine article" in outputs["mail"]
    # a saved link's login is linked without its `***@`: the link opens the page
    assert "](http://***@" not in outputs["digest, log and feed"]
    assert re.search(r"\]\(http://127\.0\.0\.1:\d+/posts/journal", outputs["digest, log and feed"])
    for where, text in outputs.items():
        leaked = [secret for secret in SECRETS if secret in text]
        assert not leaked, f"{leaked} in {where}"
    # A saved link keeps its query (a signed URL needs it) but not its password, which
    # was never sent; the configured feed's are kept, to be sent to its own host only.
    assert any("***@" in url and "article'key" in url for url in stored_urls)
    assert article_requests and not any("authorization" in r.headers for r in article_requests)
    assert all("authorization" in r.headers for r in feed_requests)
    fetchable = {"items.url", "items.key", "items.final_url"}
    source = {"sources.url", "sources.fetch_url"}
    for secret, allowed in [
        ("feed'pw", source),
        ("feed'token", source),
        ("gone'pw", source),
        ("article'key", fetchable),
        ("article'pw", set()),
        ("broken'pw", set()),
        ("journal'pw", set()),
    ]:
        found = {place for place, text in places if secret in text}
        assert found <= allowed, f"{secret} in {found - allowed}"
    files = [p for p in data.rglob("*") if p.is_file() and not p.name.startswith("digest.db")]
    for file in files:
        leaked = [secret for secret in SECRETS if secret.encode() in file.read_bytes()]
        assert not leaked, f"{leaked} in {file}"


def database_places(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """Every text value of every table, as ("table.column", text)."""
    tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    places = []
    for table in tables:
        cursor = db.execute(f'SELECT * FROM "{table}"')
        columns = [column[0] for column in cursor.description]
        for row in cursor:
            places += [(f"{table}.{c}", str(v)) for c, v in zip(columns, row, strict=True) if v]
    return places


PRIVATE_FEED = "http://reader:s3cr'et@feeds.test/private.xml?token=t0k'en"


def private_feed_config(tmp_path: Path) -> Path:
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n\n'
        f'[[sources]]\nname = "private"\nkind = "feed"\nurl = "{PRIVATE_FEED}"\n'
    )
    return config


def test_sources_export_redacts_unless_asked_for_the_secrets(tmp_path: Path) -> None:
    config = private_feed_config(tmp_path)
    shown = run(config, "sources", "export", "--opml")
    assert shown.exit_code == 0
    assert "s3cr" not in shown.output and "t0k" not in shown.output
    assert "http://***@feeds.test/private.xml?token=***" in shown.output
    kept = run(config, "sources", "export", "--opml", "--include-secrets")
    assert "reader:s3cr&apos;et@" in kept.output or "reader:s3cr'et@" in kept.output


def test_the_database_is_created_readable_by_its_owner_only(tmp_path: Path) -> None:
    config = private_feed_config(tmp_path)
    assert run(config, "add", "https://example.test/a").exit_code == 0
    for file in (tmp_path / "data").glob("digest.db*"):
        assert file.stat().st_mode & 0o777 == 0o600, file


def test_doctor_warns_of_a_config_or_database_others_can_read_holding_a_password(
    tmp_path: Path,
) -> None:
    config = private_feed_config(tmp_path)
    assert run(config, "add", "https://example.test/a").exit_code == 0
    database = tmp_path / "data" / "digest.db"
    for path in (config, database):
        path.chmod(0o644)
    warned = run(config, "doctor", "--local")
    for name, path in (("config", config), ("database", database)):
        assert f"{name} secrets: problem: {path} is readable by others" in warned.output
        assert f"fix: chmod 600 {path}" in warned.output
    assert "s3cr" not in warned.output
    for path in (config, database):
        path.chmod(0o600)
    assert "secrets" not in run(config, "doctor", "--local").output


def test_a_debug_traceback_shows_no_password(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text(
        '[[sources]]\nname = "bad"\nkind = "feed"\nurl = "http://bob:PW\'x@host.test:99999/"\n'
    )
    failed = CliRunner().invoke(cli, ["--debug", "sources", "list", "--config", str(config)])
    assert failed.exit_code == 1
    assert "Traceback" in failed.output and "bad port" in failed.output
    assert "PW'x" not in failed.output and "PW\\'x" not in failed.output
