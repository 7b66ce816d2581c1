"""A run killed with kill -9 is shown as interrupted, not running, and the next run records
it so: the run lock's holder (its pid, gone) tells."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from digest.cli import cli
from loopback import LoopbackServer, Response


def statuses(root: Path) -> list[str]:
    with sqlite3.connect(root / "data" / "digest.db") as db:
        return [row[0] for row in db.execute("SELECT status FROM runs ORDER BY id")]


def shown(root: Path) -> list[str]:
    result = CliRunner().invoke(cli, ["status", "--json", "--config", str(root / "digest.toml")])
    assert result.exit_code == 0, result.output
    return [run["status"] for run in reversed(json.loads(result.stdout)["runs"])]


@pytest.mark.slow
def test_a_run_killed_mid_way_is_shown_interrupted_and_recorded_so_by_the_next(
    tmp_path: Path, server: LoopbackServer
) -> None:
    server.routes["/slow.xml"] = Response(200, "<rss/>", delay_s=60)
    (tmp_path / "digest.toml").write_text(
        f'[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "slow"\nkind = "feed"\n'
        f'url = "{server.url("/slow.xml")}"\n\n[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\n'
        "timeout_s = 120\n"
    )
    collect = [sys.executable, "-m", "digest", "collect", "--config", str(tmp_path / "digest.toml")]
    running = subprocess.Popen(collect, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.requests, "the run never asked for the feed"

    alive = shown(tmp_path)
    os.kill(running.pid, signal.SIGKILL)
    running.wait()
    after_kill = shown(tmp_path)
    server.routes["/slow.xml"] = Response(200, "<rss/>")
    subprocess.run(collect, capture_output=True, check=False)

    assert alive == ["running"] and after_kill == ["interrupted"]
    assert statuses(tmp_path)[0] == "interrupted" and statuses(tmp_path)[1] != "running"
    assert shown(tmp_path)[0] == "interrupted"
