"""The fetch stage through the pipeline: retries on later runs, shorteners, posts' links."""

from __future__ import annotations

import asyncio
import json
import multiprocessing.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from multiprocessing import forkserver
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from digest.cli import cli
from digest.clock import REAL_WAITS, Lookup, Waits
from digest.config import Config, FetchConfig
from digest.errors import ExtractError, FailureKind, RunCancelled
from digest.features import feature_text, text_features
from digest.fetch.client import Fetcher
from digest.fetch.guard import FIRST_ANSWER_S
from digest.fetch.pages import (
    PROCESS_POOL_THRESHOLD,
    WORKER_MODULES,
    EarlyStart,
    PageReader,
    Pool,
    stop_fork_server,
)
from digest.fetch.stage import FetchStage, by_host_in_turn
from digest.models import Item, ItemKind, ItemState, SavedItem, StageReport
from digest.notes.requests import note_request
from digest.runtime.context import RunContext
from digest.store import Store, open_store, url_key
from digest.unfetched import unread_line
from loopback import LoopbackServer, Response, serving
from test_quality_pipeline import CHALLENGE_PAGE

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
ARTICLE = (
    "<html><head><title>{title}</title></head><body><article>"
    "<p>{title} opens with a paragraph that says what the article is about, in plain words.</p>"
    + "<p>Then a second paragraph adds detail, numbers and caveats worth keeping.</p>" * 8
    + "</article></body></html>"
)


def article(title: str) -> Response:
    return Response(200, ARTICLE.format(title=title))


class Rig:
    """A store, a fake clock and the fetch stage, run as often as a test likes."""

    def __init__(self, tmp_path: Path, **fetch: Any) -> None:
        settings: dict[str, Any] = {
            "allow_private_addresses": ["127.0.0.0/8"],
            "timeout_s": 5,
            "per_host_delay_s": 0,
            "retry_base_s": 3600,
        }
        self.config_path = tmp_path / "digest.toml"
        self.config = Config(fetch=FetchConfig(**(settings | fetch)))
        self.config_path.write_text(
            f'[digest]\ndata_dir = "{tmp_path / "data"}"\n\n[fetch]\n'
            + "".join(f"{key} = {json.dumps(value)}\n" for key, value in (settings | fetch).items())
        )
        self.store: Store = open_store(tmp_path / "data" / "digest.db")
        self.now = T0

    def save(self, *items: SavedItem, source: str = "inbox") -> None:
        source_id = self.store.ensure_source(source, "file", path=f"/{source}")
        self.store.save_items(source_id, items, self.now)

    def fetch(self, at: datetime, waits: Waits = REAL_WAITS) -> StageReport:
        self.now = at
        run = RunContext(self.store, self.config, lambda: self.now, waits=waits)
        [report] = asyncio.run(FetchStage().run(run)).reports
        return report

    def items(self) -> list[Item]:
        return self.store.all_items()

    def only(self) -> Item:
        [item] = self.items()
        return item


@pytest.fixture
def make_rig(tmp_path: Path) -> Iterator[Callable[..., Rig]]:
    """Rig(tmp_path, **fetch settings); every store it opened is closed afterwards."""
    made: list[Rig] = []

    def make(**fetch: Any) -> Rig:
        made.append(Rig(tmp_path, **fetch))
        return made[-1]

    yield make
    for rig in made:
        rig.store.close()


@pytest.fixture
def rig(make_rig: Callable[..., Rig]) -> Rig:
    return make_rig()


# -- retries on later runs ---------------------------------------------------------------


