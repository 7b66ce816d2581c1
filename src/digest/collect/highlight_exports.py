"""Highlights from KOReader's exporter (its JSON and its markdown) and from the Karakeep
and Omnivore exports (pure parsing; collect/highlights.py detects them and keeps them once).

- KOReader JSON: one book {title, author, entries: [{text, note, page, chapter, time}]}, or
  several as {documents: [...]}; a book's highlights belong to the book (title + author).
- KOReader markdown: "# Title", "##### Author", "## Chapter", "### Page 12 @ <date>", the
  passage (styled **bold**, ==marked==… as the exporter is set), a note after "---".
- Karakeep: its export carries no highlights; its API's list does ({"highlights": [{text,
  note, bookmarkId, createdAt}]}). A highlight finds its page by the bookmark's id in a
  Karakeep export saved in the same folder (exports carry each bookmark's id).
- Omnivore: its export folder holds highlights/<slug>.md ("> quote", then labels and the
  note) beside metadata_*.json, whose record with that slug gives the page's URL."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from digest.models import Highlight, ItemKind, Rejected, SavedItem
from digest.userfiles import read_small_text

KOREADER_JSON = "koreader-json"
KOREADER_MARKDOWN = "koreader-markdown"
KARAKEEP = "karakeep-highlights"
OMNIVORE = "omnivore-highlights"
_KOREADER_PAGE = re.compile(r"^### Page (?P<page>\S+) @ (?P<when>.+)$")
_KOREADER_DATE = "%d %B %Y %I:%M:%S %p"
_STYLES = re.compile(
    r"^(\*\*_|\*\*|==|\+\+|~~|\*|<u>)(?P<text>.+?)(_\*\*|\*\*|==|\+\+|~~|\*|</u>)$", re.S
)
_LABELS = re.compile(r"^(#[\w-]+\s*)+$")
MAX_COMPANION_BYTES = 50_000_000  # a companion export read to find pages: at most this big


def koreader_json(text: str, rejected: list[Rejected]) -> list[Highlight]:
    """The highlights of each book; `line` is an entry's number in the file."""
    document = _json(text, rejected)
    books = document.get("documents") if isinstance(document, dict) else None
    found: list[Highlight] = []
    entries = [
        (book, entry)
        for book in (books if isinstance(books, list) else [document])
        if isinstance(book, dict) and isinstance(book.get("entries"), list)
        for entry in book["entries"]
    ]
    if not entries and document is not None:
        rejected.append(Rejected(None, text[:200], "no KOReader book with entries"))
    for number, (book, entry) in enumerate(entries, 1):
        body = entry.get("text") if isinstance(entry, dict) else None
        if not isinstance(body, str) or not body.strip():
            rejected.append(Rejected(number, str(entry)[:200], "no highlighted text"))
            continue
        when = _unix(entry.get("time"))
        item = _book(book.get("title"), book.get("author"), when)
        page = entry.get("page")
        location = str(page) if isinstance(page, int | str) and str(page) else None
        note = _text(entry.get("note"))
        found.append(Highlight(body.strip(), item, note, location, when, number))
    return found


def koreader_markdown(text: str, zone: ZoneInfo, rejected: list[Rejected]) -> list[Highlight]:
    """A book's highlights under "### Page N @ date"; `line` is where each starts."""
    found: list[Highlight] = []
    title, author = "", None
    entry: list[str] | None = None
    where: tuple[str, datetime | None, int] = ("", None, 0)

    def close() -> None:
        if entry is None:
            return
        passage, _, note = "\n".join(entry).strip().partition("\n---\n")
        passage = _unstyled(passage.strip())
        page, when, line = where
        if not passage:
            rejected.append(Rejected(line, f"Page {page}", "no highlighted text"))
            return
        item = _book(title, author, when)
        found.append(Highlight(passage, item, note.strip() or None, page, when, line))

    for number, line in enumerate(text.lstrip("\ufeff").replace("\r\n", "\n").split("\n"), 1):
        page = _KOREADER_PAGE.match(line)
        if page or line.startswith(("# ", "## ", "##### ", "_Generated at:")):
            close()
            entry = None
        if page:
            when = _strptime(page["when"].strip(), zone)
            where, entry = (page["page"], when, number), []
        elif line.startswith("# "):
            title, author = line[2:].strip(), None
        elif line.startswith("##### "):
            author = line[6:].strip()
        elif entry is not None:
            entry.append(line)
    close()
    return found


def karakeep(
    text: str, path: Path | None, zone: ZoneInfo, rejected: list[Rejected]
) -> list[Highlight]:
    document = _json(text, rejected)
    records = document.get("highlights") if isinstance(document, dict) else document
    pages = _karakeep_pages(document, path)
    found: list[Highlight] = []
    for number, record in enumerate(records if isinstance(records, list) else [], 1):
        body = record.get("text") if isinstance(record, dict) else None
        if not isinstance(body, str) or not body.strip():
            rejected.append(Rejected(number, str(record)[:200], "no highlighted text"))
            continue
        page = pages.get(str(record.get("bookmarkId")))
        if page is None:
            reason = "its bookmark is in no Karakeep export in this folder (export it beside)"
            rejected.append(Rejected(number, body[:200], reason))
            continue
        when = _iso(record.get("createdAt"), zone)
        location = str(record.get("startOffset")) if record.get("startOffset") is not None else None
        found.append(
            Highlight(body.strip(), page, _text(record.get("note")), location, when, number)
        )
    return found


