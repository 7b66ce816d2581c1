"""How long a big import takes, and how much memory it needs.

    python bench/import.py [--count 100000]
    python bench/import.py --journal-mb 200     # one journal of that size only (streamed)
    python bench/import.py --urls-mb 200        # one plain URL list of that size only
    python bench/import.py --bookmarks-mb 200   # one bookmark HTML export of that size only
    python bench/import.py --pinboard-mb 200    # one Pinboard JSON export of that size only
    python bench/import.py --karakeep-mb 200    # one Karakeep JSON export of that size only
    python bench/import.py --sparse-gb 1        # sparse files of that size (truncate -s)

Writes a Netscape bookmark HTML file with COUNT bookmarks in nested folders and a
TIL journal with COUNT link lines under day headings, in a temporary folder. Each
is imported into a fresh store by `digest import` (`digest.collect.files.import_files`) in its own
child process, so the peak resident set size (ru_maxrss) is that file's alone.
Prints wall time, CPU time (process start included) and peak memory per file, and the
machine's load averages before and after; the goal is under 10 s and 200 MB each.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

GOAL_SECONDS = 10.0
GOAL_MB = 200.0
JOURNAL_BYTES_PER_LINK = 65  # what write_journal averages, headings included
URLS_BYTES_PER_LINE = 48  # what write_urls averages, comments included
BOOKMARK_BYTES = 158  # what write_bookmarks averages a bookmark, folders included
PINBOARD_BYTES = 250  # what write_pinboard averages a record
KARAKEEP_BYTES = 200  # what write_karakeep averages a record
TOPICS = ("Rust", "GPU kernels", "Databases", "Distributed systems", "Compilers", "ML infra")


def write_bookmarks(path: Path, count: int) -> None:
    """A Chrome-like export: folders of 500 bookmarks, some with descriptions and tags."""
    start = 1_600_000_000
    with path.open("w", encoding="utf-8") as out:
        out.write("<!DOCTYPE NETSCAPE-Bookmark-file-1>\n")
        out.write('<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">\n')
        out.write("<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n<DL><p>\n")
        for n in range(count):
            if n % 500 == 0:
                if n:
                    out.write("    </DL><p>\n")
                folder = f"{TOPICS[n // 500 % len(TOPICS)]} {n // 500}"
                out.write(f'    <DT><H3 ADD_DATE="{start}">{folder}</H3>\n    <DL><p>\n')
            added = start + n * 97
            out.write(
                f'        <DT><A HREF="https://site{n % 997}.example.com/posts/{n}?utm_source=rss"'
                f' ADD_DATE="{added}" TAGS="tag{n % 13},bench">Post number {n} &amp; notes</A>\n'
            )
            if n % 10 == 0:
                out.write(f"        <DD>Why bookmark {n} was worth keeping.\n")
        out.write("    </DL><p>\n</DL><p>\n")


def write_journal(path: Path, count: int) -> None:
    """A TIL journal: a day heading every 20 links, a topic every 5, mixed link forms."""
    day = date(2026, 1, 1)
    with path.open("w", encoding="utf-8") as out:
        out.write('---\ntitle: "Today I Learned"\n---\n\n')
        for n in range(count):
            if n % 20 == 0:
                out.write(f"\n## {(day - timedelta(days=n // 20)).isoformat()}\n")
            if n % 5 == 0:
                out.write(f"### {TOPICS[n // 5 % len(TOPICS)]}\n")
            url = f"https://blog{n % 501}.example.org/{n}/article"
            form = n % 4
            if form == 0:
                out.write(f"- {url}\n")
            elif form == 1:
                out.write(f"{url}\n")
            else:
                out.write(f"- [Article {n}: a title with words]({url})\n")


def write_urls(path: Path, count: int) -> None:
    """A plain URL list: one URL a line, some with a title after it, a `#` comment now and then."""
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            if n % 100 == 0:
                out.write(f"# saved batch {n // 100}\n")
            url = f"https://blog{n % 501}.example.org/{n}/article"
            out.write(f"{url} Article {n}\n" if n % 3 == 0 else f"{url}\n")


def write_pinboard(path: Path, count: int) -> None:
    """A Pinboard JSON export on one line, as Pinboard writes it: an array of records."""
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        for n in range(count):
            record = {
                "href": f"https://site{n % 997}.example.com/posts/{n}?utm_source=rss",
                "description": f"Post number {n} & notes",
                "extended": f"Why bookmark {n} was worth keeping." if n % 10 == 0 else "",
                "meta": f"{n:032x}",
                "hash": f"{n * 7:032x}",
                "time": f"2024-{n % 12 + 1:02d}-{n % 28 + 1:02d}T10:00:00Z",
                "shared": "no",
                "toread": "yes" if n % 3 == 0 else "no",
                "tags": f"tag{n % 13} bench",
            }
            out.write(("," if n else "") + json.dumps(record))
        out.write("]")


def write_karakeep(path: Path, count: int) -> None:
    """A Karakeep export: {"bookmarks": [...]}, a record a line, as Karakeep writes it."""
    with path.open("w", encoding="utf-8") as out:
        out.write('{"bookmarks": [\n')
        for n in range(count):
            record = {
                "createdAt": 1714000000 + n,
                "title": f"Bookmark number {n}",
                "tags": [f"tag{n % 13}", "bench"],
                "content": {
                    "type": "link",
                    "url": f"https://site{n % 997}.example.com/posts/{n}",
                    "description": f"Why bookmark {n} was worth keeping." if n % 10 == 0 else None,
                },
                "note": None,
            }
            out.write(("," if n else "") + json.dumps(record) + "\n")
        out.write("]}\n")


def write_sparse(folder: Path, size: int) -> tuple[Path, Path]:
    """Two sparse files of `size` bytes (`truncate -s`): one valid journal line then NULs,
    and 70 KB of journal lines then NULs (read as a journal: one endless line of NULs)."""
    one_line = folder / "sparse.md"
    one_line.write_text("## 2026-01-05\n- [One](https://example.org/one)\n")
    os.truncate(one_line, size)
    text_first = folder / "sparse_after_text.md"
    write_journal(text_first, 1200)
    os.truncate(text_first, size)
    return one_line, text_first


def measure_one(path: Path, db: Path) -> dict[str, float | int | str]:
    """Import `path` into a fresh store at `db`; run in a child process."""
    from digest.collect.files import import_files
    from digest.collect.filesave import FileReport
    from digest.collect.finding import Unimported
    from digest.store import open_store

    started = time.perf_counter()
    store = open_store(db)
    (report,) = import_files(store, [path], zone=ZoneInfo("Europe/Berlin"), now=datetime.now(UTC))
    if isinstance(report, Unimported):  # a binary file: refused, which is what it costs
        shown, rejected, skipped = f"refused ({report.reason})", 0, 0
    else:
        assert isinstance(report, FileReport)
        shown, rejected, skipped = report.format, len(report.rejected), len(report.skipped)
    items = store.count_items()
    store.close()
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)  # ru_maxrss is in KiB on Linux
    return {
        "file": path.name,
        "format": shown,
        "items": items,
        "rejected": rejected,
        "skipped": skipped,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),  # honest on a busy machine
        "peak_mb": round(usage.ru_maxrss / 1024, 1),
    }


def run_child(path: Path, db: Path) -> dict[str, float | int | str]:
    done = subprocess.run(
        [sys.executable, __file__, "--one", str(path), "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float | int | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument(
        "--journal-mb", type=float, help="import only a journal of this many MB (issue 11: 200)"
    )
    parser.add_argument(
        "--urls-mb", type=float, help="import only a plain URL list of this many MB (issue 11)"
    )
    parser.add_argument("--bookmarks-mb", type=float, help="only a bookmark HTML export (issue 18)")
    parser.add_argument("--pinboard-mb", type=float, help="only a Pinboard JSON export (issue 18)")
    parser.add_argument("--karakeep-mb", type=float, help="only a Karakeep JSON export")
    parser.add_argument("--sparse-gb", type=float, help="only sparse files of this size (issue 18)")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one, args.db)))
        return 0
    slow = False
    print(f"load average before: {_load()} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory(prefix="digest-bench-") as folder:
        root = Path(folder)
        if args.journal_mb:
            files: tuple[Path, ...] = (root / "journal.md",)
            write_journal(files[0], int(args.journal_mb * 1e6 / JOURNAL_BYTES_PER_LINK))
        elif args.urls_mb:
            files = (root / "reading.urls",)
            write_urls(files[0], int(args.urls_mb * 1e6 / URLS_BYTES_PER_LINE))
        elif args.bookmarks_mb:
            files = (root / "bookmarks.html",)
            write_bookmarks(files[0], int(args.bookmarks_mb * 1e6 / BOOKMARK_BYTES))
        elif args.pinboard_mb:
            files = (root / "pinboard.json",)
            write_pinboard(files[0], int(args.pinboard_mb * 1e6 / PINBOARD_BYTES))
        elif args.karakeep_mb:
            files = (root / "karakeep.json",)
            write_karakeep(files[0], int(args.karakeep_mb * 1e6 / KARAKEEP_BYTES))
        elif args.sparse_gb:
            files = write_sparse(root, int(args.sparse_gb * 2**30))
        else:
            files = (root / "bookmarks.html", root / "journal.md")
            write_bookmarks(files[0], args.count)
            write_journal(files[1], args.count)
        for path in files:
            row = run_child(path, root / f"{path.stem}.db")
            mb = path.stat().st_size / 1e6
            over = float(row["seconds"]) > GOAL_SECONDS or float(row["peak_mb"]) > GOAL_MB
            slow |= over
            print(
                f"{row['file']:<22} {mb:7.1f} MB  {row['format']:<10} items={row['items']:<7}"
                f" rejected={row['rejected']} skipped={row['skipped']}"
                f"  wall {row['seconds']:6.2f} s  cpu {row['cpu_seconds']:6.2f} s"
                f"  peak {row['peak_mb']:6.1f} MB"
                f"  {'OVER GOAL' if over else 'ok'}"
            )
    print(f"load average after: {_load()}")
    return 1 if slow else 0


def _load() -> str:
    """The 1, 5 and 15 minute load averages: other work inflates wall times."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
