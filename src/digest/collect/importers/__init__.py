"""One module per family of formats; importing a module registers its importers, and this
package, which imports them all, finds the one that reads a text.

To add a format: write a module here with a class implementing
`digest.collect.formats.Importer`, call `register(...)` at its end, and add one import
line below.
"""

from __future__ import annotations

from digest.collect.formats import FEED_LIST_FORMATS, REGISTRY, Importer
from digest.collect.highlights import HIGHLIGHT_FORMATS
from digest.collect.importers import bookmarks as bookmarks
from digest.collect.importers import exports_csv as exports_csv
from digest.collect.importers import exports_json as exports_json
from digest.collect.importers import exports_social as exports_social
from digest.collect.importers import feed_files as feed_files
from digest.collect.importers import journal as journal
from digest.collect.importers import lists as lists
from digest.collect.importers import posts as posts
from digest.errors import ImportFormatError
from digest.models import FileReading


def supported_formats() -> list[str]:
    return sorted([*REGISTRY, *FEED_LIST_FORMATS, *HIGHLIGHT_FORMATS])


HEAD_CHARS = 65536  # what a format is recognised from
CLEAR_SCORE = 50  # a reading this sure, and CLEAR_MARGIN above the next, is clear
CLEAR_MARGIN = 25


def find_reading(
    text: str, forced: str | None, recorded: FileReading | None
) -> tuple[Importer, FileReading]:
    """How to read `text`: the format `forced` names; else the one recorded for the file,
    unless that was a guess and the content now clearly says otherwise; else the format
    most sure of the content. ImportFormatError when none is."""
    if forced is not None:
        if forced not in REGISTRY:
            raise ImportFormatError(
                f"unknown format {forced!r}; supported: {', '.join(supported_formats())}"
            )
        return REGISTRY[forced], FileReading(forced, True, "forced")
    head = text[:HEAD_CHARS]
    ranked = sorted(((imp.sniff(head), imp) for imp in REGISTRY.values()), key=lambda p: -p[0])
    (score, best), (second, _) = ranked[0], ranked[1]
    clear = score >= CLEAR_SCORE and score - second >= CLEAR_MARGIN
    if recorded is not None and (recorded.clear or not clear) and _still_reads(recorded, head):
        return REGISTRY[recorded.format], recorded
    if score <= 0:
        raise ImportFormatError(
            f"format not recognised; supported: {', '.join(supported_formats())} (force one with --format)"
        )
    return best, FileReading(best.name, clear, _why(best, head))


def _still_reads(recorded: FileReading, head: str) -> bool:
    """The recorded format is known and can still read the content."""
    importer = REGISTRY.get(recorded.format)
    return importer is not None and importer.sniff(head) > 0


def _why(importer: Importer, head: str) -> str:
    """The content's signals of the format (an importer may name them), else its description."""
    signals = getattr(importer, "signals", None)
    found: list[str] = signals(head) if signals is not None else []
    return ", ".join(found) or importer.description