def test_a_server_error_is_retried_on_a_later_run_after_the_backoff(
    rig: Rig, server: LoopbackServer
) -> None:
    answers = iter([Response(503, "down"), article("Back up")])
    server.routes["/a"] = lambda request: next(answers)
    rig.save(SavedItem(server.url("/a")))

    report = rig.fetch(T0)
    assert report.failures == [
        f"fetch failed: {server.url('/a')!r}: HTTP 503; will retry after 2026-03-02 10:00 UTC"
    ]
    rig.fetch(T0 + HOUR / 2)
    assert len(server.hits("/a")) == 1
    rig.fetch(T0 + HOUR)

    assert len(server.hits("/a")) == 2
    assert rig.only().state is ItemState.FETCHED
    assert "Back up opens" in (rig.only().text or "")


@pytest.mark.parametrize("form", ["seconds", "date"])
def test_retry_after_pushes_the_next_attempt_back(
    rig: Rig, server: LoopbackServer, form: str
) -> None:
    three_hours = "10800" if form == "seconds" else format_datetime(T0 + 3 * HOUR, usegmt=True)
    server.routes["/busy"] = Response(429, "slow down", headers={"Retry-After": three_hours})
    rig.save(SavedItem(server.url("/busy")))

    rig.fetch(T0)
    assert rig.only().next_attempt_at == T0 + 3 * HOUR
    rig.fetch(T0 + 2 * HOUR)  # after the backoff (1 h) but before Retry-After

    assert len(server.hits("/busy")) == 1


def test_a_timeout_is_transient_and_retried(
    make_rig: Callable[..., Rig], server: LoopbackServer
) -> None:
    rig = make_rig(timeout_s=0.3)
    server.routes["/slow"] = Response(200, "late", delay_s=1)
    rig.save(SavedItem(server.url("/slow")))

    rig.fetch(T0)

    item = rig.only()
    assert item.state is ItemState.FAILED
    assert item.error is not None and "timeout: took longer than 0.3s" in item.error
    assert item.next_attempt_at == T0 + HOUR


def test_a_404_is_given_up_after_three_tries_and_status_says_why(
    rig: Rig, server: LoopbackServer
) -> None:
    rig.save(SavedItem(server.url("/gone")))

    for hours in (0, 1, 3, 7, 15):  # after the third: no more tries
        rig.fetch(T0 + hours * HOUR)

    assert len(server.hits("/gone")) == 3
    assert rig.only().gave_up
    shown = CliRunner().invoke(cli, ["status", "--json", "--config", str(rig.config_path)])
    [failed] = json.loads(shown.stdout)["items_to_look_at"]["items"]
    assert failed["error"] == f"fetch failed: {server.url('/gone')!r}: HTTP 404"
    assert failed["next_attempt_at"] is None


def test_a_failure_is_stored_with_its_kind_and_status_and_read_back_as_data(
    make_rig: Callable[..., Rig], server: LoopbackServer
) -> None:
    rig = make_rig(timeout_s=0.3)
    server.routes["/slow"] = Response(200, "late", delay_s=1)
    server.routes["/private"] = Response(402, "pay first")
    rig.save(*(SavedItem(server.url(path)) for path in ("/gone", "/slow", "/private")))

    rig.fetch(T0)

    failed = {item.url: item for item in rig.items()}
    typed = {url: (item.error_kind, item.error_status) for url, item in failed.items()}
    assert typed == {
        server.url("/gone"): (FailureKind.HTTP, 404),
        server.url("/slow"): (FailureKind.TIMEOUT, None),
        server.url("/private"): (FailureKind.HTTP, 402),
    }
    reasons = [unread_line(failed[server.url(path)]) for path in ("/gone", "/slow", "/private")]
    assert reasons == [
        "Page not fetched: page not found; to be tried again later.",
        "Page not fetched: the site did not answer in time; to be tried again later.",
        "Page not fetched: access denied or paywalled; to be tried again later.",
    ]
    server.routes["/gone"] = article("Back")
    rig.fetch(T0 + 3 * HOUR)
    back = next(item for item in rig.items() if item.url == server.url("/gone"))
    assert (back.error, back.error_kind, back.error_status) == (None, None, None)


# -- without a network -------------------------------------------------------------------


