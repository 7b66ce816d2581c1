"""The digest's markdown as sanitised HTML, and as an email message (pure).

One renderer serves the email and the Atom feed: markdown-it without raw HTML or
images, links kept only when they point to an allowed (stored) http(s) URL, then
an nh3 allowlist, then inline styles (mail clients drop <style> blocks).
"""

from __future__ import annotations

import email.utils
import html
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo

import jinja2
import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

from digest.compose.markdown import md_url
from digest.compose.usertemplates import is_overridden, render
from digest.config import EmailConfig
from digest.errors import DeliveryError
from digest.models import Period
from digest.periods import format_period
from digest.text import fill_template

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
MAIL_TEMPLATE = "mail.html.j2"
# Gmail clips an HTML body past ~102 KB; stay well below, counted as sent (encoded).
MAX_HTML_PART_BYTES = 90_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
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
    return _page(title, html_fragment(markdown, allowed_urls))


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title></head>\n"
        f'<body style="{_BODY_STYLE}">\n{body}</body></html>\n'
    )


@dataclass
class MailTemplate:
    """The HTML part from [output] templates_dir's mail.html.j2 (see its built-in copy for
    the variables), sanitised as the built-in part is; `problem` says why the built-in
    one was used instead, if it was."""

    templates_dir: Path | None
    period: Period
    full_copy: str
    problem: str | None = None

    def page(self, markdown: str, title: str, allowed_urls: Iterable[str]) -> str:
        body = html_fragment(markdown, allowed_urls)
        if not is_overridden(self.templates_dir, MAIL_TEMPLATE):
            return _page(title, body)
        zone = self.period.start.tzinfo
        context = {
            "title": title,
            "label": self.period.label,
            "period_range": format_period(
                self.period, zone if isinstance(zone, ZoneInfo) else ZoneInfo("UTC")
            ),
            "body": Markup(body),
            "markdown": markdown,
            "full_copy": self.full_copy,
        }
        rendered = render(MAIL_TEMPLATE, context, self.templates_dir, lambda: body, html=True)
        self.problem = self.problem or rendered.problem
        return _page(title, body if rendered.problem else sanitised(rendered.text))


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
    renderer = _renderer()
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
def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).disable("image")


# -- the message ---------------------------------------------------------------------------------


def clean_header(value: str) -> str:
    """One line, no control characters, and no RFC 2047 encoded words.

    Python's email package decodes `=?utf-8?q?...=0D=0A...?=` inside a header and
    writes the CR LF out when it refolds, which would add headers (CVE-2024-6923).
    A space in `=?` leaves the text readable and no longer an encoded word.
    """
    return " ".join(_CONTROL.sub(" ", value).replace("=?", "= ?").split())


def email_subject(template: str, period: Period) -> str:
    """config.subject with {period} (the week's label) and {dates} ("16–22 Nov 2026", in the
    period's own time zone) filled in, as a clean one-line header value."""
    zone = period.start.tzinfo
    dates = format_period(
        period, zone if isinstance(zone, ZoneInfo) else ZoneInfo("UTC"), short=True
    )
    try:
        subject = fill_template(template, {"period": period.label, "dates": dates})
    except ValueError as exc:  # the config checked it at load: only a template made in code
        raise DeliveryError(f"email.subject: {exc}") from exc
    return clean_header(subject)


