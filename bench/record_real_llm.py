"""Record what a real OpenAI-compatible server answers to digest's own requests.

    python bench/record_real_llm.py BASE_URL NAME [--model M] [--concurrency N] [--days 0 2 9]
        [--file news.json] [--articles N]

Seeds a store in a temporary folder with tests/fixtures/real_llm/articles.json or --file (short
articles written for the tests), puts a recording proxy on 127.0.0.1 in front of BASE_URL, and
runs digest's notes stage and draft through it, once per value of --days (that many days
later each), as `digest now` would. Every request body and the server's answer (its status and
its body, errors included) go to tests/fixtures/real_llm/NAME.json, which the tests replay
through FakeOpenAI.replaying. Never run from the tests: it needs the real server
(../shared/tools/real-llm/serve).
"""

from __future__ import annotations

import argparse
import json
import operator
import tempfile
import threading
from datetime import timedelta
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from digest.clock import utc_now
from digest.config import Config, DigestSection, LLMConfig
from digest.lifecycle import FetchSucceeded, ItemState
from digest.models import Extracted, SavedItem, Stage
from digest.periods import period_containing
from digest.pipeline import run
from digest.store import open_store

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real_llm"


def proxy(upstream: str, out: Path, name: str) -> ThreadingHTTPServer:
    """A server on 127.0.0.1 that forwards each POST to `upstream` and records both sides in
    `out`, rewritten after every exchange (a slow server may be stopped at any time)."""
    exchanges: list[dict[str, Any]] = []
    client = httpx.Client(timeout=900)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.removeprefix("/v1")
            answer = client.post(
                upstream.rstrip("/") + path,
                content=raw,
                headers={"Content-Type": "application/json"},
            )
            try:
                body: Any = answer.json()
            except ValueError:
                body = answer.text
            with lock:
                exchanges.append(
                    {"request": json.loads(raw), "status": answer.status_code, "response": body}
                )
                recording = {"server": name, "base_url": upstream, "exchanges": exchanges}
                out.write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n")
            self.send_response(answer.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def seed(config: Config, articles: list[dict[str, str]]) -> None:
    now = utc_now()
    with open_store(config.db_path) as store:
        source = store.ensure_source("news", "file", path="/news")
        saved = [SavedItem(url=a["url"], title=a["title"], saved_at=now) for a in articles]
        store.save_items(source, saved, now)
        by_url = {item.url: item.id for item in store.all_items()}
        for article in articles:
            text = article["text"]
            store.apply_fetch(
                FetchSucceeded(
                    by_url[article["url"]],
                    Extracted(text=text),
                    str(hash(text)),
                    now,
                    ItemState.FETCHED,
                    None,
                )  # fmt: skip
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("name")
    parser.add_argument("--model", default="gemma-3-270m")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--days", type=float, nargs="+", default=[0.0])
    parser.add_argument("--language", default="English")
    parser.add_argument("--articles", type=int, default=8, help="the first N of the file")
    parser.add_argument("--file", default="articles.json", help="in tests/fixtures/real_llm")
    args = parser.parse_args()
    articles = json.loads((FIXTURES / args.file).read_text(encoding="utf-8"))
    articles = articles[: args.articles]
    out = FIXTURES / f"{args.name}.json"
    server = proxy(args.base_url, out, args.name)
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    with tempfile.TemporaryDirectory() as folder:
        llm = LLMConfig(
            provider="openai",
            model=args.model,
            base_url=base_url,
            concurrency=args.concurrency,
            timeout_s=600,
            language=args.language,
        )
        config = Config(digest=DigestSection(data_dir=Path(folder)), llm=llm)
        seed(config, articles)
        now = utc_now()
        period = period_containing(now, config.digest.zone)
        for days in args.days:
            clock = partial(operator.add, now, timedelta(days=days))
            result = run(
                config, "now", period=period, stages=(Stage.NOTES, Stage.DRAFT), clock=clock
            )
            print(f"+{days:g} d: failures:", result.failures)
    server.shutdown()
    print(out)


if __name__ == "__main__":
    main()
