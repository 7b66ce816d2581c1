from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from digest.collect.formats import REGISTRY, ImportResult
from digest.collect.importers import supported_formats
from digest.collect.importers._json import JsonExport
from digest.errors import ImportFormatError
from digest.models import ItemKind, SavedItem
from digest.store import open_store
from importing import find_importer, import_file

EXPORTS = Path(__file__).parent / "fixtures" / "exports"
POSTS = Path(__file__).parent / "fixtures" / "posts"
BERLIN = ZoneInfo("Europe/Berlin")


def parse(name: str, fixture: str) -> ImportResult:
    supported_formats()  # fills the registry
    return REGISTRY[name].parse((EXPORTS / fixture).read_text(), zone=BERLIN)


def by_url(result: ImportResult) -> dict[str | None, SavedItem]:
    return {item.url: item for item in result.items}


def at(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


# -- sniffing -------------------------------------------------------------------

FORMATS = {
    "pocket.csv": "pocket",
    "instapaper.csv": "instapaper",
    "raindrop.csv": "raindrop",
    "readwise.csv": "readwise",
    "reddit_saved.csv": "reddit-csv",
    "pinboard.json": "pinboard",
    "omnivore.json": "omnivore",
    "karakeep.json": "karakeep",
    "linkwarden.json": "linkwarden",
    "hackernews.json": "hackernews",
    "github_stars.json": "github-stars",
    "mastodon.json": "mastodon",
    "twitter_bookmarks.js": "twitter",
    "twitter_export.json": "twitter",
    "reddit_saved.json": "reddit",
    "github_stars.atom": "feed",
    "hn_favorites.rss": "feed",
}


@pytest.mark.parametrize(("fixture", "expected"), sorted(FORMATS.items()))
def test_format_is_recognised_from_content(fixture: str, expected: str) -> None:
    assert find_importer((EXPORTS / fixture).read_text()).name == expected


@pytest.mark.parametrize(("fixture", "expected"), sorted(FORMATS.items()))
def test_file_with_a_misleading_name_is_imported_by_its_content(
    tmp_path: Path, fixture: str, expected: str
) -> None:
    disguised = tmp_path / "bookmarks.html"
    shutil.copy(EXPORTS / fixture, disguised)
    store = open_store(tmp_path / "digest.db")
    source_id = store.ensure_source("import", "import")
    report = import_file(store, disguised, source_id=source_id, zone=BERLIN, now=datetime.now(UTC))
    assert report.format == expected
    assert report.new == store.count_items() > 0


def test_pasted_posts_named_like_csv_are_still_posts(tmp_path: Path) -> None:
    disguised = tmp_path / "export.csv"
    shutil.copy(POSTS / "pasted.txt", disguised)
    assert find_importer(disguised.read_text()).name == "posts"


def test_invalid_json_names_the_format_and_position() -> None:
    with pytest.raises(ImportFormatError, match=r"pinboard export: invalid JSON at line 1"):
        REGISTRY["pinboard"].parse('[{"href": "https://a.example",', zone=BERLIN)


# -- CSV ------------------------------------------------------------------------


def test_pocket_reads_unix_times_pipe_tags_and_quoted_titles() -> None:
    result = parse("pocket", "pocket.csv")
    items = by_url(result)
    vllm = items["https://blog.vllm.ai/2023/06/20/vllm.html?utm_source=pocket_saves"]
    assert vllm.saved_at == datetime.fromtimestamp(1718000000, UTC)
    assert vllm.topic == "ml"
    assert vllm.line == 2
    assert (
        items["https://example.org/essays/quoting"].title
        == 'Quotes, commas and "escapes" in a title'
    )


def test_pocket_skips_javascript_and_reports_bad_rows_with_their_lines() -> None:
    result = parse("pocket", "pocket.csv")
    assert [(s.line, s.reason) for s in result.skipped] == [(4, "not a web link (javascript:)")]
    reasons = {r.line: r.reason for r in result.rejected}
    assert "time not understood: 'yesterday'" in reasons[5] and "item kept" in reasons[5]
    assert reasons[6] == "3 fields where the header has 5"
    assert by_url(result)["https://example.org/broken-time"].saved_at is None
    assert len(result.items) + len(result.skipped) == 4


def test_instapaper_keeps_multiline_selection_and_ignores_default_folders() -> None:
    result = parse("instapaper", "instapaper.csv")
    items = by_url(result)
    git = items["https://jvns.ca/blog/2024/01/26/inside-git/"]
    assert git.context == "Git stores objects\nin a content-addressed store."
    assert git.topic is None
    assert items["https://danluu.com/cocktail-ideas/"].topic is None
    assert items["https://www.brendangregg.com/flamegraphs.html"].topic == "Performance"
    assert [s.line for s in result.skipped] == [6]  # the file: link, after a two-line record


def test_raindrop_reads_iso_times_tags_notes_and_excerpts() -> None:
    result = parse("raindrop", "raindrop.csv")
    paper = by_url(result)["https://arxiv.org/abs/2407.08608v2"]
    assert paper.saved_at == at("2024-07-12T09:30:00+00:00")
    assert paper.topic == "gpu"
    assert (
        paper.context
        == "Read the benchmarks section\n\nFast and accurate attention with asynchrony"
    )
    assert by_url(result)["https://help.raindrop.io/"].topic is None
    assert [(r.line, r.reason) for r in result.rejected] == [(4, "no url in the row")]


def test_readwise_reads_list_style_tags_and_bare_dates_in_the_zone() -> None:
    items = by_url(parse("readwise", "readwise.csv"))
    lesson = items["http://www.incompleteideas.net/IncIdeas/BitterLesson.html"]
    assert lesson.topic == "ai"
    assert lesson.saved_at == at("2024-03-01T08:15:00+00:00")
    feed = items["https://simonwillison.net/2024/Mar/2/llm/"]
    assert feed.saved_at == datetime(2024, 3, 2, tzinfo=BERLIN)
    assert feed.topic is None


def test_reddit_csv_makes_relative_permalinks_absolute() -> None:
    urls = [item.url for item in parse("reddit-csv", "reddit_saved.csv").items]
    assert urls == [
        "https://www.reddit.com/r/LocalLLaMA/comments/1abcd2/running_70b_on_two_3090s/",
        "https://www.reddit.com/r/Python/comments/1abcd3/whats_new_in_312/",
    ]


# -- JSON bookmark services ------------------------------------------------------


def test_pinboard_maps_description_to_title_and_extended_to_context() -> None:
    result = parse("pinboard", "pinboard.json")
    lwn = by_url(result)["https://lwn.net/Articles/950000/"]
    assert (lwn.title, lwn.context, lwn.topic) == (
        "The kernel's new scheduler",
        "EEVDF replaces CFS",
        "linux",
    )
    assert lwn.saved_at == at("2023-11-02T18:22:10+00:00")
    assert [(s.line, s.reason) for s in result.skipped] == [(2, "not a web link (place:)")]
    reasons = {r.line: r.reason for r in result.rejected}
    assert reasons[3] == "no href"
    assert "not a date" in reasons[4]
    assert by_url(result)["https://example.com/odd-date"].saved_at is None


def test_omnivore_reads_labels_as_strings_or_objects() -> None:
    items = parse("omnivore", "omnivore.json").items
    assert [(i.title, i.topic, i.context) for i in items] == [
        ("Why SQLite?", "databases", "Notes on an embedded database"),
        ("Untitled", "Newsletter", None),
    ]
    assert items[0].saved_at == at("2024-05-06T07:08:09+00:00")


def test_karakeep_links_notes_and_skipped_assets() -> None:
    result = parse("karakeep", "karakeep.json")
    link, note = result.items
    assert (link.url, link.title, link.context, link.topic) == (
        "https://without.boats/blog/pinning/",
        "Pinning",
        "Best explanation of Pin",
        "rust",
    )
    assert link.saved_at == datetime.fromtimestamp(1714000000, UTC)
    assert (note.kind, note.url, note.context) == (
        ItemKind.NOTE,
        None,
        "Try sqlite-vec for the notes search",
    )
    assert [(s.line, s.reason) for s in result.skipped] == [
        (3, "an uploaded file (asset bookmark), not a link")
    ]
    assert [(r.line, r.reason) for r in result.rejected] == [(4, "no content")]


def test_linkwarden_takes_topic_from_tags_then_collection() -> None:
    result = parse("linkwarden", "linkwarden.json")
    assert [(i.title, i.topic) for i in result.items] == [
        ("Raft consensus", "consensus"),
        ("Jepsen", "Distributed systems"),
    ]
    assert [(r.line, r.reason) for r in result.rejected] == [(3, "no url")]


def test_linkwarden_older_shape_with_top_level_links() -> None:
    text = (
        '{"links": [{"url": "https://a.example/", "name": "A", "collection": {"name": "Reading"}}]}'
    )
    item = REGISTRY["linkwarden"].parse(text, zone=BERLIN).items[0]
    assert (item.url, item.title, item.topic) == ("https://a.example/", "A", "Reading")


def test_hackernews_story_without_url_links_to_its_item_page() -> None:
    items = parse("hackernews", "hackernews.json").items
    assert items[0].url == "https://paulgraham.com/greatwork.html"
    assert (
        items[0].context == "Hacker News discussion: https://news.ycombinator.com/item?id=38000000"
    )
    assert items[0].saved_at == datetime.fromtimestamp(1698000000, UTC)
    assert items[1].url == "https://news.ycombinator.com/item?id=38000001"


def test_hackernews_ask_post_keeps_its_text_as_context() -> None:
    ask = parse("hackernews", "hackernews.json").items[1]
    assert ask.context == (
        "Books, papers, long blog posts: what kept you up lately? I liked this one.\n\n"
        "Hacker News discussion: https://news.ycombinator.com/item?id=38000001"
    )


def test_hackernews_favourite_comments_are_posts_at_their_own_page_not_the_story() -> None:
    supported_formats()
    export = (
        '{"hits": ['
        '{"objectID": "39000001", "_tags": ["comment", "author_ana"], "author": "ana",'
        ' "comment_text": "The <i>second</i> half is the point: <a href=\\"https://ex.org/p\\">see</a>",'
        ' "story_id": 39000000, "story_title": "Kilns at scale",'
        ' "story_url": "https://kilns.example/scale", "created_at_i": 1700000000},'
        '{"objectID": "39000000", "title": "Kilns at scale", "url": "https://kilns.example/scale",'
        ' "created_at_i": 1700000000}]}'
    )
    api_item = '[{"id": 39000002, "type": "comment", "by": "bo", "text": "Agreed.", "parent": 1,'
    api_item += ' "time": 1700000000, "url": "https://news.ycombinator.com/item?id=39000002"}]'

    comment, story = REGISTRY["hackernews"].parse(export, zone=BERLIN).items
    [bare] = REGISTRY["hackernews"].parse(api_item, zone=BERLIN).items

    assert (comment.url, comment.kind) == (
        "https://news.ycombinator.com/item?id=39000001",
        ItemKind.POST,
    )
    assert comment.title == "Comment by ana on: Kilns at scale"
    assert comment.context is not None and comment.context.startswith(
        "The second half is the point"
    )
    assert comment.links == ("https://ex.org/p", "https://kilns.example/scale")
    assert story.url == "https://kilns.example/scale"  # the story stays an item of its own
    assert (bare.url, bare.title, bare.context) == (
        "https://news.ycombinator.com/item?id=39000002",
        "Comment by bo",
        "Agreed.",
    )


def test_hackernews_favourites_feed_keeps_stories_and_their_text() -> None:
    result = parse("feed", "hn_favorites.rss")
    great, ask = result.items
    assert (great.url, great.title, great.line) == (
        "https://paulgraham.com/greatwork.html",
        "How to do great work",
        1,
    )
    assert great.saved_at == at("2023-10-22T18:40:00+00:00")
    assert ask.context is not None and ask.context.startswith("Books, papers, long blog posts")
    assert [(r.line, r.reason) for r in result.rejected] == [(3, "no web link")]


def test_github_activity_feed_keeps_stars_and_skips_other_events() -> None:
    result = parse("feed", "github_stars.atom")
    assert [(i.url, i.title, i.line) for i in result.items] == [
        ("https://github.com/vllm-project/vllm", "vllm-project/vllm", 1),
        ("https://github.com/tinygrad/tinygrad", "tinygrad/tinygrad", 3),
    ]
    assert result.items[0].saved_at == at("2026-01-06T09:00:00+00:00")
    assert result.items[0].context == (
        "A high-throughput and memory-efficient inference engine for LLMs"
    )
    assert [(s.line, s.reason) for s in result.skipped] == [
        (2, "GitHub activity, not a star (PushEvent)")
    ]


def test_github_stars_use_starred_at_and_first_topic_else_language() -> None:
    llm, tinygrad = parse("github-stars", "github_stars.json").items
    assert (llm.url, llm.title, llm.topic) == ("https://github.com/simonw/llm", "simonw/llm", "llm")
    assert llm.saved_at == at("2024-06-01T12:00:00+00:00")
    assert (tinygrad.topic, tinygrad.context) == ("Python", None)


def test_github_plain_repo_list_has_no_save_time() -> None:
    text = (
        '[{"full_name": "a/b", "html_url": "https://github.com/a/b", "created_at": "2015-01-01"}]'
    )
    item = REGISTRY["github-stars"].parse(text, zone=BERLIN).items[0]
    assert (item.title, item.saved_at) == ("a/b", None)


# -- social saves ----------------------------------------------------------------


def test_mastodon_status_becomes_a_post_with_text_and_links() -> None:
    (post,) = parse("mastodon", "mastodon.json").items
    assert post.kind is ItemKind.POST
    assert post.url == "https://hachyderm.io/@alice/112233"
    assert post.context == (
        "Wrote up how we cut p99 latency in half with #postgres connection pooling.\n\n"
        "Details: https://alice.dev/posts/pooling\nthanks @bob & co"
    )
    assert post.links == ("https://alice.dev/posts/pooling",)
    assert post.title is not None and post.title.startswith("@alice@hachyderm.io: Wrote up")
    assert post.saved_at == at("2024-04-10T09:15:00+00:00")


def test_twitter_archive_bookmarks_become_posts_by_tweet_id() -> None:
    items = parse("twitter", "twitter_bookmarks.js").items
    assert [i.url for i in items] == [
        "https://x.com/i/web/status/1790000000000000001",
        "https://x.com/i/web/status/1790000000000000002",
    ]
    assert all(i.kind is ItemKind.POST and i.context is None for i in items)


def test_twitter_export_keeps_text_and_expanded_links_not_tco() -> None:
    first, second = parse("twitter", "twitter_export.json").items
    assert first.url == "https://x.com/researcher/status/1801234567890123456"
    assert first.links == ("https://github.com/example/spec-decode",)
    assert first.context is not None and first.context.startswith("New paper: speculative decoding")
    assert first.saved_at == at("2024-06-12T14:03:11+00:00")
    assert second.url == "https://x.com/gpu_notes/status/1801234567890123457"
    assert second.links == ("https://gpu.notes/memory",)
    assert second.title == "@gpu_notes: Thread on GPU memory hierarchies"


@pytest.mark.parametrize(
    ("name", "records"),
    [
        (
            "twitter",
            '[{"tweet_id": "1", "url": "http://[::1", "full_text": "broken link",'
            ' "user": {"screen_name": "a"}},'
            ' {"tweet_id": "2", "full_text": "see https://good.example/x",'
            ' "user": {"screen_name": "b"}, "expanded_urls": ["http://[::1", "https://good.example/x"]}]',
        ),
        (
            "reddit",
            '[{"kind": "t3", "data": {"permalink": "/r/a/comments/1/x/", "title": "T",'
            ' "url": "http://[::1"}},'
            ' {"kind": "t3", "data": {"permalink": "/r/a/comments/2/y/", "title": "Good",'
            ' "url": "https://good.example/y"}}]',
        ),
    ],
)
def test_a_record_with_an_unclosed_ipv6_link_loses_nothing_else(name: str, records: str) -> None:
    supported_formats()
    result = REGISTRY[name].parse(records, zone=BERLIN)

    urls = [item.url for item in result.items] + [link for i in result.items for link in i.links]
    assert any("good.example" in (url or "") for url in urls)
    assert len(result.items) + len(result.rejected) + len(result.skipped) >= 2


class BrokenOnSecond(JsonExport):
    name = "broken-on-second"

    def add(
        self, result: ImportResult, record: dict[str, Any], number: int, zone: ZoneInfo
    ) -> None:
        if number == 2:
            raise KeyError("a bug")
        result.items.append(SavedItem(url=str(record["href"]), line=number))


@pytest.mark.bug_expected
def test_a_bug_on_one_json_record_rejects_that_record_only() -> None:
    records = '[{"href": "https://a.example/1"}, {"href": "x"}, {"href": "https://a.example/3"}]'

    result = BrokenOnSecond().parse(records, zone=BERLIN)

    assert [item.url for item in result.items] == ["https://a.example/1", "https://a.example/3"]
    [rejected] = result.rejected
    assert rejected.line == 2 and "internal error (KeyError" in rejected.reason


def test_reddit_link_post_self_post_and_comment() -> None:
    result = parse("reddit", "reddit_saved.json")
    link, self_post, comment = result.items
    assert (link.kind, link.url, link.topic) == (
        ItemKind.LINK,
        "https://github.com/example/exllama-guide",
        "LocalLLaMA",
    )
    assert link.context == (
        "Reddit discussion: "
        "https://www.reddit.com/r/LocalLLaMA/comments/1abcd2/running_70b_on_two_3090s/"
    )
    assert link.saved_at == datetime.fromtimestamp(1705000000, UTC)
    assert self_post.kind is ItemKind.POST
    assert self_post.links == ("https://docs.nvidia.com/cuda/",)
    assert comment.kind is ItemKind.POST
    assert comment.title == "Comment on: Slow inference on A100"
    assert comment.url == "https://www.reddit.com/r/MachineLearning/comments/1abcf0/slow/kx1/"
    assert [(r.line, r.reason) for r in result.rejected] == [(4, "no permalink")]


def test_every_record_is_an_item_a_skip_or_a_rejection() -> None:
    counts = {
        "pinboard.json": 4,
        "karakeep.json": 4,
        "linkwarden.json": 3,
        "reddit_saved.json": 4,
    }
    for fixture, records in counts.items():
        result = parse(FORMATS[fixture], fixture)
        undated = sum(1 for r in result.rejected if "item kept" in r.reason)
        assert len(result.items) + len(result.skipped) + len(result.rejected) - undated == records


# -- exports as the services' own tools write them -------------------------------------

STAR = (
    '{{"starred_at": "2026-01-0{n}T10:00:00Z", "repo": {{"full_name": "o/r{n}",'
    ' "html_url": "https://github.com/o/r{n}", "description": "d"}}}}'
)


@pytest.mark.parametrize(
    "text",
    [
        # gh api --paginate: one array per page, back to back
        f"[{STAR.format(n=1)},{STAR.format(n=2)}][{STAR.format(n=3)}]",
        f"[{STAR.format(n=1)},\n{STAR.format(n=2)}]\n[\n{STAR.format(n=3)}]\n",
        # gh api --paginate --slurp: an array of pages
        f"[[{STAR.format(n=1)},{STAR.format(n=2)}],[{STAR.format(n=3)}]]",
    ],
)
def test_github_stars_from_gh_api_pages_are_read_whole(text: str) -> None:
    importer = find_importer(text)
    assert importer.name == "github-stars"
    items = importer.parse(text, zone=BERLIN).items
    assert [item.url for item in items] == [f"https://github.com/o/r{n}" for n in (1, 2, 3)]


def test_a_mastodon_post_saved_as_csv_archive_and_api_json_is_one_item(tmp_path: Path) -> None:
    # Settings → Export → bookmarks.csv: one status URI a line, no header.
    csv = tmp_path / "bookmarks.csv"
    csv.write_text(
        "https://hachyderm.io/users/alice/statuses/112233\n"
        "https://mastodon.social/users/carol/statuses/998877\n"
    )
    archive = tmp_path / "bookmarks.json"
    archive.write_text(
        '{"@context": "https://www.w3.org/ns/activitystreams", "id": "bookmarks.json",'
        ' "type": "OrderedCollection",'
        ' "orderedItems": ["https://hachyderm.io/users/alice/statuses/112233", 42]}'
    )
    assert find_importer(archive.read_text()).name == "mastodon-archive"
    store = open_store(tmp_path / "digest.db")
    source = store.ensure_source("import", "import")
    now = datetime(2026, 1, 5, tzinfo=UTC)
    reports = [
        import_file(store, path, source_id=source, zone=BERLIN, now=now)
        for path in (csv, EXPORTS / "mastodon.json", archive)
    ]
    keys = sorted(item.key for item in store.all_items())
    store.close()
    assert [(r.format, r.new) for r in reports] == [
        ("urls", 2),
        ("mastodon", 0),
        ("mastodon-archive", 0),
    ]
    assert [r.line for r in reports[2].rejected] == [2]  # the number is reported, not dropped
    assert keys == ["https://hachyderm.io/@alice/112233", "https://mastodon.social/@carol/998877"]


@pytest.mark.parametrize("moment", [-24397923780231, 10**20, float("nan"), 1e308])
def test_a_time_out_of_any_calendar_is_reported_and_the_item_kept_undated(moment: float) -> None:
    # found by bench/fuzz.py: datetime.fromtimestamp raised out of the importer
    text = f'[{{"full_name": "a/b", "html_url": "https://github.com/a/b", "starred_at": {moment}}}]'
    text = text.replace("nan", "NaN")
    result = REGISTRY["github-stars"].parse(text, zone=BERLIN)
    assert [item.saved_at for item in result.items] == [None]
    assert [r.reason.split(":")[0] for r in result.rejected] == ["time not understood"]
