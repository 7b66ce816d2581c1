"""Every save read exactly once: real files in a temp inbox over several collects (issue 18).

Held-back last lines, posts that grow, one reading per file, folders holding other
documents, bad lines, and files the user never meant to share.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from digest.cli import cli
from digest.collect.files import describe, import_files
from digest.collect.importers import find_reading
from digest.collect.inbox import collect_file_source
from digest.config import SourceConfig
from digest.lifecycle import note_attached
from digest.models import Item, ItemKind, Note, SavedItem, StageReport
from digest.store import Store, open_store

ZONE = ZoneInfo("UTC")
NOW = datetime(2026, 1, 12, 9, 0, tzinfo=UTC)

# Pasted posts in the shape of the user's: no separators, t.co links, a closing arrow.
POSTS = """\
Read this to get started with GPU programming.
This is a friendly overview of what matters when you write your first kernels. It covers:
- memory
- occupancy
https://t.co/Abc123Def4
5 guides to understand how inference servers work
- What is batching?
- Paged attention and the KV cache
Links ↓
A plain story you might hear is that compilers are a solved problem and nothing is left.
It is not true, and here is why the next few years will be interesting for them.
"""
LAST_LINE = "The tools are better than ever, and the problems are bigger than ever."

LIST = """\
Reading list
Compilers
- Static Single Assignment
- Register Allocation - the chapter on graph colouring is the clearest I know
Kernels
- Flash Attention
- Mega Kernels from the future"""


def write(path: Path, text: str) -> Path:
    """Write `text` and date it a day back, as a file saved earlier (its stat then trusted)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    a_day_ago = time.time_ns() - 86_400 * 10**9
    os.utime(path, ns=(a_day_ago, a_day_ago))
    return path


def collect(store: Store, folder: Path, **options: object) -> StageReport:
    source = SourceConfig(name="inbox", kind="file", path=folder, **options)
    source_id = store.ensure_source(source.name, "file", path=str(folder))
    return collect_file_source(store, source, source_id, ZONE, NOW)


def titles(store: Store) -> list[str]:
    return sorted(item.title or "" for item in store.all_items())


def only(store: Store, starting: str) -> Item:
    [item] = [i for i in store.all_items() if (i.title or "").startswith(starting)]
    return item


# -- the last line ------------------------------------------------------------------------


def test_a_last_line_without_its_end_is_held_back_and_said_so(store: Store, tmp_path: Path) -> None:
    write(tmp_path / "inbox" / "list.txt", LIST)
    report = collect(store, tmp_path / "inbox")
    assert report.info[0].endswith(
        ", 1 last line held back (no line end): read on the next run if the file is unchanged"
    )
    assert "Mega Kernels from the future" not in titles(store)


def test_a_collect_says_what_it_skipped_in_which_file_on_which_lines_and_why(
    store: Store, tmp_path: Path
) -> None:
    listed = write(tmp_path / "inbox" / "list.txt", f"{LIST}\n")
    report = collect(store, tmp_path / "inbox")
    assert report.info[0].endswith(", 1 skipped")
    assert report.info[1] == f"{listed}: skipped 1 (line 1): heading or description, not an entry"


def test_a_held_back_entry_arrives_on_the_next_collect_without_duplicates(
    store: Store, tmp_path: Path
) -> None:
    write(tmp_path / "inbox" / "list.txt", LIST)
    collect(store, tmp_path / "inbox")
    second = collect(store, tmp_path / "inbox")
    assert "held back" not in second.info[0]
    assert second.done == 1
    assert len(store.all_items()) == 4
    collect(store, tmp_path / "inbox")
    assert len(store.all_items()) == 4


def test_a_collected_file_gives_what_digest_import_gives(store: Store, tmp_path: Path) -> None:
    path = write(tmp_path / "inbox" / "posts.txt", POSTS + LAST_LINE)
    collect(store, tmp_path / "inbox")
    collect(store, tmp_path / "inbox")
    collected = titles(store)
    imported_into = open_store(tmp_path / "imported.db")  # a fresh database for `digest import`
    import_files(imported_into, [path], zone=ZONE, now=NOW)
    assert titles(imported_into) == collected
    assert len(collected) == 3


