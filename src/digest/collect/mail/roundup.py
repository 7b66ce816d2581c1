"""A newsletter's body read as blocks of text: footers ("unsubscribe", "view in browser") and
sponsor blocks left out, and a roundup (mostly a list of linked stories with a blurb each, as
TLDR, Changelog or Hacker Newsletter send) told apart and split into its stories (pure).

A story is a block led by a link whose words are a title; its blurb is the rest of the block,
else the block after it (a heading linked, then a paragraph). A letter is a roundup when it
has MIN_STORIES stories or more and they hold most of its words."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from digest.collect.mail.links import clean_link
from digest.text import URL

if TYPE_CHECKING:
    from lxml.html import HtmlElement

MIN_STORIES = 3
STORY_SHARE = 0.5  # of the letter's words in its stories' titles and blurbs
SHORT_BLURB = 30  # less than this after a story's title: its blurb is the next block

_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCKS = _HEADINGS | frozenset(
    [
        "p",
        "div",
        "li",
        "td",
        "th",
        "tr",
        "table",
        "tbody",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "blockquote",
        "section",
        "article",
        "header",
        "footer",
        "center",
        "pre",
        "body",
        "main",
        "aside",
        "hr",
    ]
)
_DROPPED = ("script", "style", "head", "title", "noscript", "template", "svg")
_HIDDEN = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden|mso-hide\s*:\s*all", re.I)
_FOOTER = re.compile(
    r"\bunsubscribe\b|\bview (?:it |this )?(?:email |newsletter |post )?(?:in|on) (?:your |a |the )?"
    r"(?:web )?browser|\bview (?:this )?(?:email|online)\b|\bweb version\b|\bmanage (?:your )?"
    r"(?:preferences|subscription|email)|\bupdate (?:your )?(?:preferences|profile)|\bemail "
    r"preferences\b|\byou(?:'re| are)? receiving\b|\byou received this\b|\bforward(?:ed)? "
    r"(?:this|to a friend)|\bsign up here\b|\badvertise with us\b|\bprivacy policy\b|\ball rights"
    r" reserved\b|©|\(c\) \d{4}",
    re.I,
)
FOOTER_CHARS = 400
SPONSOR_BLOCKS = 3  # under a sponsor's heading: its name, its pitch, its link  # a longer block that names "unsubscribe" is the letter itself, kept
_SPONSOR = re.compile(
    r"\bsponsor(?:ed|s)?\b|\bpresented by\b|\bbrought to you by\b|\btogether with\b|"
    r"\bin partnership with\b|\bpaid (?:post|partner(?:ship)?)\b|\badvertisement\b",
    re.I,
)
_GENERIC_ANCHORS = frozenset(
    [
        "read more",
        "read",
        "more",
        "click here",
        "here",
        "this",
        "link",
        "continue reading",
        "comments",
        "discuss",
        "discussion",
        "source",
        "website",
        "watch",
        "listen",
        "view",
        "open",
        "details",
        "learn more",
        "full story",
    ]
)
_READING_TIME = re.compile(r"\s*\((?:\d+ minute read|[^()]{0,20}\brepo(?:sitory)?)\)\s*$", re.I)
_LEAD_MARK = re.compile(r"^[\W\d_]{0,6}")  # "1. ", "• ", "🔥 " before a story's title
_SEPARATORS = " \t-–—:|·•,."


@dataclass(frozen=True)
class Block:
    text: str
    links: tuple[tuple[str, str], ...]  # (href, the link's own words)
    heading: bool = False


@dataclass(frozen=True)
class Story:
    url: str  # canonical, unwrapped from its tracker
    title: str
    blurb: str


@dataclass(frozen=True)
class Body:
    text: str  # the letter's words without footers and sponsor blocks
    stories: tuple[Story, ...]  # a roundup's stories; () for a letter read as one piece


def read_body(html: str | None, plain: str | None) -> Body:
    """The letter's HTML body (else its plain text) as text, and its stories if it is a
    roundup."""
    blocks = html_blocks(html) if html else []
    if not blocks and plain:
        blocks = text_blocks(plain)
    kept = without_footers(blocks)
    text = "\n\n".join(block.text for block in kept)
    stories = find_stories(kept)
    story_chars = sum(len(story.title) + len(story.blurb) for story in stories)
    is_roundup = len(stories) >= MIN_STORIES and story_chars >= STORY_SHARE * len(text)
    return Body(text, tuple(stories) if is_roundup else ())


def html_blocks(html: str) -> list[Block]:
    """The blocks of text of an HTML body, in order, hidden parts (a preheader) left out."""
    import lxml.etree  # on first use: a run that only fetches loads no HTML parser
    import lxml.html

    try:
        root = lxml.html.document_fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return []
    for element in root.xpath("|".join(f"//{tag}" for tag in _DROPPED)):
        element.drop_tree()
    for element in root.xpath("//*[@style]"):
        if _HIDDEN.search(element.get("style", "")) and element.getparent() is not None:
            element.drop_tree()
    walker = _Walker()
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        walker.step(event, element)
    walker.flush()
    return walker.blocks


class _Walker:
    """Inline text gathered into the current block; a block element ends it and starts one."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.parts: list[str] = []
        self.links: list[tuple[str, str]] = []
        self.heading = False

    def step(self, event: str, element: HtmlElement) -> None:
        tag = element.tag if isinstance(element.tag, str) else ""
        if event == "start":
            if tag in _BLOCKS:
                self.flush()
                self.heading = tag in _HEADINGS
            if tag == "a" and element.get("href"):
                self.links.append((element.get("href", ""), _words(element.text_content())))
            self.parts.append(" " if tag == "br" else element.text or "")
            return
        if tag in _BLOCKS:
            self.flush()
        self.parts.append(element.tail or "")

    def flush(self) -> None:
        text = _words("".join(self.parts))
        if text:
            self.blocks.append(Block(text, tuple(self.links), self.heading))
        self.parts, self.links, self.heading = [], [], False


