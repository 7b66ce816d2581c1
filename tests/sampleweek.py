"""A sample week in the shapes users save (a journal week, a list with topic lines, a post
dump, a feed with categories), run through the real pipeline offline against a loopback
server: for the golden digests and for the README's pictures (bench/render.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from digest.collect.stage import collect
from digest.compose.backlog import linkable_urls
from digest.compose.stage import Composed, ComposeStage
from digest.config import load_config
from digest.deliver.html import markdown_to_html
from digest.fetch.stage import FetchStage
from digest.models import StageReport
from digest.notes.budget import RunBudget
from digest.notes.stage import NotesStage, WeekSummaryStage
from digest.periods import parse_week
from digest.runtime.context import RunContext, RunStage, run_in_order
from loopback import LoopbackServer, Response
from stores import store_at

FIXTURES = Path(__file__).parent / "fixtures" / "weeks"
NOW = datetime(2026, 11, 19, 12, tzinfo=UTC)
WEEK = "2026-W47"

PAGES = {
    "/posts/paged": (
        "Paged attention from first principles",
        "Paged attention stores the key-value cache in fixed-size blocks, like pages of virtual"
        " memory. A block table maps each sequence to its blocks, so memory is allocated only"
        " when a sequence grows. The scheme removes most of the fragmentation that contiguous"
        " caches suffer. Serving engines batch more requests in the same memory as a result."
        " The article walks through the kernel that gathers blocks during attention.",
    ),
    "/posts/pin": (
        "Pin and suffering",
        "Pinning a future in Rust promises that it will not move in memory. Self-referential"
        " futures need that promise, because they hold pointers into themselves. The author"
        " builds an async reader by hand and hits every error the compiler can raise about it."
        " Each error is explained with the rule of pinning it enforces.",
    ),
    "/posts/tuning": (
        "Tuning playbook",
        "The tuning playbook is a guide to choosing hyperparameters for deep learning models."
        " It starts from the batch size and the optimizer before any learning rate search."
        " Experiments are planned in rounds, each answering one question about the model."
        " The guide explains how to read training curves to find instabilities early.",
    ),
    "/posts/explorable": (
        "Explorable explanations",
        "Explorable explanations let a reader change the assumptions of an argument and see the"
        " conclusions move. The essay argues that such media help people think thoughts that"
        " are hard to hold in the head. It shows reactive documents where numbers in the text"
        " can be dragged to new values.",
    ),
    "/news/blocks": (
        "Blocks for the KV cache",
        "A new allocator hands out key-value cache blocks to requests on demand. The serving"
        " engine now fits twice as many requests on one GPU. Latency stays flat as load grows,"
        " the benchmarks show. The allocator is on by default in the next release.",
    ),
    "/news/spec": (
        "Speculative decoding arrives by default",
        "Speculative decoding lets a small draft model propose tokens that the large model"
        " checks in one pass. The inference server now turns it on by default. Throughput on"
        " chat workloads rose by half in the maintainers' tests.",
    ),
    "/news/wal": (
        "A write-ahead log without a wall",
        "The database rewrote its write-ahead log so that writers no longer wait on a global"
        " lock. Commits group themselves into batches while the disk is busy. The change"
        " doubles write throughput on fast disks.",
    ),
    "/news/index": (
        "Indexes that build themselves",
        "The database now suggests indexes from the queries it sees. A background job builds"
        " them when the server is idle. Administrators can review each suggestion before it"
        " is applied.",
    ),
    "/news/alloc": (
        "Rust adds a local allocator API",
        "Rust's allocator API lets a collection take memory from an arena instead of the"
        " global heap. Programs that build many short-lived trees get faster as a result. The"
        " feature is stable in the coming release.",
    ),
}
FEED = [  # (path, category or None)
    ("/news/blocks", "Inference"),
    ("/news/spec", "Inference"),
    ("/news/wal", "Databases"),
    ("/news/index", "Databases"),
    ("/news/alloc", "Rust"),
]


def page(title: str, text: str) -> bytes:
    paragraphs = "".join(f"<p>{sentence}.</p>" for sentence in text.rstrip(".").split(". "))
    return (
        f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>"
        f"{paragraphs}</article></body></html>"
    ).encode()


def feed(server: LoopbackServer) -> str:
    items = "".join(
        f"<item><title>{PAGES[path][0]}</title><link>{server.url(path)}</link>"
        f"<pubDate>Tue, 17 Nov 2026 0{n}:00:00 GMT</pubDate>"
        + (f"<category>{category}</category>" if category else "")
        + "</item>"
        for n, (path, category) in enumerate(FEED)
    )
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>Systems news</title>{items}</channel></rss>'


@dataclass(frozen=True)
class Week:
    markdown: str
    mail: str  # the HTML part
    reports: tuple[StageReport, ...]  # of collect, fetch and notes


def run_week(tmp_path: Path, server: LoopbackServer, shapes: Sequence[str]) -> Week:
    """The week's markdown and mail HTML from `digest now`'s stages, offline, for files in
    `shapes` ("journal", "list", "posts") and, with "feed", the loopback feed (its address
    written 127.0.0.1:PORT)."""
    for path, (title, text) in PAGES.items():
        server.routes[path] = Response(200, page(title, text))
    server.routes["/feed.xml"] = Response(200, feed(server), content_type="application/rss+xml")
    sources = ['name = "inbox"\nkind = "file"\npath = "inbox"']
    if "feed" in shapes:
        sources.append(f'name = "Systems news"\nkind = "feed"\nurl = "{server.url("/feed.xml")}"')
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for shape in shapes:
        for fixture in FIXTURES.glob(f"{shape}.*"):
            text = fixture.read_text(encoding="utf-8").replace("{base}", server.url("").rstrip("/"))
            (inbox / fixture.name).write_text(text, encoding="utf-8")
    config_path = tmp_path / "digest.toml"
    config_path.write_text(
        '[digest]\ndata_dir = "data"\ntimezone = "UTC"\n\n'
        + "".join(f"[[sources]]\n{source}\n\n" for source in sources)
        + '[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\nper_host_delay_s = 0\n'
        "timeout_s = 30\n",  # loopback pages answer at once: a margin for a loaded machine
        encoding="utf-8",
    )
    config = load_config(config_path)
    period = parse_week(WEEK, config.digest.zone)
    with store_at(config.digest.data_dir / "digest.db") as store:
        context = RunContext(store, config, lambda: NOW)
        budget = RunBudget(store, config, context.clock)
        stages: list[RunStage] = [
            FetchStage(),
            NotesStage(budget, period),
            WeekSummaryStage(budget, period),
            ComposeStage(period),
        ]

        async def run() -> tuple[str, list[str], list[StageReport]]:
            reports = await collect(context)
            await run_in_order(context, stages)
            reports.extend(context.reports)
            composed = context.made(Composed)
            urls = sorted(linkable_urls(composed.items, composed.backlog))
            return composed.markdown, urls, reports

        markdown, urls, reports = asyncio.run(run())
    mail = markdown_to_html(markdown, title=f"Digest {WEEK}", allowed_urls=urls)
    return Week(_portless(markdown, server), _portless(mail, server), tuple(reports))


def _portless(text: str, server: LoopbackServer) -> str:
    return text.replace(server.url("").rstrip("/"), "http://127.0.0.1:PORT")
