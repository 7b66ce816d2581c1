"""One parser for every URL that comes in: what we can save and fetch, or why not."""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from functools import cached_property

import idna

from digest.urls.key import normalize_url

FETCHABLE_SCHEMES = frozenset({"http", "https"})


MAX_URL_CHARS = 8192
_SCHEME_PREFIX = re.compile(r"[a-z][a-z0-9+.\-]*:", re.IGNORECASE)
_UNSAFE_CHAR = re.compile(r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_ASCII_HOST = re.compile(r"[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*\.?", re.IGNORECASE)
_DOTTED_NUMBERS = re.compile(r"[0-9.]+")
# An IPv4 address in any form inet_aton accepts: one to four parts, each decimal, octal
# (leading 0) or hex (0x): 2130706433, 127.1, 0177.0.0.1, 0x7f.0.0.1.
_IPV4_PART = re.compile(r"0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*", re.IGNORECASE)
_NUMERIC_HOST = re.compile(r"https?://(?:[^@/?#\\]*@)?(?P<host>[0-9][^:/?#\\]*)", re.IGNORECASE)
AUTHORITY_END = re.compile(r"[/?#]")  # as httpx splits a URL
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
    authority = AUTHORITY_END.split(url[scheme.end() + 2 :], maxsplit=1)[0]
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
