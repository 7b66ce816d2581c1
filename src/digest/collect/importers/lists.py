"""`list` and `urls`: plain-text lists of things to read, without dates.

`list`, a learning list:

    Learning list                         title and description lines: reported as skipped
    List of blogs … I thought were interesting.
    C++                                   a topic line: the last short line before `- ` items
    - Static Polymorphism                 an entry without URL: a note (title and context)
    - Cursor MXFP8 MoE Kernels - great…   `Title - comment`: titled note, the whole as context
    - FlashInfer - Better Sampling        a few capitalised words after ` - `: all the title
    - Zero Redundancy DP
    - A nice new way of thinking about…   a comment on the entry above (rule below)
    - Flash attention https://…           an entry with a URL: a link titled by the rest

The comment rule: a `- ` line without URL is a comment on the note entry just above it
when that entry is short (at most 60 characters, no ` - ` comment of its own) and the
line reads as prose: longer than 60 characters, at least 8 words, and no ` - ` title
separator in its first 60 characters (that marks an entry `Title - comment` of its own).
A comment is appended to the entry's context on a new line, as a sentence of its own (a
`Title - comment` entry gets a full stop when it has none); several in a row all attach.
A shorter line is a comment on the note entry above it (whatever its length) when it is
a remark in the writer's voice: it opens with a word that opens a remark, not a title
(`The`, `This`, `For`, `You`, `Great`, `Similar`…: REMARK_OPENERS) and reads as a
sentence, at least two of its other words of four letters or more and most of them in
lower case ("The scheduling section is interesting", "For hardware, pairs well with a
design/arch textbook", "You need less precision than you think - prioritize …"), where
a title is capitalised ("The Illustrated Transformer") or opens otherwise ("How to deal
with the DSL Explosion").

A topic line is short (at most 60 characters, at most 8 words, not ending in `.`); of a
run of plain lines before `- ` items, the last such line is the topic and the others are
reported as skipped headings or descriptions, never dropped unseen.

`urls`: one URL per line (optionally followed by a title); `#` comments and blank lines
are ignored; any other line is reported as not understood, with its line number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from zoneinfo import ZoneInfo

from digest.collect.formats import ImportResult, LineReader, LineSource, in_blocks, register
from digest.collect.importers.common import (
    BARE_URL,
    LIST_MARKER,
    MARKDOWN_LINK,
    NO_WORDS,
    TITLE_SEPARATOR,
    bare_urls,
    checked_url,
    has_words,
    is_link,
    lines_of,
    parse_whole,
    remove_spans,
    strip_list_marker,
    tidy_title,
)
from digest.models import ItemKind, Rejected, SavedItem

SHORT_ENTRY = 60  # an entry this short may be followed by comment lines
REMARK_OPENERS = frozenset(
    [
        "the",
        "this",
        "that",
        "these",
        "those",
        "it",
        "it's",
        "its",
        "for",
        "you",
        "you'll",
        "you're",
        "your",
        "i",
        "i'm",
        "i've",
        "my",
        "we",
        "our",
        "great",
        "good",
        "nice",
        "cool",
        "useful",
        "similar",
        "really",
        "very",
        "must",
        "also",
        "worth",
        "see",
        "read",
        "pairs",
        "especially",
        "probably",
        "mostly",
    ]
)
COMMENT_MIN_WORDS = 8
SUBTITLE_WORDS = 4  # "Title - Two Capitalised Words" is one title
TOPIC_MAX_WORDS = 8
_DATE_HEADING = re.compile(r"^\s*#{1,6}\s+\d{4}-\d{1,2}-\d{1,2}")


class _ListState(LineReader):
    def __init__(self) -> None:
        super().__init__()
        self.topic: str | None = None
        self.block: list[tuple[int, str]] = []  # plain lines before items
        self.commentable: int | None = None  # index in result.items of the last note entry
        self.short = False  # that entry is short (long comments may join it)

    def read_line(self, number: int, line: str) -> None:
        if not line.strip():
            return
        is_entry, body = strip_list_marker(line)
        if is_entry:
            _close_block(self)
            _read_entry(number, body, self)
        elif bare_urls(body):
            _close_block(self)
            _add_links(number, body, self)
            self.commentable = None  # a comment joins the entry just above it, not this line's
        else:
            self.block.append((number, body))
            self.commentable = None

    def finish(self) -> None:
        _skip_block(self.block, self.result)

    def cut(self) -> ImportResult:
        """The items before a note entry that comment lines may still join (kept)."""
        done = super().cut()
        if self.commentable is not None:
            self.result.items = done.items[self.commentable :]
            del done.items[self.commentable :]
            self.commentable = 0
        return done


class ListImporter:
    name = "list"
    description = "plain learning list: topic lines, `- ` entries with or without URLs"
    appendable = False  # a comment line joins the entry above it

    def sniff(self, head: str) -> int:
        lines = [line for line in lines_of(head) if line.strip()]
        entries = [i for i, line in enumerate(lines) if LIST_MARKER.match(line)]
        if not entries or any(
            MARKDOWN_LINK.search(line) or _DATE_HEADING.match(line) for line in lines
        ):
            return 10 if entries else 0
        topics = sum(1 for i in entries if i > 0 and not LIST_MARKER.match(lines[i - 1]))
        score = 40 if topics and len(entries) >= 0.3 * len(lines) else 20
        return score - (15 if "://t.co/" in head else 0)  # pasted posts' links, not a list's

    def signals(self, head: str) -> list[str]:
        """What in `head` says list, for the import report."""
        lines = [line for line in lines_of(head) if line.strip()]
        entries = sum(1 for line in lines if LIST_MARKER.match(line))
        return [f"{entries} of {len(lines)} lines are `- ` entries under topic lines, no dates"]

    def parse(self, text: str, *, zone: ZoneInfo) -> ImportResult:
        return parse_whole(self, text, zone)

    def parse_stream(self, open_lines: LineSource, *, zone: ZoneInfo) -> Iterator[ImportResult]:
        """The file's items a block at a time."""
        return in_blocks(_ListState(), enumerate(open_lines(), start=1))


