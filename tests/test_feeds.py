from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from digest.collect.feed_entries import parse_feed, strip_declarations
from digest.collect.feedparts import feed_parts
from digest.collect.feeds import FeedPoll, collect_feeds, poll_feed
from digest.config import FetchConfig, SourceConfig
from digest.errors import SourceError
from digest.fetch.client import Fetcher, FetchResult
from digest.models import FeedState, ItemKind, StageReport
from digest.store import Store
from loopback import LoopbackServer, Request, Response
from stores import store_at

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
RSS = "application/rss+xml"

RSS_20 = """<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>Example blog</title><link>http://blog.test/</link>
<item><title>First   post</title><link>/posts/1</link>
  <pubDate>Mon, 02 Mar 2026 08:30:00 +0100</pubDate>
  <description>&lt;p&gt;Hello &lt;b&gt;world&lt;/b&gt;&lt;/p&gt;
     &lt;p&gt;again&lt;/p&gt;</description>
</item>
<item><title>No link here</title><description>orphan</description></item>
<item><title>Second post</title><link>https://elsewhere.test/2</link></item>
</channel></rss>"""

ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom site</title><id>urn:x</id>
<updated>2026-03-01T10:00:00Z</updated>
<entry><title type="html">Atom &lt;em&gt;entry&lt;/em&gt;</title><id>urn:1</id>
  <link rel="alternate" href="https://atom.test/entry-1"/>
  <updated>2026-03-01T10:00:00Z</updated>
  <summary type="html">&lt;p&gt;Atom summary&lt;/p&gt;</summary></entry>
</feed>"""

RDF = """<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
  xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel rdf:about="https://rdf.test/"><title>RDF site</title><link>https://rdf.test/</link>
  <description>d</description>
  <items><rdf:Seq><rdf:li resource="https://rdf.test/a"/></rdf:Seq></items></channel>
<item rdf:about="https://rdf.test/a"><title>RDF item</title><link>https://rdf.test/a</link>
  <dc:date>2026-02-28T12:00:00+00:00</dc:date><description>An RDF item.</description></item>
</rdf:RDF>"""

JSON_FEED = {
    "version": "https://jsonfeed.org/version/1.1",
    "title": "JSON site",
    "items": [
        {
            "id": "1",
            "url": "https://json.test/1",
            "title": "JSON one",
            "date_published": "2026-03-01T18:00:00+02:00",
            "content_html": "<p>Rich <i>text</i></p>",
        },
        {"id": "2", "external_url": "/relative", "title": "JSON two", "summary": "short"},
        {"id": "3", "content_text": "no url at all"},
    ],
}

LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE rss [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<rss version="2.0"><channel><title>Laughs</title>
<item><title>Laugh &lol9;</title><link>https://laughs.test/1</link>
<description>&lol9;&lol9;</description></item>
</channel></rss>"""

LATIN1 = """<?xml version="1.0" encoding="ISO-8859-1"?>
<rss version="2.0"><channel><title>Caf\u00e9 blog</title>
<item><title>Caf\u00e9 \u00e0 No\u00ebl</title><link>https://latin.test/cafe</link>
<description>Cr\u00e8me br\u00fbl\u00e9e</description></item>
</channel></rss>""".encode("latin-1")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = store_at(tmp_path / "digest.db")
    yield opened
    opened.close()


def config(**overrides: Any) -> FetchConfig:
    defaults = {"allow_private_addresses": True, "timeout_s": 5, "per_host_delay_s": 0}
    return FetchConfig(**(defaults | overrides))


def feed_source(store: Store, name: str, url: str) -> tuple[int, SourceConfig]:
    return store.ensure_source(name, "feed", url=url), SourceConfig(name=name, kind="feed", url=url)


def collect(
    store: Store, feeds: list[tuple[int, SourceConfig]], now: datetime = NOW, **overrides: Any
) -> StageReport:
    settings = config(**overrides)

    async def run() -> StageReport:
        async with Fetcher(settings) as fetcher:
            return await collect_feeds(store, fetcher, feeds, settings, now)

    return asyncio.run(run())


def poll(state: FeedState) -> FeedPoll:
    async def run() -> FeedPoll:
        async with Fetcher(config()) as fetcher:
            return await poll_feed(fetcher, state)

    return asyncio.run(run())


