"""The digest's markdown as plain text (pure): the text/plain part of the mail, and short
lines for a push message or an e-book's cover."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from markdown_it.token import Token

from digest.deliver.html import markdown_parser


@dataclass
class _PlainText:
    """Plain text built block by block from markdown-it's tokens."""

    lines: list[str] = field(default_factory=list)
    lists: list[int] = field(default_factory=list)  # per open list: its next number, 0 if bullets
    indent: list[str] = field(default_factory=list)  # per open list item: its content's indent
    marker: str = ""  # the list marker the next block line starts with
    gap: bool = False  # a blank line before the next block
    heading: str = ""

    def block(self, text: str) -> None:
        if self.gap and self.lines:
            self.lines.append("")
        self.gap = False
        inside = "".join(self.indent)
        first = inside[: len(inside) - len(self.marker)] + self.marker if self.marker else inside
        self.marker = ""
        for number, line in enumerate(text.split("\n")):
            self.lines.append(f"{first if number == 0 else inside}{line}".rstrip())

    def open_item(self) -> None:
        number = self.lists[-1]
        self.marker = f"{number}. " if number else "- "
        self.lists[-1] += 1 if number else 0
        self.indent.append(" " * len(self.marker))


def markdown_to_text(markdown: str) -> str:
    """The digest as plain text for the text/plain part: no markdown escapes or syntax left,
    links as `title <url>`, headings underlined, lists kept."""
    out = _PlainText()
    for token in markdown_parser().parse(markdown):
        _plain_block(out, token)
    return "\n".join(out.lines).strip("\n") + "\n"


def short_text(markdown: str) -> list[str]:
    """Markdown as short plain lines (a push message, an e-book's cover): one a paragraph or
    list item, links as their text alone."""
    text = _LINK_TARGET.sub("", markdown_to_text(markdown))
    lines: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if lines and line and lines[-1] and not line.startswith("- "):
            lines[-1] += " " + line  # a paragraph's next line
        else:
            lines.append(line.removeprefix("- "))
    return [line for line in lines if line]


_LINK_TARGET = re.compile(r" <[a-z][a-z0-9+.-]*:[^>\s]*>")


def _plain_block(out: _PlainText, token: Token) -> None:
    kind = token.type
    if kind == "heading_open":
        out.heading, out.gap = token.tag, True
    elif kind == "inline":
        text = _plain_inline(token.children or [])
        if out.heading in ("h1", "h2"):
            text += "\n" + ("=" if out.heading == "h1" else "-") * min(len(text), 72)
        out.heading = ""
        out.block(text)
    elif kind == "paragraph_open" and not token.hidden:
        out.gap = True
    elif kind in ("bullet_list_open", "ordered_list_open"):
        out.lists.append(int(token.attrGet("start") or 1) if kind == "ordered_list_open" else 0)
        out.gap = True
    elif kind in ("bullet_list_close", "ordered_list_close"):
        out.lists.pop()
        out.gap = True
    elif kind == "list_item_open":
        out.open_item()
    elif kind == "list_item_close":
        out.indent.pop()
    elif kind in ("fence", "code_block", "hr"):
        out.gap = True
        out.block(token.content.rstrip("\n") if kind != "hr" else "-" * 24)


def _plain_inline(children: Sequence[Token]) -> str:
    parts: list[str] = []
    link_start, href = 0, ""
    for child in children:
        if child.type == "link_open":
            link_start, href = len(parts), str(child.attrGet("href") or "")
        elif child.type == "link_close" and href:
            text = "".join(parts[link_start:]).strip()
            parts[link_start:] = [f"<{href}>" if text in (href, "") else f"{text} <{href}>"]
            href = ""
        elif child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n" if child.type == "hardbreak" else " ")
    return "".join(parts)
