"""CSV exports of read-later services, each told apart by its header row.

- pocket: title,url,time_added,tags,status; unix seconds; tags joined by "|".
- instapaper: URL,Title,Selection,Folder,Timestamp; unix seconds; the folders
  Unread and Archive are no topic.
- raindrop: id,title,note,excerpt,url,folder,tags,created,…; ISO times; tags
  "a, b"; the folder Unsorted is no topic.
- readwise: Title,URL,ID,Document tags,Saved date,…; tags may be "['a', 'b']";
  Location (new, later, archive) is no topic.
- reddit-csv: id,permalink; the data export's saved_posts.csv, links only.

Tags and folders become the topic (the first that is not a service default);
notes, excerpts and selections become the context. Each data row is an item,
a skipped non-web link, or a rejected row with its line number.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from digest.collect.formats import ImportResult, register
from digest.collect.importers.common import (
    add_item,
    join_context,
    pick_topic,
    record_time,
    split_tags,
)
from digest.models import Rejected, SavedItem

_FIELD_LIMIT = 10_000_000  # highlights and notes can be long


@dataclass
class CsvFormat:
    """Which columns of an export mean what; names are matched case-insensitively."""

    name: str
    description: str
    header: tuple[str, ...]  # columns that must all be present
    url: str
    title: str | None = None
    time: str | None = None
    tags: str | None = None
    folder: str | None = None
    context: tuple[str, ...] = ()
    url_prefix: str = ""  # for relative links (Reddit permalinks)
    appendable = True  # a row's line is the line it starts on

    def sniff(self, head: str) -> int:
        columns = _header(head)
        if not columns or not set(self.header) <= set(columns):
            return 0
        return 95 if len(columns) <= len(self.header) + 2 else 85

    def parse(self, text: str, *, zone: ZoneInfo) -> ImportResult:
        result = ImportResult()
        rows = _rows(text)
        header = next(rows, None)
        if header is None:
            return result
        columns = [name.strip().lower() for name in header[1]]
        for line, cells in rows:
            self._add_row(result, line, columns, cells, zone)
        return result

    def _add_row(
        self, result: ImportResult, line: int, columns: list[str], cells: list[str], zone: ZoneInfo
    ) -> None:
        if not any(cell.strip() for cell in cells):
            return  # a blank line between rows holds no record
        raw = ",".join(cells)
        if len(cells) != len(columns):
            reason = f"{len(cells)} fields where the header has {len(columns)}"
            result.rejected.append(Rejected(line, raw, reason))
            return
        row = dict(zip(columns, (cell.strip() for cell in cells), strict=True))
        url = row.get(self.url, "")
        if not url:
            result.rejected.append(Rejected(line, raw, f"no {self.url} in the row"))
            return
        if self.url_prefix and url.startswith("/"):
            url = self.url_prefix + url
        item = SavedItem(
            url=url,
            title=row.get(self.title or "") or None,
            saved_at=record_time(result, row.get(self.time or ""), zone, line=line, raw=raw),
            topic=pick_topic(split_tags(row.get(self.tags or "")), row.get(self.folder or "")),
            context=join_context(*(row.get(name) for name in self.context)),
            line=line,
        )
        add_item(result, item, raw=raw)


def _rows(text: str) -> Iterator[tuple[int, list[str]]]:
    """Each CSV record with the line it starts on (records may span lines)."""
    csv.field_size_limit(_FIELD_LIMIT)
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    start = 1
    for cells in reader:
        yield start, cells
        start = reader.line_num + 1


def _header(head: str) -> list[str]:
    first = head.lstrip("\ufeff").split("\n", 1)[0].strip()
    if not first or first[0] in "{[<#" or "," not in first:
        return []
    try:
        cells = next(csv.reader([first]))
    except csv.Error:
        return []
    return [cell.strip().lower() for cell in cells]


FORMATS = (
    CsvFormat(
        name="pocket",
        description="Pocket CSV export (title,url,time_added,tags,status)",
        header=("title", "url", "time_added", "tags", "status"),
        url="url",
        title="title",
        time="time_added",
        tags="tags",
    ),
    CsvFormat(
        name="instapaper",
        description="Instapaper CSV export (URL,Title,Selection,Folder,Timestamp)",
        header=("url", "title", "selection", "folder", "timestamp"),
        url="url",
        title="title",
        time="timestamp",
        folder="folder",
        context=("selection",),
    ),
    CsvFormat(
        name="raindrop",
        description="Raindrop.io CSV export (id,title,note,excerpt,url,folder,tags,created,…)",
        header=("id", "title", "note", "excerpt", "url", "folder", "tags", "created"),
        url="url",
        title="title",
        time="created",
        tags="tags",
        folder="folder",
        context=("note", "excerpt", "highlights"),
    ),
    CsvFormat(
        name="readwise",
        description="Readwise Reader CSV export (Title,URL,ID,Document tags,Saved date,…)",
        header=("title", "url", "id", "document tags", "saved date"),
        url="url",
        title="title",
        time="saved date",
        tags="document tags",
    ),
    CsvFormat(
        name="reddit-csv",
        description="Reddit data export saved_posts.csv / saved_comments.csv (id,permalink)",
        header=("id", "permalink"),
        url="permalink",
        url_prefix="https://www.reddit.com",
    ),
)

for _format in FORMATS:
    register(_format)
