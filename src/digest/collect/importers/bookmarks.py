"""`bookmarks`: Netscape bookmark HTML, as Chrome, Firefox, Safari, Pocket and Raindrop export.

    <!DOCTYPE NETSCAPE-Bookmark-file-1>
    <DL><p>
      <DT><H3 ADD_DATE="…">Rust</H3>            a folder: the topic of what it holds
      <DL><p>
        <DT><A HREF="https://…" ADD_DATE="1700000000" TAGS="lang,rust">Title &amp; more</A>
        <DD>A description                       the bookmark's context
      </DL><p>
    </DL><p>

A regular-expression scan (no DOM) of runs of lines: a 100,000-bookmark file parses in well
under a second, and a big file is read a block of lines at a time (bigfiles.py). ADD_DATE (or Pocket's TIME_ADDED) is seconds since the epoch, or milliseconds or
microseconds, told apart by magnitude. The innermost named folder is the topic, else the
first TAGS entry; browsers' own containers ("Bookmarks bar", "Other bookmarks"…) are not
topics. Links that are not http(s) (javascript:, place:, file:, chrome:, about:…) are
skipped with the reason; a broken http(s) link is reported as not understood.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from digest.collect.formats import ImportResult, LineReader, LineSource, in_blocks, register
from digest.collect.importers.common import checked_url, parse_whole
from digest.models import Rejected, SavedItem
from digest.text import shorten

_TOKENS = re.compile(
    r"<A\s(?P<attrs>[^>]*)>(?P<title>[^\n]*?)</A\s*>"
    r"|<H3(?P<folder_attrs>[^>]*)>(?P<folder>[^\n]*?)</H3\s*>"
    r"|<(?P<open>DL|UL)\b[^>]*>"
    r"|</(?P<close>DL|UL)\s*>"
    r"|<DD>(?P<dd>[^<]*)",
    re.IGNORECASE,
)
RUN_LINES = 1000  # lines scanned at a time
_STARTS_ENTRY = re.compile(r"\s*<(?:DT|/DL)\b", re.IGNORECASE)
# name=value pairs, each consumed whole (so a long ICON data URI is skipped in one step)
_ATTR = re.compile(r"""([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")
_WANTED = frozenset({"HREF", "ADD_DATE", "TIME_ADDED", "TAGS"})
_TAG = re.compile(r"<[^>]*>")
_CONTAINER_ATTRS = ("PERSONAL_TOOLBAR_FOLDER", "UNFILED_BOOKMARKS_FOLDER")
_CONTAINER_NAMES = frozenset(
    {
        "bookmarks",
        "bookmarks bar",
        "bookmarks toolbar",
        "bookmarks menu",
        "other bookmarks",
        "mobile bookmarks",
        "favorites",
        "favourites",
        "favorites bar",
        "unsorted",
        "unread",
        "read archive",
    }
)


_Bookmark = tuple[str, str | None, datetime | None, str | None, int]


@dataclass
class _Scan:
    result: ImportResult = field(default_factory=ImportResult)
    folders: list[str | None] = field(default_factory=list)  # one per open <DL>
    pending_folder: str | None = None  # an <H3> waiting for its <DL>
    pending: _Bookmark | None = None  # the last bookmark, until we know if a <DD> follows
    line: int = 1
    position: int = 0

    def line_at(self, offset: int, text: str) -> int:
        self.line += text.count("\n", self.position, offset)
        self.position = offset
        return self.line

    def flush(self, context: str | None = None) -> None:
        if self.pending is not None:
            url, title, saved_at, topic, line = self.pending
            item = SavedItem(url, title, saved_at, topic, context, line=line)
            self.result.items.append(item)
            self.pending = None

    @property
    def topic(self) -> str | None:
        return next((name for name in reversed(self.folders) if name), None)


class BookmarksImporter:
    name = "bookmarks"
    description = "Netscape bookmark HTML (Chrome, Firefox, Safari, Pocket, Raindrop exports)"
    appendable = True

    def sniff(self, head: str) -> int:
        lowered = head[:4096].lower()
        if "<!doctype netscape-bookmark-file" in lowered:
            return 100
        if re.search(r"<dt>\s*<a\s[^>]*href=", head, re.IGNORECASE):
            return 80
        if re.search(r"<a\s[^>]*(add_date|time_added)=", head, re.IGNORECASE):
            return 70
        return 0

    def parse(self, text: str, *, zone: ZoneInfo) -> ImportResult:
        return parse_whole(self, text, zone)

    def parse_stream(self, open_lines: LineSource, *, zone: ZoneInfo) -> Iterator[ImportResult]:
        """The file's bookmarks a block at a time: its lines are scanned in runs that end
        before a line opening an entry or closing a folder (`<DT>`, `</DL>`), so no token
        is cut between two runs."""
        return in_blocks(_BookmarksReader(), enumerate(open_lines(), start=1))


class _BookmarksReader(LineReader):
    def __init__(self) -> None:
        super().__init__()
        self.scan = _Scan(result=self.result)
        self.run: list[str] = []
        self.first = 1  # the number of the run's first line

    def read_line(self, number: int, line: str) -> None:
        if len(self.run) >= RUN_LINES and _STARTS_ENTRY.match(line):
            self._scan_run()
            self.first = number
        self.run.append(line)

    def finish(self) -> None:
        self._scan_run()
        self.scan.flush()

    def cut(self) -> ImportResult:
        done = super().cut()
        self.scan.result = self.result
        return done

    def _scan_run(self) -> None:
        text = "\n".join(self.run)
        self.scan.line, self.scan.position = self.first, 0
        for match in _TOKENS.finditer(text):
            _read_token(match, self.scan, text)
        self.run = []


def _read_token(match: re.Match[str], scan: _Scan, text: str) -> None:
    if match.group("dd") is not None:
        scan.flush(_text(match.group("dd")) or None)
        return
    scan.flush()
    if match.group("attrs") is not None:
        _bookmark(match, scan, scan.line_at(match.start(), text))
    elif match.group("folder") is not None:
        scan.pending_folder = _folder_name(match.group("folder_attrs"), match.group("folder"))
    elif match.group("open"):
        scan.folders.append(scan.pending_folder)
        scan.pending_folder = None
    elif scan.folders:
        scan.folders.pop()


def _folder_name(attrs: str, raw: str) -> str | None:
    name = _text(raw)
    upper = attrs.upper()
    if any(marker in upper for marker in _CONTAINER_ATTRS) or name.lower() in _CONTAINER_NAMES:
        return None
    return name or None


def _text(raw: str) -> str:
    if "<" in raw:
        raw = _TAG.sub("", raw)
    return " ".join(_unescape(raw).split())


def _unescape(raw: str) -> str:
    return html.unescape(raw) if "&" in raw else raw


def _attributes(raw: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, double, single, bare in _ATTR.findall(raw):
        if (key := name.upper()) in _WANTED:
            found[key] = _unescape(double or single or bare)
    return found


def _bookmark(match: re.Match[str], scan: _Scan, line: int) -> None:
    attrs = _attributes(match.group("attrs"))
    url = attrs.get("HREF", "").strip()
    title = _text(match.group("title")) or None
    checked = checked_url(scan.result, line, shorten(title or url or "(no HREF)", 80), url)
    if checked is None:
        return
    url = checked
    tags = [tag.strip() for tag in attrs.get("TAGS", "").split(",") if tag.strip()]
    raw_date = attrs.get("ADD_DATE") or attrs.get("TIME_ADDED")
    saved_at = _timestamp(raw_date)
    if raw_date and saved_at is None:
        scan.result.rejected.append(
            Rejected(
                line, shorten(title or url, 80), f"bad ADD_DATE {raw_date!r}; item kept, undated"
            )
        )
    scan.pending = (url, title, saved_at, scan.topic or (tags[0] if tags else None), line)


def _timestamp(raw: str | None) -> datetime | None:
    """Seconds, milliseconds or microseconds since the epoch, told apart by magnitude."""
    if not raw or not raw.strip().lstrip("-").isdigit():
        return None
    value = int(raw.strip())
    if value <= 0:
        return None
    if value >= 10**14:
        value //= 1_000_000
    elif value >= 10**11:
        value //= 1000
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        return None


register(BookmarksImporter())
