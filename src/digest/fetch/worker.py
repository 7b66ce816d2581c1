"""What an extraction worker process runs, kept lean on purpose.

The fetch stage's workers are forked from a fork server that imports this module once;
whatever it imports, every worker carries. So it imports the extractors and the models,
never the fetch stage itself (httpx, the store, the event loop: a second of start-up and
25 MB in each worker).
"""

from __future__ import annotations

from pathlib import Path

from digest.extract import extract
from digest.models import Extracted


def extract_file(path: str, url: str, content_type: str | None) -> Extracted:
    """Extract the body the parent streamed to `path`."""
    return extract(Path(path).read_bytes(), url=url, content_type=content_type)
