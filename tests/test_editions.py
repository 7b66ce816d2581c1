"""The sample week through collect, fetch, notes, compose and delivery with push, EPUB and
the archive site on: the stage hands each channel the week as composed."""

from __future__ import annotations

import asyncio
import json
import zipfile
from datetime import timedelta
from pathlib import Path

from digest.collect.stage import collect
from digest.config import load_config
from digest.deliver.channel import DeliveryOutcome
from digest.deliver.stage import Delivery, Written
from digest.models import Stage
from digest.notes.budget import RunBudget
from digest.notes.stage import NotesScope
from digest.periods import parse_week
from digest.pipeline import WRITE, planned_stages
from digest.runtime.context import RunContext, run_in_order
from loopback import LoopbackServer, Response
from sampleweek import FIXTURES, NOW, PAGES, WEEK, page
from stores import store_at


def test_a_week_reaches_push_epub_and_site_as_composed(
    tmp_path: Path, server: LoopbackServer
) -> None:
    for path, (title, text) in PAGES.items():
        server.routes[path] = Response(200, page(title, text))
    server.routes["/hook"] = Response(200, "{}", content_type="application/json")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for fixture in FIXTURES.glob("journal.*"):
        text = fixture.read_text(encoding="utf-8").replace("{base}", server.url("").rstrip("/"))
        (inbox / fixture.name).write_text(text, encoding="utf-8")
    (tmp_path / "digest.toml").write_text(
        '[digest]\ndata_dir = "data"\ntimezone = "UTC"\n\n'
        '[[sources]]\nname = "inbox"\nkind = "file"\npath = "inbox"\n\n'
        '[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\nper_host_delay_s = 0\ntimeout_s = 30\n\n'
        f'[notify]\nurls = ["json://127.0.0.1:{server.port}/hook"]\nretry_backoff_s = 0\n\n'
        "[epub]\nenabled = true\n\n[site]\nenabled = true\n",
        encoding="utf-8",
    )
    outcome = _run(tmp_path)

    assert {"file", "epub", "site"} <= set(outcome.delivered), outcome
    assert outcome.failures == []
    [message] = [json.loads(request.body) for request in server.hits("/hook")]
    lines = message["message"].splitlines()
    assert lines[0] == "16–22 November 2026" and lines[-1].endswith("min read")
    assert any("Rust Shenanigans" in line for line in lines[1:-1])  # the week in brief
    data = tmp_path / "data"
    with zipfile.ZipFile(data / "digests" / f"{WEEK}.epub") as book:
        pages = [name for name in book.namelist() if name.startswith("OEBPS/section-")]
        text = "".join(book.read(name).decode() for name in pages)
    assert "Pin and suffering" in text and "min read" in text
    assert "Pin and suffering" in (data / "site" / f"{WEEK}.html").read_text()


def _run(tmp_path: Path) -> DeliveryOutcome:
    config = load_config(tmp_path / "digest.toml")
    period = parse_week(WEEK, config.digest.zone)
    with store_at(config.digest.data_dir / "digest.db") as store:
        context = RunContext(store, config, lambda: NOW + timedelta(days=4))
        budget = RunBudget(store, config, context.clock)
        stages = planned_stages(
            (Stage.FETCH, *WRITE),
            period,
            budget,
            notes=NotesScope(),
            retry_fetch=False,
            delivery=Delivery(sleep=lambda pause: None),
        )

        async def run() -> DeliveryOutcome:
            await collect(context)
            await run_in_order(context, stages)
            delivery = context.made(Written).delivery
            assert delivery is not None
            return delivery

        return asyncio.run(run())