def poll_url(url: str) -> FeedPoll:
    return poll(FeedState(source_id=1, url=url))


# -- formats -------------------------------------------------------------------


def test_rss_20_entries_become_links_with_resolved_urls_and_plain_context(
    server: LoopbackServer,
) -> None:
    server.routes["/feed"] = Response(200, RSS_20, content_type=RSS)

    got = poll_url(server.url("/feed"))

    first, second = got.entries
    assert first.url == server.url("/posts/1")
    assert first.title == "First post"
    assert first.saved_at == datetime(2026, 3, 2, 7, 30, tzinfo=UTC)
    assert first.context == "Hello world again"
    assert (first.kind, first.topic) == (ItemKind.LINK, None)
    assert second.url == "https://elsewhere.test/2" and second.saved_at is None
    assert got.skipped == 1
    assert not got.not_modified and not got.gone


def test_atom_entries_are_parsed_with_html_titles_made_plain(server: LoopbackServer) -> None:
    server.routes["/atom"] = Response(200, ATOM, content_type="application/atom+xml")

    (entry,) = poll_url(server.url("/atom")).entries

    assert entry.url == "https://atom.test/entry-1"
    assert entry.title == "Atom entry"
    assert entry.saved_at == datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    assert entry.context == "Atom summary"


def test_rss_10_rdf_entries_are_parsed(server: LoopbackServer) -> None:
    server.routes["/rdf"] = Response(200, RDF, content_type="application/rdf+xml")

    (entry,) = poll_url(server.url("/rdf")).entries

    assert (entry.url, entry.title) == ("https://rdf.test/a", "RDF item")
    assert entry.saved_at == datetime(2026, 2, 28, 12, 0, tzinfo=UTC)
    assert entry.context == "An RDF item."


def test_json_feed_is_parsed_and_items_without_url_are_skipped(server: LoopbackServer) -> None:
    server.routes["/feed.json"] = Response(
        200, json.dumps(JSON_FEED), content_type="application/feed+json"
    )

    got = poll_url(server.url("/feed.json"))

    one, two = got.entries
    assert (one.url, one.title, one.context) == ("https://json.test/1", "JSON one", "Rich text")
    assert one.saved_at == datetime(2026, 3, 1, 16, 0, tzinfo=UTC)
    assert (two.url, two.context, two.saved_at) == (server.url("/relative"), "short", None)
    assert got.skipped == 1


def test_json_without_a_json_feed_version_is_not_a_feed(server: LoopbackServer) -> None:
    server.routes["/api"] = Response(200, '{"items": []}', content_type="application/json")

    with pytest.raises(SourceError, match="not a feed"):
        poll_url(server.url("/api"))


def test_html_page_is_not_a_feed(server: LoopbackServer) -> None:
    server.routes["/page"] = Response(200, "<html><body><p>Just a page<p>unclosed</body>")

    with pytest.raises(SourceError) as caught:
        poll_url(server.url("/page"))

    assert str(caught.value).startswith(f"feed {server.url('/page')!r}: not a feed (")


def test_truncated_feed_with_only_an_empty_item_is_no_feed_read(server: LoopbackServer) -> None:
    server.routes["/cut"] = Response(200, "<rss><channel><item>", content_type=RSS)

    with pytest.raises(SourceError, match="ends inside an entry .* no whole entry before"):
        poll_url(server.url("/cut"))


def test_a_feed_cut_off_inside_its_third_item_keeps_two_and_is_partial(
    server: LoopbackServer, store: Store
) -> None:
    items = "".join(
        f"<item><title>Post {n}</title><link>https://blog.test/{n}</link></item>" for n in (1, 2)
    )
    whole = f"<rss version='2.0'><channel><title>t</title>{items}"
    server.routes["/feed"] = Response(
        200,
        whole + "<item><title>Post 3 is cut he",
        content_type=RSS,
        headers={"ETag": '"v1"'},
    )
    source = feed_source(store, "blog", server.url("/feed"))
    report = collect(store, [source])
    assert sorted(item.url or "" for item in store.all_items()) == [
        "https://blog.test/1",
        "https://blog.test/2",
    ]
    reason = "the document ends inside an entry (cut off): only the 2 whole entries before it read"
    assert report.info == [f"feed 'blog' read in part: {reason}"] and report.failures == []
    [row] = store.list_sources()
    assert (row.status, row.last_error) == ("partial", reason)
    assert store.feed_state(source[0]).etag is None  # read whole next time, not a 304

    server.routes["/feed"] = Response(200, whole + "</channel></rss>", content_type=RSS)
    collect(store, [source], now=NOW + timedelta(hours=1))
    [row] = store.list_sources()
    assert (row.status, row.last_error) == ("ok", None)


