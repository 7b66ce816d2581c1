"""A saved post as a reader meets it: a title that is its first sentence, a note that starts at
the next one, and links labelled with the words of their own line (pure).

A post is saved with its first line as title (cut at 100 characters, wherever that falls)
and its whole text as context; its links are stored in the order they appear in the text,
replaced by where they led once followed.
"""

from __future__ import annotations

import re

from digest.compose.postnotes import readable_title
from digest.models import Item, ItemKind
from digest.text import URL, sentences, shorten, url_title

TITLE_CHARS = 100
MIN_TITLE_WORDS = 4  # a shorter first sentence ("As an AI Engineer.") is no title alone
LABEL_CHARS = 80
MIN_LABEL_WORDS = 3  # a line with fewer words ("Vol 1:") is named with the line before it
LIST_SHARE = 0.5  # a post whose lines are mostly list items or links is a list
MIN_LIST_LINKS = 3
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•▪→❯>]+|\d{1,3}[.)])\s*")
_EDGE = " \t-–—:;,.|"


def post_title(item: Item) -> str | None:
    """A post's first line when it is short, else its first sentence of a few words or more
    (never one cut at "Dr." or "1."), else its shortening ending on a word with "…"; in
    sentence case when it shouts, without a trailing colon. None for no post with text."""
    if item.kind is not ItemKind.POST or not item.context:
        return None
    first_line = " ".join(
        next((line for line in item.context.splitlines() if line.strip()), "").split()
    )
    if len(first_line) > TITLE_CHARS:
        first = next(iter(sentences(first_line)), first_line)
        first_line = first if len(first.split()) >= MIN_TITLE_WORDS else first_line
    return readable_title(shorten(first_line, TITLE_CHARS)) or None


def labelled_links(item: Item, links: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(label, url) for each of a post's `links`: the words of the line it was saved on (see
    _line_labels for when the line above names it), else its address."""
    labels = _line_labels(item.context or "")
    if len(labels) != len(links):  # links not from this text: named by their address
        return tuple((url_title(url), url) for url in links)
    return tuple((label or url_title(url), url) for label, url in zip(labels, links, strict=True))


def is_list_post(item: Item) -> bool:
    """A post made mostly of list items and links (a reading list): its links are its note."""
    lines = [line for line in (item.context or "").splitlines()[1:] if line.strip()]
    listed = sum(bool(_LIST_MARKER.match(line) or URL.search(line)) for line in lines)
    links = sum(len(URL.findall(line)) for line in lines)
    return links >= MIN_LIST_LINKS and listed >= LIST_SHARE * len(lines)


def _line_labels(text: str) -> list[str]:
    """One label per distinct web link of `text`, in order of first appearance.

    A link is named by the words of its own line; a line that says too little ("Vol 1:") is
    prefixed with the last line without a link ("Machine Learning Systems, Vol 1"). A link
    alone on its line is named by the line just above only when that line has no link of its
    own and is not the last point of a list of several ("- hardware", "- memory": the link
    after them is the whole post's, not the last point's); else by its address."""
    labels: dict[str, str] = {}
    before = above = ""
    in_points = False  # the line above is a list item without a link
    for line in text.splitlines():
        found = [url for url in URL.findall(line) if url.startswith(("https://", "http://"))]
        words = _words(URL.sub(" ", line))
        if not found:
            point = bool(_LIST_MARKER.match(line))
            above = "" if point and in_points else words
            before, in_points = words or before, point
            continue
        if not words:
            label = above
        elif len(words.split()) >= MIN_LABEL_WORDS or not before:
            label = words
        else:
            label = f"{before}, {words}"
        above, in_points = "", False
        for url in found:
            labels.setdefault(url.rstrip(".,;:!?)"), shorten(label, LABEL_CHARS))
    return list(labels.values())


def _words(line: str) -> str:
    return " ".join(_LIST_MARKER.sub("", line).split()).strip(_EDGE)
