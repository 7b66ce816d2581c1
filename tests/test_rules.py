"""[[rules]] on a week of real feeds served on a loopback server, through the real CLI."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pydantic import ValidationError

from digest.cli import cli
from digest.config import RuleConfig
from digest.models import ItemKind
from digest.rules import matches
from fake_openai import FakeOpenAI
from loopback import LOOPBACK_FETCH, LoopbackServer, Response
from weekitems import week_item

WEEK = "2026-W47"
NEWS = {
    "/sponsored": "Sponsored: rent our GPU cloud today",
    "/fusion": "Kernel fusion, a deep dive",
    "/roundup": "Weekly links roundup",
    "/batching": "Continuous batching explained",
    "/paging": "Paged attention in practice",
}
OTHER = {"/gossip": "Celebrity gossip of the week"}
RULES = """
[[rules]]
name = "ads"
words = ["sponsored"]
mute = true

[[rules]]
name = "kernels first"
regex = "(?i)\\\\bkernel"
pin = true

[[rules]]
name = "roundups"
words = "links roundup"
section = "Roundups"

[[rules]]
name = "infra"
regex = "batching|Paged"
tag = "infra"

[[rules]]
name = "no model for gossip"
source = "other"
skip_notes = true
"""


def page(title: str) -> str:
    body = "".join(
        f"<p>{title} is the subject of paragraph {n}; the authors explain what they measured"
        f" and why it mattered to them in experiment {n}.</p>"
        for n in range(8)
    )
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{body}</article></body></html>"


def rss(server: LoopbackServer, entries: dict[str, str]) -> str:
    items = "".join(
        f"<item><title>{title}</title><link>{server.url(path)}</link>"
        f"<pubDate>Wed, 18 Nov 2026 0{n}:00:00 GMT</pubDate></item>"
        for n, (path, title) in enumerate(entries.items())
    )
    return (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
        f"<link>{server.url('/')}</link><description>d</description>{items}</channel></rss>"
    )


@dataclass
class Rig:
    root: Path
    llm: FakeOpenAI

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(cli, [*args, "--config", str(self.root / "digest.toml")])

    def digest(self) -> str:
        return (self.root / "data" / "digests" / f"{WEEK}.md").read_text(encoding="utf-8")


def write_config(root: Path, server: LoopbackServer, llm: FakeOpenAI, rules: str) -> None:
    (root / "digest.toml").write_text(
        f"""
[digest]
data_dir = "data"

[[sources]]
name = "news"
kind = "feed"
url = "{server.url("/news.xml")}"

[[sources]]
name = "other"
kind = "feed"
url = "{server.url("/other.xml")}"

