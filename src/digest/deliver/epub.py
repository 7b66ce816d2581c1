"""The week as an EPUB 3 book: a cover page with the week and its brief, a chapter per
section, each item with its title, site, reading time, note, key points and, when its
page was read, the page's text; a table of contents; no images.

Written with zipfile and jinja2 templates (autoescaped, so every text is escaped; text
that XML cannot hold is dropped). The same week gives the same bytes.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from urllib.parse import urlsplit

from digest.compose.entries import Entry, Topic
from digest.deliver.html import our_templates
from digest.deliver.plaintext import short_text
from digest.models import Item
from digest.reading_time import minutes_read
from digest.urls import for_display

TEMPLATES = Path(__file__).parent / "templates" / "epub"
MEDIA_TYPE = "application/epub+zip"
# a fixed time in every zip entry: the same week, the same bytes
_ZIP_TIME = (2020, 1, 1, 0, 0, 0)
# what XML 1.0 cannot hold (C0 controls but tab and newlines, surrogates, U+FFFE/U+FFFF)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class Book:
    """What the book says: the week, its brief (markdown), its sections and items."""

    label: str  # 2026-W47
    dates: str
    brief: str
    topics: Sequence[Topic]
    items: Sequence[Item]
    modified: str  # the revision's time, ISO 8601 UTC ("2026-11-23T08:00:00Z")
    language: str = "en"


def epub_bytes(book: Book) -> bytes:
    """The EPUB file: mimetype first and stored, then the container, package and pages."""
    env = our_templates(TEMPLATES)
    by_url = {item.url: item for item in book.items if item.url}
    chapters = [_chapter(number, topic, by_url) for number, topic in enumerate(book.topics, 1)]
    count = sum(len(topic.entries) for topic in book.topics)
    values = {
        "title": f"Digest for {book.label}",
        "dates": _xml(book.dates),
        "language": book.language,
        "identifier": f"urn:digest:{book.label}",
        "modified": book.modified,
        "chapters": chapters,
        "brief": [_xml(line) for line in short_text(book.brief)],
        "totals": f"{count} {'item' if count == 1 else 'items'} · "
        + minutes_read(sum(topic.minutes for topic in book.topics)),
    }
    files = {
        "META-INF/container.xml": (TEMPLATES / "container.xml").read_text(encoding="utf-8"),
        "OEBPS/content.opf": env.get_template("content.opf.j2").render(values),
        "OEBPS/nav.xhtml": env.get_template("nav.xhtml.j2").render(values),
        "OEBPS/style.css": (TEMPLATES / "style.css").read_text(encoding="utf-8"),
        "OEBPS/cover.xhtml": env.get_template("cover.xhtml.j2").render(values),
    }
    chapter_page = env.get_template("chapter.xhtml.j2")
    for chapter in chapters:
        files[f"OEBPS/{chapter['href']}"] = chapter_page.render(values | {"chapter": chapter})
    return _zipped(files)


def _zipped(files: Mapping[str, str]) -> bytes:
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as book:
        book.writestr(zipfile.ZipInfo("mimetype", _ZIP_TIME), MEDIA_TYPE, zipfile.ZIP_STORED)
        for name, text in files.items():
            book.writestr(zipfile.ZipInfo(name, _ZIP_TIME), text, zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def _chapter(number: int, topic: Topic, by_url: Mapping[str, Item]) -> dict[str, object]:
    entries = [_entry(f"item-{number}-{i}", e, by_url) for i, e in enumerate(topic.entries, 1)]
    return {
        "id": f"section-{number}",
        "href": f"section-{number}.xhtml",
        "name": _xml(topic.name),
        "entries": entries,
        "totals": topic.totals,
    }


def _entry(anchor: str, entry: Entry, by_url: Mapping[str, Item]) -> dict[str, object]:
    item = by_url.get(entry.url) if entry.url else None
    minutes = entry.minutes  # as the digest counts it: 0 for a page not read
    site = _site(entry.url)
    meta = [part for part in (site, minutes_read(minutes) if minutes else "not read") if part]
    return {
        "anchor": anchor,
        "title": _xml(entry.title),
        "url": for_display(entry.url) if entry.url and _web(entry.url) else None,
        "meta": " · ".join(meta),
        "note": _xml(" ".join(part for part in (entry.summary, entry.marker) if part)),
        "points": [_xml(point) for point in entry.points],
        "text": _paragraphs(item.text) if item and item.text else [],
    }


def _site(url: str | None) -> str:
    host = urlsplit(url).hostname if url else None
    return (host or "").removeprefix("www.")


def _web(url: str) -> bool:
    return urlsplit(url).scheme in ("http", "https")


def _paragraphs(text: str) -> list[str]:
    blocks = re.split(r"\n\s*\n", _xml(text))
    return [" ".join(block.split()) for block in blocks if block.strip()]


def _xml(text: str) -> str:
    return _NOT_XML.sub("", text)
