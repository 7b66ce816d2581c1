"""Is the text we got the article, or a wall in front of it?

`assess` names what a page is when it is not the article:

    blocked    a bot wall or captcha (Cloudflare "Just a moment…", hCaptcha, reCAPTCHA,
               a "please enable JavaScript" shell)
    consent    a cookie or privacy consent wall
    login      a sign-in wall
    paywalled  a subscription stub
    thin       too little text to be an article

Walls are only looked for when the text is short (under GATE_CHARS): a long
article that mentions cookies or subscriptions is still the article, and long
pages cost nothing here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from lxml.html import HtmlElement

from digest.lifecycle import Quality

BLOCKED: Final = Quality.BLOCKED
CONSENT: Final = Quality.CONSENT
LOGIN: Final = Quality.LOGIN
PAYWALLED: Final = Quality.PAYWALLED
THIN: Final = Quality.THIN
# What a paywall stub or thin page shows is the article's own words (a lede, a description).
SHOWS_ARTICLE_TEXT = frozenset({PAYWALLED, THIN})

GATE_CHARS = 1500  # longer text is taken to be the article
THIN_CHARS = 200  # shorter text is no article, whatever else the page says

_BOT_WALL_TITLE = re.compile(
    r"just a moment|attention required|checking your browser|are you (?:a )?(?:human|robot)"
    r"|verify(?:ing)? you are (?:a )?human|security check|access denied|ddos protection"
    r"|pardon our interruption|bot (?:check|verification)|captcha",
    re.I,
)
# Markup only the challenge pages of bot-wall vendors carry...
_BOT_WALL_MARKUP = ("cf_chl_opt", "cf-browser-verification", "captcha-delivery.com", "px-captcha")
# ...and markup ordinary pages carry too (comment-form captchas, bot-management scripts):
# a wall only where the page has no text of its own.
_CAPTCHA_MARKUP = (
    "/cdn-cgi/challenge-platform",
    "challenges.cloudflare.com",
    "_incapsula_resource",
    "g-recaptcha",
    "google.com/recaptcha",
    "h-captcha",
    "hcaptcha.com",
)
_SCRIPT_SHELL = re.compile(
    r"(?:please )?(?:enable|turn on|activate) javascript|javascript (?:is )?(?:required|disabled)"
    r"|requires javascript|enable cookies",
    re.I,
)
_CONSENT = re.compile(
    r"we (?:and our (?:\d+ )?partners )?(?:use|store) cookies|cookie (?:consent|settings|preferences)"
    r"|accept (?:all )?cookies|consent to (?:the use of )?cookies|before you continue to"
    r"|your privacy choices|manage (?:your )?(?:privacy|consent|cookies)|we value your privacy",
    re.I,
)
_LOGIN = re.compile(
    r"(?:sign|log) ?in to (?:continue|read|view|see|access)|please (?:sign|log) ?in"
    r"|you (?:must|need to) (?:be )?(?:sign|log)(?:ged)? ?in|(?:sign|log) ?in to your account"
    r"|members? (?:login|sign ?in)",
    re.I,
)
_PAYWALL = re.compile(
    r"subscribe (?:now |today )?to (?:continue|keep) reading"
    r"|to (?:continue|keep) reading,? (?:please )?(?:subscribe|sign in|log in|become)"
    r"|this (?:content|article|story|post) is (?:only )?(?:available )?(?:for|to) "
    r"(?:paid |paying )?(?:subscribers|members)"
    r"|(?:subscribers?|members?)[- ]only (?:content|article|story)|already a subscriber"
    r"|become a (?:member|subscriber) to (?:read|continue)"
    r"|to read the (?:full|rest of the|whole) (?:story|article)"
    r"|unlock (?:this|the full) (?:article|story)|reached your (?:free )?article limit",
    re.I,
)
_PAYWALL_FLAG = re.compile(r'"isAccessibleForFree"\s*:\s*"?false', re.I)


def assess(tree: HtmlElement, html: str, text: str, *, url: str = "") -> str | None:
    """What the page is when it is not the article (see the module docstring), else None."""
    if len(text) >= GATE_CHARS:
        return None
    title = " ".join(tree.xpath("string((//title)[1])").split())
    markup = html.lower()
    thin = len(text) < THIN_CHARS
    if _BOT_WALL_TITLE.search(title) or any(marker in markup for marker in _BOT_WALL_MARKUP):
        return BLOCKED
    page_text = _visible_text(tree)
    if thin and (
        _SCRIPT_SHELL.search(page_text) or any(marker in markup for marker in _CAPTCHA_MARKUP)
    ):
        return BLOCKED
    host = url.split("//", 1)[-1].split("/", 1)[0]
    consent_wall = _CONSENT.search(f"{title}\n{text}") or (thin and _CONSENT.search(page_text))
    if host.startswith("consent.") or consent_wall:
        return CONSENT
    if _LOGIN.search(f"{title}\n{page_text}") and (thin or tree.xpath("//input[@type='password']")):
        return LOGIN
    if _PAYWALL.search(page_text) or _paid_only(tree):
        return PAYWALLED
    return THIN if thin else None


def _paid_only(tree: HtmlElement) -> bool:
    """schema.org's paywall markup: `"isAccessibleForFree": false` in the page's JSON-LD."""
    scripts = tree.xpath("//script[@type='application/ld+json']/text()")
    return any(_PAYWALL_FLAG.search(str(script)) for script in scripts)


def _visible_text(tree: HtmlElement) -> str:
    texts = tree.xpath(
        "//body//text()[not(ancestor::script) and not(ancestor::style) and not(ancestor::template)]"
    )
    return " ".join(" ".join(str(part) for part in texts).split())
