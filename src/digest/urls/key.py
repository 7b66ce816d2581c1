"""The canonical form of a URL: the key that makes a link saved twice one item."""

from __future__ import annotations

import re
from collections.abc import Collection
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


ARXIV_HOSTS = frozenset({"arxiv.org", "www.arxiv.org", "export.arxiv.org"})
_ARXIV_PAPER = re.compile(
    r"^/(?:abs|pdf|html)/(?P<id>[a-z\-.]*/?\d{4}\.?\d{4,5}|[a-z\-.]+/\d{7})(?:v\d+)?(?:\.pdf)?/?$"
)
# A Mastodon status by its ActivityPub URI (bookmarks.csv, the archive): the same post as
# its web address `/@user/id` (the API's `url`).
_MASTODON_STATUS = re.compile(r"^(https?://[^/?#]+)/users/([\w.-]+)/statuses/(\d+)/?$")
# The common case, whose canonical form needs no parsing: http(s), a plain host name,
# a path and query of characters `quote` leaves alone, query pairs `key=value` without
# `%` or `+`. Anything else goes the slow, general way; both give the same answer.
_PLAIN = re.compile(
    r"(?P<scheme>https?)://(?P<host>[a-z0-9-]+(?:\.[a-z0-9-]+)*)(?::(?P<port>\d{1,5}))?"
    r"(?P<path>/[a-z0-9/:@!$&'()*+,;=\-._~%]*)?(?:\?(?P<query>[^#\s]*))?(?:#[\s\S]*)?",
    re.IGNORECASE,
)
_PLAIN_PAIR = re.compile(
    r"(?P<key>[a-z0-9/:@!$'()*,;\-._~]+)=[a-z0-9/:@!$'()*,;\-._~]*", re.IGNORECASE
)
# Link shorteners whose target is opaque until followed (the fetcher resolves them). Not
# youtu.be: its target is one known video, named in the link itself, and a request for it
# lands on consent or sign-in pages rather than something worth merging with.
SHORTENER_HOSTS = frozenset(
    {
        "t.co",
        "bit.ly",
        "buff.ly",
        "ow.ly",
        "tinyurl.com",
        "goo.gl",
        "lnkd.in",
        "dlvr.it",
        "is.gd",
        "trib.al",
        "rebrand.ly",
        "cutt.ly",
        "shorturl.at",
    }
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
    url = url.strip()
    plain = _PLAIN.fullmatch(url)
    if plain is not None and (fast := _normalize_plain(plain)) is not None:
        return _MASTODON_STATUS.sub(r"\1/@\2/\3", fast)
    return _MASTODON_STATUS.sub(r"\1/@\2/\3", _normalize_parsed(url))


def _normalize_plain(plain: re.Match[str]) -> str | None:
    """The canonical form of a URL `_PLAIN` matched, or None to take the general way."""
    query = plain["query"] or ""
    pairs = query.split("&") if query else []
    if not all(_PLAIN_PAIR.fullmatch(pair) for pair in pairs):
        return None
    scheme, host = plain["scheme"].lower(), plain["host"].lower()
    netloc = host
    if plain["port"] is not None:
        port = int(plain["port"])
        if port > 65535:
            return None
        if port != DEFAULT_PORTS[scheme]:
            netloc += f":{port}"
    path = plain["path"] or "/"
    kept = "&".join(pair for pair in pairs if not is_tracking_param(pair.split("=", 1)[0]))
    if host in ARXIV_HOSTS and (paper := _ARXIV_PAPER.match(path)):
        return f"https://arxiv.org/abs/{paper['id']}"
    return f"{scheme}://{netloc}{path}?{kept}" if kept else f"{scheme}://{netloc}{path}"


def _normalize_parsed(url: str) -> str:
    parts = urlsplit(url)
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
    if host in ARXIV_HOSTS and (paper := _ARXIV_PAPER.match(path)):
        return f"https://arxiv.org/abs/{paper['id']}"
    return urlunsplit((scheme, netloc, path, query, ""))


def is_shortener(url: str, hosts: Collection[str] = SHORTENER_HOSTS) -> bool:
    """Whether `url` is on a link shortener (`hosts`), to be followed to its target."""
    host = (urlsplit(url.strip()).hostname or "").removeprefix("www.")
    return host in hosts


# -- one page, one item --------------------------------------------------------------


def same_page_key(canonical: str) -> str:
    """The key that makes one page one item: the canonical form (normalize_url's) in https,
    without a trailing slash after a path, so that `http://a.test/x/` and `https://a.test/x`
    are one item. A key, not an address: http-only sites keep their http URL to fetch."""
    if canonical.startswith("http://"):
        canonical = "https://" + canonical[len("http://") :]
    head, mark, query = canonical.partition("?")
    if head.endswith("/") and head.count("/") > 3:  # not the root: `https://a.test/`
        head = head.rstrip("/")
    return head + mark + query
