"""Text made safe for the digest's markdown: a line that cannot open a block, a label
inside link brackets, a link destination that stays one token, free text without headings of
its own. The digest's template reads them as filters (MD_FILTERS); the HTML and the vault use
them too."""

from __future__ import annotations

import re
from urllib.parse import quote

from digest.urls import without_userinfo

# A line starting like this would open a block (heading, list, quote, fence, table, rule).
_BLOCK_START = re.compile(r"^(\d+)?([#>\-+*=|~`.)])")
_INLINE_SPECIAL = re.compile(r"([\\`\[\]<>*])")
_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# Characters that would end or split a link destination; everything else is kept as saved.
_URL_UNSAFE = re.compile(r"[\s()<>\\\x00-\x1f\x7f]")
# Control characters (a terminal escape, a NUL) have no place in a digest read in a terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    """The text on one line, without control characters."""
    return " ".join(_CONTROL.sub("", text).split())


def md_line(text: str) -> str:
    """One line of text that cannot open a block (heading, list, quote) where it starts."""
    return _unblock(one_line(text))


def md_text(text: str) -> str:
    """Text safe inside link brackets or a heading: markdown syntax characters escaped."""
    return _unblock(md_label(text))


def md_label(text: str) -> str:
    """Text inside link brackets in the middle of a line: syntax characters escaped, but no
    block escape ("127.0.0.1" stays as written: it cannot open a list there)."""
    return _EDGE_UNDERSCORE.sub(r"\\_", _INLINE_SPECIAL.sub(r"\\\1", one_line(text)))


def md_url(url: str) -> str:
    """A link destination that stays one token: spaces, parentheses and brackets encoded; a
    saved link's login (stored as `***@`) is left out, so the link opens the page."""
    return _URL_UNSAFE.sub(lambda m: quote(m[0], safe=""), without_userinfo(url.strip()))


def md_block(text: str) -> str:
    """Free text (the week summary) kept as markdown, but unable to add headings of its own."""
    lines = text.strip().replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(re.sub(r"^(\s*)#", r"\1\\#", line) for line in lines)


def _unblock(line: str) -> str:
    """Escape what would make `line` open a block: '# x' -> '\\# x', '1. x' -> '1\\. x'."""
    return _BLOCK_START.sub(lambda m: (m[1] or "") + "\\" + m[2], line, count=1)


MD_FILTERS = {
    "md_line": md_line,
    "md_text": md_text,
    "md_label": md_label,
    "md_url": md_url,
    "md_block": md_block,
}