def test_well_formed_html_page_with_a_title_is_not_a_feed(server: LoopbackServer) -> None:
    page = "<html><head><title>Home</title></head><body><p>hi</p></body></html>"
    server.routes["/home"] = Response(200, page, content_type="application/xhtml+xml")

    with pytest.raises(SourceError, match="not a feed"):
        poll_url(server.url("/home"))


def test_empty_feed_has_no_entries_and_is_no_error(server: LoopbackServer) -> None:
    empty = '<?xml version="1.0"?><rss version="2.0"><channel><title>Quiet</title></channel></rss>'
    server.routes["/quiet"] = Response(200, empty, content_type=RSS)

    assert poll_url(server.url("/quiet")).entries == []


def test_billion_laughs_doctype_is_stripped_and_parses_quickly(server: LoopbackServer) -> None:
    server.routes["/laughs"] = Response(200, LAUGHS, content_type=RSS)

    started = time.monotonic()
    got = poll_url(server.url("/laughs"))

    assert time.monotonic() - started < 30  # a wide margin: expanding the entities never ends
    (entry,) = got.entries
    assert entry.url == "https://laughs.test/1"
    assert len(entry.title or "") < 100 and len(entry.context or "") < 100


def test_declarations_are_cut_but_cdata_and_comments_are_kept() -> None:
    body = (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b > ] c">]><!-- <!ENTITY no> -->'
        b"<x><![CDATA[<!DOCTYPE kept>]]><!ENTITY stray 'y'></x>"
    )

    assert strip_declarations(body) == (
        b'<?xml version="1.0"?><!-- <!ENTITY no> --><x><![CDATA[<!DOCTYPE kept>]]></x>'
    )


def test_unterminated_doctype_is_cut_to_the_end() -> None:
    assert strip_declarations(b'<?xml version="1.0"?><!DOCTYPE x [ <!ENTITY a "') == (
        b'<?xml version="1.0"?>'
    )


def test_utf16_body_has_its_doctype_stripped_too() -> None:
    body = '<?xml version="1.0" encoding="utf-16"?><!DOCTYPE x [<!ENTITY a "b">]><x/>'
    assert strip_declarations(body.encode("utf-16")).decode("utf-16") == (
        '<?xml version="1.0" encoding="utf-16"?><x/>'
    )


def test_latin1_rss_declared_in_the_prolog_keeps_accents(server: LoopbackServer) -> None:
    server.routes["/latin"] = Response(200, LATIN1, content_type=RSS)

    (entry,) = poll_url(server.url("/latin")).entries

    assert entry.title == "Caf\u00e9 \u00e0 No\u00ebl"
    assert entry.context == "Cr\u00e8me br\u00fbl\u00e9e"


# -- polling -------------------------------------------------------------------


def conditional(etag: str, modified: str, body: str) -> Any:
    def handler(request: Request) -> Response:
        if request.headers.get("if-none-match") == etag:
            return Response(304)
        return Response(
            200, body, headers={"ETag": etag, "Last-Modified": modified}, content_type=RSS
        )

    return handler


def test_304_sends_validators_and_saves_nothing(server: LoopbackServer, store: Store) -> None:
    modified = "Mon, 02 Mar 2026 08:00:00 GMT"
    server.routes["/feed"] = conditional('"v1"', modified, RSS_20)
    feeds = [feed_source(store, "blog", server.url("/feed"))]

    first = collect(store, feeds)
    later = NOW + timedelta(hours=1)
    second = collect(store, feeds, now=later)

    assert (first.done, second.done) == (2, 0)
    assert second.failures == [] and second.info == []
    first_request, second_request = server.hits("/feed")
    assert "if-none-match" not in first_request.headers
    assert second_request.headers["if-none-match"] == '"v1"'
    assert second_request.headers["if-modified-since"] == modified
    state = store.feed_state(feeds[0][0])
    assert (state.etag, state.last_modified) == ('"v1"', modified)
    assert store.list_sources()[0].last_checked_at == later.isoformat()
    assert store.count_items() == 2


