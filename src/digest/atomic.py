"""Crash-safe file writes: a reader sees the old file or the new one, never half of either.

A new file gets the mode the umask gives (0644 under the usual 022, so a web server can
serve the digests), or 0600 when it is private (it holds secrets); a replaced file keeps
its mode. No write follows a symbolic link: one where our file should be is LinkRefused.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from digest.errors import LinkRefused

PRIVATE_MODE = 0o600


def write_atomic(path: Path, text: str, *, private: bool = False) -> None:
    """Replace `path` with `text` so that readers see the old file or the new one, never half.

    The new file is made with O_EXCL beside it and renamed over `path`: nothing is
    truncated in place, and a symbolic link at `path` is LinkRefused, not replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_link(path)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        mode = PRIVATE_MODE if private else _mode_for(path)
        os.fchmod(fd, mode)  # mkstemp makes it 0600 whatever the umask
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(text.encode("utf-8"))
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def create_private(path: Path) -> None:
    """Create `path` empty and 0600 if it does not exist, without following a link there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_MODE)
    except FileExistsError:
        refuse_link(path)
        return
    os.close(fd)


def refuse_link(path: Path) -> None:
    """LinkRefused if `path` is a symbolic link (or not a regular file) where ours should be."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise LinkRefused(path)


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process's umask, read without changing it where Linux allows (threads may be
    creating files meanwhile); elsewhere set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
