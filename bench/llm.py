"""The notes stage against a loopback OpenAI-compatible server that answers after 1 s.

    python bench/llm.py [--items 200] [--concurrency 4 16] [--csv ../shared/bench-data/summaries/bbc-dev.csv]
    python bench/llm.py --shapes [--items 200] [--csv …]
    python bench/llm.py --real BASE_URL --model M --csv …/bbc-dev.csv [--items 12] [--concurrency 1]

With --shapes: the server answers each item in one of the shapes real models use (fenced
JSON, preambles, single quotes, trailing commas, <think> blocks, a reasoning field, answers cut
off by max_tokens, prose, one sentence or seven, another language…) and, for about 5 % of the
items, in a shape that is not usable (empty, refusals, the prompt echoed, off topic, a made-up
URL); it rejects response_format json_schema with 400, as many local servers do. Three runs of
the notes stage, a day and a week apart: calls per item in each (goals: <= 1.1, then 0 and 0)
and the share of notes that are the model's (goal >= 95 %, the rest only from unusable shapes).

For each concurrency: wall time of the notes stage for N items (goal: N / concurrency + 5 s),
the calls made, and tokens per item as the server counted them (goal: input within
llm.max_input_tokens, output within max_tokens = 300). Item texts are generated, or with
--csv made of 1 to 20 articles of that file each, so that long texts must be condensed.
With --csv, the offline summariser's ROUGE against lead-3 follows (see offline_rouge.py).

With --real: a real server (../shared/tools/real-llm/serve starts one), --items articles of the
CSV, one each, with their titles; three runs of the notes stage and the draft digest, a day
and a week apart: requests per item in each, the share of notes that are the model's,
garbage shown in the digest (goal 0: a model note or key point that is only dots, a template
slot, a sentence said twice, a run of six words of our instructions, or no word of its
article), seconds per note. The server is slow on a shared CPU: timeouts are generous.
"""

from __future__ import annotations

import argparse
import json
import operator
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from functools import partial
from pathlib import Path

from digest.clock import utc_now
from digest.config import Config, DigestSection, LLMConfig
from digest.lifecycle import FetchSucceeded, ItemState
from digest.models import Extracted, SavedItem, Stage
from digest.notes.tokens import count_tokens
from digest.periods import period_containing
from digest.pipeline import run
from digest.store import open_store

TESTS = Path(__file__).resolve().parents[1] / "tests"
SERVE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from fake_openai import FakeOpenAI
with FakeOpenAI() as fake:
    fake.delay_s = float(sys.argv[2])
    if sys.argv[3] != "[]":
        fake.responder = FakeOpenAI.dealt(json.loads(sys.argv[3]))
        fake.reject_formats = {"json_schema": 400}
    print(fake.base_url, flush=True)
    sys.stdin.read()
    print(fake.max_in_flight, flush=True)
