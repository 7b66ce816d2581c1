"""One file read into a source, as the tests import it: the parts that `digest import` and
a file source's collect are made of (a big file streamed, else loaded whole and saved),
without their bookkeeping (file states, folders sorted, feed lists and highlights)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.collect.bigfiles import big_file, save_big
from digest.collect.filesave import FileReport, file_key, load, save
from digest.collect.filetext import file_size, read_bytes
from digest.collect.formats import Importer
from digest.collect.importers import find_reading
from digest.store import Store


def import_file(
    store: Store,
    path: Path,
    *,
    source_id: int,
    zone: ZoneInfo,
    now: datetime,
    forced_format: str | None = None,
    topic: str | None = None,
) -> FileReport:
    """Import one file into `source_id`; `topic` is given to items the file leaves without one.

    Raises SourceError when the file cannot be read, ImportFormatError when its format is
    not recognised (or `forced_format` is unknown); both name the file.
    """
    recorded = store.file_reading(file_key(path))
    big = big_file(path, file_size(path), forced_format, recorded)
    if big is not None:
        return save_big(store, big, source_id=source_id, zone=zone, now=now, topic=topic)[0]
    loaded = load(path, read_bytes(path), forced_format, recorded)
    return save(store, loaded, source_id=source_id, zone=zone, now=now, topic=topic)


def find_importer(text: str, forced: str | None = None) -> Importer:
    """The importer named by `forced`, else the one most sure of the content."""
    return find_reading(text, forced, None)[0]