def test_a_post_completed_by_its_last_line_is_one_item_with_its_note_renewed(
    store: Store, tmp_path: Path
) -> None:
    path = write(tmp_path / "inbox" / "posts.txt", POSTS + LAST_LINE)
    collect(store, tmp_path / "inbox")
    post = only(store, "A plain story")
    assert LAST_LINE not in (post.context or "")
    store.attach_note(note_attached(post, "k", Note("Compilers."), NOW, final=True))
    write(path, POSTS + LAST_LINE + "\n")  # the writer ends the line
    collect(store, tmp_path / "inbox")
    grown = only(store, "A plain story")
    assert grown.id == post.id
    assert LAST_LINE in (grown.context or "")
    assert grown.note is None  # due for a new note on its whole text
    assert sum(1 for item in store.all_items() if item.kind is ItemKind.POST) == 3


def test_a_post_that_grows_later_updates_its_item(store: Store, tmp_path: Path) -> None:
    path = write(tmp_path / "inbox" / "posts.txt", POSTS)
    collect(store, tmp_path / "inbox")
    before = only(store, "A plain story")
    write(path, POSTS + "The best part: nobody has to wait for the next release.\n")
    collect(store, tmp_path / "inbox")
    after = only(store, "A plain story")
    assert after.id == before.id and "nobody has to wait" in (after.context or "")
    assert len(store.all_items()) == 3


def test_the_report_says_which_format_and_why(store: Store, tmp_path: Path) -> None:
    path = write(tmp_path / "posts.txt", POSTS)
    [outcome] = import_files(store, [path], zone=ZONE, now=NOW)
    lines = describe(outcome)
    assert "format posts:" in lines[0]
    assert lines[-1].startswith("  read as posts: t.co links, closing lines (`Links ↓`)")


# -- one reading per file -----------------------------------------------------------------

MORE_POSTS = """\
FREE BOOKS ON SYSTEMS THAT EVERY ENGINEER SHOULD READ THIS YEAR:
1. Operating Systems: Three Easy Pieces
https://t.co/Q1w2e3r4t5
2. Computer Networks
https://t.co/Z9x8c7v6b5
We just launched a course that teaches you how to build a database from scratch, step by step.
By the end, you will have a working storage engine with a write-ahead log you wrote yourself.
It will be free for everyone during the first two weeks of the course, then part of the plan.
Course & Repo: https://t.co/Mn0Bv9Cx8Z
"""


def test_a_short_file_of_posts_is_read_as_posts_not_as_a_list(store: Store, tmp_path: Path) -> None:
    write(tmp_path / "inbox" / "posts.txt", POSTS)
    collect(store, tmp_path / "inbox")
    assert {item.kind for item in store.all_items()} == {ItemKind.POST}
    assert "memory" not in titles(store)


def test_a_file_that_grows_from_list_like_to_posts_keeps_only_the_posts(
    store: Store, tmp_path: Path
) -> None:
    head = "GPU reading\n- memory\n- occupancy\n- https://example.org/gpu\n"
    path = write(tmp_path / "inbox" / "posts.txt", head)
    first = collect(store, tmp_path / "inbox")
    assert "format list" in first.info[0]  # four lines: a guess
    write(path, head + POSTS + MORE_POSTS)
    second = collect(store, tmp_path / "inbox")
    assert "format posts" in second.info[0]
    assert "items of an earlier reading replaced" in second.info[0]
    assert {item.kind for item in store.all_items()} == {ItemKind.POST}
    assert len(store.all_items()) == 6
    write(path, head + POSTS + MORE_POSTS + "- memory\n- occupancy\n- registers\n- warps\n")
    collect(store, tmp_path / "inbox")
    assert {item.kind for item in store.all_items()} == {ItemKind.POST}


