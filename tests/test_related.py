"""What came before: a follow-up line for the next part of a series, a related-saves line
for earlier saves sharing rare title words, over a store of several weeks (real importer,
store and composer; no network)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from digest.cli import cli
from digest.compose.topics import offline_sections
from weekitems import week_item

JOURNAL = """---
title: "Today I Learned"
---

## 2026-01-06
### GPU
- [Day 12/365 of GPU Programming](https://gpu.example.org/day-12)
- [Tiled matmul with shared memory banks](https://a.example/tiled-matmul)
- [Bank conflicts in shared memory](https://b.example/bank-conflicts)

## 2026-02-10
### Databases
- [Write-ahead logging in SQLite](https://c.example/wal)
- [Checkpoint starvation in write-ahead logging](https://d.example/checkpoints)

## 2026-03-17
### GPU
- [Day 40/365 of GPU Programming](https://gpu.example.org/day-40)
- [Avoiding shared memory bank conflicts in tiled kernels](https://e.example/banks)
- [Write-ahead logging explained again](https://f.example/wal-again)
- [A tour of Tokyo ramen shops](https://g.example/ramen)
"""


def run(tmp_path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--config", str(tmp_path / "digest.toml")])
    assert result.exit_code == 0, result.output
    return result.stdout


def week_digest(tmp_path: Path, related: bool) -> str:
    (tmp_path / "til.md").write_text(JOURNAL, encoding="utf-8")
    setting = "" if related else "related = false\n"
    (tmp_path / "digest.toml").write_text(f'[digest]\ndata_dir = "data"\n{setting}', "utf-8")
    run(tmp_path, "import", str(tmp_path / "til.md"))
    path = Path(run(tmp_path, "compose", "--week", "2026-W12").splitlines()[-1])
    return path.read_text(encoding="utf-8")


def entry(digest: str, title: str) -> str:
    return digest.split(f"- **[{title}]", 1)[1].split("\n- **", 1)[0]


def test_a_series_gets_its_follow_up_and_rare_shared_words_a_related_line(
    tmp_path: Path,
) -> None:
    digest = week_digest(tmp_path, related=True)

    day40 = entry(digest, "Day 40/365 of GPU Programming")
    assert "  follow-up to *Day 12/365 of GPU Programming* (2026-W02)\n" in day40
    banks = entry(digest, "Avoiding shared memory bank conflicts in tiled kernels")
    assert (
        "  You saved 2 related pieces (latest: *Bank conflicts in shared memory*, January)\n"
        in banks
    )
    wal = entry(digest, "Write-ahead logging explained again")
    assert "You saved 2 related pieces (latest: *Checkpoint starvation in write-ahead" in wal
    assert "You saved" not in entry(digest, "A tour of Tokyo ramen shops")
    assert digest.count("You saved") + digest.count("follow-up to") == 3  # a line per item
    again = Path(run(tmp_path, "compose", "--week", "2026-W12").splitlines()[-1])
    assert again.read_text(encoding="utf-8") == digest  # stable across runs


def test_one_setting_turns_the_lines_off(tmp_path: Path) -> None:
    digest = week_digest(tmp_path, related=False)
    assert "follow-up to" not in digest and "You saved" not in digest


def test_two_parts_of_a_series_in_one_week_make_a_section_named_by_its_subject() -> None:
    start = datetime(2026, 11, 16, tzinfo=UTC)
    items = [
        week_item(1, start, title="Day 83/365 of GPU Programming", url=None),
        week_item(2, start, title="Day 124/365 of GPU Programming", url=None),
        week_item(3, start, title="Day 3 in Observability Zero to Hero", url=None),
    ]
    assert offline_sections(items) == {
        1: "GPU Programming",
        2: "GPU Programming",
        3: "Also saved",  # a single part is no series
    }
