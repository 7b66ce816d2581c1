"""Files we write are our own: no symbolic or hard link where one should be is followed,
truncated or appended to; the error names the place."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from digest.atomic import create_private, write_atomic
from digest.cli import cli
from digest.config import LogConfig
from digest.deliver.channels.log import append_log
from digest.errors import LinkRefused
from digest.runtime.lock import run_lock
from digest.runtime.logs import configure_logging

PRECIOUS = "the user's own words\n"

ENTRY = "\n<!-- digest 2026-W47 revision 1 sha256:ab -->\n# Digest\n"


def precious(tmp_path: Path) -> Path:
    target = tmp_path / "precious.txt"
    target.write_text(PRECIOUS)
    return target


def test_digest_add_refuses_a_symlinked_lock_and_leaves_its_target_whole(tmp_path: Path) -> None:
    target = precious(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "digest.lock").symlink_to(target)
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\n')
    result = CliRunner().invoke(cli, ["add", "https://a.test/x", "--config", str(config)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{tmp_path / 'data' / 'digest.lock'}: is a symbolic link" in result.output
    assert target.read_text() == PRECIOUS


def lock(path: Path) -> None:
    with run_lock(path.parent):
        pass


def append(path: Path) -> None:
    append_log(path, ENTRY)


def log_to(path: Path) -> None:
    configure_logging(logging.INFO, LogConfig(file=path))


# Files replaced whole (os.replace) or only created here are safe behind a hard link.
SYMLINKED = [("digest.db", create_private), ("2026-W47.md", lambda p: write_atomic(p, "new"))]
WRITTEN_IN_PLACE = [("digest.lock", lock), ("digest-log.md", append), ("digest.log", log_to)]


@pytest.mark.parametrize(
    ("name", "write", "link"),
    [(name, write, os.symlink) for name, write in SYMLINKED + WRITTEN_IN_PLACE]
    + [(name, write, os.link) for name, write in WRITTEN_IN_PLACE],
)
def test_no_write_goes_through_a_link(
    tmp_path: Path,
    name: str,
    write: Callable[[Path], None],
    link: Callable[[Path, Path], None],
) -> None:
    target = precious(tmp_path)
    ours = tmp_path / "data" / name
    ours.parent.mkdir()
    link(target, ours)
    try:
        with pytest.raises(LinkRefused, match="not a regular file"):
            write(ours)
    finally:
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    assert target.read_text() == PRECIOUS


def test_new_files_are_created_and_the_lock_is_private(tmp_path: Path) -> None:
    lock(tmp_path / "data" / "digest.lock")
    append(tmp_path / "data" / "digest-log.md")
    append(tmp_path / "data" / "digest-log.md")  # the same entry: not written twice
    assert (tmp_path / "data" / "digest.lock").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "data" / "digest-log.md").read_text() == ENTRY