def test_a_forced_format_replaces_the_earlier_reading(store: Store, tmp_path: Path) -> None:
    path = write(tmp_path / "posts.txt", POSTS)
    import_files(store, [path], zone=ZONE, now=NOW, forced_format="list")
    assert ItemKind.NOTE in {item.kind for item in store.all_items()}
    import_files(store, [path], zone=ZONE, now=NOW)  # the forced reading is kept
    assert ItemKind.POST not in {item.kind for item in store.all_items()}
    import_files(store, [path], zone=ZONE, now=NOW, forced_format="posts")
    assert {item.kind for item in store.all_items()} == {ItemKind.POST}


def test_an_item_another_file_also_holds_survives_a_new_reading(
    store: Store, tmp_path: Path
) -> None:
    shared = "- Static Single Assignment\n"
    write(tmp_path / "a.txt", "Compilers\n" + shared)
    path = write(tmp_path / "b.txt", "Compilers\n" + shared)
    import_files(store, [tmp_path / "a.txt", path], zone=ZONE, now=NOW)
    import_files(store, [path], zone=ZONE, now=NOW, forced_format="posts")
    assert "Static Single Assignment" in titles(store)


JOURNAL = "---\ntitle: TIL\n---\n## 2025-11-7\n### Kernels\n- [Flash](https://example.org/flash)\n"
APPENDED_LINE = st.one_of(
    st.text(max_size=80).map(lambda text: text.replace("\n", " ").replace("\r", " ")),
    st.sampled_from(
        [
            "- memory",
            "1. Foundations",
            "https://example.org/a",
            "## 2026-01-02",
            "# Heading",
            "[title](https://example.org/b)",
            "{",
            '"url": "https://example.org/c"',
            "url,title,tags",
            "<DT><A HREF='https://example.org/d'>d</A>",
            "Links ↓",
            "",
        ]
    ),
)


@settings(max_examples=200)
@given(start=st.sampled_from([POSTS, POSTS + MORE_POSTS, JOURNAL]), lines=st.lists(APPENDED_LINE))
def test_appending_lines_never_changes_a_clear_reading(start: str, lines: list[str]) -> None:
    _, first = find_reading(start, None, None)
    assert first.clear and first.format in ("posts", "journal")
    grown = start + "".join(f"{line}\n" for line in lines)
    assert find_reading(grown, None, first)[1].format == first.format


# -- folders hold saves and other things ---------------------------------------------------


def test_a_folder_import_skips_a_readme_and_a_plain_note_and_says_why(
    store: Store, tmp_path: Path
) -> None:
    folder = tmp_path / "saves"
    write(folder / "README.md", "# My saves\n\n| file | what |\n| --- | --- |\n| a | b |\n")
    write(folder / "LICENSE", "Permission is hereby granted, free of charge, to any person\n")
    write(folder / "ideas.txt", "Call the plumber.\nBuy milk on the way home.\n")
    write(folder / "links.urls", "https://example.org/one\n")
    outcomes = import_files(store, [folder], zone=ZONE, now=NOW)
    lines = [line for outcome in outcomes for line in describe(outcome)]
    assert (
        f"{folder / 'README.md'}: not a saves file: a README, licence or changelog, by its name; skipped"
        in lines
    )
    assert (
        f"{folder / 'LICENSE'}: not a saves file: a README, licence or changelog, by its name; skipped"
        in lines
    )
    assert any(
        line.startswith(f"{folder / 'ideas.txt'}: not a saves file: no saved links")
        for line in lines
    )
    assert [item.url for item in store.all_items()] == ["https://example.org/one"]


def test_a_readme_named_on_the_command_line_is_read(store: Store, tmp_path: Path) -> None:
    path = write(tmp_path / "README.md", "## 2025-11-07\n- [Flash](https://example.org/flash)\n")
    import_files(store, [path], zone=ZONE, now=NOW)
    assert [item.url for item in store.all_items()] == ["https://example.org/flash"]


def test_an_inbox_says_once_that_a_readme_is_no_saves_file(store: Store, tmp_path: Path) -> None:
    write(tmp_path / "inbox" / "README.md", "# Inbox\nDrop your saves here.\n")
    write(tmp_path / "inbox" / "list.txt", LIST + "\n")
    first = collect(store, tmp_path / "inbox")
    assert any("README.md: not a saves file" in line for line in first.info)
    assert not first.failures
    second = collect(store, tmp_path / "inbox")
    assert second.info == []
    assert len(store.all_items()) == 4


