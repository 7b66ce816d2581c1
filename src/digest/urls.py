"""The canonical form of a URL: the key that makes a link saved twice one item."""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import parse_qsl, quote, unquote_plus, urlencode, urlsplit, urlunsplit

import idna

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


# -- one parser for every URL that comes in ----------------------------------------

MAX_URL_CHARS = 8192
_SCHEME_PREFIX = re.compile(r"[a-z][a-z0-9+.\-]*:", re.IGNORECASE)
_UNSAFE_CHAR = re.compile(r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_ASCII_HOST = re.compile(r"[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*\.?", re.IGNORECASE)
_DOTTED_NUMBERS = re.compile(r"[0-9.]+")
# An IPv4 address in any form inet_aton accepts: one to four parts, each decimal, octal
# (leading 0) or hex (0x): 2130706433, 127.1, 0177.0.0.1, 0x7f.0.0.1.
_IPV4_PART = re.compile(r"0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*", re.IGNORECASE)
_NUMERIC_HOST = re.compile(r"https?://(?:[^@/?#\\]*@)?(?P<host>[0-9][^:/?#\\]*)", re.IGNORECASE)
_AUTHORITY_END = re.compile(r"[/?#]")  # as httpx splits a URL
# The common case, known good without taking it apart: http(s), a plain DNS name (not all
# digits and dots), an optional port, and no whitespace or control character after.
_PLAIN_WEB_URL = re.compile(
    r"https?://(?=[a-z0-9-]*[a-z-])[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63})*\.?"
    r"(?::(?P<port>\d{1,5}))?(?:[/?#][^\s\x00-\x1f\x7f-\x9f\ud800-\udfff]*)?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class WebURL:
    """A URL we can save and fetch: `url` as the user gave it (trimmed)."""

    url: str

    @cached_property
    def canonical(self) -> str:
        """Its canonical form (normalize_url), computed when first asked for."""
        return normalize_url(self.url)


@dataclass(frozen=True)
class BadURL:
    """Why a piece of text is not a URL we can save; `reason` is one line for a report."""

    reason: str


def parse_url(text: str, *, credentials: bool = True) -> WebURL | BadURL:
    """Read one URL from any source; never raises.

    Accepts absolute http(s) URLs with a valid host (a DNS name, IDNA name, IPv4 or
    bracketed IPv6 address) and port, without whitespace or control characters, up to
    MAX_URL_CHARS; a user name and password unless `credentials` is false (a private feed
    needs them to be fetched: they are kept in the store and redacted by for_display in
    every output). Everything else
    gives a BadURL saying why; a scheme other than http(s) gives "not a web link (scheme:)".
    """
    url = _ipv4_written_out(text.strip().removeprefix("<").removesuffix(">").strip())
    plain = _PLAIN_WEB_URL.fullmatch(url) if len(url) <= MAX_URL_CHARS else None
    if (
        plain is not None
        and "xn--" not in url.lower()
        and (plain["port"] is None or 0 < int(plain["port"]) <= 65535)
    ):
        return WebURL(url)
    reason = _url_problem(url, credentials)
    return WebURL(url) if reason is None else BadURL(reason)


def ipv4_dotted(host: str) -> str | None:
    """`host` as a dotted-quad IPv4 address when it is written as one in any form
    inet_aton accepts (decimal, octal, hex, shortened), else None."""
    parts = host.removesuffix(".").split(".")
    if not 1 <= len(parts) <= 4 or not all(_IPV4_PART.fullmatch(part) for part in parts):
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(host.removesuffix(".")))
    except OSError:  # a part too large for its place (10.0.0.300)
        return None


def _ipv4_written_out(url: str) -> str:
    """`url` with an IPv4 host in another form (http://127.1/) as a dotted quad, so that the
    address guard and the store see the address it means."""
    numeric = _NUMERIC_HOST.match(url)
    if numeric is None or (dotted := ipv4_dotted(numeric["host"])) in (None, numeric["host"]):
        return url
    return f"{url[: numeric.start('host')]}{dotted}{url[numeric.end('host') :]}"


def _url_problem(url: str, credentials: bool = True) -> str | None:
    if not url:
        return "empty URL"
    if len(url) > MAX_URL_CHARS:
        return f"URL longer than 8 KB ({len(url):,} characters)"
    if (unsafe := _UNSAFE_CHAR.search(url)) is not None:
        return (
            "URL contains a space" if unsafe.group() == " " else "URL contains a control character"
        )
    scheme = _SCHEME_PREFIX.match(url)
    if scheme is None:
        return "not an absolute URL"
    name = scheme.group()[:-1].lower()
    if name not in FETCHABLE_SCHEMES:
        return f"not a web link ({name}:)"
    if not url[scheme.end() :].startswith("//"):
        return "not an absolute URL"
    authority = _AUTHORITY_END.split(url[scheme.end() + 2 :], maxsplit=1)[0]
    if "\\" in authority:  # a browser reads it as "/", httpx as part of the host
        return "backslash in the host"
    return _authority_problem(authority, credentials)


def _authority_problem(authority: str, credentials: bool) -> str | None:
    if "@" in authority:
        if not credentials:
            return "URL holds a user name or password (not saved)"
        authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        host, bracket, rest = authority[1:].partition("]")
        if not bracket:
            return "unclosed [ in the host"
        return _ipv6_problem(host) or _port_problem(rest, bracketed=True)
    host, _, port = authority.partition(":")
    return _host_problem(host) or _port_problem(f":{port}" if port else "", bracketed=False)


def _ipv6_problem(host: str) -> str | None:
    if "%" in host:
        return "IPv6 address with a zone id"
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return "not an IPv6 address in [ ]"
    return None


def _port_problem(rest: str, *, bracketed: bool) -> str | None:
    if not rest:
        return None
    if not rest.startswith(":"):
        return "text after ] in the host" if bracketed else "bad host name"
    port = rest[1:]
    if port and not (port.isascii() and port.isdigit() and 0 < int(port) <= 65535):
        return f"bad port {port[:12]!r}"
    return None


def _host_problem(host: str) -> str | None:
    if not host:
        return "URL has no host"
    if len(host) > 253:
        return "host name longer than 253 characters"
    if _DOTTED_NUMBERS.fullmatch(host):
        try:
            ipaddress.IPv4Address(host.rstrip("."))
        except ValueError:
            return "not an IPv4 address"
        return None
    if host.isascii() and "xn--" not in host.lower():
        return None if _ASCII_HOST.fullmatch(host) else "bad host name"
    try:  # as the HTTP client will encode it (IDNA 2008 on the lower-cased name)
        idna.encode(host.lower().rstrip("."))
    except (idna.IDNAError, UnicodeError, ValueError):
        return "host name not valid (IDNA)"
    return None


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
    if host in _ARXIV_HOSTS and (paper := _ARXIV_PAPER.match(path)):
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
    if host in _ARXIV_HOSTS and (paper := _ARXIV_PAPER.match(path)):
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


# -- display ---------------------------------------------------------------------

REDACTED = "***"
# Query keys whose values are secrets, matched as a word of the key (`access_token`,
# `X-Amz-Signature`, `apiKey`) or as the whole key (`apikey`, `PHPSESSID`).
SECRET_QUERY_WORDS = frozenset(
    {
        "token",
        "key",
        "secret",
        "pass",
        "password",
        "passwd",
        "pwd",
        "sid",
        "session",
        "auth",
        "sig",
        "signature",
        "code",
        "credential",
        "credentials",
        "jwt",
        "otp",
    }
)
SECRET_QUERY_KEYS = frozenset(
    {"apikey", "accesstoken", "authtoken", "sessionid", "sessid", "phpsessid", "jsessionid"}
)
_URL_START = re.compile(r"\b[a-z][a-z0-9+.\-]*://", re.IGNORECASE)
# Where a URL quoted in a message ends: characters never legal in a URL, so every
# character legal in userinfo (RFC 3986: unreserved, sub-delims, `:`, `%XX`) stays inside.
_URL_END = re.compile(r"[\s\"<>`]")
# Punctuation after a URL in a sentence or a quote: shown as is, not read as a value.
_TRAILING = re.compile(r"[\'\").,;:!\]]+$")
_QUERY_START = re.compile(r"[?#]")
_PAIR_SEPARATOR = re.compile(r"([?#&;])")
_KEY_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])")


