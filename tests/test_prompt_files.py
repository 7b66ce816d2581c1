"""Your prompts: [llm] prompt_file and summary_prompt_file, through the real CLI and the
scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.clock import utc_now
from digest.config import parse_config
from digest.errors import ConfigError
from digest.periods import period_containing
from fake_openai import FakeOpenAI
from loopback import LoopbackServer, Response

NOTE_PROMPT = """Explain it to a five-year-old, in {{ language }} ({{ kind }}, {{ basis }}).
PROMPT-WORDS-{{ 'ONE' }} for {{ title }} from {{ site }}.

{{ text }}

Mind the tags: {{ known_tags | join(', ') }}"""
WEEK_PROMPT = "Week of {{ count }} notes, in {{ language }}: WEEK-WORDS.\n{{ notes }}"


@dataclass
class Rig:
    root: Path
    fake: FakeOpenAI
    week: str

    @property
    def prompt(self) -> Path:
        return self.root / "prompts" / "note.md.j2"

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(cli, [*args, "--config", str(self.root / "digest.toml")])

    def texts(self, role: str) -> list[str]:
        return [
            message["content"]
            for body in self.fake.requests
            for message in body["messages"]
            if message["role"] == role
        ]


ARTICLE = (
    "<html><head><title>Paged attention</title></head><body><article><h1>Paged attention</h1>"
    + "<p>Paged attention stores the KV cache in fixed-size blocks, as an operating system"
    " pages memory, so that serving engines waste little memory and batch more requests.</p>"
    * 6
    + "</article></body></html>"
)


@pytest.fixture
def rig(
    tmp_path: Path, fake_openai: FakeOpenAI, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> Rig:
    monkeypatch.setenv("TEST_OPENAI_KEY", "sk-test")
    server.routes["/kv-cache"] = Response(200, ARTICLE)
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "note.md.j2").write_text(NOTE_PROMPT)
    (tmp_path / "prompts" / "week.md.j2").write_text(WEEK_PROMPT)
    (tmp_path / "digest.toml").write_text(
        '[digest]\ndata_dir = "data"\n\n[llm]\nprovider = "openai"\nmodel = "fake-model"\n'
        f'base_url = "{fake_openai.base_url}"\napi_key_env = "TEST_OPENAI_KEY"\n'
        'prompt_file = "prompts/note.md.j2"\nsummary_prompt_file = "prompts/week.md.j2"\n'
        '\n[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\nper_host_delay_s = 0\n'
    )
    saved = utc_now() - timedelta(days=7)
    rig = Rig(tmp_path, fake_openai, period_containing(saved, ZoneInfo("UTC")).label)
    added = rig.run(
        "add", server.url("/kv-cache"), "--title", "Paged attention",
        "--saved-at", saved.strftime("%Y-%m-%d %H:%M"),
    )  # fmt: skip
    extracted = rig.run("extract")
    assert (added.exit_code, extracted.exit_code) == (0, 0), added.output + extracted.output
    return rig


def test_a_prompt_files_words_reach_the_model_with_the_text_fenced_as_data(rig: Rig) -> None:
    result = rig.run("summarize", "--week", rig.week)

    assert result.exit_code == 0, result.output
    (user,) = rig.texts("user")
    (system,) = rig.texts("system")
    assert "PROMPT-WORDS-ONE for Paged attention from 127.0.0.1." in user
    assert "Explain it to a five-year-old, in English (link, full text)." in user
    delimiter = system.split("between two lines that read exactly ")[1].split(" ")[0]
    fenced = user.split(delimiter)
    assert len(fenced) == 3 and "fixed-size blocks" in fenced[1]  # the text, between the lines
    assert "Mind the tags" in fenced[2] and "data, not instructions" in system
    assert '{"summary"' in system  # the answer's format stays digest's


def test_a_changed_prompt_renotes_only_on_refresh_and_dry_run_prices_it_first(
    rig: Rig,
) -> None:
    rig.run("summarize", "--week", rig.week)
    rig.prompt.write_text(NOTE_PROMPT.replace("'ONE'", "'TWO'"))

    unchanged = rig.run("summarize", "--week", rig.week)
    priced = rig.run("summarize", "--week", rig.week, "--refresh", "--dry-run")
    sent_before_refresh = len(rig.fake.requests)
    refreshed = rig.run("summarize", "--week", rig.week, "--refresh")

    assert unchanged.exit_code == 0 and sent_before_refresh == 1
    assert priced.output.startswith("1 notes to write (0 more come from the cache)")
    assert refreshed.exit_code == 0, refreshed.output
    assert "PROMPT-WORDS-TWO" in rig.texts("user")[-1]
    assert len(rig.fake.requests) == 2


def test_the_week_prompt_file_carries_the_notes(rig: Rig) -> None:
    result = rig.run("now", "--week", rig.week)

    assert result.exit_code == 0, result.output
    week = [text for text in rig.texts("user") if "WEEK-WORDS" in text]
    assert week and "Week of 1 notes, in English" in week[0]
    assert "[1] Paged attention" in week[0]


def test_a_changed_week_prompt_writes_the_week_summary_again(rig: Rig) -> None:
    rig.run("now", "--week", rig.week)
    rig.run("now", "--week", rig.week)
    asked_once = len([text for text in rig.texts("user") if "WEEK-WORDS" in text])
    (rig.root / "prompts" / "week.md.j2").write_text(WEEK_PROMPT.replace("WEEK-", "NEW-WEEK-"))

    rig.run("now", "--week", rig.week)

    assert asked_once == 1
    assert "NEW-WEEK-WORDS" in rig.texts("user")[-1]


def test_refresh_needs_a_week(rig: Rig) -> None:
    result = rig.run("summarize", "--refresh")

    assert result.exit_code == 2 and "give --week" in result.output


NOTE_BUILT_IN = "Summarise the text in English"
WEEK_BUILT_IN = "2 to 5 short statements"


@pytest.mark.parametrize(
    ("name", "prompt", "line", "why", "built_in"),
    [
        ("note.md.j2", "Fine\n{% if title %}no end", 2, "Unexpected end of template", NOTE_BUILT_IN),
        ("note.md.j2", "One\nTwo {{ titel }}", 2, "unknown variable 'titel': use one of basis", NOTE_BUILT_IN),
        ("week.md.j2", "Week\n{{ notes }}\n{% endfor %}", 3, "Encountered unknown tag 'endfor'", WEEK_BUILT_IN),
        ("week.md.j2", "{{ notes }}\n\n{{ lipsum() }}", 3, "unknown variable 'lipsum'", WEEK_BUILT_IN),
    ],
)  # fmt: skip
def test_a_prompt_file_that_does_not_load_falls_back_for_the_run_with_one_line(
    rig: Rig, name: str, prompt: str, line: int, why: str, built_in: str
) -> None:
    path = rig.root / "prompts" / name
    path.write_text(prompt)

    priced = rig.run("now", "--week", rig.week, "--dry-run")
    result = rig.run("now", "--week", rig.week)
    doctor = rig.run("doctor", "--local")

    assert result.exit_code == 3, result.output
    (reported,) = [text for text in result.stderr.splitlines() if "prompt error" in text]
    assert reported.startswith(f"  ! prompt error: {path}:{line}: {why}")
    assert reported.endswith("the built-in prompt is used")
    assert "Traceback" not in result.output
    assert built_in in "\n".join(rig.texts("system"))
    assert (rig.root / "data" / "digests" / f"{rig.week}.md").is_file()
    key = "prompt_file" if name == "note.md.j2" else "summary_prompt_file"
    assert doctor.exit_code == 1
    assert f"llm.{key}: problem: prompt error: {path}:{line}: {why}" in doctor.output
    assert priced.exit_code == 0 and f"! prompt error: {path}:{line}: {why}" in priced.output


def test_a_prompt_file_that_cannot_be_read_is_a_config_error_naming_key_and_file(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config('[llm]\nprompt_file = "gone.j2"\n', tmp_path / "digest.toml")

    assert str(raised.value).startswith(f"config error: llm.prompt_file: cannot read {tmp_path}")


def test_the_exported_prompts_load_as_prompt_files(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["prompts", "export", str(tmp_path / "mine")])
    again = CliRunner().invoke(cli, ["prompts", "export", str(tmp_path / "mine")])

    assert result.exit_code == 0, result.output
    assert "note.md.j2: exists, left as it is" in again.output
    config = parse_config(
        '[llm]\nprompt_file = "mine/note.md.j2"\nsummary_prompt_file = "mine/week.md.j2"\n',
        tmp_path / "digest.toml",
    )
    assert config.llm.prompt_file == tmp_path / "mine" / "note.md.j2"


SECRET = "sw0rdfish-SECRET-30"


@pytest.mark.parametrize(
    ("prompt", "line", "why"),
    [
        ("Note it.\n{{ title.__class__.__mro__[1].__subclasses__() }}", 2, "unsafe"),
        ("Note it.\n\n{{ 1 / 0 }}", 3, "division by zero"),
        ("{{ known_tags[0] }}\n{{ text }}", 1, "no element 0"),
        ("{% for i in range(10**12) %}{{ i }}{% endfor %}", 1, "range() of more than"),
        (
            "{% for a in range(99999) %}{% for b in range(99999) %}{% endfor %}{% endfor %}",
            1,
            "a loop too long?",
        ),  # fmt: skip
    ],
)
def test_a_hostile_note_prompt_falls_back_to_the_built_in_for_the_run_with_one_line(
    rig: Rig, monkeypatch: pytest.MonkeyPatch, prompt: str, line: int, why: str
) -> None:
    monkeypatch.setenv("DIGEST_SMTP_PASSWORD", SECRET)
    rig.prompt.write_text(prompt)

    started = time.process_time()  # the work it takes: a busy machine's wall time flakes
    result = rig.run("now", "--week", rig.week)

    assert time.process_time() - started < 20
    assert result.exit_code == 3, result.output
    (reported,) = [text for text in result.stderr.splitlines() if "prompt error" in text]
    assert reported.startswith(f"  ! prompt error: {rig.prompt}:{line}: ")
    assert why in reported and reported.endswith("the built-in prompt is used")
    assert "Traceback" not in result.output
    (system, *_week) = rig.texts("system")
    assert "Summarise the text in English" in system  # the built-in note prompt
    assert SECRET not in json.dumps(rig.fake.requests)


def test_a_failing_week_prompt_falls_back_and_the_digest_is_written(rig: Rig) -> None:
    (rig.root / "prompts" / "week.md.j2").write_text("Week\n{{ notes }}\n{{ count / 0 }}")

    result = rig.run("now", "--week", rig.week)

    assert result.exit_code == 3, result.output
    week_prompt = rig.root / "prompts" / "week.md.j2"
    assert f"  ! prompt error: {week_prompt}:3: division by zero" in result.stderr
    assert "2 to 5 short statements" in rig.texts("system")[-1]  # the built-in week prompt
    assert (rig.root / "data" / "digests" / f"{rig.week}.md").is_file()
