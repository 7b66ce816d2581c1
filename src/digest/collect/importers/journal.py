"""`journal`: a "Today I Learned" markdown journal of links under day headings.

The shape (Hugo-style):

    ---                                   front matter, skipped
    title: "Today I Learned"
    ---
    ## 2025-11-07                          a day: dates every item under it (midnight, local)
    ### Optimization                       a topic, until the next heading or day
    - [Tuning playbook](https://…)         a link with its title
    - [A title that goes on              a title may run onto the next line
    over two lines](https://…)
    https://…                              a bare URL; `- https://…` too
    DST Book                               text without a URL: kept as a note

A link whose target is not a web address (`[x](htp//bad)`, `http://`) is reported with
its line; one with another scheme (`mailto:`) is skipped with a reason. Items before the
first day heading carry no date (they are dated when first collected). A link repeated in
the file is emitted each time: the store keeps one item with the earliest date.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from zoneinfo import ZoneInfo

from digest.collect.formats import ImportResult, LineReader, LineSource, in_blocks, register
from digest.collect.importers.common import (
    BARE_URL,
    MARKDOWN_LINK,
    NO_WORDS,
    checked_url,
    has_words,
    is_link,
    lines_of,
    parse_whole,
    remove_spans,
    strip_list_marker,
    tidy_title,
    trim_url,
)
from digest.models import ItemKind, Rejected, SavedItem
from digest.periods import local_midnight

_DATE_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)[\s#]*$")
_RULE = re.compile(r"^\s{0,3}(?:-{3,}|\*{3,}|_{3,}|\+{3,})\s*$")
_HTML_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
_FRONT_MATTER_FENCES = ("---", "+++")
_MAX_JOINED_LINES = 3
_FRONT_MATTER_LINES = 200  # front matter closes within this many lines, or is none
_CODE_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")
# [label]: https://… "optional title"; a definition, not an entry of its own.
_REFERENCE_DEFINITION = re.compile(
    r"^\s{0,3}\[(?P<label>[^\]]+)\]:\s*<?(?P<target>\S+?)>?(?:\s+[\"'(](?P<title>.*)[\"')])?\s*$"
)
# [text][label], [text][] and, for a defined label, [text] alone.
_REFERENCE_LINK = re.compile(r"\[(?P<text>[^\]]+)\](?:\[(?P<label>[^\]]*)\])?(?![(:])")


@dataclass
class _Cursor:
    """Where we are in the journal: the current day and topic, the code fence we are in
    (its opening backticks or tildes), and the file's reference-link definitions."""

    day: datetime | None = None
    topic: str | None = None
    fence: str | None = None
    references: dict[str, str] = field(default_factory=dict)


class JournalImporter:
    name = "journal"
    description = "markdown link journal: `## YYYY-MM-DD` days, `### topic`, links and notes"
    appendable = True

    def sniff(self, head: str) -> int:
        lines = lines_of(head)
        if any(_DATE_HEADING.match(line) for line in lines):
            return 95
        if _front_matter_end(lines) is not None:
            return 70
        if any(MARKDOWN_LINK.search(line) for line in lines):
            return 45
        return 0

    def signals(self, head: str) -> list[str]:
        """What in `head` says journal, for the import report."""
        lines = lines_of(head)
        return [
            signal
            for signal, found in (
                ("`## YYYY-MM-DD` day headings", any(_DATE_HEADING.match(line) for line in lines)),
                ("front matter", _front_matter_end(lines) is not None),
                ("markdown links", any(MARKDOWN_LINK.search(line) for line in lines)),
            )
            if found
        ]

    def parse(self, text: str, *, zone: ZoneInfo) -> ImportResult:
        return parse_whole(self, text, zone)

    def parse_stream(self, open_lines: LineSource, *, zone: ZoneInfo) -> Iterator[ImportResult]:
        """The file's items a block at a time, reading its lines twice (definitions first)."""
        references = _reference_definitions(open_lines())
        lines = open_lines()
        head = list(itertools.islice(lines, _FRONT_MATTER_LINES))
        end = _front_matter_end(head)
        start = 0 if end is None else end + 1
        numbered = itertools.islice(enumerate(itertools.chain(head, lines), 1), start, None)
        reader = _JournalReader(_Cursor(references=references), zone)
        yield from in_blocks(reader, _logical_lines(numbered))


class _JournalReader(LineReader):
    def __init__(self, cursor: _Cursor, zone: ZoneInfo) -> None:
        super().__init__()
        self.cursor, self.zone = cursor, zone

    def read_line(self, number: int, line: str) -> None:
        _read_line(number, line, self.cursor, self.result, self.zone)


