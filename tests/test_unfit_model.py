"""A model most of whose first answers are refused is asked no more in that run (the breaker),
and the run ends with one line saying whose notes they are and why the rest are offline."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from digest.cli import cli
from digest.models import SavedItem, Stage
from digest.notes.faithful import check, known_facts
from digest.pipeline import RunResult, run
from digest.store import open_store
from digest.text import sentences
from fake_openai import RECORDINGS, FakeOpenAI, Reply, data_words
from test_notes import NOW, WEEK, config_for, fetched, seed

TOPICS = "ferries bakeries hedgehogs libraries harbours trains chess cafes bridges gardens"
PAGES = {
    f"https://news.example/{topic}": (
        f"The town council said on Monday that its {topic} will get new funding this spring."
        f" Residents asked for better {topic} at a public meeting, and volunteers offered help."
        f" The plan for the {topic} will be published next month after a vote of the council."
    )
    for topic in TOPICS.split()
}


def number_only(request: dict[str, Any]) -> Reply:
    return Reply(content=json.dumps({"summary": "742", "key_points": [], "tags": []}))


def good(request: dict[str, Any]) -> Reply:
    topic = data_words(request)[4]
    summary = f"The council will fund the {topic} this spring after residents asked for it."
    return Reply(content=json.dumps({"summary": summary, "key_points": [], "tags": []}))


def test_the_breaker_stops_asking_after_six_of_the_first_eight_answers_are_refused(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as fake:
        fake.responder = number_only
        config = config_for(tmp_path, fake)
        seed(config, PAGES)

        result = run(config, "now", period=WEEK, stages=(Stage.NOTES, Stage.DRAFT),
                     clock=lambda: NOW)  # fmt: skip

    asked = {json.dumps(r["messages"][1]["content"]) for r in fake.requests}
    assert len(asked) == 6  # each asked, and its repair refused: then no more
    assert len(fake.requests) == 12
    unfit = [line for line in result.failures if "is unfit for notes" in line]
    assert unfit == [
        "the model 'm' is unfit for notes: 6 of its first 6 answers were refused (6 no words);"
        " no more asked this run, the offline notes stand; the next run asks again"
    ]
    assert result.model_unreachable == unfit[0]  # exit 3
    info = [line for report in result.reports for line in report.info]
    assert "notes: 0 by m, 10 offline (6 no words, 4 unfit model)" in info


def test_a_good_model_is_never_stopped_and_the_run_says_whose_notes_they_are(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as fake:
        fake.responder = good
        config = config_for(tmp_path, fake)
        seed(config, PAGES)

        result = run(config, "now", period=WEEK, stages=(Stage.NOTES, Stage.DRAFT),
                     clock=lambda: NOW)  # fmt: skip

    assert not result.failures and result.model_unreachable is None
    info = [line for report in result.reports for line in report.info]
    assert "notes: 10 by m" in info


def test_digest_now_exits_3_naming_the_unfit_model(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.responder = number_only
        config = config_for(tmp_path, fake)
        seed(config, PAGES)
        path = tmp_path / "digest.toml"
        path.write_text(
            f'[digest]\ndata_dir = "{tmp_path / "data"}"\n[llm]\nprovider = "openai"\n'
            f'model = "m"\nbase_url = "{fake.base_url}"\nconcurrency = 1\n'
        )
        outcome = CliRunner().invoke(
            cli, ["now", "--week", WEEK.label, "--config", str(path)], catch_exceptions=False
        )

    assert outcome.exit_code == 3, outcome.output
    assert "the model 'm' is unfit for notes" in outcome.stderr
    assert "notes: 0 by m, 10 offline" in outcome.stderr


# -- what real models answered (bench/record_real_llm.py --file news.json), replayed ------------

NEWS: list[dict[str, str]] = json.loads((RECORDINGS / "news.json").read_text(encoding="utf-8"))


def replay_news(
    tmp_path: Path, fake: FakeOpenAI, name: str, model: str, *, only_asked: bool = False
) -> RunResult:
    """The news articles (`only_asked`: those the recording asked about), noted by replaying
    its answers."""
    config = config_for(tmp_path, fake, model=model)
    asked = (RECORDINGS / f"{name}.json").read_text(encoding="utf-8")
    title = re.compile(r"Title: (.*?)\\n")
    news = [a for a in NEWS if not only_asked or a["title"] in title.findall(asked)]
    with open_store(config.db_path) as store:
        source = store.ensure_source("news", "file", path="/news")
        saved = [SavedItem(url=a["url"], title=a["title"], saved_at=NOW) for a in news]
        store.save_items(source, saved, NOW)
        ids = {item.url: item.id for item in store.all_items()}
        for article in news:
            store.apply_fetch(fetched(ids[article["url"]], article["text"], NOW))
    fake.responder = FakeOpenAI.replaying(name)
    return run(config, "now", period=WEEK, stages=(Stage.NOTES, Stage.DRAFT), clock=lambda: NOW)


def test_the_breaker_trips_on_the_base_gemmas_recorded_answers(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    result = replay_news(tmp_path, fake_openai, "gemma-news", "gemma-3-270m")

    assert result.model_unreachable == (
        "the model 'gemma-3-270m' is unfit for notes: 6 of its first 8 answers were refused"
        " (5 no summary, 1 no words); no more asked this run, the offline notes stand; the"
        " next run asks again"
    )
    asked = {str(request["messages"][1]["content"]) for request in fake_openai.requests}
    assert len(asked) == 8 and len(fake_openai.requests) == 14  # the last four never asked
    info = [line for report in result.reports for line in report.info]
    assert "notes: 2 by gemma-3-270m, 10 offline (5 no summary, 4 unfit model, 1 no words)" in info


def test_smollm2s_invented_facts_are_refused_and_its_true_notes_kept(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    result = replay_news(
        tmp_path, fake_openai, "smollm2-news", "smollm2-135m-instruct", only_asked=True
    )

    with open_store(tmp_path / "data" / "digest.db") as store:
        items = {item.title: item for item in store.all_items()}
    surfer = items["Teenage surfer wins the Coastal Cup"]
    assert surfer.note is not None and not surfer.note.by_model  # "from the coast of Hawaii"
    repairs = [str(request["messages"][-1]["content"]) for request in fake_openai.requests]
    assert any("the article does not say Hawaii, 25, 2021" in asked for asked in repairs)
    bridge = items["Council approves new footbridge over the river"]
    assert bridge.note is not None and bridge.note.by_model
    assert bridge.note.summary.startswith("The city of Ashford Vale approved a new footbridge")
    assert "The plan will take 14 months to complete." in bridge.note.key_points  # "fourteen"
    for item in items.values():  # what is kept as the model's says only what its article says
        if item.note is not None and item.note.by_model:
            known = known_facts(f"{item.title}\n{item.text}")
            said = (item.note.summary, *item.note.key_points)
            assert not [bad for text in said for bad in check(sentences(text), known).dropped]
    info = [line for report in result.reports for line in report.info]
    assert info == ["notes: 5 by smollm2-135m-instruct, 3 offline (2 off topic, 1 no words)"]
    assert result.model_unreachable is None  # 3 of 8 refused: not unfit
