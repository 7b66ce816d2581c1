"""The Atom feed of the digests and the one-note-per-item folder, on real files."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import feedparser

from digest.config import Config, DigestSection, OutputConfig
from digest.deliver.atom import feed_path
from digest.deliver.outbox import deliver_digest
from digest.deliver.vault import notes_hash, write_item_notes
from digest.lifecycle import note_attached
from digest.models import Item, Note, SavedItem
from digest.periods import parse_week
from digest.store import Store
from mailrig import elements

UTC_ZONE = ZoneInfo("UTC")
W46, W47 = parse_week("2026-W46", UTC_ZONE), parse_week("2026-W47", UTC_ZONE)
NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
HOSTILE = (
    "# Digest for 2026-W47\n\n- [Kept](https://kept.example/)\n"
    "  <script>alert(1)</script> [gone](https://not-stored.example/) ![i](https://x.example/i.png)\n"
)


def config_for(tmp_path: Path, **output: object) -> Config:
    return Config(
        digest=DigestSection(data_dir=tmp_path / "data"), output=OutputConfig.model_validate(output)
    )


def digest(label: str, body: str) -> str:
    return f"# Digest for {label}\n\n## The week\n\n{body}\n"


# -- the Atom feed --------------------------------------------------------------------------------


def test_the_feed_is_valid_atom_with_one_entry_per_week_newest_first(
    tmp_path: Path, store: Store
) -> None:
    config = config_for(tmp_path, public_url="https://me.example/digests")
    deliver_digest(store, config, W46, digest("2026-W46", "Older."), NOW - timedelta(days=7))
    deliver_digest(store, config, W47, HOSTILE, NOW, allowed_urls={"https://kept.example/"})

    parsed = feedparser.parse(feed_path(config).read_bytes())
    assert parsed.bozo == 0, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    assert [entry.title for entry in parsed.entries] == [
        "Digest for 2026-W47",
        "Digest for 2026-W46",
    ]
    newest = parsed.entries[0]
    assert newest.link == "https://me.example/digests/2026-W47.md"
    assert re.fullmatch(r"tag:me\.example,2026-11-16:digest-[0-9a-f]{32}/2026-W47", newest.id)
    assert_atom(feed_path(config).read_bytes())
    html = newest.content[0].value
    assert {tag for tag, _ in elements(html)} <= {"h1", "ul", "li", "a"}
    assert [attrs["href"] for tag, attrs in elements(html) if tag == "a"] == [
        "https://kept.example/"
    ]


def test_a_new_revision_updates_its_entry_in_place_and_a_rerun_changes_no_byte(
    tmp_path: Path, store: Store
) -> None:
    config = config_for(tmp_path)
    deliver_digest(store, config, W47, digest("2026-W47", "One link."), NOW)
    first = feedparser.parse(feed_path(config).read_bytes()).entries
    later = NOW + timedelta(hours=5)
    deliver_digest(store, config, W47, digest("2026-W47", "Two links."), later)
    data = feed_path(config).read_bytes()
    again = deliver_digest(store, config, W47, digest("2026-W47", "Two links."), later)

    [entry] = feedparser.parse(data).entries
    assert entry.id == first[0].id
    assert entry.updated == "2026-11-23T13:00:00Z" != first[0].updated
    assert "Two links." in entry.content[0].value
    assert "feed" not in again.delivered
    assert feed_path(config).read_bytes() == data


def test_an_unreadable_feed_file_is_never_replaced_and_the_delivery_says_why(
    tmp_path: Path, store: Store
) -> None:
    config = config_for(tmp_path)
    feed_path(config).parent.mkdir(parents=True)
    feed_path(config).write_text("<feed><entry>torn")
    outcome = deliver_digest(store, config, W47, digest("2026-W47", "One link."), NOW)
    assert feed_path(config).read_text() == "<feed><entry>torn"
    assert "feed" not in outcome.delivered
    (failure,) = [line for line in outcome.failures if "feed" in line]
    assert failure.startswith(f"{feed_path(config)}: not readable as a feed (")
    assert "move it away to start the feed afresh" in failure


def test_control_characters_in_a_digest_keep_the_feed_valid_and_earlier_weeks_kept(
    tmp_path: Path, store: Store
) -> None:
    config = config_for(tmp_path)
    hostile = "- [Bell\x07 and NUL\x00 and \x1b[31m escape \ufffe](https://kept.example/)"
    deliver_digest(store, config, W46, digest("2026-W46", hostile), NOW - timedelta(days=7))
    deliver_digest(store, config, W47, digest("2026-W47", "Later."), NOW)
    parsed = feedparser.parse(feed_path(config).read_bytes())
    assert parsed.bozo == 0, parsed.get("bozo_exception")
    assert [entry.title for entry in parsed.entries] == [
        "Digest for 2026-W47",
        "Digest for 2026-W46",
    ]
    old_week = parsed.entries[1].content[0].value
    assert "Bell and NUL" in old_week and "\x07" not in old_week and "\x1b" not in old_week


def assert_atom(data: bytes) -> None:
    """RFC 4287's required elements and rules, checked on the document itself: the feed
    has one id, title and updated, an author (or every entry one), at most one self link;
    every entry one id (an absolute IRI), title and updated, and content or an alternate
    link; times are RFC 3339; ids are unique."""
    root = ET.fromstring(data)
    assert root.tag == f"{{{ATOM}}}feed"

    def one(parent: ET.Element, tag: str) -> str:
        found = parent.findall(f"{{{ATOM}}}{tag}")
        assert len(found) == 1, f"{parent.tag} needs exactly one {tag}, has {len(found)}"
        return found[0].text or ""

    def moment(text: str) -> None:
        assert RFC3339.fullmatch(text), f"not an RFC 3339 time: {text!r}"

    entries = root.findall(f"{{{ATOM}}}entry")
    ids = [one(root, "id")]
    one(root, "title")
    moment(one(root, "updated"))
    authors = root.findall(f"{{{ATOM}}}author")
    assert authors or all(e.findall(f"{{{ATOM}}}author") for e in entries)
    assert all(one(author, "name") for author in authors)
    links = root.findall(f"{{{ATOM}}}link")
    assert len([link for link in links if link.get("rel") == "self"]) <= 1
    for entry in entries:
        ids.append(one(entry, "id"))
        one(entry, "title")
        moment(one(entry, "updated"))
        for published in entry.findall(f"{{{ATOM}}}published"):
            moment(published.text or "")
        alternate = [
            link for link in entry.findall(f"{{{ATOM}}}link") if link.get("rel") == "alternate"
        ]
        assert entry.findall(f"{{{ATOM}}}content") or alternate
    assert all(re.match(r"[a-z][a-z0-9+.-]*:\S+$", id_) for id_ in ids), ids
    assert len(set(ids)) == len(ids)


ATOM = "http://www.w3.org/2005/Atom"
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
W45 = parse_week("2026-W45", UTC_ZONE)


def test_ids_stay_when_public_url_is_set_later_and_no_file_link_is_given(
    tmp_path: Path, store: Store
) -> None:
    deliver_digest(store, config_for(tmp_path), W47, digest("2026-W47", "One."), NOW)
    before = feed_path(config_for(tmp_path)).read_bytes()
    public = config_for(tmp_path, public_url="https://me.example/digests/")
    later = NOW + timedelta(hours=1)
    deliver_digest(store, public, W47, digest("2026-W47", "Two."), later)
    after = feed_path(public).read_bytes()

    old, new = feedparser.parse(before), feedparser.parse(after)
    assert (old.feed.id, old.entries[0].id) == (new.feed.id, new.entries[0].id)
    assert b"file:" not in before and "links" not in old.entries[0]
    assert "public_url" in old.feed.subtitle
    assert [(link.rel, link.href) for link in new.feed.links] == [
        ("self", "https://me.example/digests/feed.xml")
    ]
    assert new.entries[0].link == "https://me.example/digests/2026-W47.md"
    assert "subtitle" not in new.feed
    for data in (before, after):
        assert_atom(data)


def test_backfilled_weeks_come_newest_first_published_at_their_end(
    tmp_path: Path, store: Store
) -> None:
    config = config_for(tmp_path)
    for number, week in enumerate((W47, W45, W46)):  # the order a backfill may take
        deliver_digest(
            store, config, week, digest(week.label, "Some."), NOW + timedelta(minutes=number)
        )

    parsed = feedparser.parse(feed_path(config).read_bytes())
    assert [entry.title for entry in parsed.entries] == [
        "Digest for 2026-W47",
        "Digest for 2026-W46",
        "Digest for 2026-W45",
    ]
    assert [entry.published for entry in parsed.entries] == [
        "2026-11-23T00:00:00Z",
        "2026-11-16T00:00:00Z",
        "2026-11-09T00:00:00Z",
    ]
    assert [entry.updated for entry in parsed.entries] == [
        "2026-11-23T08:00:00Z",
        "2026-11-23T08:02:00Z",
        "2026-11-23T08:01:00Z",
    ]
    assert parsed.feed.updated == "2026-11-23T08:02:00Z"
    assert_atom(feed_path(config).read_bytes())


def test_a_feed_file_from_before_keeps_its_ids(tmp_path: Path, store: Store) -> None:
    config = config_for(tmp_path)
    feed_path(config).parent.mkdir(parents=True)
    feed_path(config).write_text(
        f'<?xml version="1.0"?><feed xmlns="{ATOM}"><id>urn:uuid:old-feed</id>'
        "<title>t</title><updated>2026-11-16T08:00:00Z</updated>"
        "<entry><id>urn:uuid:old-w46</id><title>Digest for 2026-W46</title>"
        "<updated>2026-11-16T08:00:00Z</updated><content>x</content></entry></feed>"
    )

    deliver_digest(store, config, W46, digest("2026-W46", "Again."), NOW)
    deliver_digest(store, config, W47, digest("2026-W47", "New."), NOW)

    parsed = feedparser.parse(feed_path(config).read_bytes())
    assert parsed.feed.id == "urn:uuid:old-feed"
    assert [entry.id for entry in parsed.entries][1] == "urn:uuid:old-w46"
    assert parsed.entries[0].id.startswith("tag:localhost,")


# -- one note per item ------------------------------------------------------------------------------


def stored_item(store: Store, title: str, tags: tuple[str, ...] = ("llm serving",)) -> Item:
    source = store.ensure_source("inbox", "file", path="/inbox")
    saved = SavedItem(
        url="https://blog.example/paged", title=title, saved_at=NOW - timedelta(days=2)
    )
    store.save_items(source, [saved], NOW)
    [item] = store.all_items()
    note = Note("Paged attention pages the KV cache.", ("Less waste",), tags)
    store.attach_note(note_attached(item, "k1", note, NOW, final=True))
    return store.all_items()[0]


def test_item_notes_have_front_matter_tags_and_a_link_to_the_week(
    tmp_path: Path, store: Store
) -> None:
    item = stored_item(store, "Paged: attention")
    [path] = write_item_notes(tmp_path / "vault", W47, [item], UTC_ZONE).written
    assert path.name == f"2026-11-21-paged-attention-{item.id}.md"
    text = path.read_text(encoding="utf-8")
    front = text.split("---\n")[1].splitlines()
    fields = {line.split(": ", 1)[0]: json.loads(line.split(": ", 1)[1]) for line in front}
    assert fields["title"] == "Paged: attention"
    assert fields["url"] == "https://blog.example/paged"
    assert fields["period"] == "2026-W47"
    assert fields["tags"] == ["llm-serving"]
    assert "Paged attention pages the KV cache." in text and "- Less waste" in text
    assert text.rstrip().endswith("[[2026-W47]].")


def test_rewriting_item_notes_is_idempotent_and_a_renamed_item_leaves_no_stale_file(
    tmp_path: Path, store: Store
) -> None:
    vault = tmp_path / "vault"
    item = stored_item(store, "First title")
    write_item_notes(vault, W47, [item], UTC_ZONE)
    assert write_item_notes(vault, W47, [item], UTC_ZONE).written == []

    renamed = Item(**{**item.__dict__, "title": "Second title"})
    [path] = write_item_notes(vault, W47, [renamed], UTC_ZONE).written
    assert [p.name for p in vault.iterdir() if not p.name.startswith(".")] == [path.name]
    assert "second-title" in path.name


def test_the_users_own_files_ending_in_an_item_id_are_never_touched(
    tmp_path: Path, store: Store
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    item = stored_item(store, "First title")
    mine = [vault / f"Chapter-{item.id}.md", vault / f"Meeting notes-{item.id}.md"]
    for path in mine:
        path.write_text("my own words\n")
    write_item_notes(vault, W47, [item], UTC_ZONE)
    write_item_notes(vault, W47, [Item(**{**item.__dict__, "title": "Renamed"})], UTC_ZONE)
    assert [path.read_text() for path in mine] == ["my own words\n"] * 2


def test_a_note_edited_by_hand_is_neither_replaced_nor_removed(
    tmp_path: Path, store: Store
) -> None:
    vault = tmp_path / "vault"
    item = stored_item(store, "First title")
    [path] = write_item_notes(vault, W47, [item], UTC_ZONE).written
    path.write_text(path.read_text() + "\nMy thoughts on it.\n")
    changed = Item(**{**item.__dict__, "context": "new context"})
    assert write_item_notes(vault, W47, [changed], UTC_ZONE).left == []  # same text: nothing to do
    renamed = Item(**{**item.__dict__, "title": "Second title"})
    report = write_item_notes(vault, W47, [renamed], UTC_ZONE)
    assert path.read_text().endswith("My thoughts on it.\n")  # the edited old file stays
    assert [p.name for p in report.written] == [f"2026-11-21-second-title-{item.id}.md"]


def test_a_file_at_a_notes_name_that_digest_did_not_write_is_left_and_reported(
    tmp_path: Path, store: Store
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    item = stored_item(store, "First title")
    theirs = vault / f"2026-11-21-first-title-{item.id}.md"
    theirs.write_text("someone else's file\n")
    report = write_item_notes(vault, W47, [item], UTC_ZONE)
    assert (report.written, report.left) == ([], [theirs])
    assert theirs.read_text() == "someone else's file\n"


def test_the_notes_are_an_outbox_channel_written_once_per_content(
    tmp_path: Path, store: Store
) -> None:
    vault = tmp_path / "vault"
    config = config_for(tmp_path, notes_dir=vault)
    item = stored_item(store, "First title")
    week = digest("2026-W47", "One link.")
    first = deliver_digest(store, config, W47, week, NOW, items=[item])
    [path] = [p for p in vault.iterdir() if not p.name.startswith(".")]
    path.unlink()  # the reader deleted it: the same notes are not written again
    again = deliver_digest(store, config, W47, week, NOW, items=[item])
    renamed = Item(**{**item.__dict__, "title": "Second title"})
    changed = deliver_digest(store, config, W47, week, NOW, items=[renamed])
    record = store.delivery("2026-W47", "notes", notes_hash(W47, [renamed], UTC_ZONE))
    assert "notes" in first.delivered and "notes" not in again.delivered
    assert "notes" in changed.delivered and record is not None and record.status == "sent"
    assert [p.name for p in vault.iterdir() if not p.name.startswith(".")] == [
        f"2026-11-21-second-title-{item.id}.md"
    ]


def test_a_note_left_alone_fails_the_notes_channel_until_it_is_resolved(
    tmp_path: Path, store: Store
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    config = config_for(tmp_path, notes_dir=vault)
    item = stored_item(store, "First title")
    theirs = vault / f"2026-11-21-first-title-{item.id}.md"
    theirs.write_text("someone else's file\n")
    week = digest("2026-W47", "One link.")
    runs = [deliver_digest(store, config, W47, week, NOW, items=[item]) for _ in range(2)]
    theirs.unlink()
    resolved = deliver_digest(store, config, W47, week, NOW, items=[item])
    record = store.delivery("2026-W47", "notes", notes_hash(W47, [item], UTC_ZONE))
    assert [run.failures for run in runs] == [
        [f"{theirs}: not written by digest (or edited since): left as it is"]
    ] * 2
    assert resolved.failures == [] and "notes" in resolved.delivered
    assert record is not None and (record.status, record.attempts) == ("sent", 3)


def test_the_week_in_progress_is_published_at_its_first_revision_never_in_the_future(
    tmp_path: Path, store: Store
) -> None:
    config = config_for(tmp_path)
    midweek = W47.start + timedelta(days=2, hours=9)
    deliver_digest(store, config, W47, digest("2026-W47", "One."), midweek)
    deliver_digest(store, config, W47, digest("2026-W47", "Two."), midweek + timedelta(days=1))

    [entry] = feedparser.parse(feed_path(config).read_bytes()).entries
    assert entry.published == "2026-11-18T09:00:00Z"  # the first revision, not the week's end
    assert entry.updated == "2026-11-19T09:00:00Z"
    deliver_digest(store, config, W47, digest("2026-W47", "Three."), W47.end + timedelta(days=1))
    [entry] = feedparser.parse(feed_path(config).read_bytes()).entries
    assert entry.published == "2026-11-18T09:00:00Z"  # kept from its first writing
    assert_atom(feed_path(config).read_bytes())
