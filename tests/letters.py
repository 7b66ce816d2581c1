"""A test mailbox in the shapes newsletters are sent in: a plain letter, a roundup of five
stories behind click trackers (TLDR's and Changelog's shapes), a letter with nothing but a
sponsor block, a letter in ISO-8859-1, and one more to add between two collects."""

from __future__ import annotations

import email
from email.message import EmailMessage
from urllib.parse import quote

from digest.collect.mail.letters import Letter, letter_of

DATE = "Wed, 18 Nov 2026 09:00:00 +0000"  # in 2026-W47
FOOTER = (
    '<p style="font-size:11px">You are receiving this because you subscribed.'
    ' <a href="https://news.example/unsub?id=1">Unsubscribe</a> |'
    ' <a href="https://news.example/prefs">Manage preferences</a></p>'
)
VIEW_ONLINE = '<p><a href="https://news.example/web/1">View in browser</a></p>'


def letter(
    subject: str,
    sender: str,
    html: str,
    message_id: str,
    *,
    plain: str | None = None,
    list_id: str | None = None,
) -> bytes:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = "reader@example.org"
    message["Subject"] = subject
    message["Date"] = DATE
    message["Message-ID"] = message_id
    if list_id:
        message["List-Id"] = list_id
    message.set_content(plain or "This letter reads best in HTML.")
    message.add_alternative(f"<html><body>{VIEW_ONLINE}{html}{FOOTER}</body></html>", "html")
    return message.as_bytes()


def plain_letter() -> bytes:
    body = "".join(
        f"<p>Container images start slowly because layer number {n} is pulled whole before"
        f" the process can start; lazy loading reads only the files the process opens.</p>"
        for n in range(6)
    )
    return letter(
        "Why containers start slowly",
        '"Systems Notes" <notes@systems.example>',
        f"<h1>Why containers start slowly</h1>{body}",
        "<plain-1@systems.example>",
    )


def tracked(url: str, style: str) -> str:
    """`url` behind a click tracker: its target in a query parameter, or in the path (SES)."""
    if style == "query":
        return f"https://click.news.example/track?u=1&url={quote(url, safe='')}"
    return f"https://tracking.news.example/CL0/{quote(url + '?utm_source=news', safe='')}/1/abc"


def roundup(story_urls: list[str]) -> bytes:
    """Five stories, TLDR's shape (title and blurb in one block) for the first three and
    Changelog's (a linked heading, then a paragraph) for the last two, and a sponsor."""
    titles = [
        "Kernel fusion explained",
        "Paged attention in practice",
        "A faster SQLite JSON index",
        "Why Rust 2.0 is not coming",
        "Inside the Go 1.26 garbage collector",
    ]
    blocks = []
    for index, (title, url) in enumerate(zip(titles, story_urls, strict=True)):
        blurb = f"The story of {title.lower()}, told by the people who built it, with numbers."
        link = tracked(url, "query" if index % 2 else "ses")
        if index < 3:
            blocks.append(
                f'<div><a href="{link}"><strong>{title} (4 minute read)</strong></a>'
                f"<br><br>{blurb}</div>"
            )
        else:
            blocks.append(f'<h2><a href="{link}">{title}</a></h2><p>{blurb}</p>')
    sponsor = (
        "<h2>Sponsor</h2><p><a href='https://ads.example/acme'>Acme Cloud</a></p>"
        "<p>Acme builds your containers twice as fast. Try it free for thirty days.</p>"
    )
    html = "<h1>Changelog Weekly #612</h1>" + "".join(blocks[:3]) + sponsor + "".join(blocks[3:])
    return letter(
        "Changelog Weekly #612",
        "Changelog Weekly <editors@changelog.example>",
        html,
        "<roundup-612@changelog.example>",
        list_id="Changelog Weekly <weekly.changelog.example>",
    )


def sponsor_only() -> bytes:
    html = (
        "<h2>Sponsored by Acme</h2><p>Acme Cloud builds your containers twice as fast.</p>"
        "<p><a href='https://ads.example/acme'>Try Acme free for thirty days</a></p>"
    )
    return letter(
        "A word from our sponsor", "Deals <deals@ads.example>", html, "<ad-1@ads.example>"
    )


def latin1_letter() -> bytes:
    """A plain-text letter in ISO-8859-1, its subject in RFC 2047 words."""
    text = (
        "Le café du matin: notre équipe a mesuré la latence des requêtes pendant une semaine."
        " Les résultats sont étonnants et détaillés ci-dessous, mesure après mesure.\n"
    )
    headers = (
        "From: =?iso-8859-1?q?Caf=E9_Lettre?= <lettre@cafe.example>\r\n"
        "To: reader@example.org\r\n"
        "Subject: =?iso-8859-1?q?R=E9sultats_de_la_semaine?=\r\n"
        f"Date: {DATE}\r\n"
        "Message-ID: <latin-1@cafe.example>\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-Type: text/plain; charset=iso-8859-1\r\n"
        "Content-Transfer-Encoding: 8bit\r\n\r\n"
    )
    return headers.encode("ascii") + (text * 3).encode("iso-8859-1")


def late_letter() -> bytes:
    body = "".join(
        f"<p>Observation {n}: queues grow when arrivals outpace the service rate, and the"
        f" wait grows faster than the load does.</p>"
        for n in range(5)
    )
    return letter(
        "Queues, briefly",
        '"Systems Notes" <notes@systems.example>',
        body,
        "<plain-2@systems.example>",
    )


def mailbox_letters(story_urls: list[str]) -> list[bytes]:
    return [plain_letter(), roundup(story_urls), sponsor_only(), latin1_letter()]


def read_letter(raw: bytes) -> Letter:
    """The letter in `raw` (RFC 5322 bytes), as the mailboxes hand it over."""
    return letter_of(email.message_from_bytes(raw))
