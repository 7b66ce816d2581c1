"""Offline sections on news articles: how many, how pure, how much they agree with the desk.

    python bench/topics.py ../shared/bench-data/summaries/bbc-dev.csv [--items 60] [--samples 5]

Draws `--samples` random sets of `--items` articles (seeds 0..), serves each set as an RSS
feed on 127.0.0.1, runs `digest now` on it with the offline summariser, and reads the sections
back from the digest: their count, purity (share of items whose section's majority category
is theirs) and NMI against the BBC categories, beside the single-section baseline. Seed 0..1
were looked at while choosing SECTION_ITEMS; the others are held out.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from digest.cli import cli


def load(path: Path) -> list[tuple[str, str, str]]:
    csv.field_size_limit(sys.maxsize)
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    out = []
    for row in rows:
        title, _, body = row["document"].strip().partition("\n")
        out.append((title.strip(), body.strip(), row["categories"]))
    return out


def serve(pages: dict[str, bytes]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = pages.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def feed_and_pages(
    articles: list[tuple[str, str, str]], base: str, week: datetime
) -> dict[str, bytes]:
    pages: dict[str, bytes] = {}
    entries = []
    for n, (title, body, _category) in enumerate(articles):
        paragraphs = "".join(f"<p>{escape(p)}</p>" for p in body.split("\n") if p.strip())
        pages[f"/a/{n}"] = (
            f"<html><head><title>{escape(title)}</title></head><body><article><h1>{escape(title)}"
            f"</h1>{paragraphs}</article></body></html>"
        ).encode()
        when = format_datetime(week + timedelta(minutes=n), usegmt=True)
        entries.append(
            f"<item><title>{escape(title)}</title><link>{base}/a/{n}</link>"
            f"<guid>{base}/a/{n}</guid><pubDate>{when}</pubDate></item>"
        )
    pages["/feed.xml"] = (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>news</title>'
        + "".join(entries)
        + "</channel></rss>"
    ).encode()
    return pages


def sections_of(markdown: str, urls: dict[str, int]) -> dict[int, str]:
    """Article index -> the section it is listed under."""
    found: dict[int, str] = {}
    section = ""
    for line in markdown.splitlines():
        if line.startswith("## "):
            section = line[3:]
        for url in re.findall(r"\]\((http://127\.0\.0\.1:\d+/a/\d+)\)", line):
            listed = line.startswith("- ") or line.lstrip().startswith("*also in:")
            if listed and section != "The week":
                found[urls[url]] = section
    return found


def purity(assigned: list[str], truth: list[str]) -> float:
    groups: dict[str, list[str]] = {}
    for section, category in zip(assigned, truth, strict=True):
        groups.setdefault(section, []).append(category)
    return sum(Counter(g).most_common(1)[0][1] for g in groups.values()) / len(truth)


def nmi(assigned: list[str], truth: list[str]) -> float:
    n = len(truth)

    def entropy(labels: list[str]) -> float:
        return -sum(c / n * math.log(c / n) for c in Counter(labels).values())

    joint = Counter(zip(assigned, truth, strict=True))
    a, t = Counter(assigned), Counter(truth)
    mutual = sum(c / n * math.log(c * n / (a[x] * t[y])) for (x, y), c in joint.items())
    denominator = (entropy(assigned) + entropy(truth)) / 2
    return mutual / denominator if denominator else 0.0


def run_sample(
    articles: list[tuple[str, str, str]], folder: Path
) -> tuple[int, float, float, int, float]:
    pages: dict[str, bytes] = {}
    server = serve(pages)  # filled in once its port is known
    base = f"http://127.0.0.1:{server.server_address[1]}"
    pages.update(feed_and_pages(articles, base, datetime(2026, 11, 17, 9, tzinfo=UTC)))
    config = folder / "digest.toml"
    config.write_text(
        f'[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "news"\nkind = "feed"\n'
        f'url = "{base}/feed.xml"\n\n[fetch]\n'
        'allow_private_addresses = ["127.0.0.0/8"]\nper_host_delay_s = 0\n'
    )
    started = time.perf_counter()
    try:
        result = CliRunner().invoke(cli, ["now", "--week", "2026-W47", "--config", str(config)])
    finally:
        server.shutdown()
    elapsed = time.perf_counter() - started
    if result.exit_code != 0:
        raise SystemExit(result.output)
    markdown = (folder / "data" / "digests" / "2026-W47.md").read_text(encoding="utf-8")
    found = sections_of(markdown, {f"{base}/a/{n}": n for n in range(len(articles))})
    truth = [articles[n][2] for n in sorted(found)]
    assigned = [found[n] for n in sorted(found)]
    return len(set(assigned)), purity(assigned, truth), nmi(assigned, truth), len(found), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path)
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    articles = load(args.csv)
    print(f"{args.items} articles per sample; sections / purity / NMI (one section: purity, NMI 0)")
    for seed in range(args.samples):
        picked = np.random.RandomState(seed).choice(len(articles), args.items, replace=False)
        sample = [articles[i] for i in picked]
        with tempfile.TemporaryDirectory() as folder:
            sections, pure, agreement, listed, seconds = run_sample(sample, Path(folder))
        baseline = Counter(a[2] for a in sample).most_common(1)[0][1] / len(sample)
        print(
            f"  seed {seed}: {sections} sections, purity {pure:.3f}, NMI {agreement:.3f},"
            f" {listed}/{len(sample)} items listed; one section: purity {baseline:.3f};"
            f" run {seconds:.1f} s"
        )


if __name__ == "__main__":
    main()