def for_display(text: str) -> str:
    """`text` (a URL, or any message quoting URLs) fit to show.

    Each URL in it is taken apart as httpx does (the authority runs to the first `/`,
    `?` or `#`; the userinfo to its last `@`), so a password holding any character
    legal there, `'` included, is replaced whole: `http://***@host/`. Values of query
    keys that name a secret (SECRET_QUERY_WORDS, SECRET_QUERY_KEYS) become `***`, and a
    host whose labels mix scripts (a Cyrillic `а` in `pаypal.com`) is shown in punycode.

    Every output (stderr, status, error text stored, digest, log, feed, mail, export)
    goes through this; the stored URL keeps what is needed to fetch.
    """
    if "://" not in text:
        return text
    shown: list[str] = []
    position = 0
    while (start := _URL_START.search(text, position)) is not None:
        end_mark = _URL_END.search(text, start.end())
        end = len(text) if end_mark is None else end_mark.start()
        shown += [text[position : start.start()], _display_url(text[start.start() : end])]
        position = end
    return "".join([*shown, text[position:]])


def _split(url: str) -> tuple[str, str, str]:
    """`scheme://authority/rest` as (scheme, authority, rest), the authority cut as httpx
    cuts it: at the first `/`, `?` or `#`."""
    head, _, rest = url.partition("://")
    cut = _AUTHORITY_END.search(rest)
    return (head, rest, "") if cut is None else (head, rest[: cut.start()], rest[cut.start() :])