def test_304_poll_keeps_the_old_validators(server: LoopbackServer) -> None:
    server.routes["/feed"] = Response(304)

    got = poll(FeedState(1, server.url("/feed"), etag='"old"', last_modified="yesterday"))

    assert got.not_modified and got.entries == []
    assert (got.etag, got.last_modified, got.url) == ('"old"', "yesterday", server.url("/feed"))


def test_301_is_remembered_and_the_next_poll_goes_to_the_new_url(
    server: LoopbackServer, store: Store
) -> None:
    server.routes["/old"] = Response(301, headers={"Location": "/new"})
    server.routes["/new"] = Response(200, RSS_20, content_type=RSS)
    feeds = [feed_source(store, "blog", server.url("/old"))]

    first = collect(store, feeds)
    collect(store, feeds, now=NOW + timedelta(hours=1))

    assert len(server.hits("/old")) == 1
    assert len(server.hits("/new")) == 2
    assert store.feed_state(feeds[0][0]).url == server.url("/new")
    assert first.info[0] == (
        f"feed 'blog' moved permanently to {server.url('/new')}; update the config"
    )


def test_302_is_followed_but_not_remembered(server: LoopbackServer, store: Store) -> None:
    server.routes["/old"] = Response(302, headers={"Location": "/new"})
    server.routes["/new"] = Response(200, RSS_20, content_type=RSS)
    feeds = [feed_source(store, "blog", server.url("/old"))]

    assert collect(store, feeds).done == 2
    assert store.feed_state(feeds[0][0]).url == server.url("/old")


def test_410_marks_gone_once_and_no_further_request_is_made(
    server: LoopbackServer, store: Store
) -> None:
    server.routes["/dead"] = Response(410, "gone")
    feeds = [feed_source(store, "dead", server.url("/dead"))]

    first = collect(store, feeds)
    second = collect(store, feeds, now=NOW + timedelta(days=1))

    assert first.info == [
        "feed 'dead' is gone (HTTP 410); no longer polled, remove it from the config"
    ]
    assert first.failures == [] and second.info == [] and second.failures == []
    assert len(server.hits("/dead")) == 1
    assert store.feed_state(feeds[0][0]).gone


def test_bad_feed_records_a_failure_and_does_not_stop_the_others(
    server: LoopbackServer, store: Store
) -> None:
    server.routes["/broken"] = Response(
        200, '<?xml version="1.0"?>\n<rss version="2.0"><chan', content_type=RSS
    )
    server.routes["/good"] = Response(200, ATOM, content_type="application/atom+xml")
    broken = feed_source(store, "broken", server.url("/broken"))
    feeds = [broken, feed_source(store, "good", server.url("/good"))]

    report = collect(store, feeds, retry_base_s=3600)

    assert report.done == 1
    (failure,) = report.failures
    assert failure.startswith(f"feed 'broken' ({server.url('/broken')}): feed ")
    assert "not a feed" in failure
    assert failure.endswith("will retry after 2026-03-02 10:00 UTC")
    assert store.source_failures(broken[0]) == 1
    assert store.source_next_attempt(broken[0]) == NOW + timedelta(hours=1)


def test_failing_feed_is_not_polled_again_before_its_next_attempt(
    server: LoopbackServer, store: Store
) -> None:
    server.routes["/down"] = Response(500, "oops")
    feeds = [feed_source(store, "down", server.url("/down"))]

    collect(store, feeds, retry_base_s=3600)
    too_soon = collect(store, feeds, now=NOW + timedelta(minutes=30), retry_base_s=3600)
    due = collect(store, feeds, now=NOW + timedelta(hours=1), retry_base_s=3600)

    assert too_soon.failures == []
    assert "HTTP 500; will retry after 2026-03-02 12:00 UTC" in due.failures[0]
    assert len(server.hits("/down")) == 2
    assert store.source_failures(feeds[0][0]) == 2


