"""The log holds each week's text once; later revisions append what changed, dated (real
store and files in a temp folder)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from digest.deliver.channel import content_hash
from digest.deliver.channels.log import log_entry
from digest.deliver.logdiff import changes, last_full_text, shown_items
from digest.deliver.outbox import deliver_digest
from digest.periods import parse_week
from digest.store import Store
from mailrig import make_config

PERIOD = parse_week("2026-W47", ZoneInfo("UTC"))
NOW = datetime(2026, 11, 17, 8, 0, tzinfo=UTC)


def week(*items: tuple[str, str, str, str]) -> str:
    """A digest in the composer's shape: (section, title, url, note) per item."""
    text = "# Digest for 2026-W47\n\n16–22 November 2026\n\n## The week\n\n"
    text += f"- **Rust** ({len(items)} items): a line.\n"
    sections: dict[str, list[str]] = {}
    for section, title, url, note in items:
        head = f"- **[{title}]({url})**" if url else f"- **{title}**"
        sections.setdefault(section, []).append(f"{head}\n\n  {note}\n")
    for section, entries in sections.items():
        text += f"\n## {section}\n\n" + "\n".join(entries)
    return text + "\n---\n\n*3 items: 3 noted.*\n"


PIN = ("Rust", "Pin and suffering", "https://fasterthanli.me/articles/pin-and-suffering", "Pins.")
GO = (
    "Rust",
    "I want off Mr Golang's wild ride",
    "https://fasterthanli.me/go",
    "(page not fetched)",
)
DNS = ("Networks", "DNS tunnels", "https://a.example/dns", "Port 53 stays open.")
BOOK = ("Reading", "DST Book", "", "A book to read.")


def markers(log: Path) -> list[str]:
    return re.findall(r"^<!-- digest .* -->$", log.read_text(encoding="utf-8"), flags=re.M)


def test_five_revisions_log_the_week_once_then_each_change_dated(
    tmp_path: Path, store: Store
) -> None:
    config = make_config(tmp_path, None)
    renewed_go = (*GO[:3], "Go's simplicity hides its edge cases.")
    revisions = [
        week(PIN),
        week(PIN, GO),  # one added
        week(PIN, renewed_go, DNS),  # a note renewed, one added
        week(PIN, renewed_go, BOOK),  # one removed, one added
        week(renewed_go, BOOK, ("Networks", *PIN[1:])),  # moved to another section
    ]
    for day, text in enumerate(revisions):
        outcome = deliver_digest(store, config, PERIOD, text, NOW + timedelta(days=day))
        assert "log" in outcome.delivered

    log = config.log_path.read_text(encoding="utf-8")
    assert log.count("# Digest for 2026-W47") == 1  # the week's text once
    assert log.startswith(log_entry("2026-W47", 1, content_hash(revisions[0]), revisions[0]))
    assert [m.split(" sha256")[0] for m in markers(config.log_path)] == [
        "<!-- digest 2026-W47 revision 1",
        *(f"<!-- digest 2026-W47 revision {n} changes" for n in range(2, 6)),
    ]
    blocks = log.split("\n---\n\n<!-- digest ")[2:]
    assert "### 2026-W47, revision 2: 18 November 2026 08:00 UTC (1 added)" in blocks[0]
    assert (
        "- Added to Rust: [I want off Mr Golang's wild ride](https://fasterthanli.me/go)"
        in (blocks[0])
    )
    assert "(1 added, 1 renewed)" in blocks[1]
    assert "- Note renewed: [I want off Mr Golang's wild ride]" in blocks[1]
    assert "Go's simplicity hides its edge cases." in blocks[1]
    assert "- Removed: [DNS tunnels](https://a.example/dns)" in blocks[2]
    assert "- Added to Reading: *DST Book*" in blocks[2]
    assert "- Moved from Rust to Networks: [Pin and suffering]" in blocks[3]
    assert "### 2026-W47, revision 5: 21 November 2026 08:00 UTC (1 moved)" in blocks[3]
    assert store.logged_text("2026-W47") == revisions[-1]


def test_rerunning_a_revision_appends_nothing(tmp_path: Path, store: Store) -> None:
    config = make_config(tmp_path, None)
    deliver_digest(store, config, PERIOD, week(PIN), NOW)
    deliver_digest(store, config, PERIOD, week(PIN, GO), NOW + timedelta(hours=1))
    before = config.log_path.read_bytes()
    again = deliver_digest(store, config, PERIOD, week(PIN, GO), NOW + timedelta(hours=2))
    assert again.revision is None
    assert config.log_path.read_bytes() == before


def test_an_old_log_of_whole_weeks_is_kept_and_followed_by_changes(
    tmp_path: Path, store: Store
) -> None:
    config = make_config(tmp_path, None)
    old = log_entry("2026-W47", 1, "a" * 64, week(PIN)) + log_entry(
        "2026-W47", 2, "b" * 64, week(PIN, GO)
    )
    config.log_path.parent.mkdir(parents=True, exist_ok=True)
    config.log_path.write_text(old, encoding="utf-8")

    deliver_digest(store, config, PERIOD, week(PIN, GO, DNS), NOW)

    log = config.log_path.read_text(encoding="utf-8")
    assert log.startswith(old)  # never rewritten
    added = log.removeprefix(old)
    assert "# Digest for" not in added
    assert "- Added to Networks: [DNS tunnels](https://a.example/dns)" in added
    assert "I want off" not in added  # logged before, in the old whole text


def test_the_items_of_a_digest_are_read_back_by_section_with_their_notes() -> None:
    items = shown_items(week(PIN, BOOK))
    assert list(items) == [PIN[2], "DST Book"]
    assert items[PIN[2]].section == "Rust" and items[PIN[2]].note == "Pins."
    assert items["DST Book"].url is None
    assert changes(week(PIN), week(PIN)) == []


def test_the_last_whole_text_of_a_week_is_found_only_when_it_is_the_last_entry() -> None:
    whole = log_entry("2026-W47", 1, "a" * 64, week(PIN))
    assert last_full_text(whole, "2026-W47") == week(PIN)
    assert last_full_text(whole, "2026-W48") is None
    changed = whole + "\n---\n\n<!-- digest 2026-W47 revision 2 changes sha256:bb -->\n\n- x\n"
    assert last_full_text(changed, "2026-W47") is None
