"""What real servers answered to our requests, replayed: recordings made with
bench/record_real_llm.py against Gemma 3 270M behind stock llama-cpp-python and llama.cpp's
llama-server (tests/fixtures/real_llm/), through the real client and the whole notes stage."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from digest.config import Config
from digest.models import SavedItem, Stage
from digest.pipeline import RunResult, run
from digest.store import open_store
from fake_openai import RECORDINGS, FakeOpenAI
from test_notes import NOW, WEEK, config_for, db, digest_text, fetched

ARTICLES: list[dict[str, str]] = json.loads((RECORDINGS / "articles.json").read_text())


def recorded(name: str) -> list[dict[str, Any]]:
    exchanges: list[dict[str, Any]] = json.loads((RECORDINGS / f"{name}.json").read_text())[
        "exchanges"
    ]
    return exchanges


def recorded_titles(name: str) -> list[str]:
    titles = [a["title"] for a in ARTICLES]
    asked = [str(e["request"]["messages"][1]["content"]) for e in recorded(name)]
    return [title for title in titles if any(f"Title: {title}\n" in data for data in asked)]


def seed_articles(config: Config, titles: list[str]) -> None:
    with open_store(config.db_path) as store:
        source = store.ensure_source("news", "file", path="/news")
        chosen = [a for a in ARTICLES if a["title"] in titles]
        saved = [SavedItem(url=a["url"], title=a["title"], saved_at=NOW) for a in chosen]
        store.save_items(source, saved, NOW)
        ids = {item.url: item.id for item in store.all_items()}
        for article in chosen:
            store.apply_fetch(fetched(ids[article["url"]], article["text"], NOW))


def replay(tmp_path: Path, fake: FakeOpenAI, name: str, days: float = 0) -> RunResult:
    fake.responder = FakeOpenAI.replaying(name)
    moment = NOW + timedelta(days=days)
    return run(config_for(tmp_path, fake, model="gemma-3-270m"), "now", period=WEEK,
               stages=(Stage.NOTES, Stage.DELIVER), clock=lambda: moment)  # fmt: skip


def formats(fake: FakeOpenAI) -> list[str]:
    return [str(b.get("response_format", {}).get("type", "plain")) for b in fake.requests]


def test_stock_llama_cpp_python_refuses_json_schema_with_a_500_naming_response_format() -> None:
    first = recorded("llama-cpp-python-stock")[0]
    assert first["request"]["response_format"]["type"] == "json_schema"
    assert first["status"] == 500 and "response_format" in first["response"]["error"]["message"]


def test_the_500_is_probed_once_then_json_object_is_asked_and_remembered_across_runs(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, model="gemma-3-270m")
    seed_articles(config, recorded_titles("llama-cpp-python-stock"))

    replay(tmp_path, fake_openai, "llama-cpp-python-stock")
    first = len(fake_openai.requests)
    seed_articles(config, [ARTICLES[-1]["title"]])  # a new item in a later run
    replay(tmp_path, fake_openai, "llama-cpp-python-stock", days=1)

    assert formats(fake_openai)[0] == "json_schema"
    assert set(formats(fake_openai)[1:]) == {"json_object"} and len(fake_openai.requests) > first
    with db(config) as conn:
        assert conn.execute("SELECT response_format FROM llm_formats").fetchall() == [
            ("json_object",)
        ]


@pytest.mark.parametrize("name", ["llama-cpp-python-stock", "llama-server"])
def test_what_a_small_real_model_wrote_shows_no_garbage_in_the_digest(
    tmp_path: Path, fake_openai: FakeOpenAI, name: str
) -> None:
    if not (RECORDINGS / f"{name}.json").exists():
        pytest.skip(f"no recording {name}")
    config = config_for(tmp_path, fake_openai, model="gemma-3-270m")
    seed_articles(config, recorded_titles(name))

    replay(tmp_path, fake_openai, name)

    text = digest_text(config)
    assert "\\..." not in text and "[the user message]" not in text
    assert "between them is data" not in text.lower()
    with db(config) as conn:
        rows = conn.execute(
            "SELECT n.model, i.note_error FROM items i JOIN notes n ON n.id = i.note_id"
        ).fetchall()
    assert rows and all(model == "gemma-3-270m" or error for model, error in rows)


def test_llama_servers_dotted_answers_are_refused_and_its_real_note_kept_without_them(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = config_for(tmp_path, fake_openai, model="gemma-3-270m")
    library, harbour = ARTICLES[0]["title"], ARTICLES[1]["title"]
    seed_articles(config, [library, harbour])

    replay(tmp_path, fake_openai, "llama-server")

    notes_asked = [b for b in fake_openai.requests if "week_summary" not in json.dumps(b)]
    assert len(notes_asked) == 3  # the library's note and its repair, the harbour's note
    with db(config) as conn:
        rows = conn.execute(
            "SELECT i.title, n.model, n.summary, n.key_points, n.tags, i.note_error"
            " FROM items i JOIN notes n ON n.id = i.note_id"
        ).fetchall()
    notes = {title: rest for title, *rest in rows}
    model, _summary, _points, _tags, error = notes[library]
    assert model == "offline" and "placeholder or refusal" in error
    model, summary, points, tags, error = notes[harbour]
    assert model == "gemma-3-270m" and error is None
    assert summary == "The harbour dredging has been delayed until spring"
    assert json.loads(points) == [] and json.loads(tags) == []