def test_retry_after_pushes_the_next_attempt_back(server: LoopbackServer, store: Store) -> None:
    server.routes["/busy"] = Response(503, headers={"Retry-After": "7200"})
    feeds = [feed_source(store, "busy", server.url("/busy"))]

    collect(store, feeds, retry_base_s=60)

    assert store.source_next_attempt(feeds[0][0]) == NOW + timedelta(hours=2)


def test_entries_take_the_topic_of_their_source(server: LoopbackServer, store: Store) -> None:
    server.routes["/rdf"] = Response(200, RDF, content_type="application/rdf+xml")
    source_id = store.ensure_source("rdf", "feed", url=server.url("/rdf"))
    source = SourceConfig(name="rdf", kind="feed", url=server.url("/rdf"), topic="Semantic web")

    collect(store, [(source_id, source)])

    (item,) = store.all_items()
    assert (item.topic, item.sources) == ("Semantic web", ("rdf",))


def test_bozo_feed_that_still_has_entries_is_accepted(server: LoopbackServer) -> None:
    sloppy = RSS_20.replace("First   post", "Fish & chips")  # a bare & is not XML
    server.routes["/sloppy"] = Response(200, sloppy, content_type=RSS)

    got = poll_url(server.url("/sloppy"))

    assert [entry.title for entry in got.entries] == ["Fish & chips", "Second post"]


def test_entries_without_a_link_are_reported_once_per_change_not_every_collect(
    server: LoopbackServer, store: Store
) -> None:
    feeds = [feed_source(store, "blog", server.url("/feed.xml"))]
    orphan = "<item><title>A script, not a link</title><link>javascript:alert(1)</link></item>"

    def reports(body: str) -> list[str]:
        server.routes["/feed.xml"] = Response(200, body, content_type=RSS)
        return collect(store, feeds).info

    first = reports(RSS_20)
    unchanged_count = reports(RSS_20.replace("Second post", "Second post, edited"))
    more = reports(RSS_20.replace("</channel>", f"{orphan}</channel>"))

    assert first == ["feed 'blog': 1 entries without a usable link skipped"]
    assert unchanged_count == []
    assert more == [
        "feed 'blog': 2 entries without a usable link skipped"
        " (not web links: 'javascript:alert(1)')"
    ]


# -- entries that share one link ----------------------------------------------------------


def podcast(episodes: int) -> str:
    items = "".join(
        f"<item><title>Episode {n}</title><link>https://show.test/</link>"
        f'<guid isPermaLink="false">show-ep-{n}</guid>'
        f'<enclosure url="https://cdn.show.test/ep{n}.mp3" length="1" type="audio/mpeg"/></item>'
        for n in range(1, episodes + 1)
    )
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>Show</title>{items}</channel></rss>'


def test_podcast_episodes_sharing_the_home_page_link_stay_apart(
    server: LoopbackServer, store: Store
) -> None:
    server.routes["/podcast"] = Response(200, podcast(12), content_type=RSS)
    report = collect(store, [feed_source(store, "show", server.url("/podcast"))])
    assert report.done == 12
    assert sorted(item.title or "" for item in store.all_items()) == sorted(
        f"Episode {n}" for n in range(1, 13)
    )
    assert {item.url for item in store.all_items()} == {"https://show.test/"}
    again = collect(
        store, [feed_source(store, "show", server.url("/podcast"))], now=NOW + timedelta(hours=2)
    )
    assert again.done == 0  # the same episodes are the same items on the next poll


def test_entries_sharing_a_link_without_guid_or_enclosure_are_merged_and_counted(
    server: LoopbackServer, store: Store
) -> None:
    body = RSS_20.replace("https://elsewhere.test/2", "/posts/1")  # two entries, one link
    server.routes["/dupes"] = Response(200, body, content_type=RSS)
    report = collect(store, [feed_source(store, "dupes", server.url("/dupes"))])
    assert report.done == 1
    assert "feed 'dupes': 1 entries share a link (and have no guid or enclosure)" in report.info[-1]


