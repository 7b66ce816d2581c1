"""A newsletter's links as the page they lead to: click-tracking wrappers that carry their
target (in a query parameter, or URL-encoded in the path as Amazon SES and Mailchimp do)
unwrapped, tracking parameters dropped. Opaque trackers are left to the fetcher, which
follows them as it does shortened links ([fetch] shortener_hosts)."""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlsplit

from digest.urls import WebURL, normalize_url, parse_url

_TARGET_PARAMS = ("url", "u", "redirect", "redirect_url", "target", "dest", "destination", "link")
_MAX_WRAPPERS = 5  # a tracker wrapping a tracker; never loops


def clean_link(href: str) -> str | None:
    """The page `href` leads to, canonical (normalize_url); None for a link that is no web
    page (mailto:, a fragment, a bad URL)."""
    url = href.strip()
    for _ in range(_MAX_WRAPPERS):
        target = _wrapped_target(url)
        if target is None:
            break
        url = target
    parsed = parse_url(url, credentials=False)
    if not isinstance(parsed, WebURL):
        return None
    try:
        return normalize_url(parsed.url)
    except ValueError:
        return None


def _wrapped_target(url: str) -> str | None:
    parts = urlsplit(url)
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key.lower() in _TARGET_PARAMS and value.lower().startswith(("http://", "https://")):
            return value
    for segment in parts.path.split("/"):
        unquoted = unquote(segment)
        if unquoted.lower().startswith(("http://", "https://")) and segment != unquoted:
            return unquoted
    return None
