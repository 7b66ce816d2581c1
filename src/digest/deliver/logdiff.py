"""What changed between two revisions of a week's digest, for the log (pure).

The log holds each week's text once; a later revision appends only what a reader would want
to know changed: items added, notes renewed, items removed or moved to another section.
The items are read back from the digest's markdown (`- **[title](url)**` or `- **title**`
under a `## Section` heading, the indented lines under it its note), so a template of the
reader's own that keeps that shape gets the same log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

CHANGES = "changes"  # the marker word of a revision logged as its changes
NOTE_CHARS = 280  # a renewed note is quoted up to this many characters
_ITEM = re.compile(r"^- \*\*(?:\[(?P<label>.*)\]\((?P<url>[^)\s]+)\)|(?P<title>.+?))\*\*")
_NOT_ITEMS = ("The week",)
# an entry of the log starts so (outbox.log_entry); a digest's own "---" has no marker after it
_ENTRY = re.compile(
    r"\n---\n\n<!-- digest (?P<period>\S+) revision \d+ (?P<changes>changes )?sha256:\w+ -->\n"
)  # the week in brief lists sections, not items


@dataclass(frozen=True)
class Shown:
    """One item as a digest shows it."""

    title: str
    url: str | None
    section: str
    note: str

    @property
    def cited(self) -> str:
        return f"[{self.title}]({self.url})" if self.url else f"*{self.title}*"


def shown_items(markdown: str) -> dict[str, Shown]:
    """The items of a digest by their URL (else their title), in the order shown."""
    items: dict[str, Shown] = {}
    section, current, note = "", None, list[str]()

    def close() -> None:
        if current is not None:
            items.setdefault(current.url or current.title, _with_note(current, note))

    for line in markdown.splitlines():
        if line.startswith(("## ", "---")):
            close()
            current, note = None, []
            section = line.removeprefix("## ").strip() if line.startswith("## ") else ""
        elif (match := _ITEM.match(line)) and section and section not in _NOT_ITEMS:
            close()
            title = match["label"] if match["label"] is not None else match["title"]
            current, note = Shown(title, match["url"], section, ""), []
        elif current is not None and line.strip():
            note.append(line.strip())
    close()
    return items


def _with_note(item: Shown, lines: list[str]) -> Shown:
    return Shown(item.title, item.url, item.section, " ".join(lines))


def changes(before: str, after: str) -> list[str]:
    """The changes from `before` to `after`, a markdown list line each; empty when no item
    was added, renewed, moved or removed."""
    old, new = shown_items(before), shown_items(after)
    lines = []
    for key, item in new.items():
        earlier = old.get(key)
        if earlier is None:
            lines.append(f"- Added to {item.section}: {item.cited}")
        elif earlier.section != item.section:
            lines.append(f"- Moved from {earlier.section} to {item.section}: {item.cited}")
        elif earlier.note != item.note:
            lines.append(f"- Note renewed: {item.cited}: {_quoted(item.note)}")
    lines += [f"- Removed: {item.cited}" for key, item in old.items() if key not in new]
    return lines


def changes_entry(
    period: str, revision: int, digest_hash: str, before: str, after: str, at: datetime
) -> str:
    """A revision's block of the log: its marker line, a dated heading and its changes."""
    marker = f"<!-- digest {period} revision {revision} {CHANGES} sha256:{digest_hash} -->"
    listed = changes(before, after) or ["- Wording only: no item added, renewed or removed."]
    counts = _counts(listed)
    heading = f"### {period}, revision {revision}: {at:%-d %B %Y %H:%M %Z}".rstrip()
    body = "\n".join(listed)
    return f"\n---\n\n{marker}\n\n{heading}{counts}\n\n{body}\n"


def _counts(lines: list[str]) -> str:
    kinds = {"Added": "added", "Note renewed": "renewed", "Moved": "moved", "Removed": "removed"}
    counted = []
    for prefix, word in kinds.items():
        if count := sum(line.startswith(f"- {prefix}") for line in lines):
            counted.append(f"{count} {word}")
    return f" ({', '.join(counted)})" if counted else ""


def _quoted(note: str) -> str:
    if len(note) <= NOTE_CHARS:
        return note
    return note[:NOTE_CHARS].rsplit(" ", 1)[0] + "…"


def last_full_text(log_text: str, period: str) -> str | None:
    """The period's text as last logged whole (a log written before revisions were logged
    as their changes, or by a store that lost its record): None when the period's last
    entry is a list of changes or there is none."""
    entries = list(_ENTRY.finditer(log_text))
    for index in reversed(range(len(entries))):
        entry = entries[index]
        if entry["period"] != period:
            continue
        if entry["changes"]:
            return None
        end = entries[index + 1].start() if index + 1 < len(entries) else len(log_text)
        return log_text[entry.end() : end].strip("\n") + "\n"
    return None
