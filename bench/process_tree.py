"""Peak memory of a process and all its descendants, sampled from Linux /proc."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
SAMPLE_EVERY_S = 0.05


def sample_tree_memory(pid: int, done: threading.Event, peak: list[int]) -> None:
    """Keep `peak` at [max RSS sum, max PSS sum] of the tree of `pid` until `done` (set by
    whoever waits for the process: sampling never reaps it)."""
    while not done.is_set():
        rss, pss = tree_memory(pid)
        peak[:] = [max(peak[0], rss), max(peak[1], pss)]
        time.sleep(SAMPLE_EVERY_S)


def tree_memory(root: int) -> tuple[int, int]:
    """Bytes resident in `root` and its descendants (Linux /proc): the sum of their resident
    sets, and of their proportional sets (a page shared by n processes counts 1/n each)."""
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                found = [int(child) for child in (task / "children").read_text().split()]
                tree.update(found)
                frontier.extend(found)
    rss = pss = 0
    for pid in tree:
        with contextlib.suppress(OSError, IndexError, ValueError):
            rss += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_BYTES
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            pss += int(rollup.split("\nPss:", 1)[1].split()[0]) * 1024
    return rss, pss
