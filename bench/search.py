"""Full-text search on a big store: index build, size, query times, and what it adds to a collect.

    python bench/search.py [--count 100000] [--words 120] [--rounds 5]

Builds, in a temporary folder, a store of COUNT items from the import benchmark's TIL journal
(bench/import.py's generator, imported by the real importer) at the schema before the search
index, gives every item a page text of about WORDS words (drawn from a fixed vocabulary with a
few topic words, seeded), then:

- index build: opening the store applies m022a, which indexes every item; wall and CPU time,
  and the index's size (its FTS5 shadow tables, from dbstat) beside the database's;
- queries, warm (the median of ROUNDS after one unmeasured run, top 20 with snippets): one
  word, a phrase, a prefix, and a word filtered by date, kind and source;
- collect: a journal of 1,000 new links, and an RSS file of 1,000 new entries, each imported
  into copies of the store with the index and without it (stand-ins that index nothing),
  alternately, ROUNDS times each: the share of the collect's CPU time spent on the index.
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.collect.files import import_files
from digest.models import ItemKind
from digest.store import SearchFilter, Store, open_store

sys.path.insert(0, str(Path(__file__).parent))
write_journal = importlib.import_module("import").write_journal  # bench/import.py

ZONE = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 11, 24, tzinfo=UTC)
GOAL_QUERY_MS = 50.0
GOAL_COLLECT_SHARE = 0.10
# Each item gets one of 20 topic words one time in five (each word: about 1% of the items),
# "paged attention" one time in a hundred, and "system" one time in three (the worst case).
TOPIC_WORDS = (
    "kernel", "latency", "compiler", "database", "sourdough", "tokenizer", "allocator",
    "scheduler", "quantization", "sharding", "replication", "consensus", "vectorized",
    "profiling", "caching", "serialization", "encryption", "backpressure", "garbage", "rendering",
)  # fmt: skip
UNDO_M022A = (
    *(f"DROP TRIGGER item_index_{name}" for name in ("insert", "forget", "renew", "delete")),
    "DROP TABLE item_index",
    "DROP TABLE item_index_deferred",
    "DROP VIEW item_search",
    "DELETE FROM _sqlite_migrations WHERE name = 'm022a_search_index'",
)
QUERIES: dict[str, tuple[str, SearchFilter]] = {
    "one word": ("latency", SearchFilter()),
    "phrase": ('"paged attention"', SearchFilter()),
    "prefix": ("compil*", SearchFilter()),
    "common": ("system", SearchFilter()),  # in a third of the items: over the goal, said so
    "filtered": (
        "kernel",
        SearchFilter(start=datetime(2025, 6, 1, tzinfo=UTC), kind=ItemKind.LINK, source="bench"),
    ),
}


def vocabulary(size: int, random_: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(random_.choices(letters, k=random_.randint(3, 10))) for _ in range(size)]


def page_text(words: int, vocab: list[str], random_: random.Random) -> str:
    chosen = random_.choices(vocab, k=words)
    if random_.random() < 0.2:
        chosen[random_.randrange(words)] = random_.choice(TOPIC_WORDS)
    if random_.random() < 0.01:
        chosen[2:4] = ["paged", "attention"]
    if random_.random() < 0.33:
        chosen[1] = "system"
    return " ".join(chosen).capitalize() + "."


def previous_schema_store(path: Path, count: int, words: int) -> None:
    """COUNT journal items with page texts, at the schema before the search index: saved by
    the real importer, then the index taken out again (as m022a had never run)."""
    journal = path.with_suffix(".md")
    write_journal(journal, count)
    store = open_store(path)
    import_files(store, [journal], zone=ZONE, now=NOW)
    random_ = random.Random(22)
    vocab = vocabulary(5000, random_)
    with store.write() as conn:
        for statement in UNDO_M022A:
            conn.execute(statement)
        ids = [row[0] for row in conn.execute("SELECT id FROM items")]
        conn.executemany(
            "UPDATE items SET text = ?, state = 'fetched' WHERE id = ?",
            ((page_text(words, vocab, random_), item_id) for item_id in ids),
        )
    store.close()


def timed(work: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of `work`."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def index_size_mb(store: Store) -> tuple[float, float]:
    (index,) = store.conn.execute(
        "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'item_index%'"
    ).fetchone()
    (total,) = store.conn.execute("SELECT sum(pgsize) FROM dbstat").fetchone()
    return index / 1e6, total / 1e6


def query_ms(store: Store, query: str, narrow: SearchFilter, rounds: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of the top 20 hits with snippets, warm."""
    store.search(query, narrow, 20)
    times = [timed(lambda: store.search(query, narrow, 20)) for _ in range(rounds)]
    wall = statistics.median(wall for wall, _ in times)
    cpu = statistics.median(cpu for _, cpu in times)
    return wall * 1000, cpu * 1000


