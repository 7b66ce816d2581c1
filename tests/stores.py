"""New stores for tests, without running every migration again for each one."""

from __future__ import annotations

import shutil
import tempfile
from functools import cache
from pathlib import Path

from digest.store import Store, open_store


@cache
def _migrated() -> tuple[tempfile.TemporaryDirectory[str], Path]:
    folder = tempfile.TemporaryDirectory(prefix="digest-test-store-")
    path = Path(folder.name) / "digest.db"
    open_store(path).close()
    return folder, path  # the folder goes when the test process ends


def store_at(path: Path) -> Store:
    """open_store(path); a new database there is a copy of one this test process migrated
    once (a blank file takes every migration: test_store.py shows that on its own files)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(_migrated()[1], path)
    return open_store(path)
