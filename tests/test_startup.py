"""Start-up stays lean: `digest status` on a migrated store loads neither sqlite-utils (whose
import loads numpy) nor numpy; they load when a migration is pending."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = ("numpy", "sqlite_utils")
# Runs the command line as `digest status` would, then names the heavy modules it loaded.
PROBE = f"""
import sys
sys.argv = ["digest", "status", "--config", sys.argv[1]]
from digest.cli import main
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
print("loaded:" + ",".join(name for name in {HEAVY!r} if name in sys.modules))
"""


def heavy_modules_loaded_by_status(config: Path) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(config)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    loaded = result.stdout.splitlines()[-1].removeprefix("loaded:")
    return [name for name in loaded.split(",") if name]


def test_status_on_a_migrated_store_loads_no_numpy(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\n', encoding="utf-8")

    first = heavy_modules_loaded_by_status(config)  # a new store: every migration is pending
    second = heavy_modules_loaded_by_status(config)

    assert "sqlite_utils" in first
    assert second == []
