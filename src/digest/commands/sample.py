"""`digest now --sample`: a week of saves written by us, run through the whole job in a data
folder of its own (`<data_dir>/sample/`), so that a fresh clone with no network, no key and
no saves of one's own shows what a digest is: sections, notes, the week in brief, the footer.

The saves are dated within the current week: a journal with `###` headings, a saved feed
file whose entries carry their full text (read from the file: the sample fetches nothing),
and pasted posts. The digest says it is the sample, and how to go on with one's own saves.
"""

from __future__ import annotations

import hashlib
from datetime import date, datetime, timedelta
from pathlib import Path

from digest.config import Config, SourceConfig
from digest.lifecycle import FetchSucceeded
from digest.models import Extracted, ItemKind, ItemState, Period, Stage
from digest.periods import period_containing
from digest.pipeline import WRITE, RunResult, run
from digest.store import open_store

FULL_TEXT_WORDS = 80  # a saved entry this long is the article itself
SOURCE = "sample"


def sample_config(config: Config) -> Config:
    """The config with the sample's own data folder and source, offline, delivering nowhere."""
    data = config.data_dir / "sample"
    source = SourceConfig(name=SOURCE, kind="file", path=data / "inbox")
    return config.model_copy(
        update={
            "digest": config.digest.model_copy(update={"data_dir": data, "backlog_unread": 0}),
            "sources": [source],
            "rules": [],
            "interests": [],
            "llm": config.llm.model_copy(update={"provider": "offline"}),
            "email": config.email.model_copy(update={"enabled": False}),
            "audio": config.audio.model_copy(update={"enabled": False}),
        }
    )


def run_sample(config: Config, now: datetime) -> RunResult:
    """Write the sample saves, collect them, take the feed file's full texts as read, note
    and compose the week; the digest opens with a line saying it is the sample."""
    sample = sample_config(config)
    period = period_containing(now, sample.digest.zone)
    write_saves(sample.data_dir / "inbox", _days(period, now, sample))
    run(sample, "sample", period=period, stages=(Stage.COLLECT,), clock=lambda: now)
    read_full_texts(sample, now)
    result = run(sample, "sample", period=period, stages=WRITE, clock=lambda: now)
    if result.path is not None:
        text = result.path.read_text(encoding="utf-8")
        result.path.write_text(banner(config) + text, encoding="utf-8")
    return result


def banner(config: Config) -> str:
    inbox = next((s.path for s in config.sources if s.kind == "file" and s.path), None)
    where = f"`{inbox}`" if inbox else "a folder you add as a `file` source"
    return (
        "> **This is the sample week**: saves written by digest's authors, not yours (its"
        " links are not fetched). Put your own (journals, bookmark exports, pasted posts) in"
        f" {where} and run `digest now`.\n\n"
    )


def read_full_texts(config: Config, now: datetime) -> None:
    """Links saved with their whole text (a full-text feed entry) are read from it."""
    with open_store(config.db_path) as store:
        for item in store.all_items():
            text = item.context or ""
            if item.kind is not ItemKind.LINK or item.state is not ItemState.NEW:
                continue
            if len(text.split()) < FULL_TEXT_WORDS:
                continue
            digest = hashlib.sha256(text.encode()).hexdigest()
            extracted = Extracted(text, title=item.title, extractor="saved full text")
            store.apply_fetch(
                FetchSucceeded(item.id, extracted, digest, now, ItemState.FETCHED, None)
            )


def _days(period: Period, now: datetime, config: Config) -> list[date]:
    """Three days of the week up to today (today thrice on the week's first day)."""
    today = now.astimezone(config.digest.zone).date()
    first = period.start.astimezone(config.digest.zone).date()
    return [max(first, today - timedelta(days=back)) for back in (2, 1, 0)]


def write_saves(inbox: Path, days: list[date]) -> None:
    inbox.mkdir(parents=True, exist_ok=True)
    (inbox / "journal.md").write_text(JOURNAL.format(*days), encoding="utf-8")
    stamps = [f"{day.isoformat()}T09:00:00Z" for day in days]
    (inbox / "reading.atom").write_text(FEED.format(*stamps), encoding="utf-8")
    (inbox / "posts.txt").write_text(POSTS, encoding="utf-8")


