"""Thin click commands: parse, call one function, print. Errors meet the user only here.

The group and what every command shares are in base.py; the commands, by what they do,
in run.py, sources.py, items.py and installation.py (imported here: that registers them).
"""

from __future__ import annotations

import sys
import traceback

from digest.cli import installation, items, run, sources
from digest.cli.base import cli
from digest.urls import for_display

__all__ = ["cli", "installation", "items", "main", "run", "sources"]


def main() -> None:
    try:
        cli(prog_name="digest")
    except Exception:  # a bug: its traceback, as Python would print it, less any password
        sys.stderr.write(for_display(traceback.format_exc()))
        sys.exit(1)
