"""Extraction through the whole pipeline beside `extract()` on the same bytes, page by page.

    python bench/extraction_pipeline.py DATA_DIR [--serving NAME ...] [--latency-s S]

DATA_DIR is the extraction benchmark (html/<id>.html.gz, ground-truth.json, score.py).
Each page is served on loopback under its original path and query, every original site
on a host of its own (127.0.0.2, …; bench/fetch_extract.py's server), and an RSS feed
of them all on the first host. For each serving, `digest now` runs in a fresh data folder
with that feed as its source; then `digest export --format jsonl` gives back each item's
stored text, as an outside harness would read it. Both are scored with the benchmark's
own metric (as bench/extraction_quality.py does) beside `extract(html, url=<original
URL>, content_type="text/html")`, the figure that bench reports; every page whose two
texts differ is listed with its state, error, extractor and per-page F1.

The servings (the bytes are the saved page; what differs is how a server sends them):
    utf-8       Content-Type: text/html; charset=utf-8
    no-charset  Content-Type: text/html
    no-type     no Content-Type
    latin-1     Content-Type: text/html; charset=iso-8859-1 (wrong: the pages are UTF-8,
                as a server whose default was never changed says)
    gzip        Content-Type: text/html; charset=utf-8, Content-Encoding: gzip
    moved       the feed links /moved/<path>, which answers 301 to the page (served as utf-8)
    cp1252      the page re-encoded in windows-1252 (characters outside it as character
                references, as a legacy site writes them), its <meta charset> changed to
                match; Content-Type: text/html; charset=windows-1252
    cp1252-meta the same bytes; Content-Type: text/html (only the page declares its charset,
                if it does)
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from extraction_quality import load_score
from fetch_extract import feed_xml, host_address, start_hosts

from digest.errors import ExtractError
from digest.extract import extract

SERVINGS: dict[str, bytes] = {
    "utf-8": b"Content-Type: text/html; charset=utf-8\r\n",
    "no-charset": b"Content-Type: text/html\r\n",
    "no-type": b"",
    "latin-1": b"Content-Type: text/html; charset=iso-8859-1\r\n",
    "gzip": b"Content-Type: text/html; charset=utf-8\r\nContent-Encoding: gzip\r\n",
    "moved": b"Content-Type: text/html; charset=utf-8\r\n",
    "cp1252": b"Content-Type: text/html; charset=windows-1252\r\n",
    "cp1252-meta": b"Content-Type: text/html\r\n",
}
LEGACY = ("cp1252", "cp1252-meta")
_META_UTF8 = re.compile(rb"""(<meta[^>]+charset\s*=\s*["']?\s*)utf-?8""", re.I)
FEED_PATH = b"/feed.xml"
MOVED = b"/moved"


class Site:
    """The pages of the benchmark at their original paths, one loopback host per site."""

    def __init__(self, data_dir: Path) -> None:
        self.truth: dict[str, Any] = json.loads((data_dir / "ground-truth.json").read_text())
        self.pages = {
            path.name.removesuffix(".html.gz"): gzip.decompress(path.read_bytes())
            for path in sorted((data_dir / "html").glob("*.html.gz"))
        }
        sites = sorted({urlsplit(self.truth[i]["url"]).netloc for i in self.pages})
        self.host_of = {site: n for n, site in enumerate(sites)}
        self.by_path = {self._path(i).encode(): i for i in self.pages}
        self.serving = "utf-8"
        self.feed = b""

    def _path(self, page_id: str) -> str:
        parts = urlsplit(self.truth[page_id]["url"])
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def served_url(self, page_id: str, port: int) -> str:
        host = host_address(self.host_of[urlsplit(self.truth[page_id]["url"]).netloc])
        return f"http://{host}:{port}{self._path(page_id)}"

    def linked_url(self, page_id: str, port: int) -> str:
        """The page's URL in the feed: behind a redirect with the `moved` serving."""
        url = self.served_url(page_id, port)
        if self.serving != "moved":
            return url
        parts = urlsplit(url)
        return url.replace(parts.path, MOVED.decode() + parts.path, 1)

    def respond(self, path: bytes) -> tuple[bytes, bytes, bytes]:
        if path == FEED_PATH:
            return b"200 OK", b"Content-Type: application/rss+xml\r\n", self.feed
        if path.startswith(MOVED + b"/"):
            return b"301 Moved Permanently", b"Location: %s\r\n" % path[len(MOVED) :], b""
        page_id = self.by_path.get(path)
        if page_id is None:
            return b"404 Not Found", b"Content-Type: text/plain\r\n", b"not found"
        body = self.pages[page_id]
        if self.serving in LEGACY:
            body = _META_UTF8.sub(rb"\1windows-1252", body)
            body = body.decode().encode("cp1252", errors="xmlcharrefreplace")
        headers = SERVINGS[self.serving]
        return b"200 OK", headers, gzip.compress(body, 6) if b"gzip" in headers else body


def start_server(site: Site, latency_s: float) -> int:
    """The loopback hosts, answering from a thread of this process; their port."""
    started: list[int] = []
    ready = threading.Event()

    async def run() -> None:
        started.append(await start_hosts(site.respond, len(site.host_of), latency_s))
        ready.set()
        await asyncio.Event().wait()

    threading.Thread(target=asyncio.run, args=(run(),), daemon=True).start()
    ready.wait()
    return started[0]


def pipeline_texts(feed_url: str) -> list[dict[str, Any]]:
    """`digest now` with the feed as its only source, in a fresh folder; the export's rows."""
    digest = str(Path(sys.executable).with_name("digest"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "digest.toml").write_text(
            f'[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "bench"\nkind = "feed"\n'
            f'url = "{feed_url}"\n\n[fetch]\nallow_private_addresses = ["127.0.0.0/8"]\n'
            "per_host_delay_s = 0\n"
        )
        run = [digest, "--config", "digest.toml"]
        now = subprocess.run([*run, "now"], cwd=root, capture_output=True, text=True)
        if now.returncode not in (0, 3):
            raise SystemExit(f"digest now failed ({now.returncode}): {now.stderr[-500:]}")
        export = subprocess.run(
            [*run, "export", "--format", "jsonl"], cwd=root, capture_output=True, text=True
        )
        if export.returncode:
            raise SystemExit(f"digest export failed: {export.stderr[-500:]}")
    return [json.loads(line) for line in export.stdout.splitlines() if line.strip()]


def direct_text(site: Site, page_id: str) -> str:
    """What bench/extraction_quality.py scores for the page."""
    try:
        extracted = extract(
            site.pages[page_id], url=site.truth[page_id]["url"], content_type="text/html"
        )
    except ExtractError:
        return ""
    return extracted.text


def page_f1(score: ModuleType, truth: dict[str, Any], page_id: str, text: str) -> float:
    return float(score.score({page_id: truth[page_id]}, {page_id: text})[2])


def compare(site: Site, score: ModuleType, port: int, direct: dict[str, str]) -> None:
    site.feed = feed_xml([site.linked_url(i, port) for i in site.pages])
    rows = pipeline_texts(f"http://{host_address(0)}:{port}{FEED_PATH.decode()}")
    # an item's URL is the one linked, or where a permanent redirect led
    by_url = {url(i, port): i for i in site.pages for url in (site.linked_url, site.served_url)}
    found = {by_url[row["url"]]: row for row in rows if row.get("url") in by_url}
    piped = {i: (found[i]["text"] or "") if i in found else "" for i in site.pages}
    p, r, f1 = score.score(site.truth, piped)
    print(
        f"{site.serving:11} pipeline precision={p:.4f} recall={r:.4f} f1={f1:.4f}"
        f"  ({len(found)} of {len(site.pages)} pages exported)"
    )
    for page_id, text in piped.items():
        if text == direct[page_id]:
            continue
        row = found.get(page_id, {})
        ours, theirs = (page_f1(score, site.truth, page_id, t) for t in (direct[page_id], text))
        print(
            f"  {page_id[:12]} f1 {ours:.3f} -> {theirs:.3f}  chars {len(direct[page_id])} ->"
            f" {len(text)}  state={row.get('state')} quality={row.get('quality')}"
            f" error={row.get('error')!r}  first difference: {first_difference(direct[page_id], text)}"
        )


def first_difference(a: str, b: str) -> str:
    at = next(
        (n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return f"at {at}: {a[at : at + 30]!r} vs {b[at : at + 30]!r}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--serving", nargs="*", choices=sorted(SERVINGS), default=list(SERVINGS))
    parser.add_argument("--latency-s", type=float, default=0.0)
    args = parser.parse_args()
    score = load_score(args.data_dir)
    site = Site(args.data_dir)
    print(f"load: {os.getloadavg()[0]:.2f}")
    direct = {i: direct_text(site, i) for i in site.pages}
    p, r, f1 = score.score(site.truth, direct)
    print(f"extract()   direct   precision={p:.4f} recall={r:.4f} f1={f1:.4f}")
    port = start_server(site, args.latency_s)
    for serving in args.serving:
        site.serving = serving
        compare(site, score, port, direct)
    print(f"load: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
