"""Never pay twice: note attempts recorded on items and capped over runs, the response format
found once per server and model, only the requested week noted, a kill costing at most the
calls in flight, and a week overview that keeps what it can."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

from digest.cli import cli
from digest.commands.export import write_export
from digest.commands.status import StatusQuery, gather_status, render_status
from digest.config import Config
from digest.models import Stage
from digest.notes.bounded import answer_cap
from digest.notes.stage import NotesScope
from digest.periods import parse_week
from digest.pipeline import RunResult, run
from digest.store import open_store
from fake_openai import USABLE_SHAPES, FakeOpenAI, Reply
from loopback import free_port
from test_notes import NOW, WEEK, config_for, db, digest_text, seed

TOPICS = (
    "compilers parsing grammars", "databases indexes transactions", "kernels schedulers threads",
    "browsers layout rendering", "networks routing congestion", "graphics shaders textures",
    "storage flash wearing", "editors buffers undo", "shells pipes signals", "caches eviction",
)  # fmt: skip


def pages(count: int, prefix: str = "https://site.example/") -> dict[str, str]:
    return {
        f"{prefix}{n}": f"Article {n} on {TOPICS[n % len(TOPICS)]}: how {TOPICS[n % 10]} work"
        f" in practice, variant {n}, with measurements and advice for teams at {prefix}."
        for n in range(count)
    }


def notes_run(config: Config, days_later: float = 0) -> RunResult:
    moment = NOW + timedelta(days=days_later)
    return run(config, "summarize", period=WEEK, stages=(Stage.NOTES,), clock=lambda: moment)


def note_calls(fake_openai: FakeOpenAI) -> int:
    return sum(1 for body in fake_openai.requests if "[" not in body["messages"][1]["content"][:80])


def model_notes(config: Config) -> int:
    with db(config) as conn:
        query = "SELECT count(*) FROM items i JOIN notes n ON n.id = i.note_id WHERE n.model = 'm'"
        return int(conn.execute(query).fetchone()[0])


def test_three_runs_over_twenty_items_call_at_most_once_each_then_never(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, concurrency=4)
    seed(config, pages(20))
    fake_openai.responder = FakeOpenAI.mixed(USABLE_SHAPES)

    counts = []
    for later in (0, 2, 9):  # days: past any backoff
        before = len(fake_openai.requests)
        notes_run(config, later)
        counts.append(len(fake_openai.requests) - before)

    assert counts[0] <= 20 and counts[1:] == [0, 0]
    assert model_notes(config) == 20


def test_a_server_whose_every_answer_is_unusable_is_asked_at_most_max_attempts_times(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=3)
    seed(config, pages(3))
    fake_openai.responder = FakeOpenAI.shaped("refusal")

    for later in (0, 2, 9):
        result = notes_run(config, later)

    assert len(fake_openai.requests) == 3 * 3
    with db(config) as conn:
        rows = conn.execute("SELECT note_attempts, note_error, note_next_attempt_at FROM items")
        for attempts, error, next_at in rows:
            assert attempts == 3 and "placeholder or refusal" in error
            assert next_at is None  # `status` shows no next attempt: none is left
    assert result.failures == []  # nothing was tried in the last run
    assert "(extractive summary)" in notes_and_digest(config)


def notes_and_digest(config: Config) -> str:
    run(config, "compose", period=WEEK, stages=(Stage.DELIVER,), clock=lambda: NOW)
    return digest_text(config)


def test_the_same_text_saved_again_later_is_not_asked_for_again(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai)
    text = next(iter(pages(1).values()))
    seed(config, {"https://first.example/a": text})
    fake_openai.responder = FakeOpenAI.shaped("refusal")
    notes_run(config)
    later = NOW + timedelta(days=8)
    seed(config, {"https://second.example/b": text}, saved_at=later)

    period = parse_week("2026-W48", ZoneInfo("UTC"))
    assert period.start <= later < period.end
    run(config, "now", period=period, stages=(Stage.NOTES,), clock=lambda: later,
        notes=NotesScope(only_period=True))  # fmt: skip

    assert len(fake_openai.requests) == 2  # the first item's call and repair, nothing since
    with db(config) as conn:
        assert conn.execute("SELECT count(*) FROM items WHERE note_id IS NULL").fetchone() == (0,)


def test_a_failed_attempt_waits_out_its_backoff(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=3)
    seed(config, pages(1))
    fake_openai.script(FakeOpenAI.text(""), FakeOpenAI.text(""))

    notes_run(config)
    notes_run(config, 0.01)  # 15 minutes later: within the first backoff (30 min)
    assert len(fake_openai.requests) == 2
    with db(config) as conn:
        (when,) = conn.execute("SELECT note_next_attempt_at FROM items").fetchone()
    assert when == (NOW + timedelta(minutes=30)).isoformat()

    notes_run(config, 1)
    assert len(fake_openai.requests) == 3 and model_notes(config) == 1


def test_json_schema_rejected_is_probed_once_and_remembered_for_later_runs(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, concurrency=4)
    seed(config, pages(6))
    fake_openai.reject_formats = {"json_schema": 400, "json_object": 422}

    notes_run(config)
    first = [_format(body) for body in fake_openai.requests]
    seed(config, pages(4, "https://other.example/"))
    notes_run(config)
    second = [_format(body) for body in fake_openai.requests[len(first) :]]

    assert first == ["json_schema", "json_object"] + ["plain"] * 6
    assert second == ["plain"] * 4
    assert model_notes(config) == 10
    with db(config) as conn:
        row = conn.execute("SELECT base_url, model, response_format FROM llm_formats").fetchone()
    assert row == (fake_openai.base_url, "m", "plain")


def _format(body: dict[str, Any]) -> str:
    return str(body.get("response_format", {}).get("type", "plain"))


def test_a_new_text_is_asked_for_again_after_its_old_text_ran_out_of_attempts(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai)
    ids = seed(config, pages(1))
    fake_openai.script(FakeOpenAI.text("N/A"), FakeOpenAI.text("N/A"))
    notes_run(config)
    seed(config, {url: "A better copy about compilers and parsers." for url in ids})

    notes_run(config)

    assert len(fake_openai.requests) == 3 and model_notes(config) == 1


def test_now_for_a_week_notes_only_that_weeks_items(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai)
    seed(config, pages(3))
    seed(config, pages(4, "https://older.example/"), saved_at=NOW - timedelta(days=14))
    path = tmp_path / "digest.toml"
    path.write_text(
        f'[digest]\ndata_dir = "data"\n\n[llm]\nprovider = "openai"\nmodel = "m"\n'
        f'base_url = "{fake_openai.base_url}"\nmax_retries = 0\n'
    )

    dry = CliRunner().invoke(cli, ["now", "--dry-run", "--week", WEEK.label, "--config", str(path)])
    result = CliRunner().invoke(cli, ["now", "--week", WEEK.label, "--config", str(path)])

    assert dry.exit_code == 0 and "3 notes to write" in dry.stdout, dry.output
    assert result.exit_code == 0, result.output
    assert (
        note_calls(fake_openai) == 3 and len(fake_openai.requests) == 4
    )  # and the week's overview
    with db(config) as conn:
        unnoted = conn.execute("SELECT url FROM items WHERE note_id IS NULL ORDER BY url")
        assert [url for (url,) in unnoted] == sorted(pages(4, "https://older.example/"))


def test_dry_run_needs_no_api_key(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    config = config_for(tmp_path, fake_openai)
    seed(config, pages(2))
    path = tmp_path / "digest.toml"
    path.write_text('[digest]\ndata_dir = "data"\n\n[llm]\nprovider = "openai"\nmodel = "m"\n')

    dry = CliRunner().invoke(cli, ["now", "--dry-run", "--week", WEEK.label, "--config", str(path)])

    assert dry.exit_code == 0, dry.output
    assert "2 notes to write" in dry.stdout and "3 LLM calls" in dry.stdout
    assert fake_openai.requests == []


@pytest.mark.slow
def test_a_kill_during_notes_costs_at_most_the_calls_in_flight(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, concurrency=2)
    seed(config, pages(12))
    path = tmp_path / "digest.toml"
    path.write_text(
        f'[digest]\ndata_dir = "data"\n\n[llm]\nprovider = "openai"\nmodel = "m"\n'
        f'base_url = "{fake_openai.base_url}"\nconcurrency = 2\n'
    )
    fake_openai.delay_s = 0.3
    command = [sys.executable, "-m", "digest", "summarize", "--config", str(path)]
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI")}
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(fake_openai.requests) < 6 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    before = len(fake_openai.requests)
    noted_before = model_notes(config)
    fake_openai.delay_s = 0.0

    rerun = CliRunner().invoke(cli, ["summarize", "--config", str(path)])

    assert rerun.exit_code == 0, rerun.output
    assert 0 < noted_before < 12, "the kill came too late or too early to test anything"
    assert before - noted_before <= 2  # lost: the calls in flight (llm.concurrency) at most
    assert len(fake_openai.requests) - before == 12 - noted_before  # no note made is asked again
    assert model_notes(config) == 12


def test_week_overview_keeps_statements_with_valid_citations(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai)
    ids = list(seed(config, pages(2)).values())
    notes_run(config)
    overview = (
        f"Sure! {{'statements': [{{'text': 'Compilers and databases meet.', 'items': ['{ids[0]}']}},"
        " {'text': 'A claim about nothing.', 'items': [999]}, {'text': 'No citation.'},],"
        f" 'must_read': [{ids[1]}, 999]}}"
    )
    fake_openai.script(FakeOpenAI.text(overview))

    text = notes_and_digest(config)

    assert "- Compilers and databases meet. ([0](https://site.example/0))" in text
    assert "claim about nothing" not in text and "No citation" not in text
    assert "**Must read:** [1](https://site.example/1)" in text


def test_an_unusable_week_overview_leaves_the_offline_one_marked_and_is_not_asked_again(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai)
    seed(config, pages(2))
    notes_run(config)
    bad = '{"statements": [{"text": "Invented.", "items": [999]}], "must_read": []}'
    fake_openai.script(FakeOpenAI.text(bad), FakeOpenAI.text(bad))

    text = notes_and_digest(config)
    calls = len(fake_openai.requests)
    notes_and_digest(config)

    assert "Week summary: from the notes' tags (offline; the model's answer was not used:" in text
    assert "Invented" not in text
    assert len(fake_openai.requests) == calls


def test_a_note_in_another_language_is_asked_for_once_more_then_the_offline_note_stands(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=3)
    seed(config, pages(1))
    fake_openai.responder = FakeOpenAI.shaped("other_language")  # German, English configured

    notes_run(config)

    assert len(fake_openai.requests) == 2
    assert "must be written in English" in fake_openai.messages(1)[-1]["content"]
    assert model_notes(config) == 0
    with db(config) as conn:
        attempts, error = conn.execute("SELECT note_attempts, note_error FROM items").fetchone()
    assert attempts == 2 and "the note must be written in English" in error
    assert "(extractive summary)" in notes_and_digest(config)


def test_summarize_retry_asks_again_for_items_whose_attempts_ran_out(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai)
    seed(config, pages(2))
    path = tmp_path / "digest.toml"
    path.write_text(
        f'[digest]\ndata_dir = "data"\n\n[llm]\nprovider = "openai"\nmodel = "m"\n'
        f'base_url = "{fake_openai.base_url}"\nmax_retries = 0\nconcurrency = 1\n'
    )
    fake_openai.responder = FakeOpenAI.shaped("refusal")
    first = CliRunner().invoke(cli, ["summarize", "--config", str(path)])
    again = CliRunner().invoke(cli, ["summarize", "--config", str(path)])
    assert first.exit_code == again.exit_code == 0
    assert "`digest summarize --retry` asks again" in first.stderr
    assert len(fake_openai.requests) == 4  # two items, one repair each; the rerun asks nothing
    fake_openai.responder = None

    retried = CliRunner().invoke(cli, ["summarize", "--retry", "--config", str(path)])

    assert retried.exit_code == 0, retried.output
    assert len(fake_openai.requests) == 6 and model_notes(config) == 2


def test_status_lists_items_whose_note_failed_with_why_and_when_next(
    tmp_path: Path, fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=3)
    ids = seed(config, pages(2))
    fake_openai.responder = FakeOpenAI.shaped("refusal")
    notes_run(config)

    with open_store(config.db_path) as store:
        data = gather_status(store, StatusQuery(failed_only=True))
    render_status(data, as_json=False)

    block = data["items_to_look_at"]
    assert block["total"] == 2
    assert {item["id"] for item in block["items"]} == set(ids.values())
    for item in block["items"]:
        assert item["state"] == "fetched" and 1 <= item["note_attempts"] <= 3
        assert "placeholder or refusal" in item["note_error"] and item["note_next_attempt_at"]
    assert "note: " in capsys.readouterr().out


def test_a_server_that_always_fails_with_500_gets_at_most_max_attempts_sends_per_item(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=2, max_retries=3)
    seed(config, pages(2))
    failing = FakeOpenAI.error(500, "internal error", headers={"Retry-After": "0"})
    fake_openai.responder = lambda request: failing

    for later in (0, 2, 9, 20):  # days: past the backoff, capped at one day
        notes_run(config, later)

    assert note_calls(fake_openai) == 2 * 2  # our own retries (llm.max_retries) are sends too
    with db(config) as conn:
        rows = conn.execute("SELECT note_attempts, note_error FROM items").fetchall()
    assert [attempts for attempts, _error in rows] == [2, 2]
    assert all("HTTP 500" in error for _attempts, error in rows)
    assert "(extractive summary)" in notes_and_digest(config)


def test_a_server_that_always_times_out_gets_at_most_max_attempts_sends_per_item(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    # a timeout a loaded machine's request reaches the server well within (0.2 s did not)
    config = config_for(tmp_path, fake_openai, max_attempts=2, max_retries=1, timeout_s=1.0)
    seed(config, pages(1))
    fake_openai.delay_s = 300  # far beyond llm.timeout_s

    for later in (0, 2, 9, 20):
        result = notes_run(config, later)

    assert len(fake_openai.requests) == 2
    with db(config) as conn:
        assert conn.execute("SELECT note_attempts FROM items").fetchone() == (2,)
    assert result.failures == []  # nothing was sent in the last run


def test_a_server_that_cannot_be_reached_spends_no_attempts(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=2)
    unreachable = fake_openai.base_url.replace(str(fake_openai.port), str(free_port()))
    seed(config, pages(1))

    notes_run(
        config.model_copy(update={"llm": config.llm.model_copy(update={"base_url": unreachable})})
    )
    notes_run(config, 2)

    assert len(fake_openai.requests) == 1 and model_notes(config) == 1


def test_sends_before_the_llm_became_unavailable_still_count(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=2, max_retries=3)
    seed(config, pages(1))
    failing = FakeOpenAI.error(500, "internal error", headers={"Retry-After": "0"})
    fake_openai.script(failing, FakeOpenAI.insufficient_quota())
    notes_run(config)
    fake_openai.responder = lambda request: failing

    notes_run(config, 2)

    assert len(fake_openai.requests) == 3  # the 500 and the refusal, then the one send left
    with db(config) as conn:
        assert conn.execute("SELECT note_attempts FROM items").fetchone() == (2,)


def test_a_400_that_is_not_about_the_response_format_fails_the_item_and_keeps_the_format(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=2)
    seed(config, pages(2))
    too_long = FakeOpenAI.error(
        400,
        "This model's maximum context length is 8192 tokens. However, you requested 9000"
        " tokens. Please reduce the length of the messages.",
        code="context_length_exceeded",
    )
    fake_openai.responder = lambda request: too_long if "variant 0," in str(request) else None

    notes_run(config)
    notes_run(config, 2)  # past the backoff: the failed item is asked once more

    assert [_format(body) for body in fake_openai.requests] == ["json_schema"] * 3
    with db(config) as conn:
        assert conn.execute("SELECT response_format FROM llm_formats").fetchall() == [
            ("json_schema",)
        ]
        failed = conn.execute(
            "SELECT note_attempts, note_error FROM items WHERE note_error IS NOT NULL"
        )
        [(attempts, error)] = failed.fetchall()
    assert attempts == 2 and "maximum context length" in error
    assert model_notes(config) == 1


@pytest.mark.parametrize(
    ("message", "param"),
    [
        ("Invalid value for this parameter.", "response_format"),
        ("This model does not support structured outputs.", None),
        ("'json_schema' is not one of ['json_object', 'text']", None),
    ],
)
def test_a_400_about_the_response_format_asks_again_in_the_next_one(
    tmp_path: Path, fake_openai: FakeOpenAI, message: str, param: str | None
) -> None:
    config = config_for(tmp_path, fake_openai)
    seed(config, pages(2))
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": None}
    fake_openai.script(Reply(status=400, body={"error": error}))

    notes_run(config)

    formats = [_format(body) for body in fake_openai.requests]
    assert formats == ["json_schema", "json_object", "json_object"]
    with db(config) as conn:
        row = conn.execute("SELECT response_format FROM llm_formats").fetchone()
        assert row == ("json_object",)
        assert conn.execute("SELECT max(note_attempts) FROM items").fetchone() == (0,)
    assert model_notes(config) == 2


def test_an_english_note_under_another_configured_language_is_asked_for_in_that_language(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, language="German")
    seed(config, pages(1))
    english = (
        "The article explains how compilers parse grammars and why that matters for teams."
        " It compares what works in practice with what the measurements show."
    )
    fake_openai.script(FakeOpenAI.answer(english))
    fake_openai.responder = FakeOpenAI.shaped("other_language")  # German: as asked

    result = notes_run(config)

    assert len(fake_openai.requests) == 2 and model_notes(config) == 1
    assert "must be written in German" in fake_openai.messages(1)[-1]["content"]
    assert result.failures == []
    with db(config) as conn:
        assert conn.execute("SELECT note_attempts FROM items").fetchone() == (0,)


def test_rate_limited_requests_spend_no_attempts(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=2, max_retries=3)
    seed(config, pages(1))
    fake_openai.script(FakeOpenAI.rate_limited("0"), FakeOpenAI.rate_limited("0"))

    notes_run(config)

    assert len(fake_openai.requests) == 3 and model_notes(config) == 1


def test_a_500_naming_json_schema_steps_down_to_json_object_once_and_for_later_runs(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, concurrency=4)
    seed(config, pages(3))
    fake_openai.reject_formats = {"json_schema": 500}  # as stock llama-cpp-python answers

    notes_run(config)
    seed(config, pages(2, "https://other.example/"))
    notes_run(config)

    formats = [_format(body) for body in fake_openai.requests]
    assert formats == ["json_schema"] + ["json_object"] * 5
    assert model_notes(config) == 5
    with db(config) as conn:
        assert conn.execute("SELECT response_format FROM llm_formats").fetchall() == [
            ("json_object",)
        ]
        assert conn.execute("SELECT max(note_attempts) FROM items").fetchone() == (0,)


def test_a_500_about_something_else_is_a_server_fault_retried_in_the_same_format(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, max_retries=1)
    seed(config, pages(1))
    fake_openai.script(FakeOpenAI.error(500, "CUDA out of memory while decoding"))

    notes_run(config)

    assert [_format(body) for body in fake_openai.requests] == ["json_schema"] * 2
    assert model_notes(config) == 1


GARBAGE = ("dots", "template_slot", "schema_words", "repeated_sentence", "echo_reworded",
           "unsubscribe", "cut_mid_sentence", "other_language")  # fmt: skip


@pytest.mark.parametrize("shape", GARBAGE)
def test_garbage_is_refused_counted_and_the_offline_note_shown_marked(
    tmp_path: Path, fake_openai: FakeOpenAI, shape: str
) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=2)
    seed(config, pages(1))
    fake_openai.responder = FakeOpenAI.shaped(shape)

    notes_run(config)
    notes_run(config, 9)  # attempts spent: not asked again

    assert len(fake_openai.requests) == 2 and model_notes(config) == 0
    with db(config) as conn:
        attempts, error = conn.execute("SELECT note_attempts, note_error FROM items").fetchone()
    assert attempts == 2 and "no usable answer" in error
    text = notes_and_digest(config)
    assert "(extractive summary)" in text
    assert "The offline note stands where the model's answer was refused or failed: 1 item" in text
    for garbage in ("[the user message]", "\\...", "unsubscribe", "<< >>", "Der Artikel"):
        assert garbage not in text


def test_a_note_about_another_article_of_the_run_is_refused(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai)
    seed(config, {
        "https://a.example/kilns": "Pottery kilns fire clay at high heat. Glazes melt into glass"
                                   " on the surface of bowls, and potters open kilns slowly.",
        "https://b.example/tides": "Tides rise twice a day because the moon pulls the oceans."
                                   " Harbour pilots read tide tables before ships enter port.",
    })  # fmt: skip
    about_tides = FakeOpenAI.answer(
        "Tides rise twice daily as the moon pulls oceans; pilots read tide tables in port."
    )
    fake_openai.responder = lambda request: about_tides if "kilns" in str(request) else None

    notes_run(config)

    with db(config) as conn:
        rows = dict(conn.execute("SELECT url, note_error FROM items").fetchall())
    assert "another article of this run" in rows["https://a.example/kilns"]
    assert rows["https://b.example/tides"] is None


def test_export_says_who_wrote_each_note_and_why_the_model_did_not(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai)
    seed(config, pages(2))
    fake_openai.responder = lambda r: (
        FakeOpenAI.shaped("dots")(r) if "variant 0," in str(r) else None
    )
    notes_run(config)

    out = io.StringIO()
    with open_store(config.db_path) as store:
        write_export(store, None, "jsonl", out)

    rows = {row["url"]: row for row in map(json.loads, out.getvalue().splitlines())}
    failed, noted = rows["https://site.example/0"], rows["https://site.example/1"]
    assert failed["note_by"] == "offline" and "placeholder or refusal" in failed["note_error"]
    assert noted["note_by"] == "m" and noted["note_error"] is None


def test_the_footer_counts_every_call_as_status_does_repairs_and_failures_included(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai)
    seed(config, pages(3))
    dealt = FakeOpenAI.dealt(["json", "dots", "json"])  # the second item: refused twice
    fake_openai.script(FakeOpenAI.text("..."))  # the first answer: refused, then repaired
    fake_openai.responder = dealt

    result = run(config, "now", period=WEEK, stages=(Stage.NOTES, Stage.DELIVER),
                 clock=lambda: NOW)  # fmt: skip

    assert len(fake_openai.requests) == 6  # 3 notes, 2 repairs, the week summary
    with open_store(config.db_path) as store:
        totals = store.llm_usage(store.recent_runs(1)[0].id)
    assert totals.calls == 6 and result.failures
    assert f"LLM total: {totals.tokens_in:,} tokens in, {totals.tokens_out:,} out" in digest_text(
        config
    )


def test_a_20_mb_answer_is_read_up_to_the_cap_and_counts_as_an_attempt(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, max_attempts=2, max_retries=0)
    seed(config, pages(1))
    fake_openai.script(Reply(raw=b'{"choices": [{"message": {"content": "' + b"a" * 20_000_000))

    started = time.process_time()  # the work of reading it: a busy machine's wall time flakes
    result = notes_run(config)

    cap = answer_cap(config.llm)
    assert cap < 100_000 and time.process_time() - started < 10
    assert any(f"larger than {cap:,} bytes" in line for line in result.failures)
    with db(config) as conn:
        assert conn.execute("SELECT note_attempts FROM items").fetchone() == (1,)


def test_a_server_that_never_answers_trips_the_breaker_and_the_items_stay_pending(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, timeout_s=1.0, max_retries=3, concurrency=1)
    seed(config, pages(4))
    fake_openai.responder = lambda request: FakeOpenAI.hang(300)

    started = time.monotonic()
    result = run(config, "now", period=WEEK, stages=(Stage.NOTES, Stage.DELIVER),
                 clock=lambda: NOW)  # fmt: skip

    assert time.monotonic() - started < 60  # wide for a loaded machine; one hang is 300 s
    assert len(fake_openai.requests) == 3  # the breaker: three in a row, then no more calls
    assert result.path is not None and result.needs_attention
    assert any("3 calls in a row got no answer" in line for line in result.failures)
    with db(config) as conn:
        pending = conn.execute("SELECT count(*) FROM items WHERE note_id IS NULL").fetchone()
    assert pending == (3,)  # the first spent its two attempts: its offline note stands


def test_a_server_that_accepts_and_never_answers_ends_the_stage_by_its_deadline(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, timeout_s=300, stage_timeout_s=1.5, concurrency=2)
    seed(config, pages(5))
    fake_openai.responder = lambda request: FakeOpenAI.hang(300)

    started = time.monotonic()
    result = run(config, "now", period=WEEK, stages=(Stage.NOTES, Stage.DELIVER),
                 clock=lambda: NOW)  # fmt: skip

    assert time.monotonic() - started < 60  # wide for a loaded machine; one call is 300 s
    assert result.path is not None and result.path.exists()
    assert any("llm.stage_timeout_s (1.5 s)" in line and "stay pending" in line
               for line in result.failures)  # fmt: skip
    with db(config) as conn:
        pending = conn.execute("SELECT count(*) FROM items WHERE note_id IS NULL").fetchone()
    assert pending == (5,)


def test_progress_never_counts_past_its_total(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    config = config_for(tmp_path, fake_openai, concurrency=3)
    seed(config, pages(6))
    fake_openai.responder = FakeOpenAI.dealt(["json", "dots"])  # half fail and stand in
    seen: list[tuple[int, int]] = []

    run(config, "summarize", period=WEEK, stages=(Stage.NOTES,), clock=lambda: NOW,
        progress=lambda stage, done, total: seen.append((done, total)))  # fmt: skip

    assert seen[-1] == (6, 6) and all(done <= total for done, total in seen)


def test_a_run_where_no_note_came_from_the_model_says_so_in_one_line_and_needs_attention(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai)
    seed(config, pages(2))
    fake_openai.responder = FakeOpenAI.shaped("template_slot")

    result = run(config, "now", period=WEEK, stages=(Stage.NOTES, Stage.DELIVER),
                 clock=lambda: NOW)  # fmt: skip

    said = [line for line in result.failures if "no note of this run came from" in line]
    assert said == [
        "no note of this run came from the model 'm' (2 asked): the offline notes stand;"
        " see `digest status` for why"
    ]
    assert result.needs_attention and result.path is not None