# -- only what the user meant to save ------------------------------------------------------


def test_a_symlink_to_a_file_outside_is_not_followed_and_is_named(
    store: Store, tmp_path: Path
) -> None:
    secret = write(
        tmp_path / "home" / ".ssh" / "id_ed25519", "-----BEGIN KEY-----\nabc https://x.org/\n"
    )
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "key.txt").symlink_to(secret)
    write(tmp_path / "inbox" / "links.urls", "https://example.org/one\n")
    report = collect(store, tmp_path / "inbox")
    assert (
        f"{tmp_path / 'inbox' / 'key.txt'}: skipped: a symbolic link to {secret}, not followed (follow_symlinks = true in the source reads it)"
        in report.info
    )
    assert [item.url for item in store.all_items()] == ["https://example.org/one"]


def test_a_symlink_is_followed_when_the_source_says_so(store: Store, tmp_path: Path) -> None:
    elsewhere = write(tmp_path / "elsewhere" / "more.urls", "https://example.org/two\n")
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "more.urls").symlink_to(elsewhere)
    collect(store, tmp_path / "inbox", follow_symlinks=True)
    assert [item.url for item in store.all_items()] == ["https://example.org/two"]


def test_a_fifo_in_the_inbox_is_skipped_without_blocking(store: Store, tmp_path: Path) -> None:
    write(tmp_path / "inbox" / "links.urls", "https://example.org/one\n")
    os.mkfifo(tmp_path / "inbox" / "pipe")
    report = collect(store, tmp_path / "inbox")
    assert f"{tmp_path / 'inbox' / 'pipe'}: skipped: not a regular file (a FIFO)" in report.info
    assert report.done == 1


def test_a_file_over_the_size_limit_is_skipped_and_said_once(store: Store, tmp_path: Path) -> None:
    write(tmp_path / "inbox" / "big.urls", "https://example.org/one\n" * 100)
    first = collect(store, tmp_path / "inbox", max_file_mb=0.001)
    assert first.info == [
        f"{tmp_path / 'inbox' / 'big.urls'}: skipped: 2 KB, over the source's limit of 1 KB (max_file_mb)"
    ]
    assert store.all_items() == []
    assert collect(store, tmp_path / "inbox", max_file_mb=0.001).info == []


# -- the user's posts and lists, exactly ----------------------------------------------------

HOOKED_POSTS = """\
Bookmark this and read it tonight, it is a classic ↓
I never understood why so many people want to move abroad for a better salary.
Here are 9 websites to find remote jobs that pay in euros anywhere:
Day 3 in Observability from Zero we look at SLI, SLO & SLA
• SLI → What are we measuring?
• SLO → What are we aiming for?
"""


def test_a_one_line_hook_stays_with_the_counted_list_it_introduces(
    store: Store, tmp_path: Path
) -> None:
    write(tmp_path / "inbox" / "posts.txt", HOOKED_POSTS)
    report = collect(store, tmp_path / "inbox")
    hook = only(store, "I never understood why")
    assert "Here are 9 websites" in (hook.context or "")
    assert len(store.all_items()) == 3
    assert not any("counted list" in line for line in report.info)


REMARKS = """\
Kernels
- FA4 - The continued pattern of authors writing a visual guide
- The scheduling section is interesting
- Qwen FlashQLA
Lectures
- Onur Mutlu Lectures, Digital Design & Comp Arch
- For hardware, pairs well with a design/arch textbook
- Napkin Math
- Great talk on how to reason about napkin math and system bounds extremely quickly.
- You need less precision than you think - prioritize breadth of solutions
- The Illustrated Transformer
- How to deal with the DSL Explosion
"""


