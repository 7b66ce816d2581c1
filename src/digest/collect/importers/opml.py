"""OPML: the list of feeds feed readers import and export.

An OPML file holds feeds, not saved items, so it is not an Importer: `digest
import` asks `is_opml` first and turns the feeds of `parse_opml` into sources;
`digest sources export --opml` writes `export_opml`. Nested outlines name the
category of the feeds inside them ("Tech/AI" for two levels).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from xml.sax.saxutils import quoteattr

from digest.errors import ImportFormatError

Feed = tuple[str, str, str | None]  # name, xml_url, category

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


def _walk(node: ET.Element, path: list[str], feeds: list[Feed]) -> None:
    for outline in node.findall("outline"):
        name = (outline.get("title") or outline.get("text") or "").strip()
        url = _xml_url(outline)
        if url:
            feeds.append((name or url, url, "/".join(path) or None))
        _walk(outline, [*path, name] if not url and name else path, feeds)


def _xml_url(outline: ET.Element) -> str | None:
    for attribute in ("xmlUrl", "xmlurl", "XMLURL"):
        value = (outline.get(attribute) or "").strip()
        if value:
            return value
    return None


def export_opml(sources: list[tuple[str, str]], *, title: str = "digest feeds") -> str:
    """An OPML 2.0 document listing `sources` as (name, feed URL) pairs."""
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<opml version="2.0">',
        "  <head>",
        f"    <title>{_escape_text(title)}</title>",
        "  </head>",
        "  <body>",
    ]
    for name, url in sources:
        lines.append(
            f'    <outline type="rss" text={quoteattr(name)} title={quoteattr(name)}'
            f" xmlUrl={quoteattr(url)}/>"
        )
    lines += ["  </body>", "</opml>", ""]
    return "\n".join(lines)


def _escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
