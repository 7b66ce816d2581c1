"""A page's title, author, date and language, read from its head and markup.

Meta tags and JSON-LD (trafilatura's readers), a `rel=author` link, htmldate's quick
date search and the declared language. trafilatura's full metadata pass is left out:
its byline, category, tag and licence heuristics cost about a third of the extraction
and we keep none of them but the author.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from htmldate import find_date
from lxml.html import HtmlElement
from trafilatura.metadata import examine_meta, extract_meta_json, extract_title

from digest.extract.cleanup import MAX_TITLE_CHARS, clean, collapse

MAX_AUTHOR_CHARS = 100
_LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")


class PageMetadata(NamedTuple):
    title: str | None
    author: str | None
    published: str | None  # YYYY-MM-DD


def page_metadata(tree: HtmlElement, url: str) -> PageMetadata:
    found = extract_meta_json(tree, examine_meta(tree))
    title = clean(found.title or extract_title(tree) or page_title(tree)) or None
    # a one-word author in a meta tag is a site or handle more often than a person
    author = found.author if found.author and " " in found.author else _author_link(tree)
    published = find_date(tree, url=url or None, original_date=True, extensive_search=False)
    return PageMetadata(title, author or None, published or None)


def _author_link(tree: HtmlElement) -> str | None:
    for link in tree.xpath("//a[@rel='author']"):
        if name := collapse(link.text_content())[:MAX_AUTHOR_CHARS]:
            return name
    return None


def page_title(tree: HtmlElement) -> str | None:
    for query in ("(//title)[1]//text()", "//meta[@property='og:title']/@content", "//h1//text()"):
        found = " ".join(str(part) for part in tree.xpath(query)).strip()
        if found:
            return found[:MAX_TITLE_CHARS]
    return None


def page_language(tree: HtmlElement) -> str | None:
    """The declared language as a BCP 47 tag (`en`, `de-AT`), else None."""
    for query in (
        "/html/@lang",
        "/html/@*[name()='xml:lang']",
        "//meta[translate(@http-equiv, 'CONTENTLANGUAGE', 'contentlanguage')"
        "='content-language']/@content",
        "//meta[@property='og:locale']/@content",
    ):
        for value in tree.xpath(query):
            tag = str(value).split(",")[0].strip().replace("_", "-")
            if _LANGUAGE_TAG.fullmatch(tag):
                return _canonical_language(tag)
    return None


def _canonical_language(tag: str) -> str:
    """BCP 47 letter case: `EN-us` -> `en-US`, `zh-hant-tw` -> `zh-Hant-TW`."""
    primary, *subtags = tag.split("-")
    cased = [
        part.upper() if len(part) == 2 else part.title() if len(part) == 4 else part.lower()
        for part in subtags
    ]
    return "-".join([primary.lower(), *cased])
