"""Extraction quality on the article benchmark: digest's extractor vs trafilatura defaults.

Usage: python bench/extraction_quality.py DATA_DIR [--folds K] [--repeats R] [--variants]

The headline figure is a site-grouped cross-validation (cross_validation.py beside this
file), K folds (default 5) repeated R times (default 5) with sites shuffled anew: every
setting and boilerplate rule of `digest.extract.html.ChoiceSettings` is chosen on the
training folds and scored on the held one; no site's pages are on both sides. It is
printed beside the development figure (the shipped settings on all pages).

DATA_DIR holds html/<id>.html.gz, ground-truth.json and score.py (the benchmark's
own metric, loaded from there, never copied). Prints precision, recall and F1 for
`digest.extract.extract` and for trafilatura's defaults (its main text, and
`trafilatura.extract()`, whose output also carries comments), on all pages (the plain
development-set figure, which for ours is tuned on them) and as the mean over the same
site folds (comparable with the cross-validated figure), with the mean CPU milliseconds
per page. For ours it also
counts the pages by extractor and by quality mark (a dev page marked is a false alarm).
`--variants` also scores the settings and fallback orders tried when choosing ours.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import lxml.html
import readability
import trafilatura
from cross_validation import cross_validate

from digest.errors import ExtractError
from digest.extract import extract

Extractor = Callable[[bytes, str], str]

VARIANTS: dict[str, dict[str, Any]] = {
    "defaults, comments kept": {"include_comments": True},
    "favor_precision": {"favor_precision": True},
    "favor_precision, comments kept": {"favor_precision": True, "include_comments": True},
    "favor_recall": {"favor_recall": True},
    "favor_precision, no tables": {"favor_precision": True, "include_tables": False},
    "favor_precision, deduplicate": {"favor_precision": True, "deduplicate": True},
    "favor_precision, fast": {"favor_precision": True, "fast": True},
    "defaults, fast": {"fast": True},
}


def load_score(data_dir: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_score", data_dir / "score.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no score.py in {data_dir}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FOLDS: list[
    list[str]
] = []  # the cross-validation's first, so every tool is scored on the same folds
EXTRACTORS: Counter[str] = Counter()
QUALITIES: Counter[str] = Counter()


def ours(html: bytes, url: str) -> str:
    try:
        extracted = extract(html, url=url, content_type="text/html")
    except ExtractError:
        return ""
    EXTRACTORS[extracted.extractor] += 1
    QUALITIES[extracted.quality or "article"] += 1
    return extracted.text


def trafilatura_with(**options: Any) -> Extractor:
    """bare_extraction's main text; comments are left out of the body unless asked for."""
    settings = {"include_comments": False, **options}

    def run(html: bytes, url: str) -> str:
        document = trafilatura.bare_extraction(html, url=url, **settings)
        text = getattr(document, "text", None)
        return text if isinstance(text, str) else ""

    return run


def trafilatura_extract_defaults(html: bytes, url: str) -> str:
    return trafilatura.extract(html, url=url) or ""


def baseline_only(html: bytes, url: str) -> str:
    return trafilatura.baseline(html)[1]


def longer_of_precise_and_baseline(html: bytes, url: str) -> str:
    """A fallback order that trusts the baseline whenever it finds more text."""
    precise = trafilatura_with(favor_precision=True)(html, url)
    return max(precise, baseline_only(html, url), key=len)


def measure(
    name: str, run: Extractor, pages: dict[str, bytes], truth: dict[str, Any], score: ModuleType
) -> None:
    predicted, times = {}, []
    for page_id, html in pages.items():
        started = time.process_time()
        predicted[page_id] = run(html, truth[page_id].get("url", ""))
        times.append(time.process_time() - started)
    fold_mean = statistics.mean(
        score.score({i: truth[i] for i in fold}, predicted)[2] for fold in FOLDS
    )
    print(
        f"{name:42} {_f1_line(score, truth, predicted, sorted(pages))}"
        f"  mean over site folds f1={fold_mean:.4f}"
        f"  (CPU {1000 * statistics.mean(times):.1f} ms/page mean)"
    )


def _f1_line(
    score: ModuleType, truth: dict[str, Any], predicted: dict[str, str], ids: list[str]
) -> str:
    precision, recall, f1 = score.score({i: truth[i] for i in ids}, predicted)
    return f"precision={precision:.3f} recall={recall:.3f} f1={f1:.3f}"


def readability_only(html: bytes, url: str) -> str:
    document = readability.Document(html)
    return str(lxml.html.fromstring(document.summary()).text_content())


def _option(argv: list[str], name: str, default: int) -> int:
    return int(argv[argv.index(name) + 1]) if name in argv[:-1] else default


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    data_dir = Path(argv[1])
    score = load_score(data_dir)
    truth = json.loads((data_dir / "ground-truth.json").read_text())
    pages = {
        page_id: gzip.decompress((data_dir / "html" / f"{page_id}.html.gz").read_bytes())
        for page_id in truth
    }
    print(f"pages={len(pages)}")
    folds, repeats = _option(argv, "--folds", 5), _option(argv, "--repeats", 5)
    FOLDS.extend(cross_validate(pages, truth, score, folds, repeats))
    measure("digest extract", ours, pages, truth, score)
    print(f"  extractors: {dict(EXTRACTORS)}  quality marks: {dict(QUALITIES)}")
    measure("trafilatura defaults (main text)", trafilatura_with(), pages, truth, score)
    measure("trafilatura.extract() defaults", trafilatura_extract_defaults, pages, truth, score)
    if "--variants" in argv[2:]:
        for name, options in VARIANTS.items():
            measure(f"trafilatura {name}", trafilatura_with(**options), pages, truth, score)
        measure("trafilatura baseline only", baseline_only, pages, truth, score)
        measure("readability-lxml only", readability_only, pages, truth, score)
        measure(
            "longer of precise and baseline", longer_of_precise_and_baseline, pages, truth, score
        )


if __name__ == "__main__":
    main(sys.argv)
