"""Fetched bytes -> article text and metadata (pure: no network, no state).

`extract` picks a reader by Content-Type and by sniffing the first bytes:

    HTML / XHTML     html.py: site readers (arXiv, GitHub, video pages), else
                     trafilatura checked against readability, with fallbacks
    PDF              documents.py: pypdf, the text of the first pages
    text / markdown  as is
    anything binary  ExtractError "skipped: ..."

`Extracted.quality` marks what is not the article (quality.py): a bot wall,
consent or login wall, paywall stub, or too little text.

The readers (trafilatura, lxml, readability, pypdf: 40 MB and half a second) are
imported on first use, so that a process which only fetches (the fetch stage's
parent, whose workers extract) does not carry them.
"""

from __future__ import annotations

from digest.errors import ExtractError
from digest.extract.sniff import (
    HTML_TYPES,
    PLAIN_TYPES,
    SNIFF_BYTES,
    decode_html,
    is_probably_binary,
    looks_like_html,
    looks_like_pdf,
    parse_content_type,
    sniff_binary,
)
from digest.models import Extracted

__all__ = [
    "SNIFF_BYTES",
    "decode_html",
    "extract",
    "is_probably_binary",
    "parse_content_type",
]


def extract(content: bytes, *, url: str, content_type: str | None) -> Extracted:
    """Return the readable text and metadata of one fetched resource.

    Raises ExtractError naming `url` when the content is binary, unsupported or
    unreadable; a page that is no article comes back with its `quality` set.
    """
    media_type, charset = parse_content_type(content_type)
    head = content[:SNIFF_BYTES]
    if looks_like_pdf(head) or (media_type == "application/pdf" and b"%PDF-" in head):
        from digest.extract.documents import extract_pdf

        return extract_pdf(content, url)
    if is_probably_binary(content_type, head):
        label = sniff_binary(head) or media_type or "unknown type"
        raise ExtractError(f"skipped: {url!r}: binary content ({label})")
    if media_type in HTML_TYPES or looks_like_html(head):
        from digest.extract.html import extract_html

        return extract_html(content, url, charset)
    if media_type == "application/pdf":
        raise ExtractError("declared PDF but not a PDF file", url=url)
    if media_type is None or media_type in PLAIN_TYPES:
        from digest.extract.documents import extract_plain

        return extract_plain(content, charset, markdown="markdown" in (media_type or ""))
    raise ExtractError(f"skipped: {url!r}: unsupported content ({media_type})")