def test_a_remark_under_a_list_entry_is_that_entrys_note(store: Store, tmp_path: Path) -> None:
    write(tmp_path / "inbox" / "list.txt", REMARKS)
    collect(store, tmp_path / "inbox")
    assert titles(store) == [
        "FA4",
        "How to deal with the DSL Explosion",
        "Napkin Math",
        "Onur Mutlu Lectures, Digital Design & Comp Arch",
        "Qwen FlashQLA",
        "The Illustrated Transformer",
    ]
    assert "The scheduling section is interesting" in (only(store, "FA4").context or "")
    napkin = only(store, "Napkin Math").context or ""
    assert "Great talk" in napkin and "You need less precision" in napkin


# -- a bad line costs that line -------------------------------------------------------------


def test_a_nul_byte_in_a_journal_costs_only_its_line(store: Store, tmp_path: Path) -> None:
    journal = tmp_path / "inbox" / "til.md"
    journal.parent.mkdir()
    journal.write_bytes(
        b"## 2025-11-07\n- [Kept](https://example.org/kept)\n- [Lost](https://example.org/l\x00st)\n"
        b"- [Also kept](https://example.org/also)\n"
    )
    report = collect(store, tmp_path / "inbox")
    assert sorted(i.url or "" for i in store.all_items()) == [
        "https://example.org/also",
        "https://example.org/kept",
    ]
    assert any(
        line.startswith(f"{journal}:3: binary bytes (NUL or control characters); line skipped")
        for line in report.failures
    )


def test_a_nul_byte_in_bookmarks_costs_only_its_line(store: Store, tmp_path: Path) -> None:
    bookmarks = tmp_path / "bookmarks.html"
    bookmarks.write_bytes(
        b"<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n"
        b'<DT><A HREF="https://example.org/one" ADD_DATE="1700000000">One</A>\n'
        b'<DT><A HREF="https://example.org/two" ADD_DATE="1700000000">T\x00wo</A>\n'
        b'<DT><A HREF="https://example.org/three" ADD_DATE="1700000000">Three</A>\n'
        b"</DL><p>\n"
    )
    [outcome] = import_files(store, [bookmarks], zone=ZONE, now=NOW)
    assert sorted(i.url or "" for i in store.all_items()) == [
        "https://example.org/one",
        "https://example.org/three",
    ]
    assert "  line 4: binary bytes (NUL or control characters); line skipped: " in "\n".join(
        describe(outcome)
    )


def test_a_broken_byte_costs_its_line_and_a_mostly_binary_file_is_binary(
    store: Store, tmp_path: Path
) -> None:
    urls = tmp_path / "links.urls"
    urls.write_bytes(
        "https://example.org/caf\u00e9\nhttps://example.org/b\xffad\nhttps://example.org/ok\n".encode().replace(
            b"\xc3\xbfad", b"\xffad"
        )
    )
    binary = tmp_path / "photo.dat"
    binary.write_bytes(b"https://example.org/x\n" + bytes(range(32)) * 64)
    outcomes = import_files(store, [urls, binary], zone=ZONE, now=NOW)
    lines = [line for outcome in outcomes for line in describe(outcome)]
    assert (
        "  line 2: bytes that are not text in the file's encoding; line skipped: https://example.org/b\ufffdad"
        in lines
    )
    assert f"{binary}: a binary file, not text" in lines
    assert sorted(i.url or "" for i in store.all_items()) == [
        "https://example.org/caf\u00e9",
        "https://example.org/ok",
    ]


def test_a_line_of_punctuation_is_skipped_and_reported(store: Store, tmp_path: Path) -> None:
    journal = write(
        tmp_path / "til.md",
        "## 2025-11-07\n| --- | --- |\n...\nDST Book\n- [A](https://example.org/a)\n",
    )
    [outcome] = import_files(store, [journal], zone=ZONE, now=NOW)
    assert sorted(titles(store)) == ["A", "DST Book"]
    assert (
        "  skipped 2 (lines 2, 3): no words, only punctuation or symbols (not a note)"
        in describe(outcome)
    )


IPV4_FORMS = {
    "http://2130706433:8080/": "http://127.0.0.1:8080/",
    "http://127.1/": "http://127.0.0.1/",
    "http://0x7f.1/": "http://127.0.0.1/",
    "http://0177.0.0.1/": "http://127.0.0.1/",
    "http://0x7f000001/x": "http://127.0.0.1/x",
    "http://10.1.258/": "http://10.1.1.2/",
    "http://3232235777/": "http://192.168.1.1/",
    "http://1.2.3.4/": "http://1.2.3.4/",
}


