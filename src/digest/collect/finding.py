"""What a path given to digest holds: `root` itself, or the regular files below a folder,
and what was found and left alone, and why (symbolic links, FIFOs, folders that cannot be
read, documents beside the saves that are no saves: a README, a licence)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from digest.collect.filetext import read_head, unreadable
from digest.collect.highlights import highlights_format
from digest.collect.importers.posts import signals_of_posts
from digest.errors import SourceError


@dataclass(frozen=True)
class Unimported:
    """A file `digest import` did not import, and why; `failed` unless it was just empty."""

    path: Path
    reason: str
    failed: bool = True

    def describe(self) -> list[str]:
        return [f"{self.path}: {self.reason}"]


@dataclass
class Found:
    """The files a path given to digest holds, and those found but left alone (why)."""

    files: list[Path] = field(default_factory=list)
    left: list[Unimported] = field(default_factory=list)


def _is_list(head: str) -> bool:
    markdown = re.search(r"^\s*(?:#{1,6}\s|\|)", head, re.MULTILINE)
    return markdown is None and len(_ENTRY.findall(head)) >= LIST_ENTRIES


def files_under(root: Path | None, *, follow_symlinks: bool = False) -> Found:
    """`root` if it is a file, else every non-hidden regular file below it, sorted.

    Below a folder, a symbolic link is left alone (and named) unless `follow_symlinks`:
    an inbox can hold a link to a key or a password file the user never meant to save. A
    FIFO, socket or device is left alone wherever it is: reading one can block forever.
    """
    if root is None:
        raise SourceError("a file source needs a path")
    if not root.is_dir():
        if not root.exists():
            raise SourceError("no such file or folder", path=root)
        return _sorted(_regular([root], follow_symlinks=True))
    candidates: list[Path] = []
    unread: list[Unimported] = []
    for folder, dirs, files in os.walk(root, onerror=_unread_folder(root, unread)):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        names = [*files, *(name for name in dirs if _is_link(Path(folder, name)))]
        candidates.extend(Path(folder, name) for name in names if not name.startswith("."))
    found = _regular(candidates, follow_symlinks=follow_symlinks)
    found.left.extend(unread)
    return _sorted(found)


def _unread_folder(root: Path, unread: list[Unimported]) -> Callable[[OSError], None]:
    """What os.walk does with a folder it cannot list: the source's own folder is a
    SourceError; one below it is left behind (named, failed), the rest read."""

    def left_behind(exc: OSError) -> None:
        if Path(exc.filename) == root:
            raise unreadable(exc.filename, exc, "list") from exc
        why = f"a folder that cannot be read ({exc.strerror or exc}): its files are left behind"
        unread.append(Unimported(Path(exc.filename), why))

    return left_behind


def _is_link(path: Path) -> bool:
    try:
        return path.is_symlink()
    except OSError:
        return False  # a folder os.walk then names as unreadable, a file _regular does


def _sorted(found: Found) -> Found:
    return Found(sorted(found.files), sorted(found.left, key=lambda left: left.path))


def _regular(paths: list[Path], *, follow_symlinks: bool) -> Found:
    found = Found()
    for path in paths:
        if _is_link(path) and not follow_symlinks:
            found.left.append(
                _left(
                    path,
                    f"a symbolic link to {_target(path)}, not followed"
                    " (follow_symlinks = true in the source reads it)",
                )
            )
            continue
        try:
            mode = path.stat().st_mode
        except OSError as exc:
            found.left.append(_left(path, f"cannot read it: {exc.strerror or exc}"))
            continue
        if stat.S_ISREG(mode):
            found.files.append(path)
        elif not stat.S_ISDIR(mode):
            found.left.append(_left(path, f"not a regular file ({_kind(mode)})"))
    return found


def _left(path: Path, why: str) -> Unimported:
    return Unimported(path, f"skipped: {why}", failed=False)


def _target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError:
        return "?"


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"))
    return next((name for test, name in kinds if test(mode)), "a device")


# Documents a folder of saves often holds beside them, told by their names.
_DOCUMENT_NAME = re.compile(
    r"^(?:readme|licen[cs]e|copying|notice|authors|contributing|code_of_conduct|security"
    r"|changelog|changes|history)(?:[._-]|$)",
    re.IGNORECASE,
)
_WEB_LINK = re.compile(r"https?://", re.IGNORECASE)
_ENTRY = re.compile(r"^\s*[-*•]\s+\w", re.MULTILINE)
LIST_ENTRIES = 3  # a document with this many `- ` entries and no markdown is a list of saves
_DATED_ENTRY = re.compile(r"^\s{0,3}#{1,6}\s+\d{4}[-/.]\d{1,2}[-/.]\d{1,2}", re.MULTILINE)


def not_saves(path: Path, head: str) -> Unimported | None:
    """A file found in a folder that is no saves file (its start is `head`): a README, a
    licence or a changelog by its name, or a document with no saved link (`http(s)://`), no
    dated entry (`## YYYY-MM-DD`), no plain list of entries (LIST_ENTRIES `- ` lines, no
    markdown heading or table) and none of the signs of pasted posts (closing arrows, emoji
    bullets, `Day N/365`: posts.signals_of_posts). Files given by name, and folder sources with a `format`,
    are read whatever they look like."""
    if _DOCUMENT_NAME.match(path.name):
        why = "a README, licence or changelog, by its name"
    elif not (_WEB_LINK.search(head) or _DATED_ENTRY.search(head) or _is_list(head)):
        if signals_of_posts([line.strip() for line in head.splitlines()], head):
            return None
        why = "no saved links, dated entries, list of entries or signs of pasted posts"
    else:
        return None
    return Unimported(path, f"not a saves file: {why}; skipped", failed=False)


def not_saves_nor_highlights(path: Path) -> Unimported | None:
    """not_saves, for a file that is no highlights export either."""
    head = read_head(path)
    return None if highlights_format(head, None, path) else not_saves(path, head)