def _front_matter_end(lines: list[str]) -> int | None:
    """The index of the line closing the front matter, if the file opens with one."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or lines[first].strip() not in _FRONT_MATTER_FENCES:
        return None
    fence = lines[first].strip()
    for index in range(first + 1, min(len(lines), first + _FRONT_MATTER_LINES)):
        if lines[index].strip() == fence:
            return index
    return None


def _reference_definitions(lines: Iterable[str]) -> dict[str, str]:
    """`[label]: url` definitions anywhere in the file, by lower-case label (the first wins)."""
    found: dict[str, str] = {}
    for line in lines:
        if "]:" in line and (definition := _REFERENCE_DEFINITION.match(line)):
            found.setdefault(_label(definition["label"]), definition["target"])
    return found


def _label(text: str) -> str:
    return " ".join(text.split()).lower()


def _logical_lines(numbered: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """(line number, text), joining a `[title` left open with the line(s) closing `](url)`."""
    ahead: tuple[int, str] | None = next(numbered, None)
    while ahead is not None:
        number, line = ahead
        ahead = next(numbered, None)
        joined = 0
        while (
            _opens_link(line)
            and joined < _MAX_JOINED_LINES
            and ahead is not None
            and ahead[1].strip()
            and "](" in ahead[1]
        ):
            line = f"{line.rstrip()} {ahead[1].strip()}"
            ahead = next(numbered, None)
            joined += 1
        yield number, line


def _opens_link(line: str) -> bool:
    """A `[` left open, outside a heading: a heading never takes the next line into it."""
    return line.rfind("[") > line.rfind("]") and not _HEADING.match(line)


def _read_line(
    number: int, line: str, cursor: _Cursor, result: ImportResult, zone: ZoneInfo
) -> None:
    if _in_code(line, cursor):
        return
    start = line.lstrip()[:1]  # the first character decides which patterns can match
    if not start or start in "-*_+<" and (_RULE.match(line) or _HTML_COMMENT.match(line)):
        return
    if start == "[" and _REFERENCE_DEFINITION.match(line):
        return
    if start == "#" and (heading := _HEADING.match(line)):
        _read_heading(number, line, heading.group(2), cursor, result, zone)
        return
    _read_entry(number, line, cursor, result)


def _in_code(line: str, cursor: _Cursor) -> bool:
    """Whether `line` opens, closes or lies in a fenced code block: no links, no notes."""
    fence = _CODE_FENCE.match(line)
    if cursor.fence is None:
        if fence is None:
            return False
        cursor.fence = fence[1]
        return True
    closing = fence is not None and not line.strip().lstrip(cursor.fence[0])  # nothing after it
    if closing and fence is not None and len(fence[1]) >= len(cursor.fence):
        cursor.fence = None
    return True


def _read_heading(
    number: int, line: str, title: str, cursor: _Cursor, result: ImportResult, zone: ZoneInfo
) -> None:
    dated = _DATE_HEADING.match(line)
    if dated is None:
        cursor.topic = title.strip() or None
        return
    cursor.topic = None
    try:
        day = date(int(dated.group(1)), int(dated.group(2)), int(dated.group(3)))
    except ValueError:
        cursor.day = None  # better undated than dated wrongly
        result.rejected.append(Rejected(number, line.strip(), "not a valid date"))
        return
    cursor.day = local_midnight(day, zone)


def _read_entry(number: int, line: str, cursor: _Cursor, result: ImportResult) -> None:
    """A list entry or a plain line: its links (markdown, reference-style or bare; none in
    `code`), else a note of its text."""
    _, body = strip_list_marker(line)
    # code blanked out, keeping positions: a link's title is then read from `body`
    text = _CODE_SPAN.sub(lambda code: " " * len(code[0]), body) if "`" in body else body
    marked = list(MARKDOWN_LINK.finditer(text)) if "](" in text else []
    rest = remove_spans(text, [match.span() for match in marked])
    referenced = _referenced(rest, cursor.references) if "[" in rest else []
    rest = remove_spans(rest, [span for span, _ in referenced])
    bare = list(BARE_URL.finditer(rest)) if "://" in rest else []
    prose = tidy_title(remove_spans(rest, [match.span() for match in bare]))
    links = [
        (
            m.group("target").strip("<>"),
            " ".join(body[m.start("title") : m.end("title")].split()) or None,
        )
        for m in marked
    ] + [link for _, link in referenced]
    if not marked and len(bare) == 1:  # `Some title https://…`: the text is its title
        links.append((trim_url(bare[0].group()), prose))
        prose = None
    else:
        links.extend((trim_url(match.group()), None) for match in bare)
    if not links and is_link(first := body.split(maxsplit=1)[0] if body.split() else ""):
        checked_url(result, number, body, first)  # `javascript:…`, `file:…`: reported, not a note
        return
    if not links:
        _add_note(number, body, cursor, result)
        return
    for url, title in links:
        _add_link(number, url, title, prose, cursor, result)


def _referenced(
    text: str, references: dict[str, str]
) -> list[tuple[tuple[int, int], tuple[str, str | None]]]:
    """The reference-style links of `text` whose label is defined: (span, (url, title))."""
    found = []
    for match in _REFERENCE_LINK.finditer(text):
        url = references.get(_label(match["label"] or match["text"]))
        if url is not None:
            found.append((match.span(), (url, " ".join(match["text"].split()) or None)))
    return found


def _add_link(
    number: int,
    url: str,
    title: str | None,
    comment: str | None,
    cursor: _Cursor,
    result: ImportResult,
) -> None:
    checked = checked_url(result, number, url, url)
    if checked is None:
        return
    result.items.append(
        SavedItem(
            url=checked,
            title=title,
            saved_at=cursor.day,
            topic=cursor.topic,
            context=comment,
            line=number,
        )
    )


def _add_note(number: int, text: str, cursor: _Cursor, result: ImportResult) -> None:
    text = " ".join(text.split())
    if not has_words(text):
        result.skipped.append(Rejected(number, text, NO_WORDS))
        return
    result.items.append(
        SavedItem(
            url=None,
            title=text if len(text) <= 120 else None,
            saved_at=cursor.day,
            topic=cursor.topic,
            context=text,
            kind=ItemKind.NOTE,
            line=number,
        )
    )


register(JournalImporter())
