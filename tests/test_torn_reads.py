"""A file rewritten while a file source reads it is never half-imported (issue 18).

The source opens its files through the opener it is given: here one that opens the real
file and rewrites it in place halfway through a read, so the bytes read are half the old
content and half the new, as when a writer races the reader.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, cast
from zoneinfo import ZoneInfo

import pytest

from digest.collect import bigfiles, formats
from digest.collect.inbox import collect_file_source
from digest.config import SourceConfig
from digest.models import StageReport
from digest.store import Store, open_store

ZONE = ZoneInfo("UTC")
NOW = datetime(2026, 1, 12, 9, 0, tzinfo=UTC)
A_DAY_NS = 86_400 * 10**9


class RewrittenWhileRead(io.FileIO):
    """A real file, rewritten in place with `new` (same inode, a later mtime) halfway
    through the first read made once `ready()` says so."""

    def __init__(self, path: Path, new: bytes, ready: Callable[[], bool]) -> None:
        super().__init__(path, "rb")
        self.path, self.new, self.ready = path, new, ready

    def read(self, size: int | None = -1, /) -> bytes:
        if not self.new or not self.ready():
            return super().read(size)
        wanted = size if size is not None and size >= 0 else os.fstat(self.fileno()).st_size
        first = super().read(max(1, wanted // 2))
        rewrite(self.path, self.new)
        self.new = b""
        return first + super().read(wanted - len(first))


def rewrite(path: Path, content: bytes) -> None:
    mtime = path.stat().st_mtime_ns
    with path.open("r+b") as file:  # in place: the reader's descriptor sees the new bytes
        file.truncate(0)
        file.write(content)
    os.utime(path, ns=(mtime + A_DAY_NS // 2, mtime + A_DAY_NS // 2))


def rewriting(target: Path, new: bytes, ready: Callable[[], bool]) -> Callable[[Path], BinaryIO]:
    """An opener that rewrites `target` once, while it is read (RewrittenWhileRead)."""
    state = {"done": False}

    def open_file(path: Path) -> BinaryIO:
        if path != target or state["done"]:
            return path.open("rb")
        file = RewrittenWhileRead(path, new, ready)

        def ready_once() -> bool:
            if ready():
                state["done"] = True
                return True
            return False

        file.ready = ready_once
        return cast(BinaryIO, file)

    return open_file


def journal(host: str, count: int) -> bytes:
    lines = ["## 2026-01-05"] + [f"- [Link {n}](https://{host}/{n})" for n in range(count)]
    return ("\n".join(lines) + "\n").encode()


def collect(
    store: Store, path: Path, open_file: Callable[[Path], BinaryIO] | None = None
) -> StageReport:
    source = SourceConfig(name="inbox", kind="file", path=path)
    source_id = store.ensure_source(source.name, "file", path=str(path))
    if open_file is None:
        return collect_file_source(store, source, source_id, ZONE, NOW)
    return collect_file_source(store, source, source_id, ZONE, NOW, open_file=open_file)


def hosts(store: Store) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in store.all_items():
        host = (item.url or "").split("/")[2]
        counts[host] = counts.get(host, 0) + 1
    return counts


def dated(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    a_day_ago = path.stat().st_mtime_ns - A_DAY_NS
    os.utime(path, ns=(a_day_ago, a_day_ago))
    return path


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return open_store(tmp_path / "digest.db")


def test_a_file_rewritten_while_it_is_read_is_not_imported_then_read_again(
    store: Store, tmp_path: Path
) -> None:
    path = dated(tmp_path / "til.md", journal("old.example", 40))
    new = journal("new.example", 60)

    first = collect(store, path, rewriting(path, new, ready=lambda: True))
    assert hosts(store) == {}  # half old, half new: none of it imported
    assert any("changed while it was read" in line for line in first.info)
    assert path.read_bytes() == new  # the rewrite did happen during the read

    second = collect(store, path)
    assert hosts(store) == {"new.example": 60}
    assert second.done == 60


def test_a_big_file_rewritten_while_streamed_keeps_only_the_new_content_after_the_next_collect(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bigfiles, "STREAM_BYTES", 1024)
    monkeypatch.setattr(bigfiles, "READ_BLOCK", 256)
    monkeypatch.setattr(formats, "STREAM_BLOCK", 10)  # each block of items saved on its own
    old = journal("old.example", 200)
    path = dated(tmp_path / "til.md", old)
    collect(store, path)
    dated(path, old + journal("more.example", 100))  # it grew: read on from line 201
    new = old + journal("new.example", 30)  # then it is rewritten: the same start, another end

    def some_saved() -> bool:  # rewritten once the first block of what it grew by is saved
        return "more.example" in hosts(store)

    first = collect(store, path, rewriting(path, new, ready=some_saved))
    assert any("changed while it was read" in line for line in first.failures)
    assert 0 < hosts(store)["more.example"] < 100  # blocks saved before the change was seen
    assert path.read_bytes() == new

    collect(store, path)  # read whole (not on from line 201), replacing the cut reading
    assert hosts(store) == {"old.example": 200, "new.example": 30}
    assert collect(store, path).done == 0
