"""What the week's other editions cost: the EPUB of a big week, the archive site of a year
(whole, then after one week changed), the import of Apprise that a push pays once.

    python bench/editions.py [--items 200] [--weeks 52]

Synthetic weeks: each item a read page of 800 to 4,000 words (about 4 to 18 minutes), a
two-sentence note and two key points, in ten sections. Prints wall time and sizes.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.compose.entries import Entry, Topic
from digest.deliver.epub import Book, epub_bytes
from digest.deliver.site import build_site
from digest.models import Item, ItemKind, ItemState
from digest.periods import parse_week

ZONE = ZoneInfo("UTC")
WORDS = [
    "attention",
    "cache",
    "block",
    "page",
    "kernel",
    "request",
    "memory",
    "model",
    "serving",
    "batch",
    "queue",
]


def week_items(week: int, count: int, rng: random.Random) -> list[Item]:
    start = parse_week(f"2026-W{week:02d}", ZONE).start
    return [
        Item(
            id=n,
            key=f"https://site{n % 17}.example/{week}/{n}",
            url=f"https://site{n % 17}.example/{week}/{n}",
            title=f"Item {n} of week {week}",
            kind=ItemKind.LINK,
            saved_at=start + timedelta(hours=n % 160),
            topic=None,
            context=None,
            state=ItemState.NOTED,
            attempts=0,
            error=None,
            next_attempt_at=None,
            text="\n\n".join(
                " ".join(rng.choices(WORDS, k=200)) for _ in range(rng.randint(4, 20))
            ),
        )  # fmt: skip
        for n in range(count)
    ]


def topics_of(items: list[Item]) -> list[Topic]:
    topics = [Topic(f"Section {s}") for s in range(10)]
    for item in items:
        entry = Entry(item.title or "", item.url, "A note. Of two sentences.", None, ("One", "Two"))
        topics[item.id % 10].entries.append(entry)
    return topics


def markdown_of(label: str, topics: list[Topic]) -> str:
    parts = [f"# Digest for {label}\n\n## The week\n\nA week.\n"]
    for topic in topics:
        lines = [f"- **[{e.title}]({e.url})**\n\n  {e.summary}\n" for e in topic.entries]
        parts.append(f"## {topic.name}\n\n" + "\n".join(lines))
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--weeks", type=int, default=52)
    args = parser.parse_args()
    rng = random.Random(34)

    items = week_items(1, args.items, rng)
    book = Book(
        "2026-W01", "1–7 January 2026", "A week.", topics_of(items), items, "2026-01-08T00:00:00Z"
    )
    started = time.perf_counter()
    data = epub_bytes(book)
    print(
        f"EPUB, {args.items} items: {time.perf_counter() - started:.2f} s, {len(data) / 1e6:.1f} MB"
    )

    with tempfile.TemporaryDirectory() as folder:
        digests, out = Path(folder) / "digests", Path(folder) / "site"
        digests.mkdir()
        for week in range(1, args.weeks + 1):
            label = f"2026-W{week:02d}"
            topics = topics_of(week_items(week, 30, rng))
            (digests / f"{label}.md").write_text(markdown_of(label, topics))

        def links(label: str) -> list[str]:
            week = int(label[-2:])
            return [f"https://site{n % 17}.example/{week}/{n}" for n in range(30)]

        for what in ("whole", "unchanged", "one week changed"):
            if what == "one week changed":
                changed = digests / "2026-W10.md"
                changed.write_text(changed.read_text() + "\n## Late\n\n- **A late item**\n")
            started = time.perf_counter()
            build = build_site(out, digests, ZONE, links)
            took = time.perf_counter() - started
            print(
                f"site, {args.weeks} weeks of 30 items, {what}: {took:.2f} s,"
                f" {len(build.written)} pages written, search: {build.problem or 'indexed'}"
            )
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        print(f"site size: {size / 1e6:.1f} MB")

    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import apprise"], check=True)
    print(f"a fresh process importing apprise: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