async def no_answer(host: str, port: int) -> list[tuple[Any, ...]]:
    """A resolver with no network behind it: waits out its timeouts, then fails."""
    await asyncio.sleep(30)
    raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")


async def no_such_name(host: str, port: int) -> list[tuple[Any, ...]]:
    await asyncio.sleep(0.01)  # the DNS server's answer
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@pytest.mark.parametrize("lookup", [no_answer, no_such_name], ids=["silent", "failing"])
def test_without_a_network_the_fetch_stage_stops_at_once_and_says_so(
    make_rig: Callable[..., Rig], lookup: Lookup
) -> None:
    rig = make_rig(per_host_delay_s=1.0, concurrency=4)
    hosts = [f"site{n}.example" for n in range(10)]
    rig.save(*(SavedItem(f"https://{host}/{page}") for host in hosts for page in range(3)))
    rig.save(post(*(f"https://t.co/{n}" for n in range(5))))

    started = time.monotonic()
    report = rig.fetch(T0, Waits(lookup=lookup))

    assert time.monotonic() - started < FIRST_ANSWER_S + 1.0
    [line] = report.failures
    assert line.startswith("no network: names do not resolve (site0.example, site1.example")
    assert line.endswith(
        ": 30 pages and the links of 1 post not fetched yet;"
        " `digest now --retry` fetches them once you are online"
    )
    assert (report.failed, report.left) == (0, 31)
    [waiting_post] = rig.store.posts_to_follow()
    assert waiting_post.links[0] == "https://t.co/0"


@pytest.mark.parametrize("lookup", [no_answer, no_such_name], ids=["silent", "failing"])
def test_without_a_network_no_page_was_tried_whichever_lookups_went_first(
    make_rig: Callable[..., Rig], lookup: Lookup
) -> None:
    # the first wave of lookups fails before the verdict: its pages must read as the rest
    rig = make_rig(concurrency=4)
    rig.save(*(SavedItem(f"https://site{n}.example/{page}") for n in range(6) for page in range(2)))
    rig.save(post("https://t.co/1", "https://site0.example/linked"))

    report = rig.fetch(T0, Waits(lookup=lookup))

    links = [item for item in rig.items() if item.kind is ItemKind.LINK]
    read_as = {(item.state, item.attempts, item.error, unread_line(item)) for item in links}
    assert read_as == {(ItemState.NEW, 0, None, None)}
    assert len(rig.store.posts_to_follow()) == 1
    [line] = report.failures
    assert line.endswith(
        ": 12 pages and the links of 1 post not fetched yet; `digest now --retry`"
        " fetches them once you are online"
    )


def test_a_host_that_does_not_resolve_is_no_verdict_on_the_network(
    make_rig: Callable[..., Rig], server: LoopbackServer
) -> None:
    rig = make_rig()
    port = server.url("/").split(":")[2].split("/")[0]
    server.routes["/page"] = article("Reachable")

    async def one_known_name(host: str, port: int) -> list[tuple[Any, ...]]:
        if host == "known.example":
            await asyncio.sleep(0.2)  # answers after the unknown names have failed
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return await no_such_name(host, port)

    rig.save(*(SavedItem(f"http://gone{n}.example/") for n in range(5)))
    rig.save(SavedItem(f"http://known.example:{port}/page"))

    report = rig.fetch(T0, Waits(lookup=one_known_name))

    assert report.done == 1
    assert len(report.failures) == 5
    assert all("cannot resolve 'gone" in line for line in report.failures)


# -- the process pool --------------------------------------------------------------------