def _karakeep_pages(document: Any, path: Path | None) -> dict[str, SavedItem]:
    """Each bookmark's page by its id, from this file and the Karakeep exports beside it."""
    pages: dict[str, SavedItem] = {}
    for export in [document, *_companions(path, "*.json")]:
        bookmarks = export.get("bookmarks") if isinstance(export, dict) else None
        for bookmark in bookmarks if isinstance(bookmarks, list) else []:
            content = bookmark.get("content") if isinstance(bookmark, dict) else None
            url = content.get("url") if isinstance(content, dict) else None
            if (
                isinstance(url, str)
                and url.startswith(("https://", "http://"))
                and bookmark.get("id")
            ):
                title = bookmark.get("title") if isinstance(bookmark.get("title"), str) else None
                pages[str(bookmark["id"])] = SavedItem(url=url, title=title)
    return pages


def omnivore(
    text: str, path: Path | None, zone: ZoneInfo, rejected: list[Rejected]
) -> list[Highlight]:
    """An Omnivore export's highlights/<slug>.md: paragraphs apart by blank lines; one
    opening with ">" is a highlight's quote, the others its labels (#label) and note (a
    note before any quote is a highlight of its own: Omnivore's page notes)."""
    page = _omnivore_page(path, zone)
    if page is None:
        rejected.append(Rejected(None, str(path), "no metadata_*.json beside it names this slug"))
        return []
    found: list[Highlight] = []
    line = 1
    for paragraph in re.split(r"(\n[ \t]*\n)", text.lstrip("\ufeff").replace("\r\n", "\n")):
        rows = paragraph.strip("\n").split("\n")
        start, line = line, line + paragraph.count("\n")
        if not paragraph.strip() or _LABELS.match(paragraph.strip()):
            continue
        if rows[0].startswith(">"):
            quote = "\n".join(row.removeprefix(">").strip() for row in rows).strip()
            found.append(Highlight(quote, page, None, None, page.saved_at, start))
        elif found:
            note = "\n".join(filter(None, (found[-1].note, paragraph.strip())))
            found[-1] = replace(found[-1], note=note)
        else:
            found.append(Highlight(paragraph.strip(), page, None, None, page.saved_at, start))
    return [highlight for highlight in found if highlight.text]


def in_omnivore_export(path: Path) -> bool:
    """Whether `path` is an unpacked Omnivore export's highlights/<slug>.md."""
    highlights = path.parent
    return (
        path.suffix == ".md"
        and highlights.name == "highlights"
        and any(highlights.parent.glob("metadata_*.json"))
    )


def _omnivore_page(path: Path | None, zone: ZoneInfo) -> SavedItem | None:
    """The page of the slug `path` is named for, from the export's metadata files."""
    if path is None or not in_omnivore_export(path):
        return None
    slug = path.stem
    for metadata in _companions(path.parent, "metadata_*.json"):  # beside highlights/
        for record in metadata if isinstance(metadata, list) else []:
            url = record.get("url") if isinstance(record, dict) else None
            if record.get("slug") == slug and isinstance(url, str):
                title = record.get("title") if isinstance(record.get("title"), str) else None
                return SavedItem(url=url, title=title, saved_at=_iso(record.get("savedAt"), zone))
    return None


def _companions(path: Path | None, pattern: str) -> Iterator[Any]:
    """The JSON documents beside `path` (in its folder) matching `pattern`, each bounded."""
    if path is None:
        return
    for companion in sorted(path.parent.glob(pattern)):
        if companion == path:
            continue
        try:
            text = read_small_text(companion, "an export", MAX_COMPANION_BYTES)
            yield json.loads(text.removeprefix("\ufeff"))
        except ValueError:  # not a regular file, too big, not UTF-8 or not JSON
            continue


def book_item(title: str, author: str | None, saved_at: datetime | None) -> SavedItem:
    """The item a book's highlights belong to: one per title and author."""
    name = " ".join(title.split())
    who = " ".join((author or "").split())
    key = hashlib.sha256(f"{name.casefold()}\x1f{who.casefold()}".encode()).hexdigest()[:32]
    shown = f"{name} — {who}" if who else name
    return SavedItem(
        url=None, title=shown, saved_at=saved_at, kind=ItemKind.NOTE, key=f"book:{key}"
    )


def _book(title: object, author: object, when: datetime | None) -> SavedItem:
    name = title if isinstance(title, str) and title.strip() else "Untitled book"
    return book_item(name, author if isinstance(author, str) else None, when)


def _text(value: object) -> str | None:
    """A string field's text, None when it is missing, empty or not a string."""
    return value.strip() or None if isinstance(value, str) else None


def _json(text: str, rejected: list[Rejected]) -> Any:
    try:
        return json.loads(text.lstrip("\ufeff"))
    except ValueError as exc:
        rejected.append(Rejected(None, text[:200], f"not JSON: {exc}"))
        return None


def _unix(value: object) -> datetime | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _iso(value: object, zone: ZoneInfo) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=zone)


def _strptime(text: str, zone: ZoneInfo) -> datetime | None:
    try:
        return datetime.strptime(text, _KOREADER_DATE).replace(tzinfo=zone)
    except ValueError:
        return None


def _unstyled(passage: str) -> str:
    """The passage without the style KOReader's markdown exporter wraps it in."""
    styled = _STYLES.match(passage)
    return styled["text"].strip() if styled else passage
