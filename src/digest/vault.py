"""One markdown note per item, for Obsidian-style vaults (`[output] notes_dir`, off by default).

Each note has YAML front matter (title, url, saved, period, tags) and links back
to its weekly digest as `[[2026-W47]]`. A file is named `<saved date>-<slug>-<id>.md`;
it is written atomically and only when its content changed, and an older file of
the same item (its title changed) is removed, so reruns leave the folder as it was.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.atomic import write_atomic
from digest.compose import md_line, md_url, topic_of
from digest.models import Item, Period

_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def write_item_notes(
    folder: Path, period: Period, items: Iterable[Item], zone: ZoneInfo
) -> list[Path]:
    """Write the notes of `items` into `folder`; the files that were created or changed."""
    written = []
    for item in items:
        path = folder / note_name(item, zone)
        text = note_text(item, period, zone)
        for stale in folder.glob(f"*-{item.id}.md"):
            if stale != path:
                stale.unlink()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            write_atomic(path, text)
            written.append(path)
    return written


def note_name(item: Item, zone: ZoneInfo) -> str:
    saved = item.saved_at.astimezone(zone).date().isoformat()
    return f"{saved}-{_slug(item.display_title) or 'item'}-{item.id}.md"


def note_text(item: Item, period: Period, zone: ZoneInfo) -> str:
    """Front matter (JSON strings are valid YAML scalars), the note, a link to the digest."""
    tags = list(dict.fromkeys([_tag(topic_of(item)), *(_tag(t) for t in _note_tags(item))]))
    title = " ".join(item.display_title.split())
    front = {
        "title": title,
        "url": item.url,
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
        lines += [f"<{md_url(item.url)}>", ""]
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