@pytest.mark.slow
def test_a_big_batch_is_extracted_in_worker_processes_and_leaves_no_files(
    rig: Rig, server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = tmp_path / "tmp"
    spool.mkdir()
    # multiprocessing keeps the temp folder it first sees for the fork server's socket: pin
    # it to the usual one, not the spool this test moves and deletes
    multiprocessing.util.get_temp_dir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    count = PROCESS_POOL_THRESHOLD + 2
    for n in range(count):
        server.routes[f"/p{n}"] = article(f"Article {n}")
    server.routes["/missing-type"] = Response(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 500)
    rig.save(*(SavedItem(server.url(f"/p{n}")) for n in range(count)))
    rig.save(SavedItem(server.url("/missing-type")))

    report = rig.fetch(T0)

    assert report.done == count
    assert len(report.failures) == 1 and "binary content" in report.failures[0]
    texts = {item.url: item.text or "" for item in rig.items()}
    assert all(f"Article {n} opens" in texts[server.url(f"/p{n}")] for n in range(count))
    assert list(spool.glob("digest-pages-*")) == []  # (the fork server's socket dir stays)
    assert not [line for line in child_commands() if "forkserver" in line]  # it stopped too


def child_commands() -> list[str]:
    """The command lines of this process's children (Linux)."""
    tasks = Path("/proc/self/task").iterdir()
    pids = [pid for task in tasks for pid in (task / "children").read_text().split()]
    return [Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ") for pid in pids]


@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the pool is used only with two cores")
def test_the_workers_fork_server_starts_once_the_collect_stage_has_enough_new_items() -> None:
    stop_fork_server()  # one an earlier test left
    early = EarlyStart()

    early(PROCESS_POOL_THRESHOLD - 1)
    assert fork_server_pid() is None
    early(1)
    started = fork_server_pid()
    early(5)  # started once
    assert started is not None and fork_server_pid() == started
    stop_fork_server()
    assert fork_server_pid() is None


def fork_server_pid() -> int | None:
    """The pid of this process's fork server while it runs (None: there is none)."""
    pid: int | None = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    if pid is None:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return pid


@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the pool is used only with two cores")
def test_a_run_whose_feeds_bring_many_pages_leaves_no_fork_server(
    server: LoopbackServer, tmp_path: Path
) -> None:
    count = PROCESS_POOL_THRESHOLD + 2
    when = format_datetime(T0)
    entries = "".join(
        f"<item><title>A{n}</title><link>{server.url(f'/p{n}')}</link><pubDate>{when}</pubDate>"
        "</item>"
        for n in range(count)
    )
    server.routes["/feed.xml"] = Response(
        200, f'<rss version="2.0"><channel><title>F</title>{entries}</channel></rss>'
    )
    for n in range(count):
        server.routes[f"/p{n}"] = article(f"Article {n}")
    config = tmp_path / "digest.toml"
    config.write_text(
        f'[digest]\ndata_dir = "{tmp_path / "data"}"\n[[sources]]\nname = "f"\nkind = "feed"\n'
        f'url = "{server.url("/feed.xml")}"\n[fetch]\nallow_private_addresses = ["127.0.0.0/8"]\n'
        "per_host_delay_s = 0\n"
    )

    result = CliRunner().invoke(cli, ["now", "--config", str(config)], catch_exceptions=False)

    assert result.exit_code == 0, result.output
    with open_store(tmp_path / "data" / "digest.db") as store:
        assert sum(1 for item in store.all_items() if "opens" in (item.text or "")) == count
    assert not [line for line in child_commands() if "forkserver" in line]


@pytest.mark.slow
def test_the_extraction_workers_do_not_import_the_fetcher_or_the_store() -> None:
    # (they compute page features too, which reads the notes' tag words: the notes package,
    # its config and the event loop's module come with them, loaded once in the fork server)
    heavy = ["httpx", "sqlite3", "openai", "digest.store", "digest.fetch.stage"]
    # what the fork server imports for the workers, in a fresh interpreter
    program = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n    importlib.import_module(name)\n"
        f"print([name for name in {heavy!r} if name in sys.modules])"
    )
    run = subprocess.run(
        [sys.executable, "-c", program, *WORKER_MODULES], capture_output=True, text=True
    )

    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


FETCH_IN_A_FRESH_PROCESS = """
import sys
from digest.cli import main
sys.argv = ["digest", "extract", "--config", sys.argv[1]]
main()
"""


@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the pool is used only with two cores")
def test_the_features_the_workers_store_are_those_of_the_item_with_its_page(
    rig: Rig, server: LoopbackServer
) -> None:
    count = PROCESS_POOL_THRESHOLD + 2
    for n in range(count):
        server.routes[f"/p{n}"] = article(f"Article {n} on {'moons' if n % 2 else 'tides'}")
    rig.save(*(SavedItem(server.url(f"/p{n}"), title=f"Saved as {n}") for n in range(count)))

    assert rig.fetch(T0).done == count

    items = rig.items()
    stored = rig.store.features_of([item.id for item in items])
    assert len(stored) == count
    for item in items:
        assert "opens with a paragraph" in (item.text or "")
        assert stored[item.id] == text_features(feature_text(item))


@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the pool is used only with two cores")
def test_a_big_batch_is_extracted_in_process_when_the_workers_cannot_start(
    rig: Rig, server: LoopbackServer, tmp_path: Path
) -> None:
    count = PROCESS_POOL_THRESHOLD + 2
    for n in range(count):
        server.routes[f"/p{n}"] = article(f"Article {n}")
    rig.save(*(SavedItem(server.url(f"/p{n}")) for n in range(count)))
    long_tmp = tmp_path / ("t" * 100) / ("m" * 100)  # no room left for a socket's path
    long_tmp.mkdir(parents=True)

    run = subprocess.run(
        [sys.executable, "-c", FETCH_IN_A_FRESH_PROCESS, str(rig.config_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(long_tmp)},
    )  # fmt: skip

    assert run.returncode == 0, run.stderr
    assert "extraction workers could not start" in run.stdout + run.stderr
    texts = [item.text or "" for item in rig.items()]
    assert len(texts) == count and all("opens" in text for text in texts)


def test_items_are_fetched_one_host_at_a_time_in_turn() -> None:
    def item(n: int, url: str) -> Item:
        return Item(
            n, url, url, None, ItemKind.LINK, T0, None, None, ItemState.NEW, 0, None, None, None
        )

    items = [
        item(1, "https://a.test/1"),
        item(2, "https://a.test/2"),
        item(3, "https://a.test/3"),
        item(4, "https://b.test/1"),
        item(5, "https://c.test/1"),
        item(6, "https://c.test/2"),
    ]

    assert [i.id for i in by_host_in_turn(items)] == [1, 4, 5, 2, 6, 3]


# -- shorteners ----------------------------------------------------------------------------


@pytest.fixture
def shortener(server: LoopbackServer) -> Iterator[LoopbackServer]:
    """A t.co-like server on 127.0.0.2 whose links redirect to articles on `server`."""
    with serving("127.0.0.2") as running:
        running.routes["/abc"] = Response(301, headers={"Location": server.url("/story")})
        running.routes["/broken"] = Response(301, headers={"Location": server.url("/nothing")})
        server.routes["/story"] = article("The story")
        yield running


@pytest.fixture
def shortener_rig(make_rig: Callable[..., Rig]) -> Rig:
    return make_rig(shortener_hosts=["127.0.0.2"])


def test_a_shortened_link_merges_into_the_item_saved_under_its_target(
    shortener_rig: Rig, server: LoopbackServer, shortener: LoopbackServer
) -> None:
    rig = shortener_rig
    rig.save(SavedItem(server.url("/story?utm_source=feed"), saved_at=T0), source="feed")
    rig.save(
        SavedItem(shortener.url("/abc"), saved_at=T0 - HOUR, context="a post about it"),
        source="posts",
    )

    rig.fetch(T0)

    item = rig.only()
    assert item.url == server.url("/story?utm_source=feed")
    assert sorted(item.sources) == ["feed", "posts"]
    assert item.saved_at == T0 - HOUR
    assert item.context == "a post about it"
    assert item.state is ItemState.FETCHED and "The story opens" in (item.text or "")


def test_a_shortened_link_alone_is_keyed_by_its_target_and_keeps_its_saved_url(
    shortener_rig: Rig, server: LoopbackServer, shortener: LoopbackServer
) -> None:
    rig = shortener_rig
    rig.save(SavedItem(shortener.url("/abc")))

    rig.fetch(T0)
    rig.save(SavedItem(server.url("/story")), source="later")

    item = rig.only()
    assert item.key == url_key(server.url("/story"))
    assert item.url == shortener.url("/abc")
    assert sorted(item.sources) == ["inbox", "later"]


def test_a_redirect_from_a_host_that_is_no_shortener_keeps_the_item_key(
    rig: Rig, server: LoopbackServer
) -> None:
    server.routes["/old"] = Response(301, headers={"Location": "/story"})
    server.routes["/story"] = article("Moved")
    rig.save(SavedItem(server.url("/old")))

    rig.fetch(T0)

    assert rig.only().key == url_key(server.url("/old"))


# -- posts' links ----------------------------------------------------------------------------


def post(*links: str) -> SavedItem:
    return SavedItem(None, kind=ItemKind.POST, context="Worth a read, thread below.", links=links)


def test_a_posts_links_are_followed_resolved_and_give_its_note_material(
    shortener_rig: Rig, server: LoopbackServer, shortener: LoopbackServer
) -> None:
    rig = shortener_rig
    rig.save(post(shortener.url("/abc"), shortener.url("/broken")))

    report = rig.fetch(T0)

    item = rig.only()
    assert item.links == (server.url("/story"), shortener.url("/broken"))
    assert item.linked_text == (
        "Linked: The story — The story opens with a paragraph that says what the article"
        " is about, in plain words."
    )
    assert item.error is not None and "HTTP 404" in item.error
    assert report.done == 1 and not report.failures  # the post is read: no failed item
    assert report.info == [f"post {item.id}: 1 link not read ({item.error})"]
    request = note_request(item, ())
    assert request.text == f"Worth a read, thread below.\n\n{item.linked_text}"


def test_a_bot_wall_in_front_of_a_posts_link_gives_no_linked_line(
    rig: Rig, server: LoopbackServer
) -> None:
    server.routes["/story"] = article("The story")
    server.routes["/walled"] = Response(
        403, CHALLENGE_PAGE, headers={"cf-mitigated": "challenge", "server": "cloudflare"}
    )
    rig.save(post(server.url("/story"), server.url("/walled")))

    rig.fetch(T0)

    item = rig.only()
    assert item.linked_text == (
        "Linked: The story — The story opens with a paragraph that says what the article"
        " is about, in plain words."
    )
    assert item.error is not None and "the page was a bot check" in item.error


def test_a_posts_links_are_followed_once(
    shortener_rig: Rig, server: LoopbackServer, shortener: LoopbackServer
) -> None:
    rig = shortener_rig
    rig.save(post(shortener.url("/abc")))

    rig.fetch(T0)
    rig.fetch(T0 + 30 * HOUR)

    assert len(shortener.hits("/abc")) == 1


def test_only_the_first_five_links_of_a_post_are_followed(rig: Rig, server: LoopbackServer) -> None:
    links = [server.url(f"/l{n}") for n in range(7)]
    for n in range(7):
        server.routes[f"/l{n}"] = article(f"Link {n}")
    rig.save(post(*links))

    rig.fetch(T0)

    assert [len(server.hits(f"/l{n}")) for n in range(7)] == [1, 1, 1, 1, 1, 0, 0]
    assert rig.only().links == tuple(links)


# -- review fixes: retries count failures in a row, dead workers, cancelled runs ----------


THIN = Response(
    200, "<html><head><title>Wall</title></head><body><p>Please log in.</p></body></html>"
)


def test_successful_rechecks_do_not_count_towards_giving_up_after_a_404(
    rig: Rig, server: LoopbackServer
) -> None:
    answers = iter([THIN, THIN, Response(404, "gone")])
    server.routes["/wall"] = lambda request: next(answers)
    rig.save(SavedItem(server.url("/wall")))

    rig.fetch(T0)
    assert rig.only().quality is not None and rig.only().next_attempt_at is not None
    rig.fetch(rig.only().next_attempt_at or T0)
    rig.fetch(rig.only().next_attempt_at or T0)

    item = rig.only()
    assert len(server.hits("/wall")) == 3
    assert item.state is ItemState.FAILED and item.failures == 1
    assert not item.gave_up


@pytest.mark.slow
def test_a_dead_extraction_worker_fails_only_its_page_and_the_pool_is_replaced(
    rig: Rig, server: LoopbackServer
) -> None:
    server.routes["/a"] = article("First")
    server.routes["/b"] = article("Second")

    async def scenario() -> tuple[str, str]:
        pool = Pool(2, info=print)
        try:
            async with Fetcher(rig.config.fetch) as fetcher:
                reader = PageReader(fetcher, lambda: T0, 4, pool)
                await reader.read(server.url("/b"))  # the workers start with a first page
                assert pool.executor is not None
                os.kill(pool.executor.submit(os.getpid).result(), signal.SIGKILL)
                with pytest.raises(ExtractError, match="the extraction worker died") as died:
                    for _ in range(1000):  # until the pool has noticed its worker is gone
                        await reader.read(server.url("/a"))
                second = await reader.read(server.url("/b"))
                return str(died.value), second.extracted.text
        finally:
            pool.close()

    error, text = asyncio.run(scenario())

    assert server.url("/a") in error
    assert "Second opens" in text


def test_a_cancelled_fetch_stage_leaves_nothing_running_and_records_nothing_after(
    make_rig: Callable[..., Rig], server: LoopbackServer
) -> None:
    rig = make_rig(per_host_concurrency=2)
    server.routes["/fast"] = article("Fast")
    server.routes["/slow"] = Response(200, ARTICLE.format(title="Slow"), delay_s=1)
    rig.save(SavedItem(server.url("/slow")), SavedItem(server.url("/fast")))

    def stop_after_first(stage: str, done: int, total: int) -> None:
        raise RunCancelled(f"{stage} stopped after {done} of {total} items")

    async def scenario() -> set[asyncio.Task[object]]:
        run = RunContext(rig.store, rig.config, lambda: T0, progress=stop_after_first)
        with pytest.raises(RunCancelled, match="fetch stopped after 1 of 2"):
            await FetchStage().run(run)
        return asyncio.all_tasks() - {asyncio.current_task()}

    assert asyncio.run(scenario()) == set()
    states = {item.url: (item.state, item.attempts, item.error) for item in rig.items()}
    assert states[server.url("/fast")][0] is ItemState.FETCHED
    assert states[server.url("/slow")] == (ItemState.NEW, 0, None)


@pytest.mark.parametrize("target_saved", [True, False], ids=["merged", "alone"])
def test_a_settled_shortened_link_collected_again_stays_one_item_and_is_not_fetched_again(
    shortener_rig: Rig, server: LoopbackServer, shortener: LoopbackServer, target_saved: bool
) -> None:
    rig = shortener_rig
    if target_saved:
        rig.save(SavedItem(server.url("/story"), saved_at=T0), source="feed")
    rig.save(SavedItem(shortener.url("/abc"), saved_at=T0 - HOUR), source="posts")
    rig.fetch(T0)
    fetched = len(server.hits("/story"))

    rig.save(SavedItem(shortener.url("/abc"), saved_at=T0 - HOUR), source="posts")
    rig.fetch(T0 + 2 * HOUR)

    item = rig.only()
    assert item.key == url_key(server.url("/story")) and item.saved_at == T0 - HOUR
    assert len(shortener.hits("/abc")) == 1
    assert len(server.hits("/story")) == fetched
