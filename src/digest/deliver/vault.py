"""One markdown note per item, for Obsidian-style vaults (`[output] notes_dir`, off by default):
a channel of the outbox, written once per content of the week's notes (notes_hash).

Each note has YAML front matter (title, url, saved, period, tags) and links back
to its weekly digest as `[[2026-W47]]`. A file is named `<saved date>-<slug>-<id>.md`;
it is written atomically and only when its content changed, so reruns leave the
folder as it was.

The folder is the user's: only files this writer made may be replaced or removed.
Each one it writes is recorded in `.digest-notes.json` in the folder (item id -> file
name and SHA-256 of what was written). An older file of the same item (its title
changed) is removed only when it is recorded and unchanged since; a file at a note's
name that is not ours, or that the user edited, is left as it is and reported.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.atomic import write_atomic
from digest.compose.entries import topic_of
from digest.compose.markdown import md_line, md_url
from digest.models import Item, Period
from digest.urls import for_display

_NOT_SLUG = re.compile(r"[^a-z0-9]+")


MANIFEST = ".digest-notes.json"


@dataclass
class VaultReport:
    written: list[Path] = field(default_factory=list)  # created or changed
    left: list[Path] = field(default_factory=list)  # not ours, or edited by hand: untouched


def write_item_notes(
    folder: Path, period: Period, items: Iterable[Item], zone: ZoneInfo
) -> VaultReport:
    """Write the notes of `items` into `folder`, replacing only files recorded as ours."""
    report = VaultReport()
    manifest = _read_manifest(folder)
    for item in items:
        path = folder / note_name(item, zone)
        text = note_text(item, period, zone)
        recorded = manifest.get(str(item.id))
        if recorded == {"name": path.name, "sha256": _digest(text)} and path.exists():
            continue  # what we would write is what we wrote: keep any edits made since
        if recorded is not None and recorded["name"] != path.name:
            _remove_if_ours(folder / recorded["name"], recorded["sha256"])
        if path.exists() and not _is_ours(path, recorded, text):
            report.left.append(path)
            continue
        if not path.exists() or _read(path) != text:
            write_atomic(path, text)
            report.written.append(path)
        manifest[str(item.id)] = {"name": path.name, "sha256": _digest(text)}
    if report.written or not (folder / MANIFEST).exists():
        write_atomic(folder / MANIFEST, json.dumps(manifest, indent=0, sort_keys=True) + "\n")
    return report


def notes_hash(period: Period, items: Iterable[Item], zone: ZoneInfo) -> str:
    """What the outbox keys the notes of a week by: their names and texts."""
    return _digest("".join(f"{note_name(i, zone)}\0{note_text(i, period, zone)}\0" for i in items))


def _read_manifest(folder: Path) -> dict[str, dict[str, str]]:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: no file counts as ours, so none is replaced
    if not isinstance(data, dict):
        return {}
    return {
        key: value
        for key, value in data.items()
        if isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("sha256"), str)
        and "/" not in value["name"]
    }


def _is_ours(path: Path, recorded: dict[str, str] | None, text: str) -> bool:
    """The file at `path` is the one we wrote (unchanged since), or already holds `text`."""
    content = _read(path)
    if content == text:
        return True
    return (
        recorded is not None
        and recorded["name"] == path.name
        and (content is not None and _digest(content) == recorded["sha256"])
    )


def _remove_if_ours(path: Path, sha256: str) -> None:
    content = _read(path)
    if content is not None and _digest(content) == sha256:
        path.unlink()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def note_name(item: Item, zone: ZoneInfo) -> str:
    saved = item.saved_at.astimezone(zone).date().isoformat()
    return f"{saved}-{_slug(item.display_title) or 'item'}-{item.id}.md"


def note_text(item: Item, period: Period, zone: ZoneInfo) -> str:
    """Front matter (JSON strings are valid YAML scalars), the note, a link to the digest."""
    tags = list(dict.fromkeys([_tag(topic_of(item)), *(_tag(t) for t in _note_tags(item))]))
    title = " ".join(item.display_title.split())
    front = {
        "title": title,
        "url": item.url and for_display(item.url),  # a vault is synced and shared: no secrets
        "saved": item.saved_at.astimezone(zone).isoformat(),
        "period": period.label,
        "tags": [tag for tag in tags if tag],
    }
    lines = [
        "---",
        *(f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in front.items()),
    ]
    lines += ["---", "", f"# {md_line(title or 'Untitled')}", ""]
    if item.url:
        lines += [f"<{md_url(for_display(item.url))}>", ""]
    if item.note:
        lines += [md_line(item.note.summary), ""]
        lines += [f"- {md_line(point)}" for point in item.note.key_points]
        lines += [""] if item.note.key_points else []
    lines.append(f"From the weekly digest [[{period.label}]].")
    return "\n".join(lines) + "\n"


def _note_tags(item: Item) -> tuple[str, ...]:
    return item.note.tags if item.note else ()


def _tag(text: str) -> str:
    """An Obsidian tag: no spaces or '#'; letters, digits, '-', '_' and '/'."""
    return re.sub(r"[^\w/-]+", "-", text.strip().lower()).strip("-")


def _slug(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _NOT_SLUG.sub("-", ascii_text.lower()).strip("-")[:60].rstrip("-")