JOURNAL = """---
title: "Today I Learned (the digest sample)"
---

## {0}
### Databases
- [How SQLite's write-ahead log works](https://www.sqlite.org/wal.html) readers do not block writers; a checkpoint copies the pages back
- https://www.postgresql.org/docs/current/mvcc-intro.html

### Rust Shenanigans
- [Pin and suffering](https://fasterthanli.me/articles/pin-and-suffering) why async Rust needs Pin, told with many jokes
- https://fasterthanli.me/articles/i-want-off-mr-golangs-wild-ride

## {1}
### Databases
- [Are you sure you want to use MMAP in your database?](https://db.cs.cmu.edu/mmap-cidr2022/) four problems a buffer pool solves and mmap does not
"""

_CONTENT = {
    "batching": (
        "Serving a language model is a scheduling problem before it is a kernel problem. A"
        " server that waits for a batch to finish before starting the next leaves the GPU"
        " idle while short answers are done and long ones still run. Continuous batching"
        " admits a new request at every decoding step, so the batch stays full and"
        " throughput rises by a factor of two to four on mixed traffic. The cost moves to"
        " memory: every request keeps its attention keys and values in a cache that grows"
        " with each token. Paged attention stores that cache in fixed blocks, the way an"
        " operating system pages memory, so requests of any length share the GPU without"
        " fragmentation. Together the two ideas explain most of the gap between a naive"
        " server and vLLM or TGI on the same hardware."
    ),
    "kernels": (
        "A fused kernel does in one pass what several kernels would do with a round trip to"
        " memory between them. Attention is the classic case: computing the scores, the"
        " softmax and the weighted sum separately writes a matrix the size of the sequence"
        " squared to memory and reads it back. FlashAttention keeps tiles of the inputs in"
        " on-chip memory and computes the softmax online, with a running maximum and sum,"
        " so the big matrix is never written at all. The arithmetic is the same; the memory"
        " traffic falls by an order of magnitude, and on long sequences the kernel runs"
        " several times faster. Profilers show the same pattern elsewhere: layer norms,"
        " activations and quantisation steps are memory bound, and fusing them with the"
        " matrix multiply before them is often the cheapest speedup left."
    ),
    "dns": (
        "Every name lookup starts at a resolver that asks the root, then the top-level"
        " domain, then the domain's own servers, and caches each answer for as long as its"
        " time to live allows. Most outages blamed on DNS are caching working as designed:"
        " a record changed with a long time to live keeps the old address alive for hours."
        " Lowering the time to live a day before a migration, and raising it again after,"
        " avoids that. Negative answers are cached too, so a name queried before it existed"
        " can stay missing after it is created. The article walks through dig traces of"
        " each case and ends with a checklist for moving a service between providers"
        " without downtime."
    ),
}

FEED = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    '<feed xmlns="http://www.w3.org/2005/Atom"><title>Saved from my reader</title>'
    "<id>tag:digest.sample,2026:reader</id><updated>{2}</updated>"
    "<entry><title>Continuous batching and paged attention, explained</title>"
    '<link href="https://example.org/sample/continuous-batching"/>'
    "<id>tag:digest.sample,2026:batching</id><published>{0}</published><updated>{0}</updated>"
    '<category term="Inference"/>'
    f'<content type="text">{_CONTENT["batching"]}</content></entry>'
    "<entry><title>Why fused kernels win</title>"
    '<link href="https://example.org/sample/fused-kernels"/>'
    "<id>tag:digest.sample,2026:kernels</id><published>{1}</published><updated>{1}</updated>"
    '<category term="Inference"/>'
    f'<content type="text">{_CONTENT["kernels"]}</content></entry>'
    "<entry><title>It was DNS: caching, time to live and migrations</title>"
    '<link href="https://example.org/sample/it-was-dns"/>'
    "<id>tag:digest.sample,2026:dns</id><published>{2}</published><updated>{2}</updated>"
    '<category term="Networking"/>'
    f'<content type="text">{_CONTENT["dns"]}</content></entry>'
    "</feed>\n"
)

POSTS = """6 papers to understand how inference servers work
- Orca: iteration-level scheduling
- vLLM: paged attention
- FlashAttention 1 and 2
- Speculative decoding
- SGLang: radix attention for shared prefixes
- DistServe: prefill and decode on separate GPUs
A RESEARCHER SHOWED THAT THE DATABASE YOU TRUST EVERY DAY IS SECRETLY A LOG
48 minutes from Martin Kleppmann, the talk a generation of backend engineers calls the one that changed how they see storage.
The real lesson was always one thing -- the log is the truth. Everything else is a cache.
Bookmark it and watch it today ↓
Day 12 of learning GPU programming: wrote my first tiled matrix multiply.
Shared memory tiles of 32 by 32 took it from 180 to 1,100 GFLOPS on an RTX 3060. Next: tensor cores.
"""
