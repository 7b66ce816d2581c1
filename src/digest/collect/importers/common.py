"""Text helpers the line-based importers share: URLs in prose, list markers, line splitting."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from digest.urls import FETCHABLE_SCHEMES, normalize_url

# A URL in running text: up to whitespace or a character that cannot end one in prose.
BARE_URL = re.compile(r"\bhttps?://[^\s<>\"'`\]]*", re.IGNORECASE)
# [title](target "optional title"); the target may hold one level of parentheses.
MARKDOWN_LINK = re.compile(
    r"!?\[(?P<title>[^\]]*)\]\(\s*(?P<target><[^>]*>|(?:[^()\s]|\([^()\s]*\))*)"
    r"(?:\s+\"[^\"]*\")?\s*\)"
)
LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*:", re.IGNORECASE)
_TRAILING = ".,;:!?'\""
TITLE_SEPARATOR = re.compile(r"\s+[-–—]\s+")
# The common case, known good without parsing: http(s), a plain host name, no port or user.
_PLAIN_WEB_URL = re.compile(
    r"^https?://[a-z0-9-]+(?:\.[a-z0-9-]+)*\.?(?:[/?#]\S*)?$", re.IGNORECASE
)


def lines_of(text: str) -> list[str]:
    """The file's lines as an editor numbers them (only \\n, \\r\\n and \\r end a line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def strip_list_marker(line: str) -> tuple[bool, str]:
    """(True, the text) for a list entry such as `- x`, `* x` or `1. x`; else (False, line)."""
    match = LIST_MARKER.match(line)
    if match is None:
        return False, line.strip()
    return True, line[match.end() :].strip()


def trim_url(url: str) -> str:
    """Drop punctuation that ends the sentence, not the URL (a trailing `.`, an unmatched `)`)."""
    while url:
        if url[-1] in _TRAILING or url[-1] == ")" and url.count("(") < url.count(")"):
            url = url[:-1]
        else:
            break
    return url


def bare_urls(text: str) -> list[str]:
    return [trim_url(match.group()) for match in BARE_URL.finditer(text)]


def url_problem(url: str) -> str | None:
    """Why `url` cannot be saved as a web link, or None when it can."""
    candidate = url.strip().strip("<>")
    if _PLAIN_WEB_URL.match(candidate):
        return None
    if not candidate:
        return "empty URL"
    parts = urlsplit(candidate)
    if not parts.scheme or not _SCHEME.match(candidate):
        return "not an absolute URL"
    if parts.scheme.lower() not in FETCHABLE_SCHEMES:
        return f"not a web link ({parts.scheme.lower()}:)"
    if not parts.hostname:
        return "URL has no host"
    try:
        normalize_url(candidate)
    except ValueError as exc:
        return str(exc)
    return None


def is_web_scheme_problem(problem: str) -> bool:
    """A link deliberately not imported (mailto:, javascript:), as opposed to a broken one."""
    return problem.startswith("not a web link")


def remove_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` without the given (start, end) spans, whitespace tidied."""
    kept, last = [], 0
    for start, end in sorted(spans):
        kept.append(text[last:start])
        last = end
    kept.append(text[last:])
    return " ".join("".join(kept).split())


def tidy_title(text: str) -> str | None:
    """A title left after removing a URL: no dangling separators such as `-` or `:`."""
    cleaned = text.strip().strip("-–—:|,;•*").strip()
    return cleaned or None


def shorten(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