def test_every_ipv4_form_is_an_item_at_the_address_it_means(store: Store, tmp_path: Path) -> None:
    urls = write(tmp_path / "hosts.urls", "".join(f"{form}\n" for form in IPV4_FORMS))
    import_files(store, [urls], zone=ZONE, now=NOW)
    assert sorted(i.url or "" for i in store.all_items()) == sorted(set(IPV4_FORMS.values()))


def test_bad_url_shapes_are_one_report_line_each_never_a_traceback(
    store: Store, tmp_path: Path
) -> None:
    urls = write(
        tmp_path / "bad.urls", "http://xn--zz/\nhttp://10.0.0.300/\nhttps://example.org/ok\n"
    )
    [outcome] = import_files(store, [urls], zone=ZONE, now=NOW)
    assert describe(outcome)[1:3] == [
        "  line 1: host name not valid (IDNA): http://xn--zz/",
        "  line 2: not an IPv4 address: http://10.0.0.300/",
    ]
    assert [i.url for i in store.all_items()] == ["https://example.org/ok"]


def test_an_item_with_nothing_to_summarise_does_not_stop_the_run(tmp_path: Path) -> None:
    config = write(tmp_path / "digest.toml", '[digest]\ndata_dir = "data"\n')
    (tmp_path / "data").mkdir()
    with open_store(tmp_path / "data" / "digest.db") as store:
        source = store.ensure_source("manual", "manual")
        bare = SavedItem(url=None, title=None, context="…", kind=ItemKind.NOTE)
        worded = SavedItem(url=None, title="DST Book", context="DST Book", kind=ItemKind.NOTE)
        store.save_items(source, [bare, worded], datetime.now(UTC))
    result = CliRunner().invoke(cli, ["now", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert Path(result.stdout.splitlines()[-1]).is_file()
    assert "nothing to summarise; no note" in result.stderr


@pytest.mark.slow  # stress: two gigabytes of files, read in a child process
def test_a_sparse_gigabyte_costs_seconds_and_little_memory(tmp_path: Path) -> None:
    # One journal line, then a gigabyte of NULs (`truncate -s 1G`): a binary file, refused
    # from its start; and 70 KB of journal lines before the NULs: the journal is read and
    # its endless last line capped and skipped undecoded. Measured in a child process.
    script = f"""
import os, time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo
from digest.collect.files import describe, import_files
from digest.store import open_store

folder = Path({str(tmp_path)!r})
sparse = folder / "sparse.md"
sparse.write_text("## 2026-01-05\\n- [One](https://example.org/one)\\n")
os.truncate(sparse, 2**30)
text_first = folder / "text_first.md"
text_first.write_text("## 2026-01-05\\n" + "".join(
    f"- [Post {{n}}](https://example.org/{{n}})\\n" for n in range(2000)))
os.truncate(text_first, 2**30)
store = open_store(folder / "digest.db")
started = time.process_time()
outcomes = import_files(store, [sparse, text_first], zone=ZoneInfo("UTC"), now=datetime.now(UTC))
for outcome in outcomes:
    print(*describe(outcome), sep="\\n")
print("items", store.count_items())
print("cpu", time.process_time() - started)
with open("/proc/self/status") as status:  # not ru_maxrss: it carries the parent's over
    print("peak_mb", next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) / 1024)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    lines = done.stdout.splitlines()
    assert f"{tmp_path / 'sparse.md'}: a binary file, not text" in lines
    assert "items 2000" in lines
    assert any("line longer than 64 KB: the rest (" in line for line in lines)
    figures = dict(line.split() for line in lines if line.startswith(("cpu", "peak_mb")))
    # read whole, it took over a gigabyte; streamed, 62 MB in the benchmark (docs/benchmarks.md)
    assert float(figures["cpu"]) < 10 and float(figures["peak_mb"]) < 150, done.stdout
