"""What an extraction worker process runs, kept lean on purpose.

The fetch stage's workers are forked from a fork server that imports this module once;
whatever it imports, every worker carries. So it imports the extractors and the models,
never the fetch stage itself (httpx, the store: a second of start-up and 25 MB in each
worker). Besides the text, a worker computes what compose reads of the item once it is the
item's text (`page_features`): the parent then only fetches and stores, and is never the
one busy core while the workers wait for pages.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path

from digest.extract import extract
from digest.features import page_features
from digest.models import Extracted, Item

# After a page this large, the memory freed from its parse tree goes back to the system:
# glibc keeps it otherwise, and each worker would stay at its largest page (~10 MB more).
TRIM_AFTER_BYTES = 200_000


def extract_file(path: str, url: str, content_type: str | None, item: Item | None) -> Extracted:
    """Extract the body the parent streamed to `path`, with `item`'s features when given."""
    body = Path(path).read_bytes()
    large = len(body) > TRIM_AFTER_BYTES
    try:
        extracted = extract(body, url=url, content_type=content_type)
        return extracted if item is None else with_features(extracted, item)
    finally:
        del body
        if large and (trim := _malloc_trim()) is not None:
            trim(0)


def with_features(extracted: Extracted, item: Item) -> Extracted:
    return replace(extracted, features=page_features(item, extracted))


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None where the C library has none (macOS, musl)."""
    return getattr(ctypes.CDLL(None), "malloc_trim", None)
