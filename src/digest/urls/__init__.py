"""URLs as digest reads them: the key that makes a link saved twice one item (key), the
checks of what comes in (checks), and how one is shown without its secrets (display)."""

from digest.urls.checks import (
    FETCHABLE_SCHEMES,
    MAX_URL_CHARS,
    BadURL,
    WebURL,
    ipv4_dotted,
    parse_url,
)
from digest.urls.display import (
    REDACTED,
    SECRET_QUERY_KEYS,
    SECRET_QUERY_WORDS,
    displayed_host,
    for_display,
    holds_secret,
    is_secret_key,
    without_userinfo,
)
from digest.urls.key import (
    DEFAULT_PORTS,
    SHORTENER_HOSTS,
    TRACKING_PARAMS,
    is_shortener,
    is_tracking_param,
    normalize_url,
    same_page_key,
)

__all__ = [
    "DEFAULT_PORTS",
    "FETCHABLE_SCHEMES",
    "MAX_URL_CHARS",
    "REDACTED",
    "SECRET_QUERY_KEYS",
    "SECRET_QUERY_WORDS",
    "SHORTENER_HOSTS",
    "TRACKING_PARAMS",
    "BadURL",
    "WebURL",
    "displayed_host",
    "for_display",
    "holds_secret",
    "ipv4_dotted",
    "is_secret_key",
    "is_shortener",
    "is_tracking_param",
    "normalize_url",
    "parse_url",
    "same_page_key",
    "without_userinfo",
]
