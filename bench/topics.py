"""Offline sections on news articles: how many, how pure, how much they agree with the desk.

    python bench/topics.py ../shared/bench-data/summaries/bbc-dev.csv [--items 60] [--samples 5]
    python bench/topics.py ../shared/bench-data/summaries/bbc-dev.csv --direct

The held-out protocol (issue 31): rules are chosen on the even rows of a set (`--half tune`)
and reported on the odd ones (`--half held`, the default), and on a second, differently made
set used whole (`--half all`): ../shared/bench-data/topics/agnews-dev.csv, AG News headlines
with their short descriptions (what feed entries without full text look like).

    python bench/topics.py ../shared/bench-data/topics/agnews-dev.csv --half all --items 80

--direct calls offline_sections on the articles as noted items of one feed (no server, no
fetch: seconds instead of minutes) and adds what a reader of the headings sees: the share of items left
under "Also saved", the share of a heading's words found in its items' texts, and stability:
with one more article, the share of pairs of earlier items still together or apart, and the
share of groups whose members did not change that kept their name.

Draws `--samples` random sets of `--items` articles (seeds 0..), serves each set as an RSS
feed on 127.0.0.1, runs `digest now` on it with the offline summariser, and reads the sections
back from the digest: their count, purity (share of items whose section's majority category
is theirs) and NMI against the BBC categories, beside the single-section baseline. Seed 0..1
were looked at while choosing SECTION_ITEMS; the others are held out.
"""

from __future__ import annotations

import argparse
import csv
import html
import itertools
import math
import re
import statistics
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
from digest.compose.topics import ALSO_SAVED, offline_sections
from digest.models import Item, Note

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from weekitems import week_item  # noqa: E402


def load(path: Path) -> list[tuple[str, str, str]]:
    """(title, text, category) of each row: BBC articles (`document`, `categories`) or AG
    News headlines with their descriptions (`category`, `title`, `description`)."""
    csv.field_size_limit(sys.maxsize)
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    out = []
    for row in rows:
        if "document" in row:
            title, _, body = row["document"].strip().partition("\n")
            out.append((title.strip(), body.strip(), row["categories"]))
        else:
            body = row["description"].replace("\\", " ")
            out.append((_agnews_text(row["title"]), _agnews_text(body), row["category"]))
    return out


def _agnews_text(text: str) -> str:
    """AG News as the product would read it: its `#39;`-style entities and quotes undone."""
    return html.unescape(re.sub(r" ?(#\d+;|quot;)", lambda m: "&" + m[1].strip(), text)).strip()


def half(articles: list[tuple[str, str, str]], which: str) -> list[tuple[str, str, str]]:
    """The held-out protocol: rules are chosen on the even rows ("tune") and reported on the
    odd ones ("held"), never the other way round; "all" for a second set used whole."""
    if which == "all":
        return articles
    return articles[0 if which == "tune" else 1 :: 2]


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


FEED = "news"  # the items come from one feed, as in `digest now` on a feed


def as_items(articles: list[tuple[str, str, str]]) -> list[Item]:
    start = datetime(2026, 11, 16, tzinfo=UTC)
    return [
        week_item(n + 1, start, title=title, text=body, note=Note(body[:200]), sources=(FEED,))
        for n, (title, body, _category) in enumerate(articles)
    ]


def direct_sample(articles: list[tuple[str, str, str]], extra: tuple[str, str, str]) -> str:
    items = as_items(articles)
    found = offline_sections(items, (FEED,))
    assigned = [found[item.id] for item in items]
    largest = Counter(assigned).most_common(1)[0][1] / len(assigned)
    under_feed = sum(name == FEED for name in assigned)
    truth = [category for _, _, category in articles]
    grouped = [n for n, name in enumerate(assigned) if name not in (ALSO_SAVED, FEED)]
    heading = [
        heading_share(name, f"{articles[n][0]} {articles[n][1]}")
        for n, name in enumerate(assigned)
        if name not in (ALSO_SAVED, FEED)
    ]
    after = offline_sections(as_items([*articles, extra]), (FEED,))
    pairs, names = stability(found, after)
    pure = purity([assigned[n] for n in grouped], [truth[n] for n in grouped]) if grouped else 0
    return (
        f"{len(set(assigned))} sections, purity {purity(assigned, truth):.3f}"
        f" (grouped items only {pure:.3f}), NMI {nmi(assigned, truth):.3f},"
        f" under the feed's name {under_feed}/{len(items)}, largest section {largest:.2f},"
        f" heading words in items {statistics.fmean(heading) if heading else 0:.2f},"
        f" one more item: pairs kept {pairs:.3f}, names kept {names:.2f}"
    )


def heading_share(name: str, text: str) -> float:
    """Share of the heading's words found in the text (case-insensitive, as whole words)."""
    found = [re.search(rf"\b{re.escape(w)}\b", text, re.I) for w in name.split()]
    return sum(map(bool, found)) / len(found)


def stability(before: dict[int, str], after: dict[int, str]) -> tuple[float, float]:
    """Pairs of `before`'s items still together or apart in `after`; of the named groups whose
    members are the same in both, the share that kept their name."""
    ids = sorted(before)
    kept = total = 0
    for a, b in itertools.combinations(ids, 2):
        total += 1
        kept += (before[a] == before[b]) == (after[a] == after[b])
    groups_before = _groups(before, ids)
    groups_after = _groups(after, sorted(after))  # a group the new item joined did change
    same = [
        (name, members)
        for name, members in groups_before.items()
        if name != ALSO_SAVED and members in groups_after.values()
    ]
    named = sum(groups_after.get(name) == members for name, members in same)
    return kept / max(1, total), named / len(same) if same else 1.0


def _groups(sections: dict[int, str], ids: list[int]) -> dict[str, frozenset[int]]:
    groups: dict[str, set[int]] = {}
    for item_id in ids:
        groups.setdefault(sections[item_id], set()).add(item_id)
    return {name: frozenset(members) for name, members in groups.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path)
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--direct", action="store_true", help="offline_sections, no pipeline")
    parser.add_argument(
        "--half",
        choices=("tune", "held", "all"),
        default="held",
        help="rows chosen on (even), reported on (odd: the default), or all (a second set)",
    )
    args = parser.parse_args()
    articles = half(load(args.csv), args.half)
    if args.direct:
        for seed in range(args.samples):
            randomness = np.random.RandomState(seed)
            picked = randomness.choice(len(articles), args.items + 1, replace=False)
            sample = [articles[i] for i in picked]
            print(f"  seed {seed}: {direct_sample(sample[:-1], sample[-1])}")
        return
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
