"""What an extraction worker process runs, kept lean on purpose.

The fetch stage's workers are forked from a fork server that imports this module once;
whatever it imports, every worker carries. So it imports the extractors and the models,
never the fetch stage itself (httpx, the store, the event loop: a second of start-up and
25 MB in each worker).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import cache
from pathlib import Path

from digest.extract import extract
from digest.models import Extracted

# After a page this large, the memory freed from its parse tree goes back to the system:
# glibc keeps it otherwise, and each worker would stay at its largest page (~10 MB more).
TRIM_AFTER_BYTES = 200_000


def extract_file(path: str, url: str, content_type: str | None) -> Extracted:
    """Extract the body the parent streamed to `path`."""
    body = Path(path).read_bytes()
    large = len(body) > TRIM_AFTER_BYTES
    try:
        return extract(body, url=url, content_type=content_type)
    finally:
        del body
        if large and (trim := _malloc_trim()) is not None:
            trim(0)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None where the C library has none (macOS, musl)."""
    return getattr(ctypes.CDLL(None), "malloc_trim", None)
