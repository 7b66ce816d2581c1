"""Counting the weeks a backfill (`digest now --since/--all`) writes, in a big store.

    python bench/backfill_weeks.py [--items 100000]

Fills a fresh store (in a temporary folder) with ITEMS saved links, one every 10 minutes
up to now, then times `pipeline.weeks_with_items` (CPU), which reads the save times alone.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from digest.config import parse_config
from digest.models import SavedItem
from digest.pipeline import weeks_with_items
from digest.store import open_store


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = parse_config('[digest]\ndata_dir = "data"\n', Path(tmp) / "digest.toml")
        config.db_path.parent.mkdir(parents=True)
        now = datetime.now(UTC)
        with open_store(config.db_path) as store:
            source = store.ensure_source("inbox", "file", path="/inbox", now=now)
            saves = [
                SavedItem(f"https://example.org/{n}", saved_at=now - timedelta(minutes=10 * n))
                for n in range(args.items)
            ]
            store.save_items(source, saves, now)
        started = time.process_time()
        weeks = weeks_with_items(config, None, "9999-W01")
        spent = time.process_time() - started
    print(f"{args.items:,} items, {len(weeks)} weeks counted in {spent:.2f} s CPU")


if __name__ == "__main__":
    main()
