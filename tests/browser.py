"""Headless Debian chromium driven by selenium, for tests that look at the digest's HTML.

Uses /usr/bin/chromium and /usr/bin/chromedriver (Debian's `chromium`, `chromium-driver`, which
.ci/run installs); `browser()` is None where they are missing, so the tests skip cleanly.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless chromium; `viewport` sets how wide a page is laid out."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def viewport(driver: Any, width: int, height: int = 900) -> None:
    """Lay pages out `width` CSS pixels wide, as a phone (under 600) or a laptop would."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def available() -> bool:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return bool(CHROMIUM and DRIVER)


# What the page looks like, measured in the browser: sideways overflow, each item's title and
# note boxes, and every link's href.
LAYOUT = """
const items = [...document.querySelectorAll('li')].filter(li => li.querySelector(':scope > p'));
return {
  viewport: window.innerWidth,
  scroll: document.documentElement.scrollWidth,
  items: items.map(li => [...li.querySelectorAll(':scope > p')].slice(0, 2)
    .map(p => { const r = p.getBoundingClientRect(); return [r.top, r.bottom, p.innerText]; })),
  hrefs: [...document.querySelectorAll('a')].map(a => a.getAttribute('href')),
};
"""
