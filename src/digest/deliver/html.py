"""The digest's markdown as sanitised HTML (pure); as an email message: message.py, as
plain text: plaintext.py.

One renderer serves the email and the Atom feed: markdown-it without raw HTML or
images, links kept only when they point to an allowed (stored) http(s) URL, then
an nh3 allowlist, then inline styles (mail clients drop <style> blocks).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import jinja2
import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

from digest.compose.markdown import md_url

ALLOWED_TAGS = frozenset(
    {"p", "h1", "h2", "h3", "ul", "ol", "li", "a", "strong", "em", "code", "pre", "blockquote"}
    | {"br"}
)
USER_TAGS = ALLOWED_TAGS | {
    "div", "span", "table", "thead", "tbody", "tr", "td", "th", "hr", "h4", "small", "b", "i",
}  # fmt: skip
_SIDES = ("", "-top", "-right", "-bottom", "-left")
SAFE_STYLES = frozenset(
    {"color", "background-color", "font-family", "font-size", "font-weight", "font-style"}
    | {"line-height", "text-align", "text-decoration", "max-width", "width", "display"}
    | {"overflow-wrap", "white-space", "vertical-align", "border-collapse"}
    | {f"{box}{side}" for box in ("margin", "padding", "border") for side in _SIDES}
)
_FONT = "font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif;"
_BODY_STYLE = (
    f"{_FONT} font-size: 16px; line-height: 1.5; color: #222222;"
    " max-width: 42em; margin: 0 auto; padding: 16px; overflow-wrap: anywhere;"
)
_STYLES = {
    "h1": "font-size: 24px; line-height: 1.25; margin: 0 0 8px 0; color: #111111;",
    "h2": "font-size: 19px; line-height: 1.3; margin: 24px 0 8px 0; color: #111111;"
    " border-bottom: 1px solid #dddddd; padding-bottom: 4px;",
    "h3": "font-size: 16px; margin: 16px 0 4px 0;",
    "p": "margin: 0 0 12px 0;",
    "ul": "margin: 0 0 12px 0; padding-left: 24px;",
    "ol": "margin: 0 0 12px 0; padding-left: 24px;",
    "li": "margin: 0 0 6px 0;",
    "blockquote": "margin: 0 0 12px 0; padding-left: 12px; border-left: 3px solid #dddddd;"
    " color: #555555;",
    "pre": "white-space: pre-wrap; font-family: Menlo, Consolas, monospace; font-size: 14px;",
    "code": "font-family: Menlo, Consolas, monospace; font-size: 14px;",
    "a": "color: #1a5fb4; text-decoration: underline;",
}
_OPENING_TAG = re.compile(r"<(h1|h2|h3|p|ul|ol|li|blockquote|pre|code|a)(?=[ >])")


# -- HTML ----------------------------------------------------------------------------------------


def markdown_to_html(markdown: str, *, title: str, allowed_urls: Iterable[str]) -> str:
    """The digest as a small styled HTML page; links only to `allowed_urls`, kept as text else."""
    return html_page(title, html_fragment(markdown, allowed_urls))


def html_page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title></head>\n"
        f'<body style="{_BODY_STYLE}">\n{body}</body></html>\n'
    )


def sanitised(page: str) -> str:
    """HTML of the user's template as mail may carry it: the tags of a laid-out message,
    inline styles of safe properties, http(s) links; no scripts, forms, images or events."""
    return nh3.clean(
        page,
        tags=set(USER_TAGS),
        attributes={"*": {"style"}, "a": {"href"}, "td": {"colspan"}, "th": {"colspan"}},
        url_schemes={"http", "https"},
        url_relative="deny",
        strip_comments=True,
        link_rel=None,
        filter_style_properties=set(SAFE_STYLES),
    )


def html_fragment(markdown: str, allowed_urls: Iterable[str]) -> str:
    """The sanitised, inline-styled body HTML of `markdown` (also the Atom entries' content)."""
    renderer = markdown_parser()
    allowed = {renderer.normalizeLink(md_url(url)) for url in allowed_urls}
    tokens = renderer.parse(markdown)
    for token in tokens:
        if token.children:
            token.children = _without_foreign_links(token.children, allowed)
    body = nh3.clean(
        renderer.renderer.render(tokens, renderer.options, {}),
        tags=set(ALLOWED_TAGS),
        attributes={"a": {"href"}},
        url_schemes={"http", "https"},
        url_relative="deny",
        strip_comments=True,
        link_rel=None,
    )
    return _OPENING_TAG.sub(lambda m: f'<{m[1]} style="{_STYLES[m[1]]}"', body)


def _without_foreign_links(children: list[Token], allowed: set[str]) -> list[Token]:
    """Drop the link tokens (not the text) of links whose target is not allowed."""
    kept: list[Token] = []
    dropping = False  # commonmark links do not nest
    for token in children:
        if token.type == "link_open":
            dropping = str(token.attrGet("href") or "") not in allowed
            if dropping:
                continue
        elif token.type == "link_close" and dropping:
            dropping = False
            continue
        kept.append(token)
    return kept


@cache
def markdown_parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).disable("image")


@cache
def our_templates(folder: Path) -> jinja2.Environment:
    """digest's own templates in `folder` (EPUB, site): autoescaped and strict. A user's
    templates render in the sandbox instead (digest.sandbox)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