def _is_topic_line(text: str) -> bool:
    return (
        len(text) <= SHORT_ENTRY and len(text.split()) <= TOPIC_MAX_WORDS and not text.endswith(".")
    )


def _close_block(state: _ListState) -> None:
    """Plain lines just before entries: the last short one is the new topic."""
    if not state.block:
        return
    topics = [i for i, (_, text) in enumerate(state.block) if _is_topic_line(text)]
    if topics:
        index = topics[-1]
        state.topic = state.block[index][1].rstrip(":").strip() or None
        state.block.pop(index)
    _skip_block(state.block, state.result)
    state.block = []


def _skip_block(block: list[tuple[int, str]], result: ImportResult) -> None:
    for number, text in block:
        result.skipped.append(Rejected(number, text, "heading or description, not an entry"))


def _read_entry(number: int, body: str, state: _ListState) -> None:
    if bare_urls(body):
        _add_links(number, body, state)
        state.commentable = None
        return
    items = state.result.items
    if not has_words(body):
        state.result.skipped.append(Rejected(number, body, NO_WORDS))
        return
    if state.commentable is not None and _is_comment(body, state.short):
        items[state.commentable] = _with_remark(items[state.commentable], body)
        return
    items.append(
        SavedItem(
            url=None,
            title=_note_title(body),
            topic=state.topic,
            context=body,
            kind=ItemKind.NOTE,
            line=number,
        )
    )
    state.commentable = len(items) - 1
    state.short = len(body) <= SHORT_ENTRY and not TITLE_SEPARATOR.search(body)


def _note_title(text: str) -> str | None:
    """`Title - comment` gives Title; a long `Title: prose` gives Title; else short text.
    What follows ` - ` is a comment unless it reads as the rest of a title: a few capitalised
    words ("FlashInfer - Better Sampling"), kept in the title."""
    title, rest = (TITLE_SEPARATOR.split(text, maxsplit=1) + [""])[:2]
    if rest and not _is_comment_part(rest):
        title = text
    if len(title) > 120 and 0 < title.find(": ") <= SHORT_ENTRY:
        title = title[: title.find(": ")]
    return title if len(title) <= 120 else None


