"""The canonical form of a URL: the key that makes a link saved twice one item."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

TRACKING_PARAMS = frozenset(
    {
        "fbclid",
        "gclid",
        "dclid",
        "gbraid",
        "wbraid",
        "msclkid",
        "mc_cid",
        "mc_eid",
        "ref_src",
        "ref_url",
        "igshid",
        "yclid",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
        "oly_anon_id",
        "oly_enc_id",
        "vero_id",
        "s_cid",
    }
)
DEFAULT_PORTS = {"http": 80, "https": 443}
FETCHABLE_SCHEMES = frozenset({"http", "https"})
_ARXIV_HOSTS = frozenset({"arxiv.org", "www.arxiv.org", "export.arxiv.org"})
_ARXIV_PAPER = re.compile(
    r"^/(?:abs|pdf|html)/(?P<id>[a-z\-.]*/?\d{4}\.?\d{4,5}|[a-z\-.]+/\d{7})(?:v\d+)?(?:\.pdf)?/?$"
)


def is_tracking_param(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith("utm_") or lowered in TRACKING_PARAMS


def normalize_url(url: str) -> str:
    """Return the canonical form of `url`; idempotent.

    Lower-case scheme and host, no fragment, no tracking parameters, no default
    port, an empty path as "/", and one form for every arXiv link to a paper.
    Raises ValueError for text that is not an absolute http(s)-like URL.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if not scheme or not parts.hostname:
        raise ValueError(f"not an absolute URL: {url!r}")
    host = parts.hostname.lower().rstrip(".")
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad port in URL: {url!r}") from exc
    netloc = f"[{host}]" if ":" in host else host
    if parts.username or parts.password:
        userinfo = parts.username or ""
        if parts.password:
            userinfo += f":{parts.password}"
        netloc = f"{userinfo}@{netloc}"
    if port is not None and port != DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    path = quote(parts.path, safe="/:@!$&'()*+,;=-._~%") or "/"
    query = urlencode(
        [
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if not is_tracking_param(k)
        ],
        quote_via=quote,
        safe="/:@!$'()*,;-._~",  # not "+": it would read back as a space
    )
    if host in _ARXIV_HOSTS and (paper := _ARXIV_PAPER.match(path)):
        return f"https://arxiv.org/abs/{paper['id']}"
    return urlunsplit((scheme, netloc, path, query, ""))


def is_fetchable(url: str) -> bool:
    return urlsplit(url).scheme.lower() in FETCHABLE_SCHEMES