def matching(store: Store, query: str) -> int:
    (count,) = store.conn.execute(
        "SELECT count(*) FROM item_index WHERE item_index MATCH ?", (query,)
    ).fetchone()
    return int(count)


def collect_cpu(db: Path, journal: Path) -> float:
    """CPU seconds to import `journal` into the store at `db` (`digest import` of it)."""
    store = open_store(db)
    _, cpu = timed(lambda: import_files(store, [journal], zone=ZONE, now=NOW))
    store.close()
    return cpu


def without_index(db: Path) -> None:
    """The index and its document view replaced by empty stand-ins: saving indexes nothing."""
    columns = ("title", "text", "note", "context", "tags", "host")
    nothing = ", ".join(f"NULL AS {column}" for column in ("id", *columns))
    with sqlite3.connect(db) as conn:
        for statement in (
            *UNDO_M022A[:4],
            "DROP TABLE item_index",
            "DROP VIEW item_search",
            f"CREATE TABLE item_index (item_index, {', '.join(columns)})",
            f"CREATE VIEW item_search AS SELECT {nothing} WHERE 0",
        ):
            conn.execute(statement)


def write_feed(path: Path, count: int) -> None:
    """An RSS file of `count` entries with a title, a date and a paragraph each."""
    entries = "".join(
        f"<item><title>Fresh entry {n} on caching</title>"
        f"<link>https://feed.example.org/{n}</link>"
        f"<pubDate>Mon, 16 Nov 2026 09:{n % 60:02d}:00 GMT</pubDate>"
        f"<description>What entry {n} says about caching, in a sentence or two.</description>"
        "</item>"
        for n in range(count)
    )
    path.write_text(
        '<?xml version="1.0"?><rss version="2.0"><channel><title>f</title>'
        f"<link>https://feed.example.org/</link><description>d</description>{entries}"
        "</channel></rss>",
        encoding="utf-8",
    )


def collect_share(db: Path, new: Path, rounds: int) -> tuple[float, float]:
    """Median CPU of a collect of `new` with the index kept current and without."""
    with_index: list[float] = []
    without: list[float] = []
    for _ in range(rounds):
        for triggers, times in ((True, with_index), (False, without)):
            copy = new.with_suffix(".db")
            shutil.copy(db, copy)
            if not triggers:
                without_index(copy)
            times.append(collect_cpu(copy, new))
            copy.unlink()
    return statistics.median(with_index), statistics.median(without)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--words", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average before: {_load()} ({os.cpu_count()} cores)")
    over = False
    with tempfile.TemporaryDirectory(prefix="digest-bench-") as folder:
        root = Path(folder)
        db = root / "digest.db"
        previous_schema_store(db, args.count, args.words)
        holder: list[Store] = []
        wall, cpu = timed(lambda: holder.append(open_store(db)))
        store = holder[0]
        index_mb, total_mb = index_size_mb(store)
        print(
            f"index build (migration m022a, {store.count_items():,} items, {args.words} words"
            f" each): wall {wall:.1f} s, cpu {cpu:.1f} s; index {index_mb:.1f} MB of"
            f" {total_mb:.1f} MB"
        )
        for name, (query, narrow) in QUERIES.items():
            wall_ms, cpu_ms = query_ms(store, query, narrow, args.rounds)
            over |= cpu_ms > GOAL_QUERY_MS and name != "common"
            print(
                f"query {name:<9} {query!r:<20} cpu {cpu_ms:6.1f} ms, wall {wall_ms:6.1f} ms"
                f" (median, warm, top 20 with snippets; {matching(store, query):,} items match)"
            )
        store.close()
        journal, feed = root / "new.md", root / "new.xml"
        write_journal(journal, 1000)
        journal.write_text(journal.read_text().replace("://blog", "://fresh"))  # all new links
        write_feed(feed, 1000)
        for what, new in (("journal", journal), ("RSS file", feed)):
            with_index, without = collect_share(db, new, args.rounds)
            share = (with_index - without) / with_index
            over |= share > GOAL_COLLECT_SHARE
            print(
                f"collect of a {what} of 1,000 new items: cpu {with_index * 1000:.1f} ms with"
                f" the index kept current, {without * 1000:.1f} ms without: {share:.1%}"
            )
    print(f"load average after: {_load()}")
    return 1 if over else 0


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
