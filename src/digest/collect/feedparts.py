"""A large XML feed cut into several small feed documents, so that feedparser, which holds
a whole document's entries as dictionaries, never holds more than one part's."""

from __future__ import annotations

import re

_ENTRY_START = re.compile(rb"<(?:item|entry)[\s>]")
_ENTRY_END = re.compile(rb"</(?:item|entry)>")


def feed_parts(content: bytes, part_bytes: int) -> list[bytes]:
    """Documents of the feed's head (everything before its first entry), a run of whole
    entries of about `part_bytes`, and its tail; `[content]` when it has no entries that
    can be told apart by their tags (a namespaced or broken feed is parsed whole)."""
    first = _ENTRY_START.search(content)
    ends = [match.end() for match in _ENTRY_END.finditer(content, first.start())] if first else []
    if first is None or not ends:
        return [content]
    head, tail = content[: first.start()], content[ends[-1] :]
    parts, begin = [], first.start()
    for end in ends:
        if end - begin >= part_bytes:
            parts.append(head + content[begin:end] + tail)
            begin = end
    if begin < ends[-1]:
        parts.append(head + content[begin : ends[-1]] + tail)
    return parts
