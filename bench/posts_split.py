"""Print how the posts importer splits a pasted-posts file, for checking each boundary by eye.

    python bench/posts_split.py PATH [PATH …]

For each post: its number, first and last line numbers, its title, its links, and the
import report lines (ambiguous boundaries). Nothing is written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.collect.importers.posts import PostsImporter


def show(path: Path) -> None:
    result = PostsImporter().parse(path.read_text(encoding="utf-8"), zone=ZoneInfo("UTC"))
    print(f"== {path.name}: {len(result.items)} posts")
    for number, item in enumerate(result.items, 1):
        lines = (item.context or "").count("\n") + 1
        print(f"{number:3}. L{item.line}-{(item.line or 0) + lines - 1}: {item.title}")
        for link in item.links:
            print(f"       link {link}")
    for entry in [*result.rejected, *result.skipped, *result.notices]:
        print(f"  report line {entry.line}: {entry.reason}")


def main() -> None:
    for argument in sys.argv[1:]:
        show(Path(argument))


if __name__ == "__main__":
    main()
