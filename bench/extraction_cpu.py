"""CPU per page of `digest.extract.extract` over the article benchmark's pages.

Usage: python bench/extraction_cpu.py DATA_DIR [--rounds N]

One warm-up round, then N rounds (default 2), each printed as mean CPU milliseconds per
page (`time.process_time`, this process only). To compare two versions side by side,
run it alternately against each, e.g. the main branch from a `git worktree`:

    PYTHONPATH=/path/to/main-worktree/src .venv/bin/python bench/extraction_cpu.py DATA_DIR
    .venv/bin/python bench/extraction_cpu.py DATA_DIR

and compare the lowest rounds: other work on the machine only ever adds to a round.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

import digest.extract
from digest.extract import extract


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    data_dir = Path(argv[1])
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv[:-1] else 2
    truth = json.loads((data_dir / "ground-truth.json").read_text())
    pages = [
        (
            truth[page_id]["url"],
            gzip.decompress((data_dir / "html" / f"{page_id}.html.gz").read_bytes()),
        )
        for page_id in sorted(truth)
    ]
    for url, html in pages:  # warm-up: imports, regex and XPath compilation
        extract(html, url=url, content_type="text/html")
    figures = []
    for _ in range(rounds):
        started = time.process_time()
        for url, html in pages:
            extract(html, url=url, content_type="text/html")
        figures.append(1000 * (time.process_time() - started) / len(pages))
    print(
        f"{digest.extract.__file__}: CPU ms/page per round: "
        + " ".join(f"{figure:.1f}" for figure in figures)
    )


if __name__ == "__main__":
    main(sys.argv)
