"""The archive site: built from delivered weeks, served from a loopback HTTP server, driven
in headless chromium (index, a week, search by Pagefind); rebuilt incrementally."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

from browser import available, chromium, viewport
from digest.cli import cli
from digest.config import Config, DigestSection, SiteConfig
from digest.deliver.outbox import deliver_digest
from digest.deliver.site import build_site
from digest.periods import parse_week
from digest.store import Store
from stores import store_at

ZONE = ZoneInfo("UTC")
W46, W47 = parse_week("2026-W46", ZONE), parse_week("2026-W47", ZONE)
NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
LINKS = ["https://rust.example/pin", "https://db.example/wal", "https://rust.example/old"]


def week(label: str, rust: str, extra: str = "") -> str:
    return (
        f"# Digest for {label}\n\n## The week\n\nA week.\n\n## Rust\n\n{rust}\n\n"
        "## Databases\n\n- **[A write-ahead log](https://db.example/wal)**\n\n"
        "  Commits batch together.\n"
        "  <script>alert(1)</script> [foreign](https://evil.example/)\n" + extra
    )


W46_MD = week("2026-W46", "- **[Older pinning](https://rust.example/old)**\n\n  Old news.")
W47_MD = week(
    "2026-W47",
    "- **[Pin and suffering](https://rust.example/pin)**\n\n"
    "  Self-referential futures need zanzibarite pinning.",
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = store_at(tmp_path / "data" / "digest.db")
    try:
        yield opened
    finally:
        opened.close()


def config(tmp_path: Path) -> Config:
    return Config(digest=DigestSection(data_dir=tmp_path / "data"), site=SiteConfig(enabled=True))


def deliver_both(store: Store, cfg: Config, *, site: bool = True) -> None:
    deliver_digest(store, cfg, W46, W46_MD, NOW - timedelta(days=7), allowed_urls=LINKS)
    outcome = deliver_digest(store, cfg, W47, W47_MD, NOW, allowed_urls=LINKS)
    assert ("site" in outcome.delivered) is site and outcome.failures == []


def test_pages_are_relative_sanitised_and_rebuilt_only_where_changed(
    tmp_path: Path, store: Store
) -> None:
    cfg = config(tmp_path)
    deliver_both(store, cfg)
    site = tmp_path / "data" / "site"
    pages = sorted(
        str(p.relative_to(site)) for p in site.rglob("*.html") if "pagefind" not in p.parts
    )
    assert pages == [
        "2026-W46.html",
        "2026-W47.html",
        "index.html",
        "sections/databases.html",
        "sections/rust.html",
    ]
    for page in pages:
        html = (site / page).read_text()
        assert "<script>alert" not in html and "evil.example" not in html
        assert 'href="/' not in html and 'src="/' not in html  # relative links only
    rust = (site / "sections" / "rust.html").read_text()
    assert rust.index("Pin and suffering") < rust.index("Older pinning")  # newest first
    assert 'href="../2026-W47.html"' in rust
    assert (site / "pagefind" / "pagefind-ui.js").exists()

    again = build_site(site, cfg.digests_dir, ZONE, lambda label: LINKS)
    assert again.written == [] and again.problem is None
    revised = W47_MD.replace("Old news.", "x") + "\n## Go\n\n- **New** in go.\n"
    (cfg.digests_dir / "2026-W47.md").write_text(revised)
    changed = build_site(site, cfg.digests_dir, ZONE, lambda label: LINKS)
    assert "2026-W46.html" not in changed.written
    assert {"2026-W47.html", "index.html", "sections/go.html"} <= set(changed.written)


def test_digest_site_writes_the_archive_where_it_is_told(tmp_path: Path, store: Store) -> None:
    cfg = config(tmp_path).model_copy(update={"site": SiteConfig()})  # not rebuilt by runs
    deliver_both(store, cfg, site=False)
    path = tmp_path / "digest.toml"
    path.write_text(f'[digest]\ndata_dir = "{tmp_path / "data"}"\n')
    out = tmp_path / "public"

    first = CliRunner().invoke(cli, ["--config", str(path), "site", "--out", str(out)])
    again = CliRunner().invoke(cli, ["--config", str(path), "site", "--out", str(out)])

    assert first.exit_code == 0, first.output
    assert f"site in {out}: 6 pages written" in first.output  # 2 weeks, 2 sections, index, css
    assert "0 pages written" in again.output
    assert (out / "2026-W47.html").exists() and (out / "pagefind").is_dir()


@pytest.mark.skipif(not available(), reason="needs chromium and chromium-driver")
def test_in_chromium_the_index_lists_weeks_and_search_finds_a_note(
    tmp_path: Path, store: Store
) -> None:
    cfg = config(tmp_path)
    deliver_both(store, cfg)
    with serving(tmp_path / "data" / "site") as base, chromium() as driver:
        viewport(driver, 390)
        driver.get(f"{base}/index.html")
        weeks = driver.execute_script(
            "return [...document.querySelectorAll('.weeks a')].map(a => a.textContent)"
        )
        assert weeks == ["2026-W47", "2026-W46"]
        driver.get(f"{base}/2026-W47.html")
        items = driver.execute_script(
            "return [...document.querySelectorAll('main li a')].map(a => a.textContent)"
        )
        assert "Pin and suffering" in items and "A write-ahead log" in items
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 390

        driver.get(f"{base}/index.html")
        found = _search(driver, "zanzibarite")
        assert len(found) == 1 and found[0]["href"].endswith("/2026-W47.html")
        assert "zanzibarite" in found[0]["text"]


def _search(driver: Any, word: str) -> list[dict[str, str]]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    box = WebDriverWait(driver, 20).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "#search input")
    )
    box.send_keys(word)
    results = "return [...document.querySelectorAll('.pagefind-ui__result')].map(r => ({href: r.querySelector('a').href, text: r.textContent}))"
    found: list[dict[str, str]] = WebDriverWait(driver, 20).until(
        lambda d: d.execute_script(results)
    )
    return found


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(folder: Path) -> Iterator[str]:
    """The folder on a static HTTP server on 127.0.0.1, under a sub-path as a host would."""
    root = folder.parent / "www"
    (root / "digests").mkdir(parents=True)
    (root / "digests" / "site").symlink_to(folder)
    handler = functools.partial(_Quiet, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/digests/site"
    finally:
        server.shutdown()
        server.server_close()
