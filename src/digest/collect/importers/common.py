"""What the importers share: lines and list markers, URLs in text and their triage,
report excerpts, record fields (times, tags, topics) and HTML-to-text.

Every entry of a file ends in exactly one place of an ImportResult: an item, a
`skipped` entry (a link we deliberately do not import, such as `javascript:`), or a
`rejected` entry naming its line or record number and why (`refuse` picks which).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, time
from email.utils import parsedate_to_datetime
from html.parser import HTMLParser
from zoneinfo import ZoneInfo

from digest.collect.formats import ImportResult, LineImporter, merged
from digest.models import Rejected, SavedItem
from digest.text import shorten
from digest.urls import BadURL, WebURL, parse_url

# A URL in running text: up to whitespace or a character that cannot end one in prose.
# A bracketed IPv6 host is taken whole (its `]` does not end the URL).
BARE_URL = re.compile(r"\bhttps?://(?:\[[\w:.%]*\]?)?[^\s<>\"'`\]]*", re.IGNORECASE)
# [title](target "optional title"); the target may hold one level of parentheses.
MARKDOWN_LINK = re.compile(
    r"!?\[(?P<title>[^\]]*)\]\(\s*(?P<target><[^>]*>|(?:[^()\s]|\([^()\s]*\))*)"
    r"(?:\s+\"[^\"]*\")?\s*\)"
)
LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
# A link: `scheme://…`, or one of the schemes browsers save without `//` (skipped later).
_LINK = re.compile(
    r"^(?:[a-z][a-z0-9+.\-]*://|(?:javascript|mailto|place|about|data|tel|magnet|blob):\S)",
    re.IGNORECASE,
)
_TRAILING = ".,;:!?'\""
TITLE_SEPARATOR = re.compile(r"\s+[-–—]\s+")

# Folder and tag names services give everything by default: no topic in them.
DEFAULT_FOLDERS = frozenset(
    {
        "unread",
        "archive",
        "archived",
        "unsorted",
        "starred",
        "inbox",
        "new",
        "later",
        "feed",
        "shortlist",
        "read",
        "favorites",
        "home",
        "bookmarks",
        "unfiled",
    }
)
_TWITTER_TIME = "%a %b %d %H:%M:%S %z %Y"


# -- lines and URLs in text ---------------------------------------------------


def lines_of(text: str) -> list[str]:
    """The file's lines as an editor numbers them (only \\n, \\r\\n and \\r end a line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def parse_whole(importer: LineImporter, text: str, zone: ZoneInfo) -> ImportResult:
    """`text` parsed by a line-by-line importer as it streams a file, in one result."""
    lines = lines_of(text)
    return merged(importer.parse_stream(lambda: iter(lines), zone=zone))


NO_WORDS = "no words, only punctuation or symbols (not a note)"


def has_words(text: str) -> bool:
    """Whether `text` holds a letter or digit: a line of punctuation is no note."""
    return any(char.isalnum() for char in text)


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


def urls_in(text: str) -> list[str]:
    """The distinct http(s) URLs in running text, in order."""
    return list(dict.fromkeys(bare_urls(text)))


def url_problem(url: str) -> str | None:
    """Why `url` cannot be saved as a web link, or None when it can."""
    parsed = parse_url(url)
    return parsed.reason if isinstance(parsed, BadURL) else None


def checked_url(result: ImportResult, line: int | None, text: str, url: str) -> str | None:
    """`url` trimmed for saving, or None after recording (against `line`) why it cannot be."""
    parsed = parse_url(url)
    if isinstance(parsed, WebURL):
        return parsed.url
    shown = url.strip() and not is_web_scheme_problem(parsed.reason) and url.strip() != text
    reason = f"{parsed.reason}: {shorten(url, 60)}" if shown else parsed.reason
    refuse(result, line, text or "(empty)", reason)
    return None


def is_link(token: str) -> bool:
    """Whether `token` is written as a link of any scheme (`https://…`, `javascript:…`)."""
    return _LINK.match(token) is not None


def is_web_scheme_problem(problem: str) -> bool:
    """A link deliberately not imported (mailto:, javascript:), as opposed to a broken one."""
    return problem.startswith("not a web link")


def refuse(result: ImportResult, line: int | None, text: str, problem: str) -> None:
    """Record a link that cannot be saved: skipped if deliberately so, else not understood."""
    where = result.skipped if is_web_scheme_problem(problem) else result.rejected
    where.append(Rejected(line, shorten(text, 200), problem))


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


# -- records of exports ----------------------------------------------------------


class TimeError(ValueError):
    """A time field that is present but not understood."""


