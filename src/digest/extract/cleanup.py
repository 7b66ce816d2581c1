"""Text hygiene shared by the readers: whitespace, block-wise text of a tree, boilerplate lines."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from lxml import etree
from lxml.html import HtmlElement

MAX_TITLE_CHARS = 200
MAX_BOILERPLATE_CHARS = 200  # a longer line is prose, whatever words it starts with
TITLE_SEARCH_LINES = 3  # a repeated headline sits at the very top of the text

# fmt: off
_BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "td", "th",
    "tr", "ul",
})
# fmt: on
_UNSEEN_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "button"})
_WORD = re.compile(r"\w+")
# Lines sites wrap around articles, one named rule per kind; English only; whole lines.
# A rule earns its place on the pages of more than one site (bench/cross_validation.py
# selects rules that way): a phrase read off one site's pages says nothing of pages
# nobody has seen, so the rules that matched only one site were dropped.
BOILERPLATE_RULES: dict[str, re.Pattern[str]] = {
    name: re.compile(f"^(?:{pattern})$", re.I | re.X)
    for name, pattern in {
        "sign up for newsletter": r"(?:sign\ up|subscribe)\b.{0,120}\b(?:newsletters?|inbox|e-?mails?)\b.{0,120}",
        "newsletter prompt": r".{0,80}\bnewsletters?\b.{0,80}\b(?:sign\ up|subscribe|inbox|delivered)\b.{0,80}",
        "share this": r"share\ (?:this|it)\b.{0,60}",
        "teaser": r"""
            (?:related(?:\ (?:articles?|stories|posts?|content|coverage))?|read\ (?:more|next|also)
              |see\ (?:more|also)|also\ read|more|don'?t\ miss|you\ (?:may|might)\ also\ like
              |recommended(?:\ for\ you)?|more\ from\ \S+|filed\ under)
            \s*(?:(?::|\.\.\.|…|\|).{0,150})?""",
        "comment count": r"(?:\d+\ )?comments?",
        "copyright": r"(?:©|\(c\)|copyright\b).{0,120}",
        "reporting by": r"\(?(?:additional\ )?(?:reporting|writing|editing)\ by\b.{0,200}",
    }.items()
}


def clean(text: str | None) -> str:
    """Trim each line and drop runs of blank lines."""
    if not text:
        return ""
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def first_line(text: str) -> str | None:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:MAX_TITLE_CHARS]
    return None


def collapse(text: str) -> str:
    return " ".join(text.split())


def block_text(element: HtmlElement) -> str:
    """The visible text of `element`, one line per block (paragraph, heading, list item, cell)."""
    parts: list[str] = []
    skipping: HtmlElement | None = None
    for event, node in etree.iterwalk(element, events=("start", "end")):
        tag = node.tag if isinstance(node.tag, str) else ""
        if skipping is not None:
            if event == "end" and node is skipping:
                skipping = None
                parts.append(node.tail or "")
            continue
        if event == "start":
            if not tag or tag in _UNSEEN_TAGS:
                skipping = node  # comments and processing instructions have no string tag
                continue
            parts.append("\n" if tag in _BLOCK_TAGS else "")
            parts.append(node.text or "")
        else:
            parts.append("\n" if tag in _BLOCK_TAGS else "")
            if node is not element:
                parts.append(node.tail or "")
    lines = (collapse(line) for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def strip_site_furniture(
    text: str, title: str | None, rules: Collection[str] = frozenset(BOILERPLATE_RULES)
) -> str:
    """Drop the headline repeated at the top and whole lines matching the named `rules`."""
    lines = text.split("\n")
    lines = _without_title(lines, title) if title else lines
    patterns = [BOILERPLATE_RULES[name] for name in rules]
    kept = [line for line in lines if not is_boilerplate_line(line, patterns)]
    return clean("\n".join(kept))


def is_boilerplate_line(line: str, patterns: Iterable[re.Pattern[str]]) -> bool:
    line = line.strip()
    if not 0 < len(line) <= MAX_BOILERPLATE_CHARS:
        return False
    return any(pattern.match(line) for pattern in patterns)


def _without_title(lines: list[str], title: str) -> list[str]:
    """`lines` less the first of its top lines that is the title (or a long part of it)."""
    title_words = " ".join(words(title))
    seen = 0
    for index, line in enumerate(lines):
        line_words = words(line)
        if not line_words:
            continue
        phrase = " ".join(line_words)
        if phrase == title_words or (len(line_words) >= 3 and phrase in title_words):
            return lines[:index] + lines[index + 1 :]
        seen += 1
        if seen >= TITLE_SEARCH_LINES:
            break
    return lines


def words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def shingles(text: str, size: int = 4) -> set[tuple[str, ...]]:
    tokens = words(text)
    return {tuple(tokens[i : i + size]) for i in range(max(1, len(tokens) - size + 1))}


def share_contained(part: str, whole: str) -> float:
    """How much of `part` (as 4-word shingles) also occurs in `whole`; 0.0 for an empty part."""
    part_shingles = shingles(part) if part.strip() else set()
    if not part_shingles:
        return 0.0
    return len(part_shingles & shingles(whole)) / len(part_shingles)


# A reader comment section, by the id, class or data-component of its container: "#comments",
# "comments-area", WordPress's "commentlist", Disqus, Coral, Viafoura, Livefyre, Facebook,
# giscus, utterances, Commento; "discussion" and "replies" sections.
_COMMENT_SECTION = re.compile(
    r"""^(?:comments?|comment[-_]?(?:s|list|section|area|thread|wrap(?:per)?|container|block
        |form|respond|stream)|comments?[-_](?:area|section|list|wrap(?:per)?|container|block
        |thread|module|stream|widget)|commentlist|respond|disqus_thread|dsq[-_]\w+
        |coral[-_]thread|vf[-_]comments?|viafoura\w*|livefyre[-\w]*|fyre|fb[-_]comments
        |giscus|utterances|commento|discussions?|reader[-_](?:comments|responses)
        |user[-_]comments|responses|replies)$""",
    re.IGNORECASE | re.VERBOSE,
)
_MARKED = etree.XPath("//*[@id or @class or @data-component or @data-module]")
_HOLDS_ARTICLE = etree.XPath(
    "boolean(descendant-or-self::*[self::article or self::main or self::h1])"
)


def drop_comment_sections(tree: HtmlElement) -> None:
    """Take reader comment sections out of the page (in place): comments are not the article,
    however long the thread. A container that holds the article, its main part or its
    headline is kept, whatever it is called."""
    for element in _MARKED(tree):
        names = " ".join(
            str(element.get(attr) or "")
            for attr in ("id", "class", "data-component", "data-module")
        )
        if not any(_COMMENT_SECTION.match(name) for name in names.split()):
            continue
        if element.getparent() is not None and not _HOLDS_ARTICLE(element):
            element.drop_tree()
