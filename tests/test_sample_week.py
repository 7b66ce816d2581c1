"""`digest now --sample` on a fresh folder with no network and no key: a real week from
saves written by us, in its own data folder, marked as the sample."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from digest.cli import cli


def test_the_sample_week_shows_sections_notes_the_brief_and_the_footer(tmp_path: Path) -> None:
    (tmp_path / "data" / "inbox").mkdir(parents=True)
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "inbox"\nkind = "file"\n'
        'path = "data/inbox"\n\n[fetch]\nallow_private_addresses = false\n',
        encoding="utf-8",
    )

    result = CliRunner().invoke(cli, ["now", "--sample", "--config", str(config)])

    assert result.exit_code == 0, result.output
    path = Path(result.stdout.splitlines()[-1])
    assert path.parent == tmp_path / "data" / "sample" / "digests"
    digest = path.read_text(encoding="utf-8")
    assert digest.startswith("> **This is the sample week**")
    assert f"in `{tmp_path / 'data' / 'inbox'}` and run `digest now`" in digest
    for section in ("Databases", "Inference", "Rust Shenanigans", "Networking", "Also saved"):
        assert f"\n## {section}\n" in digest
    assert "Continuous batching admits a new request at every decoding step" in digest
    assert "*(extractive summary)*" in digest  # the feed's full texts, noted offline
    assert "  - Orca: iteration-level scheduling\n" in digest  # a post's list
    assert "Martin Kleppmann" in digest and "always one thing" not in digest
    assert "**Must read:**" in digest and "## The week\n\n- **Databases** (3 items)" in digest
    assert "*11 items: 4 noted, 2 shown as written, 5 pages not fetched.*" in digest
    assert not (tmp_path / "data" / "digests").exists()  # the user's own folder is untouched
    assert "your own saves go in" in result.stderr

    again = CliRunner().invoke(cli, ["now", "--sample", "--config", str(config)])
    assert again.exit_code == 0, again.output
    assert Path(again.stdout.splitlines()[-1]).read_text(encoding="utf-8") == digest
    assert (
        CliRunner().invoke(cli, ["now", "--sample", "--all", "--config", str(config)]).exit_code
        == 2
    )
