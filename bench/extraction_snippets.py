"""Extraction on a second set of pages, nobody here tuned on: trafilatura's evaluation pages.

Usage: python bench/extraction_snippets.py TESTS_DIR

TESTS_DIR is the `tests` folder of trafilatura's repository (public, Apache-2.0): it holds
`evaldata.json` (page URL -> file, snippets the main text must hold, snippets it must
not) and `eval/<file>` (the saved pages), about 880 pages of many sites and languages,
most of them German. Their metric is trafilatura's own (tests/evaluate.py): a snippet
the text must hold is a true positive when found and a false negative when not; one it
must not hold is a false positive when found. Prints precision, recall and F1 for
`digest.extract.extract` and for trafilatura (main text) in precision and balanced mode,
each fast (our first reading) and full (with its own readability/justext fallbacks),
with the mean CPU milliseconds per page.

trafilatura itself was tuned on these pages; our choices on top of it were not, which
is what this checks: whether what we add to trafilatura carries over to pages of other
sites and languages than the article benchmark's.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trafilatura

from digest.errors import ExtractError
from digest.extract import extract

Extractor = Callable[[bytes, str], str]
EXTRACTORS: Counter[str] = Counter()


def ours(html: bytes, url: str) -> str:
    try:
        extracted = extract(html, url=url, content_type="text/html")
    except ExtractError:
        return ""
    EXTRACTORS[extracted.extractor] += 1
    return extracted.text


def trafilatura_with(favor_precision: bool, fast: bool) -> Extractor:
    def run(html: bytes, url: str) -> str:
        document = trafilatura.bare_extraction(
            html, url=url, fast=fast, favor_precision=favor_precision, include_comments=False
        )
        text = getattr(document, "text", None)
        return text if isinstance(text, str) else ""

    return run


def measure(name: str, run: Extractor, pages: list[tuple[bytes, dict[str, Any]]]) -> None:
    found = missed = wrong = 0
    seconds = 0.0
    for html, item in pages:
        started = time.process_time()
        text = " ".join(run(html, item["url"]).split())
        seconds += time.process_time() - started
        for snippet in item.get("with", []):
            if " ".join(snippet.split()) in text:
                found += 1
            else:
                missed += 1
        wrong += sum(" ".join(snippet.split()) in text for snippet in item.get("without", []))
    precision, recall = found / (found + wrong), found / (found + missed)
    f1 = 2 * precision * recall / (precision + recall)
    print(
        f"{name:36} precision={precision:.4f} recall={recall:.4f} f1={f1:.4f}"
        f"  (CPU {1000 * seconds / len(pages):.1f} ms/page mean)"
    )


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    tests = Path(argv[1])
    data = json.loads((tests / "evaldata.json").read_text())
    pages = [
        ((tests / "eval" / item["file"]).read_bytes(), {**item, "url": url})
        for url, item in data.items()
        if (tests / "eval" / item["file"]).is_file()
    ]
    print(f"pages={len(pages)}")
    measure("digest extract", ours, pages)
    print(f"  extractors: {dict(EXTRACTORS)}")
    for mode, favor_precision in (("precision", True), ("balanced", False)):
        for speed, fast in (("fast", True), ("full", False)):
            measure(f"trafilatura {mode}, {speed}", trafilatura_with(favor_precision, fast), pages)


if __name__ == "__main__":
    main(sys.argv)