def _display_url(url: str) -> str:
    head, authority, tail = _split(url)
    if "@" in authority:
        authority = f"{REDACTED}@{authority.rpartition('@')[2]}"
    trailing = _TRAILING.search(tail if tail else authority)
    after = "" if trailing is None else trailing.group()
    if after and tail:
        tail = tail[: -len(after)]
    elif after:
        authority = authority[: -len(after)]
    return f"{head}://{_display_authority(authority)}{_display_tail(tail)}{after}"


def holds_secret(url: str) -> bool:
    """Whether for_display would hide something of `url`: a userinfo or a secret value."""
    _, authority, tail = _split(url)
    return "@" in authority or _display_tail(tail) != tail


def without_userinfo(url: str, *, mark: bool = False) -> str:
    """`url` with no user name or password: what may be requested without sending any.
    With `mark`, `***@` stands in their place: how a saved link is stored (only a
    configured source's URL keeps what it needs to be fetched)."""
    head, authority, tail = _split(url)
    if "@" not in authority:
        return url
    return f"{head}://{REDACTED + '@' if mark else ''}{authority.rpartition('@')[2]}{tail}"


def _display_authority(authority: str) -> str:
    if authority.isascii():
        return authority
    userinfo, at, hostport = authority.rpartition("@")
    host, colon, port = hostport.partition(":")
    return f"{userinfo}{at}{displayed_host(host)}{colon}{port}"


def _display_tail(tail: str) -> str:
    """The path as is; the query and fragment (OAuth puts tokens there) pair by pair."""
    start = _QUERY_START.search(tail)
    if start is None or "=" not in tail:
        return tail
    lowered = tail.lower()
    if not any(word in lowered for word in SECRET_QUERY_WORDS):  # every secret key holds one
        return tail
    pairs = _PAIR_SEPARATOR.split(tail[start.start() :])
    return tail[: start.start()] + "".join(_display_pair(pair) for pair in pairs)


def _display_pair(pair: str) -> str:
    key, equals, _value = pair.partition("=")
    return f"{key}={REDACTED}" if equals and is_secret_key(unquote_plus(key)) else pair


def is_secret_key(name: str) -> bool:
    """Whether a query key names a secret: `token`, `api_key`, `X-Amz-Signature`, `sid`…"""
    words = {word.lower() for word in _KEY_WORD.findall(name)}
    squashed = "".join(ch for ch in name.lower() if ch.isalnum())
    return bool(words & SECRET_QUERY_WORDS) or squashed in SECRET_QUERY_KEYS


def displayed_host(host: str) -> str:
    """`host` in punycode when one of its labels mixes scripts (UTS #39), else as is."""
    if host.isascii() or not any(_mixes_scripts(label) for label in host.split(".")):
        return host
    try:
        return idna.encode(host.lower().rstrip("."), uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        return host.encode("ascii", "backslashreplace").decode("ascii")


# UTS #39's augmented script sets: Japanese and Korean writing mixes these with Han.
_WRITING_SYSTEMS = (
    frozenset({"HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"HAN", "HANGUL"}),
    frozenset({"HAN", "BOPOMOFO"}),
)


def _mixes_scripts(label: str) -> bool:
    """UTS #39's mixed-script test: no one script (Common and Inherited fit any) covers it."""
    from confusable_homoglyphs import categories  # loads its tables: only for non-ASCII hosts

    scripts = {str(categories.alias(char)) for char in label} - {"COMMON", "INHERITED"}
    return len(scripts) > 1 and not any(scripts <= system for system in _WRITING_SYSTEMS)
