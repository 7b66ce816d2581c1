"""OPML: the list of feeds feed readers import and export.

An OPML file holds feeds, not saved items, so it is not an Importer: `digest
import` asks `is_opml` first and turns the feeds of `parse_opml` into sources;
`digest sources export --opml` writes `export_opml`. Nested outlines name the
category of the feeds inside them ("Tech/AI" for two levels); a feed outside any folder
may name it in OPML 2.0's `category` attribute ("/Tech/AI") instead. A feed's `htmlUrl`
(its site) is kept.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple
from xml.sax.saxutils import quoteattr

from digest.errors import ImportFormatError


class Feed(NamedTuple):
    name: str
    url: str  # the feed itself: xmlUrl
    category: str | None = None  # "Tech/AI": the folders around it
    html_url: str | None = None  # the site: htmlUrl


_OPML_START = re.compile(r"^\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*<opml[\s>]", re.DOTALL)


def is_opml(head: str) -> bool:
    """Whether the text starts like an OPML document (an <opml> root element)."""
    return bool(_OPML_START.match(head.lstrip("\ufeff")))


def parse_opml(text: str) -> list[Feed]:
    """Every feed outline (one with an xmlUrl) with its name and category, in file order."""
    root = _parse_root(text)
    body = root.find("body")
    if body is None:
        raise ImportFormatError("not an OPML file: no <body>")
    feeds: list[Feed] = []
    _walk(body, [], feeds)
    return feeds


def _parse_root(text: str) -> ET.Element:
    if "<!ENTITY" in text or "<!DOCTYPE" in text:
        raise ImportFormatError("OPML with a DOCTYPE or entity declarations is refused")
    try:
        root = ET.fromstring(text.lstrip("\ufeff"))
    except ET.ParseError as exc:
        raise ImportFormatError(f"not an OPML file: {exc}") from exc
    if root.tag != "opml":
        raise ImportFormatError(f"not an OPML file: the root element is <{root.tag}>")
    return root


MAX_FOLDER_DEPTH = 20  # a category names at most this many folders: deeper ones are left out


def _walk(body: ET.Element, path: list[str], feeds: list[Feed]) -> None:
    """The feed outlines below `body` in document order, each with the folders around it;
    a stack, not recursion: an OPML nested a thousand deep is read like any other."""
    stack = [(outline, path) for outline in reversed(body.findall("outline"))]
    while stack:
        outline, folders = stack.pop()
        name = (outline.get("title") or outline.get("text") or "").strip()
        url = _xml_url(outline)
        if url:
            category = "/".join(folders) or _category_attribute(outline)
            site = (outline.get("htmlUrl") or "").strip() or None
            feeds.append(Feed(name or url, url, category, site))
        inner = [*folders, name] if not url and name else folders
        inner = inner[:MAX_FOLDER_DEPTH]
        stack.extend((child, inner) for child in reversed(outline.findall("outline")))


def _category_attribute(outline: ET.Element) -> str | None:
    """The first of OPML 2.0's comma-separated categories, "/Tech/AI" read as "Tech/AI"."""
    first = (outline.get("category") or "").split(",")[0]
    return "/".join(filter(None, (part.strip() for part in first.split("/")))) or None


def _xml_url(outline: ET.Element) -> str | None:
    for attribute in ("xmlUrl", "xmlurl", "XMLURL"):
        value = (outline.get(attribute) or "").strip()
        if value:
            return value
    return None


@dataclass
class _Folder:
    """The feeds of one category, and its sub-categories."""

    feeds: list[Feed] = field(default_factory=list)
    folders: dict[str, _Folder] = field(default_factory=dict)


def export_opml(sources: Sequence[Feed], *, title: str = "digest feeds") -> str:
    """An OPML 2.0 document listing `sources` as (name, feed URL, category); a category
    becomes the outlines around its feeds ("Tech/AI": two levels), as parse_opml reads it."""
    top = _Folder()
    for feed in sources:
        folder = top
        for part in filter(None, (feed.category or "").split("/")):
            folder = folder.folders.setdefault(part, _Folder())
        folder.feeds.append(feed)
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<opml version="2.0">',
        "  <head>",
        f"    <title>{_escape_text(title)}</title>",
        "  </head>",
        "  <body>",
    ]
    lines += [*_outlines(top, "    "), "  </body>", "</opml>", ""]
    return "\n".join(lines)


def _outlines(folder: _Folder, indent: str) -> list[str]:
    lines = [f"{indent}<outline {_feed_attributes(feed)}/>" for feed in folder.feeds]
    for name, inner in folder.folders.items():
        lines.append(f"{indent}<outline text={quoteattr(name)} title={quoteattr(name)}>")
        lines += [*_outlines(inner, indent + "  "), f"{indent}</outline>"]
    return lines


def _feed_attributes(feed: Feed) -> str:
    name = quoteattr(feed.name)
    attributes = f'type="rss" text={name} title={name} xmlUrl={quoteattr(feed.url)}'
    if feed.html_url:
        attributes += f" htmlUrl={quoteattr(feed.html_url)}"
    if feed.category:
        attributes += f" category={quoteattr('/' + feed.category)}"
    return attributes


def _escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
