"""Every JSON export is read a record at a time when it is big, and gives what a whole read
gives (issue 18; the 200 MB figures are in bench/import.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from digest.collect import bigfiles
from digest.collect.formats import REGISTRY, ImportResult, merged, record_streaming
from digest.collect.importers import supported_formats
from digest.store import open_store
from importing import import_file
from test_importers_exports import FORMATS

EXPORTS = Path(__file__).parent / "fixtures" / "exports"
BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 1, 12, 9, 0, tzinfo=UTC)

FIXTURES = {  # the JSON exports among the fixtures each format is detected from
    name: format_name for name, format_name in FORMATS.items() if name.endswith((".json", ".js"))
}
LINK = '{{"url": "https://a.example/{n}", "name": "A{n}", "createdAt": "2024-01-0{n}T00:00:00Z"}}'
# Other shapes the importers read (a bare list of Linkwarden collections only by --format).
SHAPES = {
    "hackernews": '{"hits": [{"objectID": "1", "title": "T", "url": "https://h.example/",'
    ' "created_at_i": 1700000000}], "nbHits": 1}',
    "linkwarden": f'[{{"name": "Reading", "links": [{LINK.format(n=1)}, {LINK.format(n=2)}]}},'
    f' {{"id": 2, "name": "Compilers", "links": [{LINK.format(n=3)}]}}]',
    "mastodon-archive": '{"@context": "https://www.w3.org/ns/activitystreams",'
    ' "type": "OrderedCollection", "orderedItems":'
    ' ["https://hachyderm.io/users/alice/statuses/1", 42]}',
    "reddit": '[{"kind": "Listing", "data": {"children": [{"kind": "t3", "data": {"permalink":'
    ' "/r/x/comments/1/a/", "title": "A", "url": "https://r.example/a", "subreddit": "x",'
    ' "created_utc": 1700000000}}]}}]',
    "github-stars": '[[{"full_name": "o/a", "html_url": "https://github.com/o/a"}],'
    ' [{"full_name": "o/b", "html_url": "https://github.com/o/b"}]]',
}


def whole_and_streamed(name: str, path: Path) -> tuple[ImportResult, ImportResult]:
    supported_formats()  # fills the registry
    importer = record_streaming(REGISTRY[name])
    assert importer is not None, f"{name} is not streamed"
    whole = importer.parse(path.read_text(encoding="utf-8"), zone=BERLIN)
    streamed = merged(importer.parse_file(lambda: path.open("rb"), zone=BERLIN))
    return whole, streamed


def same(whole: ImportResult, streamed: ImportResult) -> None:
    assert streamed.items == whole.items
    assert streamed.rejected == whole.rejected
    assert streamed.skipped == whole.skipped
    assert whole.items


@pytest.mark.parametrize(("fixture", "name"), sorted(FIXTURES.items()))
def test_a_streamed_export_gives_what_a_whole_read_gives(fixture: str, name: str) -> None:
    same(*whole_and_streamed(name, EXPORTS / fixture))


@pytest.mark.parametrize(("name", "text"), sorted(SHAPES.items()))
def test_every_shape_of_an_export_streams_as_it_reads_whole(
    tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / "export.json"
    path.write_text(text, encoding="utf-8")
    same(*whole_and_streamed(name, path))


def test_a_linkwarden_collection_names_its_streamed_links(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(SHAPES["linkwarden"], encoding="utf-8")
    _, streamed = whole_and_streamed("linkwarden", path)
    assert [item.topic for item in streamed.items] == ["Reading", "Reading", "Compilers"]


def test_a_big_twitter_archive_is_imported_a_record_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bigfiles, "STREAM_BYTES", 1024)
    records = [{"bookmark": {"tweetId": str(10**17 + n)}} for n in range(300)]
    path = tmp_path / "bookmark.js"
    path.write_bytes(b"\xef\xbb\xbfwindow.YTD.bookmark.part0 = " + json.dumps(records).encode())
    store = open_store(tmp_path / "digest.db")
    report = import_file(
        store, path, source_id=store.ensure_source("i", "file"), zone=BERLIN, now=NOW
    )
    assert report.format == "twitter"
    assert report.new == store.count_items() == 300


@settings(max_examples=60)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["href", "description", "extended", "time", "tags", "x"]),
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(),
        )
        | st.integers()
        | st.text(),
        min_size=1,
        max_size=8,
    )
)
def test_any_pinboard_records_stream_as_they_read_whole(
    tmp_path_factory: pytest.TempPathFactory, records: list[object]
) -> None:
    path = tmp_path_factory.mktemp("pinboard") / "pinboard.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    whole, streamed = whole_and_streamed("pinboard", path)
    assert streamed.items == whole.items
    assert streamed.rejected == whole.rejected
