"""A URL, or a message quoting URLs, fit to show: no password, no secret query value, no
host that mixes scripts to pass for another."""

from __future__ import annotations

import re
from urllib.parse import unquote_plus

import idna

from digest.urls.checks import AUTHORITY_END

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
    cut = AUTHORITY_END.search(rest)
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