{LOOPBACK_FETCH}
[llm]
provider = "openai"
model = "loop-model"
base_url = "{llm.base_url}"
api_key_env = "LOOP_KEY"
{rules}""",
        encoding="utf-8",
    )


@pytest.fixture
def collected(
    tmp_path: Path, fake_openai: FakeOpenAI, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Rig]:
    """The week collected and its pages fetched; no notes yet."""
    monkeypatch.setenv("LOOP_KEY", "sk-loop")
    for name, entries in (("news", NEWS), ("other", OTHER)):
        server.routes[f"/{name}.xml"] = Response(
            200, rss(server, entries), content_type="application/rss+xml"
        )
        for path, title in entries.items():
            server.routes[path] = Response(200, page(title))
    write_config(tmp_path, server, fake_openai, RULES)
    rig = Rig(tmp_path, fake_openai)
    for command in ("collect", "extract"):
        result = rig.run(command)
        assert result.exit_code == 0, result.output
    yield rig


@pytest.fixture
def rig(collected: Rig) -> Rig:
    """The week noted by the model, but for what the rules keep it off."""
    result = collected.run("summarize")
    assert result.exit_code == 0, result.output
    return collected


def test_a_dry_run_counts_no_call_for_what_the_rules_note_offline(collected: Rig) -> None:
    result = collected.run("now", "--dry-run", "--week", WEEK)
    assert result.exit_code == 0, result.output
    assert "4 notes to write" in result.stdout  # six items: the muted and the gossip offline


def test_each_action_shapes_the_digest(rig: Rig) -> None:
    result = rig.run("compose", "--week", WEEK)
    assert result.exit_code == 0, result.output
    digest = rig.digest()
    assert "Sponsored" not in digest
    assert "*6 items: 5 noted, 1 muted by rules.*" in digest
    assert "1 extractive summary (offline, no LLM)" in digest  # the gossip's; not the ad's
    assert "**Must read:** [Kernel fusion, a deep dive]" in digest
    sections = digest.split("\n## ")
    roundups = next(s for s in sections if s.startswith("Roundups"))
    assert "Weekly links roundup" in roundups
    infra = next(s for s in sections if s.startswith("infra"))
    assert "Continuous batching" in infra and "Paged attention" in infra
    fusion = next(s for s in sections if "- **[Kernel fusion" in s)
    assert fusion.split("\n- ")[1].startswith("**[Kernel fusion")  # pinned: first


def test_a_muted_item_stays_in_the_store_and_in_search(rig: Rig) -> None:
    result = rig.run("search", "sponsored")
    assert result.exit_code == 0
    assert "Sponsored: rent our GPU cloud today" in result.stdout


def test_skip_notes_spends_no_model_call_on_the_item(rig: Rig) -> None:
    sent = [str(request["messages"]) for request in rig.llm.requests]
    assert sent and not any("Celebrity gossip" in text for text in sent)
    assert any("Kernel fusion" in text for text in sent)
    with sqlite3.connect(rig.root / "data" / "digest.db") as db:
        noted_by = dict(
            db.execute("SELECT i.title, n.model FROM items i JOIN notes n ON n.id = i.note_id")
        )
    assert noted_by["Celebrity gossip of the week"] == "offline"
    assert noted_by["Kernel fusion, a deep dive"] == "loop-model"


def test_rules_test_shows_each_rules_matches_and_the_digest_without_it(rig: Rig) -> None:
    calls = len(rig.llm.requests)
    result = rig.run("rules", "test", "--week", WEEK)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "rule 'ads' (mute): 1 item in 2026-W47" in out
    ads = out.split("rule 'ads'")[1].split("\nrule ")[0]
    assert "Sponsored: rent our GPU cloud today" in ads
    assert "+- **[Sponsored: rent our GPU cloud today]" in ads  # back in the digest without it
    assert "-*6 items: 5 noted, 1 muted by rules.*" in ads
    assert "rule 'infra' (tag infra): 2 items" in out
    assert "rule 'no model for gossip' (skip_notes): 1 item" in out
    gossip = out.split("rule 'no model for gossip'")[1]
    assert "without it, the digest is the same" in gossip
    assert len(rig.llm.requests) == calls  # composed offline


@pytest.mark.parametrize(
    ("regex", "why"),
    [("a(b", "missing ): a(b"), ("(?<=a)b", "invalid perl operator: (?<="), ("(x)\\\\1", "\\1")],
)
def test_a_regex_the_engine_refuses_is_a_config_error_with_key_and_line(
    tmp_path: Path, fake_openai: FakeOpenAI, server: LoopbackServer, regex: str, why: str
) -> None:
    rule = f'\n[[rules]]\nname = "bad"\nregex = "{regex}"\nmute = true\n'
    write_config(tmp_path, server, fake_openai, rule)
    result = CliRunner().invoke(cli, ["rules", "test", "--config", str(tmp_path / "digest.toml")])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert f"{tmp_path / 'digest.toml'}:28: rules[1].regex: regex not accepted" in line
    assert why in line


STALLING = [
    ("(?i)(\\\\w+\\\\s?)+sponsored", "/words"),
    ("(a+)+$", "/aaaa"),
    ("(x+x+)+y", "/xxxx"),
]


@pytest.mark.parametrize(("regex", "path"), STALLING)
def test_a_catastrophic_regex_cannot_stall_rules_test_or_a_run(
    collected: Rig, server: LoopbackServer, regex: str, path: str
) -> None:
    write_config(
        collected.root,
        server,
        collected.llm,
        f'[[rules]]\nname = "r"\nregex = "{regex}"\nmute = true\n',
    )
    server.routes["/news.xml"] = Response(
        200, rss(server, {**NEWS, path: "Evil"}), content_type="application/rss+xml"
    )
    text = {"/words": " ".join(["word"] * 17), "/aaaa": "a" * 50_000 + "!", "/xxxx": "x" * 50_000}[
        path
    ]
    server.routes[path] = Response(200, page(text))

    started = time.monotonic()
    ran = collected.run("now", "--week", WEEK)
    tested = collected.run("rules", "test", "--week", WEEK)

    assert time.monotonic() - started < 60
    assert ran.exit_code in (0, 3) and tested.exit_code == 0, ran.output + tested.output
    assert "rule 'r' (mute)" in tested.output


def test_an_unknown_rule_field_is_named_with_a_suggestion(
    tmp_path: Path, fake_openai: FakeOpenAI, server: LoopbackServer
) -> None:
    write_config(
        tmp_path,
        server,
        fake_openai,
        '\n[[rules]]\nname = "x"\nhost = "a.example"\nmuet = true\n',
    )
    result = CliRunner().invoke(cli, ["rules", "test", "--config", str(tmp_path / "digest.toml")])
    assert result.exit_code == 1
    assert "rules[1].muet: unknown key; did you mean 'mute'?" in result.stderr


# -- what each condition matches, on items as the store returns them --

MONDAY = datetime(2026, 11, 16, tzinfo=UTC)


def rule(**fields: Any) -> RuleConfig:
    return RuleConfig.model_validate({"name": "r", "mute": True, **fields})


def test_conditions_match_hosts_with_subdomains_languages_kinds_tags_and_lengths() -> None:
    item = week_item(
        1,
        MONDAY,
        url="https://blog.example.com/p",
        title="A post",
        text="one two three four",
        language="de-AT",
        topic="Rust",
        kind=ItemKind.POST,
        sources=("inbox",),
    )
    assert matches(rule(host="example.com"), item)
    assert not matches(rule(host="ample.com"), item)
    assert matches(rule(language=["en", "de"]), item) and not matches(rule(language="en"), item)
    assert matches(rule(kind="post", source="inbox"), item)
    assert not matches(rule(kind="post", source="feeds"), item)  # every condition must hold
    assert matches(rule(tags="rust"), item)
    assert matches(rule(min_words=4, max_words=4), item) and not matches(rule(min_words=5), item)
    assert matches(rule(words="TWO three"), item) and not matches(rule(words="thr"), item)


def test_a_rule_that_matches_nothing_or_does_nothing_is_refused() -> None:
    with pytest.raises(ValidationError, match="matches nothing"):
        RuleConfig.model_validate({"name": "r", "mute": True})
    with pytest.raises(ValidationError, match="does nothing"):
        RuleConfig.model_validate({"name": "r", "host": "a.example"})


def test_rules_test_without_rules_says_so(
    tmp_path: Path, fake_openai: FakeOpenAI, server: LoopbackServer
) -> None:
    write_config(tmp_path, server, fake_openai, "")
    config = tmp_path / "digest.toml"
    result = CliRunner().invoke(cli, ["rules", "test", "--config", str(config)])
    assert (result.exit_code, result.stdout) == (0, f"no [[rules]] in {config}\n")


def test_interests_written_under_a_section_say_where_they_go(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text('[digest]\ndata_dir = "data"\ninterests = ["gpu kernels"]\n')
    result = CliRunner().invoke(cli, ["rules", "test", "--config", str(config)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"digest: config error: {config}:3: digest.interests: unknown key;"
        " interests goes at the top of the file, before any [section]\n"
    )