def _is_comment(text: str, after_short: bool) -> bool:
    """A remark, or after a short entry long prose that is not a `Title - comment` entry
    of its own (see the module docstring)."""
    separator = TITLE_SEPARATOR.search(text)
    long_prose = (
        len(text) > SHORT_ENTRY
        and len(text.split()) >= COMMENT_MIN_WORDS
        and (separator is None or separator.start() >= SHORT_ENTRY)
    )
    return (after_short and long_prose) or _is_remark(text)


def _is_remark(text: str) -> bool:
    """Opens as a remark does and reads as a sentence (see the module docstring)."""
    words = text.split()
    if not words or words[0].strip(",.:;").lower() not in REMARK_OPENERS:
        return False
    longer = [word for word in words[1:] if len(word) >= 4 and word[0].isalpha()]
    lower = sum(1 for word in longer if word[0].islower())
    return lower >= 2 and lower >= 0.6 * len(longer)


def _is_comment_part(text: str) -> bool:
    """Written as a comment, not as the rest of a title ("Better Sampling"): longer than
    SUBTITLE_WORDS words or with a comma, opening in lower case or as a remark does, or most
    of its words of four letters or more in lower case."""
    words = text.split()
    longer = [word for word in words if len(word) >= 4 and word[0].isalpha()]
    lower = sum(1 for word in longer if word[0].islower())
    return (
        len(words) > SUBTITLE_WORDS
        or "," in text
        or (bool(words) and words[0][0].islower())
        or _is_remark(text)
        or lower > len(longer) / 2
    )


def _with_remark(entry: SavedItem, remark: str) -> SavedItem:
    """`entry` with `remark` on the next line of its context, as a sentence of its own: a
    comment the context ends with gets a full stop (a bare title is left as written)."""
    context = (entry.context or "").rstrip()
    ended = context == entry.title or context.endswith((".", "!", "?", "…", ":", ";"))
    return replace(entry, context=f"{context}{'' if ended else '.'}\n{remark}")


def _add_links(number: int, body: str, state: _ListState) -> None:
    matches = list(BARE_URL.finditer(body))
    prose = tidy_title(remove_spans(body, [match.span() for match in matches]))
    for url in bare_urls(body):
        item = _link(number, url, prose if len(matches) == 1 else None, state.result)
        if item is not None:
            state.result.items.append(replace(item, topic=state.topic, context=None))


def _link(number: int, url: str, title: str | None, result: ImportResult) -> SavedItem | None:
    """A link item, or None after recording why `url` cannot be one."""
    checked = checked_url(result, number, url, url)
    return None if checked is None else SavedItem(url=checked, title=title, line=number)


class UrlsImporter:
    name = "urls"
    description = "plain list of URLs, one per line; `#` comments"
    appendable = True

    def sniff(self, head: str) -> int:
        return int(40 + 50 * share) if (share := _url_share(head)) > 0.5 else 0

    def signals(self, head: str) -> list[str]:
        """What in `head` says urls, for the import report."""
        return [f"{_url_share(head):.0%} of its lines start with a URL"]

    def parse(self, text: str, *, zone: ZoneInfo) -> ImportResult:
        return parse_whole(self, text, zone)

    def parse_stream(self, open_lines: LineSource, *, zone: ZoneInfo) -> Iterator[ImportResult]:
        """The file's items a block at a time."""
        return in_blocks(_UrlsReader(), enumerate(open_lines(), start=1))


class _UrlsReader(LineReader):
    def read_line(self, number: int, raw: str) -> None:
        line = raw.strip()
        if not line or line.startswith("#"):
            return
        url = _first_url(line)
        if url is None:
            self.result.rejected.append(Rejected(number, line, "not a URL"))
            return
        title = tidy_title(strip_list_marker(line)[1][len(url) :])
        item = _link(number, url, title, self.result)
        if item is not None:
            self.result.items.append(item)


def _url_share(head: str) -> float:
    """The share of content lines (not blank, not `#` comments) that start with a URL."""
    lines = [line.strip() for line in lines_of(head)]
    content = [line for line in lines if line and not line.startswith("#")]
    return sum(1 for line in content if _first_url(line) is not None) / len(content or [""])


def _first_url(line: str) -> str | None:
    """The line's URL when the line starts with one (after an optional list marker)."""
    _, body = strip_list_marker(line)
    token = body.split(maxsplit=1)[0] if body else ""
    return token if is_link(token) else None


register(ListImporter())
register(UrlsImporter())