def test_entries_with_hostile_links_are_skipped_and_the_good_ones_kept(
    server: LoopbackServer,
) -> None:
    hostile = [
        "http://[::1",
        "http://[fe80::1%25eth0]/",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "http://h.test:99999/",
        "https://" + "a" * 20_000 + ".test/",
        "http://h.test:0/",
        "http://" + "[" * 3000,
    ]
    items = "".join(
        f"<item><title>bad {n}</title><link>{link}</link></item>" for n, link in enumerate(hostile)
    )
    body = RSS_20.replace("</channel>", items + "</channel>")
    server.routes["/hostile"] = Response(200, body, content_type=RSS)
    got = poll_url(server.url("/hostile"))
    assert [entry.url for entry in got.entries] == [
        server.url("/posts/1"),
        "https://elsewhere.test/2",
    ]
    assert got.skipped == 1 + len(hostile)


# -- large feeds, parsed a part at a time ----------------------------------------------------


def _fetched(body: str) -> FetchResult:
    url = "https://big.test/feed"
    return FetchResult(url, url, 200, {"content-type": "application/xml"}, body.encode(), None)


def _rss(count: int) -> str:
    items = "".join(
        f"<item><title>Post {n} &amp; more</title><link>https://big.test/{n}</link>"
        f"<description><![CDATA[<p>text {n}</p>]]></description></item>"
        for n in range(count)
    )
    return f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>t</title>{items}</channel></rss>'


def _atom(count: int) -> str:
    entries = "".join(
        f'<entry><title>Post {n}</title><link href="/{n}"/><id>tag:big.test,{n}</id>'
        f"<updated>2026-11-{1 + n % 28:02d}T10:00:00Z</updated></entry>"
        for n in range(count)
    )
    return (
        '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://big.test/">'
        f"<title>t</title>{entries}</feed>"
    )


@pytest.mark.parametrize("body", [_rss(40), _atom(40)], ids=["rss", "atom"])
@pytest.mark.parametrize("part_bytes", [1, 200, 1_000, 10**9])
def test_a_feed_parsed_in_parts_gives_the_entries_of_the_whole(body: str, part_bytes: int) -> None:
    whole = parse_feed(_fetched(body))
    parts = feed_parts(body.encode(), part_bytes)
    in_parts = [item for part in parts for item in parse_feed(_fetched(part.decode())).items]

    assert len(whole.items) == 40
    assert in_parts == whole.items
    assert (len(parts) == 1) is (part_bytes == 10**9)


def test_a_feed_without_entry_tags_is_one_part() -> None:
    body = b'<?xml version="1.0"?><rdf:RDF><atom:entry>x</atom:entry></rdf:RDF>'
    assert feed_parts(body, 1) == [body]


# -- an encoding that fails, and chardet --------------------------------------------------------


def test_a_body_whose_declared_encoding_fails_is_read_as_windows_1252_not_left_to_chardet() -> None:
    # chardet took minutes on this shape (time growing with the square of the body) while
    # holding the run lock; feedparser's own fallbacks read it at once
    body = (
        b'<?xml version="1.0" encoding="bogus"?><rss version="2.0"><channel><title>t</title>'
        b"<item><title>Caf\xe9 \xec\x9f</title><link>https://slow.test/1</link><description>"
        + b"a" * 40_000
        + b"</description></item></channel></rss>"
    )
    url = "https://slow.test/feed"
    parsed: list[Any] = []
    worker = threading.Thread(
        target=lambda: parsed.append(parse_feed(FetchResult(url, url, 200, {}, body, None))),
        daemon=True,
    )

    worker.start()
    worker.join(timeout=30)

    assert parsed, "parsing a 40 KB feed took over 30 s"
    [item] = parsed[0].items
    assert item.title is not None and item.title.startswith("Café")


def test_a_feed_entrys_category_is_its_topic() -> None:
    rss = (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
        "<item><title>Paged attention</title><link>https://a.test/1</link>"
        "<category> Inference </category><category>GPU</category></item>"
        "<item><title>No category</title><link>https://a.test/2</link></item>"
        "</channel></rss>"
    )
    json_feed = (
        '{"version": "https://jsonfeed.org/version/1.1", "title": "t", "items": ['
        '{"id": "1", "url": "https://a.test/3", "tags": ["rust", "async"]}]}'
    )
    assert [item.topic for item in parse_feed(_fetched(rss)).items] == ["Inference", None]
    assert [item.topic for item in parse_feed(_fetched(json_feed)).items] == ["rust"]
