"""Golden digests of weeks in the shapes users save (a journal week, a list with topic lines, a
post dump, a feed with categories), made by the real pipeline (offline notes, pages on a
loopback server) and frozen once they read well: markdown and the mail's HTML.

UPDATE_GOLDEN=1 rewrites the expected files; read them as a subscriber before committing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from loopback import LoopbackServer
from sampleweek import run_week

GOLDEN = Path(__file__).parent / "golden_weeks"


@pytest.mark.parametrize("shape", ["journal", "list", "posts", "feed"])
def test_a_week_of_each_shape_reads_as_frozen(
    tmp_path: Path, server: LoopbackServer, shape: str
) -> None:
    week = run_week(tmp_path, server, [shape])
    for suffix, text in ((".md", week.markdown), (".html", week.mail)):
        expected = GOLDEN / f"{shape}{suffix}"
        if os.environ.get("UPDATE_GOLDEN") == "1":
            expected.parent.mkdir(parents=True, exist_ok=True)
            expected.write_text(text, encoding="utf-8")
        assert text == expected.read_text(encoding="utf-8"), shape
    assert_reads_well(week.markdown)
    info = [line for report in week.reports for line in report.info]
    assert not [line for line in info if "another language" in line]  # no model wrote a note


def assert_reads_well(markdown: str) -> None:
    """No note opens on a fragment of fewer than three words followed by more, no note of a
    link is its address or title, no section is "Section N"."""
    title = ""
    for line in markdown.splitlines():
        if found := re.match(r"- \*\*\[?(.+?)(?:\]\((.+?)\))?\*\*(?: · \d+ min read)?$", line):
            title, url = found[1], found[2] or ""
            continue
        note = line.strip()
        if not line.startswith("  ") or note.startswith(("- ", "*")) or not note:
            continue
        opening, *rest = re.split(r"(?<=[.!?])\s", note)
        assert len(opening.split()) >= 3 or not rest, note  # a short comment may stand alone
        assert not url or url.split("://")[1] not in note, note
        assert note.rstrip(". ") != title.rstrip(". "), note
    assert not re.search(r"^## Section \d", markdown, re.M)


def test_the_footer_counts_the_extractive_summaries_the_digest_marks(
    tmp_path: Path, server: LoopbackServer
) -> None:
    # pasted posts and long notes of the reader's are summarised offline too: marked as such
    week = run_week(tmp_path, server, ["journal", "list", "posts"])
    [counted] = re.findall(r"^\*Notes: (\d+) extractive summar", week.markdown, re.M)
    assert int(counted) == week.markdown.count("*(extractive summary)*") > 4