def parse_time(value: object, zone: ZoneInfo) -> datetime | None:
    """Unix seconds (or milliseconds), ISO-8601, RFC 2822 or Twitter time -> aware datetime.

    Empty values give None; a date without a time is midnight in `zone`; a
    naive time is read in `zone`. Raises TimeError for anything else.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise TimeError(f"time not understood: {value!r}")
    if isinstance(value, int | float):
        return _from_epoch(float(value))
    text = str(value).strip()
    if not text:
        return None
    if re.fullmatch(r"\d{9,14}(\.\d+)?", text):
        return _from_epoch(float(text))
    return _from_text(text, zone)


def _from_epoch(seconds: float) -> datetime:
    if seconds > 1e11:  # milliseconds
        seconds /= 1000
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError) as exc:  # years before 1 or after 9999
        raise TimeError(f"time not understood: {seconds!r}") from exc


def _from_text(text: str, zone: ZoneInfo) -> datetime:
    iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        moment = _from_other_text(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    if len(text) == 10 and moment.time() == time.min:  # a bare date
        moment = datetime.combine(moment.date(), time.min, zone)
    return moment


def _from_other_text(text: str) -> datetime:
    try:
        return datetime.strptime(text, _TWITTER_TIME)
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError) as exc:
        raise TimeError(f"time not understood: {text!r}") from exc


def split_tags(value: object) -> list[str]:
    """Tags as a list: a JSON-ish list, or text split on commas, pipes or spaces."""
    if value is None:
        return []
    if isinstance(value, list):
        names = [v.get("name") if isinstance(v, dict) else v for v in value]
        return [str(n).strip() for n in names if n is not None and str(n).strip()]
    text = str(value).strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].replace("'", "").replace('"', "")
    for separator in (",", "|"):
        if separator in text:
            return [t.strip() for t in text.split(separator) if t.strip()]
    return text.split()


def pick_topic(*candidates: Iterable[str] | str | None) -> str | None:
    """The first tag or folder that is not a service's default (Unread, Archive, …)."""
    for candidate in candidates:
        names = [candidate] if isinstance(candidate, str) else list(candidate or [])
        for name in names:
            cleaned = name.strip().strip("/").strip()
            if cleaned and cleaned.lower() not in DEFAULT_FOLDERS:
                return cleaned
    return None


def join_context(*parts: str | None) -> str | None:
    """Non-empty parts, one paragraph each; None when there are none."""
    kept = [part.strip() for part in parts if part and part.strip()]
    return "\n\n".join(kept) or None


def snippet(record: object, limit: int = 200) -> str:
    """A one-line excerpt of a record, for reports."""
    if isinstance(record, str):
        return shorten(record, limit)
    return shorten(json.dumps(record, ensure_ascii=False, default=str), limit)


def add_item(result: ImportResult, item: SavedItem, *, raw: object) -> None:
    """Add `item` unless its URL is not a web link (skipped) or not a URL at all (rejected)."""
    item = replace(item, links=web_links(item.links))
    if item.url is None:
        result.items.append(item)
    elif (url := checked_url(result, item.line, snippet(raw), item.url)) is not None:
        result.items.append(replace(item, url=url))


def web_links(links: Iterable[str]) -> tuple[str, ...]:
    """The links that are valid http(s) URLs (urls.parse_url), trimmed, in order, once each."""
    parsed = (parse_url(link) for link in links)
    return tuple(dict.fromkeys(p.url for p in parsed if isinstance(p, WebURL)))


def record_time(
    result: ImportResult, value: object, zone: ZoneInfo, *, line: int | None, raw: object
) -> datetime | None:
    """The record's time; one that is not understood is reported and the item kept undated."""
    try:
        return parse_time(value, zone)
    except TimeError as exc:
        result.rejected.append(Rejected(line, snippet(raw), f"{exc}; item kept, undated"))
        return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(item: SavedItem) -> SavedItem:
    """`item` with lone surrogates (JSON's `"\\ud800"`, which no file can hold) replaced by
    U+FFFD, so that saving it cannot fail."""
    fields = (item.title, item.context, item.topic, item.url, *item.links)
    if not any(text and _SURROGATE.search(text) for text in fields):
        return item
    return replace(
        item,
        title=_no_surrogates(item.title),
        context=_no_surrogates(item.context),
        topic=_no_surrogates(item.topic),
        url=_no_surrogates(item.url),
        links=tuple(link for link in item.links if not _SURROGATE.search(link)),
    )


def _no_surrogates(text: str | None) -> str | None:
    return _SURROGATE.sub("\ufffd", text) if text else text


def trim_title(text: str | None, limit: int = 100) -> str | None:
    """A title on one line, at most `limit` characters; None when there is no text."""
    return shorten(text, limit) or None if text else None


class _TextAndLinks(HTMLParser):
    """Text of an HTML fragment, paragraphs kept, scripts and styles left out, and the links
    in it (not mentions or tags)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.links: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in ("script", "style"):
            self._skipping += 1
        elif tag in ("br", "div", "li"):
            self.parts.append("\n")
        elif tag == "p" and self.parts:
            self.parts.append("\n\n")
        elif tag == "a":
            classes = (found.get("class") or "").split()
            href = found.get("href")
            if href and not {"mention", "hashtag", "u-url"} & set(classes):
                self.links.append(href)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_text_and_links(fragment: str) -> tuple[str, list[str]]:
    """Plain text of a post's HTML (links in full, hidden spans too) and the links in it."""
    parser = _TextAndLinks()
    parser.feed(fragment)
    parser.close()
    lines = ("".join(parser.parts)).split("\n")
    text = "\n".join(" ".join(line.split()) for line in lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip(), list(dict.fromkeys(parser.links))


def plain_text(html: str, limit: int | None = None) -> str:
    """HTML to one line of text: tags stripped, entities decoded, whitespace collapsed."""
    text = " ".join(html_text_and_links(html)[0].split())
    return shorten(text, limit) if limit is not None else text
