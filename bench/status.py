"""`digest status` and `digest doctor --local` over a large store: wall time of the real CLI.

    python bench/status.py [--items 20000] [--failed 5000] [--runs 5]

Builds a store in a temporary folder (items from one source, a share of them failed
with long errors), then times each command as a subprocess, `--runs` times, and prints
the median. The table is drawn at 80 columns (COLUMNS=80).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from digest.lifecycle import FetchFailed, ItemState
from digest.models import SavedItem
from digest.store import open_store

NOW = datetime(2026, 1, 7, 12, tzinfo=UTC)


def build_store(db: Path, items: int, failed: int) -> None:
    store = open_store(db)
    try:
        source = store.ensure_source("reading list", "file", path="/x/list.txt", now=NOW)
        saved = [SavedItem(f"https://example.org/{n}/{'segment/' * 8}") for n in range(items)]
        store.save_items(source, saved, NOW)
        for item in store.all_items()[:failed]:
            error = f"fetch failed: {item.url!r}: HTTP 503 {'Service Unavailable ' * 4}"
            store.apply_fetch(
                FetchFailed(item.id, error, ItemState.FAILED, NOW + timedelta(hours=1))
            )
    finally:
        store.close()


def median_seconds(args: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--failed", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    digest = str(Path(sys.executable).with_name("digest"))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        config = root / "digest.toml"
        config.write_text('[digest]\ndata_dir = "data"\n')
        build_store(root / "data" / "digest.db", options.items, options.failed)
        env = os.environ | {"COLUMNS": "80", "HOME": folder}
        print(f"{options.items} items, {options.failed} failed; median of {options.runs} runs")
        for label, extra in (
            ("status", ["status"]),
            ("status --all", ["status", "--all"]),
            ("status --json", ["status", "--json"]),
            ("status --json --all", ["status", "--json", "--all"]),
            ("doctor --local", ["doctor", "--local"]),
        ):
            seconds = median_seconds([digest, *extra, "--config", str(config)], options.runs, env)
            print(f"{label:22} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
