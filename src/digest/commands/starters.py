"""`digest prompts export DIR` and `digest templates export DIR`: the built-in files copied
into a folder to start your own from; a file already there is left as it is."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path

from digest.atomic import write_atomic
from digest.errors import ConfigError


def export_starters(package: str, folder_name: str, names: Sequence[str], to: Path) -> list[str]:
    """Copy `names` from the package's folder into `to`; one line per file saying what
    was done."""
    source = files(package).joinpath(folder_name)
    lines = []
    for name in names:
        target = to / name
        if target.exists():
            lines.append(f"{target}: exists, left as it is")
            continue
        try:
            write_atomic(target, source.joinpath(name).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot write {target}: {exc.strerror or exc}") from exc
        lines.append(f"wrote {target}")
    return lines