"""


def texts(count: int, csv_path: Path | None) -> list[str]:
    rng = random.Random(5)
    if csv_path is None:
        return [
            "\n\n".join(
                f"Paragraph {p} of article {n} explains one more detail of the system, with"
                " numbers, caveats and a conclusion worth keeping." * 3
                for p in range(rng.randint(5, 400))
            )
            for n in range(count)
        ]
    from offline_rouge import load

    bodies = [body for _title, body, _summary in load(csv_path)]
    return ["\n\n".join(rng.sample(bodies, rng.randint(1, 20))) for _ in range(count)]


def seed(config: Config, pages: list[str]) -> None:
    store = open_store(config.db_path)
    now = utc_now()
    source = store.ensure_source("bench", "file", path="/bench")
    store.save_items(
        source, [SavedItem(url=f"https://bench.example/{i}") for i in range(len(pages))], now
    )
    for item, text in zip(store.all_items(), pages, strict=True):
        store.apply_fetch(
            FetchSucceeded(
                item.id, Extracted(text=text), str(hash(text)), now, ItemState.FETCHED, None
            )
        )
    store.close()


@contextmanager
def loopback_llm(
    delay_s: float = 1.0, shapes: list[str] | None = None
) -> Iterator[tuple[str, list[int]]]:
    """The tests' FakeOpenAI answering after `delay_s` (in `shapes`, if given), in a process of
    its own (so that its work is not counted as ours); yields its base URL, then the most
    requests it had in flight."""
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(TESTS), str(delay_s), json.dumps(shapes or [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    in_flight: list[int] = []
    try:
        yield server.stdout.readline().strip(), in_flight
    finally:
        server.stdin.close()
        in_flight.append(int(server.stdout.readline() or 0))
        server.wait(timeout=30)


def measure(pages: list[str], concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as folder, loopback_llm() as (base_url, in_flight):
        llm = LLMConfig(provider="openai", base_url=base_url, concurrency=concurrency, timeout_s=30)
        config = Config(digest=DigestSection(data_dir=Path(folder)), llm=llm)
        seed(config, pages)
        period = period_containing(utc_now(), config.digest.zone)
        started = time.monotonic()
        run(config, "bench", period=period, stages=(Stage.NOTES,))
        wall = time.monotonic() - started
        with sqlite3.connect(config.db_path) as db:
            calls = db.execute(
                "SELECT tokens_in, tokens_out, duration_s, ok FROM llm_calls"
            ).fetchall()
            purposes = dict(db.execute("SELECT purpose, count(*) FROM llm_calls GROUP BY 1"))
    tokens_in = [call[0] for call in calls]
    print(
        f"concurrency {concurrency}: {len(pages)} items in {wall:.1f} s (goal {len(pages) / concurrency + 5:.0f} s)"
    )
    print(
        f"  calls {len(calls)} {purposes}, {sum(not call[3] for call in calls)} failed;"
        f" at most {in_flight[0]} in flight; {statistics.fmean(c[2] for c in calls):.2f} s a call"
        " on average (the server waits 1 s)"
    )
    print(
        f"  tokens in per item: median {statistics.median(tokens_in):.0f}, max {max(tokens_in)}"
        f" (budget {llm.max_input_tokens}); out: max {max(c[1] for c in calls)}"
        f" (max_tokens {llm.max_output_tokens})"
    )


def shape_mix(items: int, unusable_share: float) -> list[str]:
    """One shape per item, dealt in turn: the unusable shapes for `unusable_share` of them,
    the usable ones for the rest, in a fixed shuffled order."""
    sys.path.insert(0, str(TESTS))
    from fake_openai import UNUSABLE_SHAPES, USABLE_SHAPES

    unusable = round(items * unusable_share)
    mix = [UNUSABLE_SHAPES[n % len(UNUSABLE_SHAPES)] for n in range(unusable)]
    mix += [USABLE_SHAPES[n % len(USABLE_SHAPES)] for n in range(items - unusable)]
    random.Random(9).shuffle(mix)
    return mix


def measure_shapes(pages: list[str], unusable_share: float) -> None:
    """Three runs of the notes stage against the server answering in the mix of shapes."""
    mix = shape_mix(len(pages), unusable_share)
    print(
        f"{len(set(mix))} shapes over {len(pages)} items, {unusable_share:.0%} of them unusable;"
        " the server rejects json_schema"
    )
    with tempfile.TemporaryDirectory() as folder, loopback_llm(0.0, mix) as (base_url, _):
        llm = LLMConfig(provider="openai", model="local", base_url=base_url, concurrency=4)
        config = Config(digest=DigestSection(data_dir=Path(folder)), llm=llm)
        seed(config, pages)
        now = utc_now()
        period = period_containing(now, config.digest.zone)
        for number, days in enumerate((0, 1, 7), start=1):
            started = time.monotonic()
            clock = partial(operator.add, now, timedelta(days=days))
            run(config, "bench", period=period, stages=(Stage.NOTES,), clock=clock)
            wall = time.monotonic() - started
            with sqlite3.connect(config.db_path) as db:
                (calls,) = db.execute(
                    "SELECT count(*) FROM llm_calls WHERE run_id = (SELECT max(id) FROM runs)"
                ).fetchone()
            print(
                f"run {number} (+{days} d): {calls} calls, {calls / len(pages):.3f} per item"
                f" (goal {'<= 1.1' if number == 1 else '0'}), {wall:.1f} s"
            )
        with sqlite3.connect(config.db_path) as db:
            models = dict(
                db.execute(
                    "SELECT n.model, count(*) FROM items i JOIN notes n ON n.id = i.note_id"
                    " GROUP BY n.model"
                )
            )
            columns = {row[1] for row in db.execute("PRAGMA table_info(items)")}
            reasons = (
                db.execute("SELECT note_error FROM items WHERE note_error IS NOT NULL").fetchall()
                if "note_error" in columns  # not in a store of before note attempts were kept
                else []
            )
    share = models.get("local", 0) / len(pages)
    print(
        f"notes by the model: {models.get('local', 0)} of {len(pages)} = {share:.1%} (goal >= 95%)"
    )
    why: dict[str, int] = {}
    for (error,) in reasons:
        problem = error.rsplit(": ", 1)[-1]
        why[problem] = why.get(problem, 0) + 1
    for problem, count in sorted(why.items(), key=lambda pair: -pair[1]):
        print(f"  extractive because: {problem} ({count})")


def seed_articles(config: Config, articles: list[tuple[str, str, str]]) -> None:
    store = open_store(config.db_path)
    now = utc_now()
    source = store.ensure_source("bench", "file", path="/bench")
    saved = [
        SavedItem(url=f"https://bbc.example/{n}", title=title, saved_at=now)
        for n, (title, _body, _ref) in enumerate(articles)
    ]
    store.save_items(source, saved, now)
    for item, (_title, body, _ref) in zip(store.all_items(), articles, strict=True):
        store.apply_fetch(
            FetchSucceeded(
                item.id, Extracted(text=body), str(hash(body)), now, ItemState.FETCHED, None
            )
        )
    store.close()


def measure_real(
    articles: list[tuple[str, str, str]], base_url: str, model: str, workers: int, stage_s: float
) -> None:
    """Three runs of the notes stage and the draft against a real server."""
    llm = LLMConfig(provider="openai", model=model, base_url=base_url, concurrency=workers,
                    timeout_s=900, stage_timeout_s=stage_s)  # fmt: skip
    print(f"{len(articles)} articles, {model} at {base_url}, concurrency {workers}")
    with tempfile.TemporaryDirectory() as folder:
        config = Config(digest=DigestSection(data_dir=Path(folder)), llm=llm)
        seed_articles(config, articles)
        now = utc_now()
        period = period_containing(now, config.digest.zone)
        for number, days in enumerate((0, 1, 7), start=1):
            started, cpu = time.monotonic(), time.process_time()
            clock = partial(operator.add, now, timedelta(days=days))
            result = run(config, "bench", period=period, stages=(Stage.NOTES, Stage.DRAFT),
                         clock=clock)  # fmt: skip
            wall = time.monotonic() - started
            with sqlite3.connect(config.db_path) as db:
                purposes = dict(
                    db.execute(
                        "SELECT purpose, count(*) FROM llm_calls"
                        " WHERE run_id = (SELECT max(id) FROM runs) GROUP BY purpose"
                    )
                )
            notes = sum(n for purpose, n in purposes.items() if purpose.startswith("note"))
            print(
                f"run {number} (+{days} d): {notes / len(articles):.2f} requests per item"
                f" {purposes}, {wall:.0f} s wall, {time.process_time() - cpu:.1f} s CPU (ours)"
            )
            for line in (line for report in result.reports for line in report.info):
                print(f"  {line}")
            for line in result.failures:
                print(f"  ! {line[:200]}")
        report_real(config, articles, model, period.label)


def report_real(
    config: Config, articles: list[tuple[str, str, str]], model: str, label: str
) -> None:
    """The share of model notes, the garbage among them, and seconds per note."""
    with sqlite3.connect(config.db_path) as db:
        rows = db.execute(
            "SELECT i.id, n.model, n.prompt_version, n.summary, n.key_points"
            " FROM items i JOIN notes n ON n.id = i.note_id ORDER BY i.id"
        ).fetchall()
        seconds, calls = db.execute(
            "SELECT sum(duration_s), count(*) FROM llm_calls WHERE purpose LIKE 'note%'"
        ).fetchone()
        errors = db.execute("SELECT note_error FROM items WHERE note_error IS NOT NULL").fetchall()
    by_model = [row for row in rows if row[1] == model and not row[2].startswith("extractive")]
    shown = []  # a model's note and its key points are shown in the digest as they are kept
    for item_id, _m, _v, summary, points in by_model:
        _title, body, _ref = articles[item_id - 1]
        for text in (summary, *json.loads(points)):
            if problem := garbage(text, body):
                shown.append((item_id, problem, text[:100]))
    digest = (config.digests_dir / f"{label}.md").read_text(encoding="utf-8")
    dotted = re.findall(r"(?m)^\s*[-*] [\\.…\s]*$", digest)
    print(
        f"notes by the model: {len(by_model)} of {len(articles)} = {len(by_model) / len(articles):.0%};"
        f" {seconds or 0:.0f} s in note calls = {(seconds or 0) / max(len(by_model), 1):.0f} s per"
        " model note"
    )
    print(
        f"note calls: {calls} = {calls / len(articles):.2f} per item, {(seconds or 0) / max(calls, 1):.1f}"
        " s per call"
    )
    print(f"garbage shown in the digest: {len(shown) + len(dotted)} (goal 0)")
    print_notes(by_model, articles)
    for item_id, problem, text in shown:
        print(f"  item {item_id}: {problem}: {text!r}")
    reasons: dict[str, int] = {}
    for (error,) in errors:
        reason = error.rsplit(": ", 1)[-1][:90]
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in sorted(reasons.items(), key=lambda pair: -pair[1]):
        print(f"  offline because: {reason} ({count})")


def print_notes(
    by_model: list[tuple[int, str, str, str, str]], articles: list[tuple[str, str, str]]
) -> None:
    """Every note kept as the model's, verbatim, with the facts (numbers, names) that the
    faithfulness check does not find in its article: to be read by hand."""
    from digest.notes.faithful import check, known_facts
    from digest.text import sentences

    lacking = 0
    for item_id, _m, _v, summary, points in by_model:
        title, body, _ref = articles[item_id - 1]
        known = known_facts(f"{title}\n{body}")
        said = (summary, *json.loads(points))
        missing = [fact for text in said for fact in check(sentences(text), known).missing()]
        lacking += bool(missing)
        print(f"- item {item_id} ({title}): {summary}")
        for point in json.loads(points):
            print(f"    - {point}")
        if missing:
            print(f"    ! not in the article: {', '.join(missing)}")
    print(f"kept notes with a number or name their article lacks (faithful.py): {lacking}")


def garbage(text: str, article: str) -> str | None:
    """Why a shown note or key point is not one, by simple rules of this bench's own."""
    from digest.models import NoteBasis
    from digest.notes.base import NoteRequest
    from digest.notes.prompts import note_instructions
    from digest.text import sentences, words

    if not re.sub(r"[\W_]+", "", re.sub(r"\[[^\]]*\]", "", text)):
        return "only dots or a slot"
    if re.search(r"\[[^\]\d]*[a-z][^\]]*\]", text):
        return "a template slot"
    said = [s.lower() for s in sentences(text)]
    if len(said) != len(set(said)):
        return "a sentence said twice"
    request = NoteRequest(0, None, None, "", NoteBasis.FULL_TEXT)
    prompt = " ".join(re.findall(r"\w+", note_instructions(LLMConfig(), request, "").lower()))
    run = re.findall(r"\w+", text.lower())
    if any(" ".join(run[i : i + 6]) in prompt for i in range(len(run) - 5)):
        return "six words of our instructions"
    stems = {w[:5] for w in words(article)}
    if not any(w[:5] in stems for w in words(text)):
        return "no word of its article"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--csv", type=Path)
    parser.add_argument("--shapes", action="store_true", help="three runs, answers of all shapes")
    parser.add_argument("--unusable", type=float, default=0.05, help="with --shapes: their share")
    parser.add_argument("--real", metavar="BASE_URL", help="a real server instead of the fake")
    parser.add_argument("--model", default="gemma-3-270m", help="with --real")
    parser.add_argument("--stage-timeout", type=float, default=3600, help="with --real: s")
    args = parser.parse_args()
    if args.real:
        from offline_rouge import load

        chosen = random.Random(21).sample(load(args.csv), args.items)
        measure_real(chosen, args.real, args.model, args.concurrency[0], args.stage_timeout)
        return
    pages = texts(args.items, args.csv)
    if args.shapes:
        measure_shapes(pages, args.unusable)
        return
    sizes = sorted(count_tokens(page) for page in pages)
    print(f"page texts: median {sizes[len(sizes) // 2]} tokens, largest {sizes[-1]}")
    for concurrency in args.concurrency:
        measure(pages, concurrency)
    if args.csv is not None:
        from offline_rouge import main as rouge

        sys.argv = [sys.argv[0], str(args.csv)]
        rouge()


if __name__ == "__main__":
    main()
