"""Crash-safe file writes: a reader sees the old file or the new one, never half of either.

A new file gets the mode the umask gives (0644 under the usual 022, so a web server can
serve the digests), or 0600 when it is private (it holds secrets); a replaced file keeps
its mode. No write follows a symbolic link: one where our file should be is LinkRefused.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import tempfile
from pathlib import Path

from digest.errors import LinkRefused

PRIVATE_MODE = 0o600


def write_atomic(path: Path, text: str | bytes, *, private: bool = False) -> None:
    """Replace `path` with `text` (bytes as they are) so that readers see the old file or the
    new one, never half.

    The new file is made with O_EXCL beside it and renamed over `path`: nothing is
    truncated in place, and a symbolic link at `path` is LinkRefused, not replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_link(path)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        mode = PRIVATE_MODE if private else _mode_for(path)
        os.fchmod(fd, mode)  # mkstemp makes it 0600 whatever the umask
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(text.encode("utf-8") if isinstance(text, str) else text)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def create_private(path: Path) -> None:
    """Create `path` empty and 0600 if it does not exist, without following a link there;
    an existing file is left to its owner (SQLite opens it), a symbolic link refused."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_MODE)
    except FileExistsError:
        refuse_link(path)
        return
    os.close(fd)


def open_own(path: Path, flags: int, mode: int = 0o666) -> int:
    """A descriptor on our own file at `path`: created new with O_EXCL, or opened as it is;
    never through a symbolic link, and never a file with other names (a hard link to one
    of the user's files) or not regular: those are LinkRefused. `mode` less the umask."""
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        pass
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkRefused(path) from exc
        raise
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode) or found.st_nlink > 1:
        os.close(fd)
        raise LinkRefused(path)
    return fd


def open_append(path: Path) -> io.TextIOWrapper:
    """`path` opened to append text (created if need be) as open_own allows it."""
    fd = open_own(path, os.O_WRONLY | os.O_APPEND)
    return os.fdopen(fd, "a", encoding="utf-8", newline="")


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
