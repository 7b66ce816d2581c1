"""Crash-safe file writes: a reader sees the old file or the new one, never half of either.

A new file gets the mode the umask gives (0644 under the usual 022, so a web server can
serve the digests); a replaced file keeps its mode.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str | bytes) -> None:
    """Replace `path` with `text` (bytes as they are) so that readers see the old file or the
    new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _mode_for(path))  # mkstemp makes it 0600 whatever the umask
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(text.encode("utf-8") if isinstance(text, str) else text)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


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
