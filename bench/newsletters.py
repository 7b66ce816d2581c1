"""A mailbox's cost: CPU seconds per letter read from a Maildir, and the second collect's.

    python bench/newsletters.py [--letters 400]

Writes a Maildir of LETTERS letters in the shapes tests/letters.py makes (a plain letter,
a roundup of five stories behind click trackers, a sponsor-only letter, a letter in
ISO-8859-1; each with its own Message-ID), then collects it into a fresh store twice
through the same code as `digest collect` (collect_mail_source): the first collect reads
and saves every letter, the second finds each one read already. CPU time is this
process's: the figure holds whatever the machine's load.
"""

from __future__ import annotations

import argparse
import mailbox
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from digest.collect.mail.stage import collect_mail_source  # noqa: E402
from digest.config import SourceConfig  # noqa: E402
from digest.store import open_store  # noqa: E402
from letters import mailbox_letters  # noqa: E402


def letters(count: int) -> list[bytes]:
    made: list[bytes] = []
    n = 0
    while len(made) < count:
        urls = [f"https://site{n}.example/story/{k}" for k in range(5)]
        for raw in mailbox_letters(urls):
            made.append(raw.replace(b"Message-ID: <", f"Message-ID: <{n}-".encode(), 1))
        n += 1
    return made[:count]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--letters", type=int, default=400)
    count = parser.parse_args().letters
    with tempfile.TemporaryDirectory() as folder:
        box = mailbox.Maildir(Path(folder) / "Mail", create=True)
        for raw in letters(count):
            box.add(raw)
        source = SourceConfig(name="letters", kind="maildir", path=Path(folder) / "Mail")
        now = datetime(2026, 11, 20, tzinfo=UTC)
        with open_store(Path(folder) / "digest.db") as store:
            source_id = store.ensure_source("letters", "maildir", path=str(source.path))
            for label in ("first collect", "second collect"):
                start = time.process_time()
                report = collect_mail_source(store, source, source_id, now)
                spent = time.process_time() - start
                print(
                    f"{label}: {count} letters, {report.done} new items,"
                    f" {spent:.2f} s CPU, {1000 * spent / count:.2f} ms a letter"
                )


if __name__ == "__main__":
    main()