def text_blocks(plain: str) -> list[Block]:
    """A plain-text body's paragraphs; a paragraph's web links are named by its first line."""
    blocks = []
    for paragraph in re.split(r"\n\s*\n", plain.replace("\r\n", "\n")):
        urls = URL.findall(paragraph)
        text = _words(URL.sub("", paragraph)) if urls else _words(paragraph)
        if not text:
            continue
        first_line = _words(URL.sub("", paragraph.strip().splitlines()[0]))
        name = first_line or text
        blocks.append(Block(text, tuple((url.rstrip(").,;>"), name) for url in urls)))
    return blocks


def without_footers(blocks: list[Block]) -> list[Block]:
    """`blocks` less footer blocks and sponsor blocks: a sponsor's heading (or short title
    line) takes along the blocks under it, up to the next heading or SPONSOR_BLOCKS."""
    kept: list[Block] = []
    left_in_sponsor = 0
    for block in blocks:
        sponsored = bool(_SPONSOR.search(block.text))
        title_line = block.heading or (len(block.text) <= 60 and block.text[-1] not in ".!?")
        if block.heading:
            left_in_sponsor = 0
        if sponsored and title_line:
            left_in_sponsor = SPONSOR_BLOCKS + 1
        if left_in_sponsor or sponsored:
            left_in_sponsor = max(left_in_sponsor - 1, 0)
            continue
        if _FOOTER.search(block.text) and len(block.text) < FOOTER_CHARS:
            continue
        kept.append(block)
    return kept


def find_stories(blocks: list[Block]) -> list[Story]:
    """The stories in `blocks`: each block led by a title-like link, its blurb after it."""
    stories: dict[str, Story] = {}
    skip_next = False
    for index, block in enumerate(blocks):
        if skip_next:
            skip_next = False
            continue
        lead = _lead_link(block)
        if lead is None:
            continue
        url, anchor = lead
        blurb = block.text[block.text.find(anchor) + len(anchor) :].lstrip(_SEPARATORS)
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        if len(blurb) < SHORT_BLURB and following and _is_blurb(following):
            blurb, skip_next = following.text, True
        title = _READING_TIME.sub("", anchor).strip(_SEPARATORS) or anchor
        stories.setdefault(url, Story(url, title, _READING_TIME.sub("", blurb).strip()))
    return list(stories.values())


def _lead_link(block: Block) -> tuple[str, str] | None:
    """The block's first link, cleaned, when its words open the block and read as a title."""
    if not block.links:
        return None
    href, anchor = block.links[0]
    url = clean_link(href)
    lead = _LEAD_MARK.match(block.text)
    opens = 0 <= block.text.find(anchor) <= (lead.end() if lead else 0)
    if url is None or not opens or anchor.casefold().strip(".:!→ ") in _GENERIC_ANCHORS:
        return None
    return (url, anchor) if len(anchor.split()) >= 3 or len(anchor) >= 15 else None


def _is_blurb(block: Block) -> bool:
    return not block.heading and _lead_link(block) is None and len(block.text) >= SHORT_BLURB


def _words(text: str) -> str:
    return " ".join(text.split())
