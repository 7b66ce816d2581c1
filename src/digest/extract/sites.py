"""Pages whose useful text is not an article: arXiv abstracts, GitHub READMEs, video pages.

Each reader returns None when the page does not carry what it looks for, so the
general HTML reader takes over.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from urllib.parse import urlsplit

from lxml.html import HtmlElement

from digest.extract.cleanup import block_text, clean, collapse
from digest.models import Extracted
from digest.urls.key import ARXIV_HOSTS

SiteReader = Callable[[HtmlElement, str, str], Extracted | None]

_GITHUB_HOSTS = frozenset({"github.com", "www.github.com"})
_VIDEO_HOSTS = frozenset(
    {"youtube.com", "www.youtube.com", "m.youtube.com", "youtu.be", "vimeo.com", "www.vimeo.com"}
)
_SHORT_DESCRIPTION = re.compile(r'"shortDescription"\s*:\s*("(?:[^"\\]|\\.)*")')
_ARXIV_LABEL = re.compile(r"^\s*Abstract:\s*", re.I)
_GITHUB_PITCH = re.compile(r"\s*Contribute to \S+ development by creating an account on GitHub\.?$")


def site_reader(url: str) -> SiteReader | None:
    """The special reader for pages at this URL, if any."""
    parts = urlsplit(url)
    host, path = parts.hostname or "", parts.path
    if host in ARXIV_HOSTS and path.startswith("/abs/"):
        return read_arxiv_abstract
    if host in _GITHUB_HOSTS and len([p for p in path.split("/") if p]) == 2:
        return read_github_readme
    if host in _VIDEO_HOSTS:
        return read_video_page
    return None


def read_arxiv_abstract(tree: HtmlElement, url: str, html: str) -> Extracted | None:
    """Title, authors and abstract from the `citation_*` meta tags or the abstract blockquote."""
    title = (
        _meta(tree, "citation_title")
        or collapse(_text(tree, "//h1[contains(@class, 'title')]")).removeprefix("Title:").strip()
    )
    authors = [collapse(str(a)) for a in tree.xpath("//meta[@name='citation_author']/@content")]
    abstract = _meta(tree, "citation_abstract") or _ARXIV_LABEL.sub(
        "", collapse(_text(tree, "//blockquote[contains(@class, 'abstract')]"))
    )
    if not abstract:
        return None
    byline = "; ".join(authors)
    text = "\n\n".join(
        part for part in (title, f"Authors: {byline}" if byline else "", abstract) if part
    )
    published = _meta(tree, "citation_date") or _meta(tree, "citation_online_date")
    return Extracted(
        text=text,
        title=title or None,
        author=byline or None,
        published=published.replace("/", "-") or None,
        language="en",
        extractor="arxiv",
    )


def read_github_readme(tree: HtmlElement, url: str, html: str) -> Extracted | None:
    """The rendered README of a repository page, under the repository's description."""
    readmes = tree.xpath("//article[contains(concat(' ', @class, ' '), ' markdown-body ')]")
    if not readmes:
        return None
    readme = block_text(readmes[0])
    description = _GITHUB_PITCH.sub("", _meta(tree, "og:description") or _meta(tree, "description"))
    if description and description in readme:
        description = ""
    text = clean("\n\n".join(part for part in (description, readme) if part))
    parts = [p for p in urlsplit(url).path.split("/") if p]
    return Extracted(text=text, title="/".join(parts), extractor="github-readme")


def read_video_page(tree: HtmlElement, url: str, html: str) -> Extracted | None:
    """Title and description from the page metadata (YouTube's player data when present)."""
    title = _meta(tree, "og:title") or _meta(tree, "title") or collapse(_text(tree, "//title"))
    description = _youtube_description(html) or _meta(tree, "og:description")
    if not description:
        return None
    author = collapse(_text(tree, "//*[@itemprop='author']//*[@itemprop='name']/@content"))
    published = _meta(tree, "datePublished") or _meta(tree, "uploadDate")
    return Extracted(
        text=clean("\n\n".join(part for part in (title, description) if part)),
        title=title or None,
        author=author or None,
        published=published[:10] or None,
        extractor="video-metadata",
    )


def _youtube_description(html: str) -> str:
    """The full description in ytInitialPlayerResponse (og:description is cut short)."""
    match = _SHORT_DESCRIPTION.search(html)
    if match is None:
        return ""
    try:
        value = json.loads(match.group(1))
    except json.JSONDecodeError:
        return ""
    return clean(value) if isinstance(value, str) else ""


def _meta(tree: HtmlElement, name: str) -> str:
    """The first non-empty `<meta>` content by property, name or itemprop."""
    query = f"//meta[@property='{name}' or @name='{name}' or @itemprop='{name}']/@content"
    for value in tree.xpath(query):
        if text := collapse(str(value)):
            return text
    return ""


def _text(tree: HtmlElement, query: str) -> str:
    found = tree.xpath(query)
    if not found:
        return ""
    first = found[0]
    return str(first) if isinstance(first, str) else str(first.text_content())