def render_email(
    markdown: str,
    *,
    config: EmailConfig,
    period: Period,
    message_id: str,
    allowed_urls: Iterable[str],
    full_copy: str,
    date: datetime | None = None,
    small: bool = False,
    template: MailTemplate | None = None,
) -> EmailMessage:
    """A multipart/alternative message: the digest as plain text, sanitised HTML beside it.

    `full_copy` is where the whole digest can be read (a URL or a path); the HTML part
    points to it when the digest is cut to stay under Gmail's clipping limit. The HTML
    part comes from `template` when given (its `problem` then says if it failed). A `small`
    message, for a server that refused the whole one as too large (552), is the plain
    text alone, headed by that pointer.
    """
    subject = email_subject(config.subject, period)
    message = EmailMessage(policy=SMTP_POLICY)
    try:
        message["Subject"] = subject
        message["From"] = clean_header(config.sender)
        message["To"] = ", ".join(clean_header(address) for address in config.to)
        message["Message-ID"] = message_id
        message["Date"] = email.utils.format_datetime(date) if date else email.utils.formatdate()
    except ValueError as exc:  # an address from the config that does not parse
        raise DeliveryError(f"email: bad address in config: {exc}") from exc
    message["MIME-Version"] = "1.0"
    _list_headers(message, config)
    if small:
        notice = f"This digest was too large for the mail server; the full digest: {full_copy}"
        message.set_content(f"{notice}\n\n{markdown_to_text(markdown)}", cte="quoted-printable")
        return message
    message.set_content(markdown_to_text(markdown), cte="quoted-printable")
    allowed = [*allowed_urls, full_copy]
    page = template.page if template is not None else _built_in_page
    message.add_alternative(
        _html_within_limit(markdown, subject, allowed, full_copy, page),
        subtype="html",
        cte="quoted-printable",
    )
    return message


def _list_headers(message: EmailMessage, config: EmailConfig) -> None:
    """List-Id always (mail filters and clients group by it, RFC 2919); List-Unsubscribe
    (RFC 2369), with one-click List-Unsubscribe-Post for a URL (RFC 8058), when configured."""
    domain = email.utils.parseaddr(config.sender)[1].rpartition("@")[2] or "localhost"
    message["List-Id"] = f"Weekly digest <digest.{clean_header(domain).replace(' ', '')}>"
    if config.unsubscribe:
        message["List-Unsubscribe"] = f"<{clean_header(config.unsubscribe)}>"
        if config.unsubscribe.startswith("https://"):
            message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"


PageMaker = Callable[[str, str, Iterable[str]], str]  # (markdown, title, allowed) -> page


def _built_in_page(markdown: str, title: str, allowed_urls: Iterable[str]) -> str:
    return markdown_to_html(markdown, title=title, allowed_urls=allowed_urls)


def _html_within_limit(
    markdown: str, title: str, allowed: Sequence[str], full_copy: str, page: PageMaker
) -> str:
    """The whole digest if it fits; else as many leading blocks as fit, then a pointer."""
    whole = page(markdown, title, allowed)
    if _fits(whole):
        return whole
    blocks = markdown.split("\n\n")
    fits, too_many = 0, len(blocks)
    while too_many - fits > 1:  # binary search for the most blocks that fit
        middle = (fits + too_many) // 2
        if _fits(_cut_page(blocks[:middle], title, allowed, full_copy, page)):
            fits = middle
        else:
            too_many = middle
    return _cut_page(blocks[:fits], title, allowed, full_copy, page)


def _cut_page(
    blocks: Sequence[str], title: str, allowed: Sequence[str], full_copy: str, page: PageMaker
) -> str:
    where = f"<{full_copy}>" if full_copy.startswith(("https://", "http://")) else f"`{full_copy}`"
    notice = f"*This digest is too long for one email; the full digest is at {where}.*"
    return page("\n\n".join([*blocks, notice]), title, allowed)


def _fits(page: str) -> bool:
    """Whether the page, quoted-printable as sent, stays under the clipping limit."""
    part = EmailMessage(policy=SMTP_POLICY)
    part.set_content(page, subtype="html", cte="quoted-printable")
    payload = part.get_payload()
    assert isinstance(payload, str)
    size = len(payload) + payload.count("\n") - payload.count("\r\n")  # lines travel as CRLF
    return size <= MAX_HTML_PART_BYTES


# -- plain text ----------------------------------------------------------------------------------


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
    for token in _renderer().parse(markdown):
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
