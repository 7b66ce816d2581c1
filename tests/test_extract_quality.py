"""The quality gate: walls, stubs and thin pages are marked; articles are not (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from digest.extract import extract

PAGES = Path(__file__).parent / "fixtures" / "pages"
URL = "https://news.example.org/2026/harbour-plan"
LEDE = (
    "The council will vote in March on the harbour plan, which would move the ferry terminal"
    " to the old coal pier and turn the current quay into a park. Residents of the east bank"
    " say the new road would cut them off from the water."
)
COOKIE_BANNER = (
    "<div class='cookie-banner'><p>We use cookies to improve your experience. Accept all"
    " cookies or manage your privacy choices.</p><button>Accept</button></div>"
)

CLOUDFLARE = """<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>
<meta http-equiv="refresh" content="390"></head><body><div class="main-wrapper" role="main">
<div class="main-content"><h1 class="zone-name-title h1">news.example.org</h1>
<h2 id="challenge-running" class="h2">Checking if the site connection is secure</h2>
<noscript><div id="challenge-error-title">Enable JavaScript and cookies to continue</div></noscript>
</div></div><script>window._cf_chl_opt={cvId: '2',cZone: "news.example.org"};</script>
<script src="/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1?ray=8a"></script>
</body></html>"""
ATTENTION_REQUIRED = """<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title>
</head><body><h1>Sorry, you have been blocked</h1><h2>You are unable to access example.org</h2>
<p>This website is using a security service to protect itself from online attacks.</p>
</body></html>"""
HCAPTCHA = """<html><head><title>One more step</title>
<script src="https://js.hcaptcha.com/1/api.js" async defer></script></head><body>
<h1>Please confirm you are a person</h1><form method="post"><div class="h-captcha"
data-sitekey="10000000-ffff-ffff-ffff-000000000001"></div><button>Continue</button></form>
</body></html>"""
JS_SHELL = """<!DOCTYPE html><html><head><title>Harbour News</title></head><body>
<noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div>
<script src="/static/js/main.4f2a.js"></script></body></html>"""
PAYWALL = f"""<!DOCTYPE html><html><head><title>Council to vote on harbour plan</title></head>
<body><nav><a href="/">Harbour News</a></nav><article><h1>Council to vote on harbour plan</h1>
<p>{LEDE}</p><div class="paywall"><p>Subscribe to continue reading.</p>
<p>Already a subscriber? <a href="/login">Log in</a></p></div></article></body></html>"""
PAYWALL_MARKUP = f"""<!DOCTYPE html><html><head><title>Harbour plan</title>
<script type="application/ld+json">{{"@context": "https://schema.org", "@type": "NewsArticle",
"headline": "Harbour plan", "isAccessibleForFree": "False",
"hasPart": {{"@type": "WebPageElement", "isAccessibleForFree": "False",
"cssSelector": ".locked"}}}}</script></head><body><article><h1>Harbour plan</h1><p>{LEDE}</p>
<div class="locked"></div></article></body></html>"""
CONSENT = """<!DOCTYPE html><html><head><title>Before you continue to Harbour News</title></head>
<body><div class="consent"><h1>Before you continue</h1><p>We and our 842 partners use cookies
and data to deliver and maintain our services, measure audience engagement and show
personalised ads.</p><p>Select "Accept all" to agree or "Manage options" to see more.</p>
<button>Reject all</button><button>Accept all</button></div></body></html>"""
LOGIN = """<!DOCTYPE html><html><head><title>Harbour News</title></head><body>
<main><h1>Please sign in to continue</h1><form action="/session" method="post">
<label>Email <input type="email" name="email"></label>
<label>Password <input type="password" name="password"></label>
<button>Sign in</button></form><p><a href="/forgot">Forgot your password?</a></p></main>
</body></html>"""


@pytest.mark.parametrize(
    ("page", "quality"),
    [
        (CLOUDFLARE, "blocked"),
        (ATTENTION_REQUIRED, "blocked"),
        (HCAPTCHA, "blocked"),
        (JS_SHELL, "blocked"),
        (PAYWALL, "paywalled"),
        (PAYWALL_MARKUP, "paywalled"),
        (CONSENT, "consent"),
        (LOGIN, "login"),
    ],
    ids=[
        "cloudflare-just-a-moment",
        "cloudflare-attention-required",
        "hcaptcha",
        "javascript-shell",
        "paywall-stub",
        "paywall-markup",
        "consent-wall",
        "login-wall",
    ],
)
def test_walls_are_marked_with_what_they_are(page: str, quality: str) -> None:
    result = extract(page.encode(), url=URL, content_type="text/html")

    assert result.quality == quality


def test_consent_redirect_host_is_a_consent_wall() -> None:
    page = f"<html><head><title>Harbour News</title></head><body><p>{LEDE}</p></body></html>"

    result = extract(
        page.encode(), url="https://consent.example.org/?continue=x", content_type=None
    )

    assert result.quality == "consent"


def test_paywall_stub_keeps_the_lede_it_shows() -> None:
    result = extract(PAYWALL.encode(), url=URL, content_type="text/html")

    assert LEDE in result.text


def test_full_article_with_cookie_banner_is_not_marked() -> None:
    result = extract((PAGES / "article.html").read_bytes(), url=URL, content_type="text/html")

    assert result.quality is None


def test_short_article_on_a_page_with_a_cookie_banner_is_not_marked() -> None:
    page = (
        f"<html><head><title>Harbour plan</title></head><body>{COOKIE_BANNER}"
        f"<article><h1>Harbour plan</h1><p>{LEDE}</p><p>{LEDE.upper()}</p></article></body></html>"
    )

    result = extract(page.encode(), url=URL, content_type="text/html")

    assert LEDE in result.text
    assert result.quality is None


def test_empty_plain_text_is_marked_thin() -> None:
    result = extract(b"ok\n", url=URL, content_type="text/plain")

    assert (result.text, result.quality) == ("ok", "thin")
