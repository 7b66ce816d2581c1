"""The week as an EPUB: built, opened with ebooklib, checked; mailed to aiosmtpd."""

from __future__ import annotations

import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import ebooklib
import pytest
from ebooklib import epub

from digest.compose.entries import Entry, Topic
from digest.config import Config, DigestSection, EmailConfig, EpubConfig
from digest.deliver.channel import DeliveryOutcome, Edition
from digest.deliver.outbox import deliver_digest
from digest.models import Item
from digest.periods import parse_week
from digest.store import Store
from mailrig import HangUpServer, Sink, smtp_server
from stores import store_at
from weekitems import week_item

W47 = parse_week("2026-W47", ZoneInfo("UTC"))
NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
FIRST = "# Digest for 2026-W47\n\n## The week\n\nOne link.\n"
SECOND = "# Digest for 2026-W47\n\n## The week\n\nTwo links.\n"
HOSTILE = "<script>alert(1)</script> & \x00 friends"
TEXT = "Paged attention splits the cache.\n\n" + " ".join(["page"] * 700)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = store_at(tmp_path / "data" / "digest.db")
    try:
        yield opened
    finally:
        opened.close()


def items() -> list[Item]:
    return [
        week_item(1, W47.start, url="https://www.vllm.example/paged", text=TEXT),
        week_item(2, W47.start, url="https://rust.example/refactor"),
        week_item(3, W47.start, url="https://odd.example/x"),
    ]


def edition() -> Edition:
    inference = Topic(
        "Inference",
        [
            Entry(
                "Paged attention",
                "https://www.vllm.example/paged",
                "It pages.",
                None,
                ("KV",),
                minutes=3,
            ),
            Entry(HOSTILE, "https://odd.example/x", HOSTILE, None, (HOSTILE,)),
        ],
    )
    rust = Topic(
        "Rust & friends", [Entry("Refactoring", "https://rust.example/refactor", "Safe.", None, ())]
    )
    return Edition("16–22 November 2026", "**Inference** dominates; *Rust* too.", [inference, rust])


def toc(entries: list[Any]) -> list[Any]:
    """ebooklib's table of contents as titles: a link, or (section, [its links])."""
    return [
        entry.title if isinstance(entry, epub.Link) else (entry[0].title, toc(entry[1]))
        for entry in entries
    ]


def config(tmp_path: Path, send_to: str = "", port: int | None = None) -> Config:
    smtp = EmailConfig(host="127.0.0.1", port=port or 25, security="none", timeout_s=5)
    return Config(
        digest=DigestSection(data_dir=tmp_path / "data"),
        email=smtp,
        epub=EpubConfig(enabled=True, send_to=send_to),
    )


def deliver(store: Store, cfg: Config, markdown: str = FIRST) -> DeliveryOutcome:
    return deliver_digest(store, cfg, W47, markdown, NOW, items=items(), edition=edition())


def test_the_book_opens_with_a_cover_a_chapter_per_section_and_every_item(
    tmp_path: Path, store: Store
) -> None:
    cfg = config(tmp_path)
    outcome = deliver(store, cfg)
    path = tmp_path / "data" / "digests" / "2026-W47.epub"
    assert "epub" in outcome.delivered

    with zipfile.ZipFile(path) as archive:
        first = archive.infolist()[0]
        assert (first.filename, first.compress_type) == ("mimetype", zipfile.ZIP_STORED)
        assert archive.read("mimetype") == b"application/epub+zip"
        pages = {name: archive.read(name) for name in archive.namelist() if name.endswith("html")}
    for name, page in pages.items():
        ET.fromstring(page)  # well-formed XHTML, the hostile title included
        assert b"<script" not in page, name

    book = epub.read_epub(str(path))
    documents = {
        item.get_name(): item.get_content().decode()
        for item in book.get_items_of_type(ebooklib.ITEM_DOCUMENT)
    }
    assert set(documents) == {"cover.xhtml", "nav.xhtml", "section-1.xhtml", "section-2.xhtml"}
    cover = documents["cover.xhtml"]
    assert "Digest for 2026-W47" in cover and "16–22 November 2026" in cover
    assert "Inference dominates; Rust too." in cover
    assert "3 items · 3 min read" in cover
    inference, rust = documents["section-1.xhtml"], documents["section-2.xhtml"]
    assert "Paged attention" in inference and "vllm.example · 3 min read" in inference
    assert "It pages." in inference and "<li>KV</li>" in inference
    assert "Paged attention splits the cache." in inference  # the page's text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp;  friends" in inference
    assert "Refactoring" in rust and "rust.example · not read" in rust
    assert "Rust &amp; friends" in documents["nav.xhtml"]
    assert toc(book.toc) == [
        "Digest for 2026-W47",
        ("Inference", ["Paged attention", "<script>alert(1)</script> &  friends"]),
        ("Rust & friends", ["Refactoring"]),
    ]

    again = deliver(store, cfg)  # the same week: the same bytes, not rewritten
    assert "epub" not in again.delivered


def test_the_book_is_mailed_once_per_revision(tmp_path: Path, store: Store) -> None:
    handler = Sink()
    with smtp_server(handler) as port:
        cfg = config(tmp_path, send_to="me@kindle.example", port=port)
        deliver(store, cfg)
        deliver(store, cfg)
        assert len(handler.envelopes) == 1
        deliver(store, cfg, SECOND)

    assert [e.rcpt_tos for e in handler.envelopes] == [["me@kindle.example"]] * 2
    message = handler.messages()[0]
    [attachment] = [part for part in message.walk() if part.get_filename()]
    assert attachment.get_filename() == "2026-W47.epub"
    assert attachment.get_content_type() == "application/epub+zip"
    payload = attachment.get_payload(decode=True)
    assert isinstance(payload, bytes) and payload.startswith(b"PK")


def test_a_refused_mail_is_retried_on_the_next_run(tmp_path: Path, store: Store) -> None:
    cfg = config(tmp_path, send_to="me@kindle.example", port=9)  # nobody listens
    outcome = deliver(store, cfg)
    assert any("2026-W47.epub to me@kindle.example" in line for line in outcome.failures)
    handler = Sink()
    with smtp_server(handler) as port:
        cfg = config(tmp_path, send_to="me@kindle.example", port=port)
        deliver(store, cfg)
    assert len(handler.envelopes) == 1


def test_a_mail_whose_outcome_is_unknown_is_not_resent(
    tmp_path: Path, store: Store, hangup: HangUpServer
) -> None:
    cfg = config(tmp_path, send_to="me@kindle.example", port=hangup.port)
    first = deliver(store, cfg)
    deliver(store, cfg)

    assert len(hangup.bodies) == 1
    assert any("2026-W47.epub to me@kindle.example" in line for line in first.failures)
