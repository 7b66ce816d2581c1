"""URLs as digest reads them: the key that makes a link saved twice one item (key), the
checks of what comes in (checks), and how one is shown without its secrets (display)."""

from digest.urls.checks import (
    BadURL,
    WebURL,
    parse_url,
)
from digest.urls.display import (
    for_display,
    holds_secret,
    without_userinfo,
)
from digest.urls.key import (
    DEFAULT_PORTS,
    SHORTENER_HOSTS,
    is_shortener,
    is_tracking_param,
    normalize_url,
    same_page_key,
)

__all__ = [
    "DEFAULT_PORTS",
    "SHORTENER_HOSTS",
    "BadURL",
    "WebURL",
    "for_display",
    "holds_secret",
    "is_shortener",
    "is_tracking_param",
    "normalize_url",
    "parse_url",
    "same_page_key",
    "without_userinfo",
]
