"""A hostile feed of 50,000 entries: what one `digest collect` takes, keeps and prints.

    python bench/feed_flood.py [--entries 50000]

Serves an RSS feed of ENTRIES entries on 127.0.0.1, runs `digest collect` on it in a child
process (a fresh data folder in a temporary directory) and prints wall time, peak memory
(VmHWM), stderr lines and the items stored. Issue 11's goals: at most
fetch.max_items_per_feed (200) items, under 300 MB, a handful of lines.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from loopback import Response, serving  # noqa: E402

# VmHWM rather than ru_maxrss, which Linux carries from the parent across fork and exec.
CHILD = """
import sys
from digest.cli import main
sys.argv = ["digest", "collect", "--config", sys.argv[1]]
try:
    main()
finally:
    with open("/proc/self/status") as status:
        peak_kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    print(f"peak {peak_kib // 1024} MB", file=sys.stderr)
"""


def feed(entries: int) -> str:
    items = "".join(
        f"<item><title>Entry {n}</title><link>https://many.test/{n}</link>"
        f"<pubDate>Tue, 17 Nov 2026 {n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d} GMT"
        "</pubDate></item>"
        for n in range(entries)
    )
    return (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>{items}</channel></rss>'
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=50_000)
    args = parser.parse_args()
    body = feed(args.entries)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with serving() as server, tempfile.TemporaryDirectory(prefix="digest-flood-") as folder:
        server.routes["/feed"] = Response(200, body, content_type="application/rss+xml")
        config = Path(folder) / "digest.toml"
        config.write_text(
            f'[digest]\ndata_dir = "data"\n[[sources]]\nname = "flood"\nkind = "feed"\n'
            f'url = "{server.url("/feed")}"\n[fetch]\nallow_private_addresses = true\n'
            "timeout_s = 300\n"
        )
        started = time.perf_counter()
        run = subprocess.run(
            [sys.executable, "-c", CHILD, str(config)], capture_output=True, text=True, cwd=folder
        )
        seconds = time.perf_counter() - started
        with sqlite3.connect(Path(folder) / "data" / "digest.db") as db:
            (items,) = db.execute("SELECT count(*) FROM items").fetchone()
    lines = run.stderr.strip().splitlines()
    print(
        f"{args.entries} entries, {len(body) / 1e6:.1f} MB: exit {run.returncode}, wall {seconds:.1f} s,"
        f" {lines[-1]}, {len(lines) - 1} stderr lines, {items} items stored"
    )
    print("\n".join(lines[:-1]))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
