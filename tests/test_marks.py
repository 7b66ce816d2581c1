"""The reader's marks over a journal imported for real (no network): headings and hosts
searched, any form of a saved URL read, starred and unread, stars listed and exported."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli

JOURNAL = """---
title: "Today I Learned"
---

## 2026-11-17
### Rust Shenanigans
- https://fasterthanli.me/articles/pin-and-suffering
- https://fasterthanli.me/articles/i-want-off-mr-golangs-wild-ride

### Inference Engine blogs
- [Inside vLLM](https://www.aleksagordic.com/blog/vllm)
- [Queues and batching](https://queues.example.org/batching/)
"""


@dataclass
class Rig:
    root: Path

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(cli, [*args, "--config", str(self.root / "digest.toml")])

    def ok(self, *args: str) -> str:
        result = self.run(*args)
        assert result.exit_code == 0, result.output
        return result.stdout

    def search(self, query: str) -> list[str]:
        out = self.ok("search", query, "--json")
        return sorted(str(json.loads(line)["url"]) for line in out.splitlines())

    def exported(self) -> dict[str, dict[str, object]]:
        rows = [json.loads(line) for line in self.ok("export").splitlines()]
        return {str(row["url"]): row for row in rows}


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    (tmp_path / "journal.md").write_text(JOURNAL, encoding="utf-8")
    (tmp_path / "digest.toml").write_text('[digest]\ndata_dir = "data"\n', encoding="utf-8")
    rig = Rig(tmp_path)
    rig.ok("import", str(tmp_path / "journal.md"))
    return rig


RUST = [
    "https://fasterthanli.me/articles/i-want-off-mr-golangs-wild-ride",
    "https://fasterthanli.me/articles/pin-and-suffering",
]


def test_the_journals_headings_and_the_sites_are_searched(rig: Rig) -> None:
    assert rig.search("rust") == RUST  # the heading "Rust Shenanigans", not in any title
    assert rig.search("section:Rust") == RUST
    assert rig.search('section:"Inference Engine"') == [
        "https://queues.example.org/batching/",
        "https://www.aleksagordic.com/blog/vllm",
    ]
    assert rig.search("host:fasterthanli.me") == RUST
    assert rig.search("site:aleksagordic.com") == ["https://www.aleksagordic.com/blog/vllm"]
    assert rig.search("host:queues.example.org/") == ["https://queues.example.org/batching/"]
    hits = [json.loads(line) for line in rig.ok("search", "section:Rust", "--json").splitlines()]
    assert sorted(hit["title"] for hit in hits) == [  # saved without a title: their address's
        "I want off Mr Golang's wild ride",
        "Pin and suffering",
    ]


@pytest.mark.parametrize(
    "form",
    [
        "https://www.aleksagordic.com/blog/vllm",
        "https://aleksagordic.com/blog/vllm/",
        "http://aleksagordic.com/blog/vllm",
        "aleksagordic.com/blog/vllm",
        "www.aleksagordic.com/blog/vllm/",
        "HTTPS://WWW.Aleksagordic.com/blog/vllm#top",
    ],
)
def test_read_unread_and_star_take_any_form_of_a_saved_url(rig: Rig, form: str) -> None:
    saved = "https://www.aleksagordic.com/blog/vllm"
    assert rig.ok("read", form).startswith("read: ")
    assert rig.exported()[saved]["read_at"] is not None
    assert rig.ok("unread", form).startswith("unread: ")
    assert rig.exported()[saved]["read_at"] is None
    assert rig.ok("star", form).endswith("Inside vLLM\n")
    assert rig.exported()[saved]["starred"] is True
    assert rig.ok("star", "--unstar", form).startswith("unstarred: ")
    assert rig.exported()[saved]["starred"] is False


def test_stars_are_listed_and_exported_and_unknown_refs_named(rig: Rig) -> None:
    assert "no starred items" in rig.ok("star", "--list")
    rows = rig.exported()
    golang = int(str(rows[RUST[0]]["id"]))
    rig.ok("star", str(golang), "queues.example.org/batching")
    listed = rig.ok("star", "--list").splitlines()
    assert f"{golang}  I want off Mr Golang's wild ride  {RUST[0]}" in listed
    assert any("Queues and batching" in line for line in listed)
    starred = {url for url, row in rig.exported().items() if row["starred"]}
    assert starred == {RUST[0], "https://queues.example.org/batching/"}
    result = rig.run("star", "9999", "https://nowhere.example/x")
    assert result.exit_code == 1
    assert "no saved item with id or URL '9999', 'https://nowhere.example/x'" in result.stderr
    assert rig.run("star").exit_code == 2  # neither refs nor --list
    assert rig.run("unread", "not a url").exit_code == 1
