"""A small text a user hands over by its path (the config, a prompt file, a template, a token
or password file, a certificate): read only when it is a regular file of at most a cap.

A FIFO would block the run on its open or read, a device (/dev/zero, /dev/urandom) or a
huge file would fill the memory. So the path is opened with O_NONBLOCK (opening a FIFO does
not wait for a writer) and the opened descriptor is checked with fstat, not the path before
it (a path swapped between the check and the open is still refused), and no more than the
cap (and one byte) is read.
"""

from __future__ import annotations

import os
import ssl
import stat
from pathlib import Path

SMALL_TEXT_BYTES = 64 * 1024  # prompts, templates, secrets
CERTIFICATE_BYTES = 1024 * 1024  # a CA bundle (the system's is ~200 KB)
CONFIG_BYTES = 4 * 1024 * 1024  # a config file (thousands of feeds take a few hundred KB)


class UserFileError(ValueError):
    """The file cannot be used; the message is one line naming it and the fix."""


def read_small_text(path: Path, kind: str, cap: int = SMALL_TEXT_BYTES) -> str:
    """The UTF-8 text of the regular file at `path` (`kind`, e.g. "a prompt", names what it
    should be), or UserFileError when it is not one, is over `cap` bytes or is not UTF-8."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # no open at all of a device or FIFO
            raise UserFileError(_not_regular(path, kind))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UserFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the check above
            raise UserFileError(_not_regular(path, kind))
        data = _read_at_most(fd, cap + 1)
    except OSError as exc:
        raise UserFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if len(data) > cap:
        raise UserFileError(f"{path} is over {cap // 1024} KB: not {kind}; give a smaller file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserFileError(f"{path} is not UTF-8 text: save it as UTF-8") from exc


def _not_regular(path: Path, kind: str) -> str:
    return f"{path} is not a regular file (a FIFO, device or folder): point it at {kind} file"


def _read_at_most(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left > 0 and (chunk := os.read(fd, left)):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def tls_context(ca_file: Path | None) -> ssl.SSLContext:
    """Certificates and host names checked; `ca_file`'s certificates (a self-signed
    server's) trusted too. UserFileError when it cannot be read as a certificate file."""
    context = ssl.create_default_context()
    if ca_file is not None:
        context.load_verify_locations(
            cadata=read_small_text(ca_file, "a certificate", CERTIFICATE_BYTES)
        )
    return context
