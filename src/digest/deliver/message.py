"""The digest as an email message (pure): a multipart/alternative of its plain text and
its sanitised HTML (the built-in page or the user's mail.html.j2), cut to stay under Gmail's
clipping limit; headers on one line, with no encoded words, and List-Id."""

from __future__ import annotations

import email.utils
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from pathlib import Path
from zoneinfo import ZoneInfo

from markupsafe import Markup

from digest.compose.usertemplates import is_overridden, render
from digest.config import EmailConfig
from digest.deliver.html import html_fragment, html_page, markdown_to_html, sanitised
from digest.deliver.plaintext import markdown_to_text
from digest.errors import DeliveryError
from digest.models import Period
from digest.periods import format_period
from digest.text import fill_template

MAIL_TEMPLATE = "mail.html.j2"
# Gmail clips an HTML body past ~102 KB; stay well below, counted as sent (encoded).
MAX_HTML_PART_BYTES = 90_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


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
            return html_page(title, body)
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
        return html_page(title, body if rendered.problem else sanitised(rendered.text))


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
