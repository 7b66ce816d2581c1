"""The thin imperative shell: the stages in order, each given the store, the config and `now`."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from digest import policy
from digest.collect.feeds import collect_feeds
from digest.collect.files import collect_file_source
from digest.compose import compose
from digest.config import Config, SourceConfig
from digest.daemon import Jobs
from digest.deliver import DeliveryOutcome, deliver_digest
from digest.errors import DigestError, LLMUnavailable, SummarizeError
from digest.extract import extract
from digest.fetch import Fetcher, check_status
from digest.models import Extracted, Item, ItemKind, Note, NoteBasis, Period, StageReport
from digest.periods import parse_week, period_containing, previous_period
from digest.store import Store, open_store
from digest.summarize import CallRecord, NoteRequest, Summarizer, make_summarizer, note_cache_key

log = logging.getLogger("digest")

Clock = Callable[[], datetime]
PROCESS_POOL_THRESHOLD = 8  # fewer pages than this are extracted in-process


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class RunResult:
    period: Period
    path: Path | None = None
    reports: list[StageReport] = field(default_factory=list)
    delivery: DeliveryOutcome | None = None

    @property
    def failures(self) -> list[str]:
        return [line for report in self.reports for line in report.failures]


class Pipeline:
    """One run's worth of stages over one open store."""

    def __init__(self, config: Config, store: Store, *, clock: Clock = utc_now):
        self.config = config
        self.store = store
        self.clock = clock
        self.run_id: int | None = None

    # -- collect -----------------------------------------------------------

    def source_ids(self) -> list[tuple[int, SourceConfig]]:
        return [
            (
                self.store.ensure_source(
                    source.name,
                    source.kind,
                    url=source.url,
                    path=str(source.path) if source.path else None,
                ),
                source,
            )
            for source in self.config.sources
        ]

    async def collect(self) -> list[StageReport]:
        now = self.clock()
        sources = self.source_ids()
        feeds = [(sid, source) for sid, source in sources if source.kind == "feed"]
        reports = []
        for sid, source in sources:
            if source.kind == "file":
                reports.append(
                    collect_file_source(self.store, source, sid, self.config.digest.zone, now)
                )
        if feeds:
            async with Fetcher(self.config.fetch) as fetcher:
                reports.append(
                    await collect_feeds(self.store, fetcher, feeds, self.config.fetch, now)
                )
        return reports

    # -- fetch and extract -------------------------------------------------

    def due_for_fetch(self, now: datetime) -> list[Item]:
        return [
            item
            for item in self.store.fetch_candidates()
            if not item.gave_up and policy.is_due(item.next_attempt_at, now)
        ]

    async def fetch_and_extract(self) -> StageReport:
        report = StageReport("fetch")
        due = self.due_for_fetch(self.clock())
        if not due:
            return report
        pool: Executor | None = (
            ProcessPoolExecutor(max_workers=2) if len(due) >= PROCESS_POOL_THRESHOLD else None
        )
        try:
            async with Fetcher(self.config.fetch) as fetcher:
                await asyncio.gather(
                    *(self._fetch_one(fetcher, pool, item, report) for item in due)
                )
        finally:
            if pool is not None:
                pool.shutdown()
        return report

    async def _fetch_one(
        self, fetcher: Fetcher, pool: Executor | None, item: Item, report: StageReport
    ) -> None:
        assert item.url is not None
        try:
            result = await fetcher.get(item.url)
            check_status(result)
            content_type = result.headers.get("content-type")
            if pool is None:
                extracted = extract(result.content, url=result.final_url, content_type=content_type)
            else:
                extracted = await asyncio.get_running_loop().run_in_executor(
                    pool, _extract_in_worker, result.content, result.final_url, content_type
                )
        except DigestError as exc:
            self._record_fetch_failure(item, exc, report)
            return
        extracted = replace(extracted, final_url=result.final_url)
        text_hash = hashlib.sha256(extracted.text.encode()).hexdigest()
        self.store.record_fetched(item.id, extracted, text_hash, self.clock())
        report.done += 1

    def _record_fetch_failure(self, item: Item, exc: DigestError, report: StageReport) -> None:
        fetch = self.config.fetch
        now = self.clock()
        next_attempt = policy.next_attempt_at(
            item.attempts + 1,
            now,
            base_s=fetch.retry_base_s,
            max_s=fetch.retry_max_s,
            retry_after_s=getattr(exc, "retry_after", None),
            permanent=getattr(exc, "permanent", False),
            max_attempts=fetch.max_attempts,
        )
        self.store.record_fetch_failure(item.id, str(exc), next_attempt)
        when = f"will retry after {next_attempt:%Y-%m-%d %H:%M} UTC" if next_attempt else "given up"
        report.failures.append(f"{exc}; {when}")

    # -- notes -------------------------------------------------------------

    async def make_notes(self, summarizer: Summarizer) -> StageReport:
        report = StageReport("notes")
        fallback = self.offline_summarizer()
        known_tags = tuple(self.store.known_tags()[:50])
        candidates = [
            item
            for item in self.store.note_candidates()
            if item.state != "new" or item.kind != ItemKind.LINK
        ]
        unavailable: list[str] = []

        async def note_one(item: Item) -> None:
            if unavailable:
                return
            request = note_request(item, known_tags)
            key = note_cache_key(request.text, summarizer)
            note = self.store.cached_note(key)
            final = True
            if note is None:
                try:
                    note = await summarizer.note(request)
                except LLMUnavailable as exc:
                    unavailable.append(str(exc))
                    return
                except SummarizeError as exc:
                    report.failures.append(
                        f"{exc}; an extractive note stands in until the next run"
                    )
                    note = await fallback.note(request)
                    key, final = note_cache_key(request.text, fallback), False
            self.store.attach_note(item.id, key, note, self.clock(), final=final)
            report.done += 1

        await asyncio.gather(*(note_one(item) for item in candidates))
        if unavailable:
            report.failures.append(
                f"{unavailable[0]}; remaining items stay pending for the next run"
            )
        return report

    # -- compose and deliver -----------------------------------------------

    async def compose_and_deliver(self, period: Period, summarizer: Summarizer) -> DeliveryOutcome:
        items = self.store.items_saved_between(period.start, period.end)
        noted = [(item.id, item.display_title, item.note) for item in items if item.note]
        week_summary = await self.week_summary(period, noted, summarizer) if noted else ""
        markdown = compose(period, items, week_summary, zone=self.config.digest.zone)
        return deliver_digest(self.store, self.config, period, markdown, self.clock())

    async def week_summary(
        self, period: Period, noted: list[tuple[int, str, Note]], summarizer: Summarizer
    ) -> str:
        """One summary over the week's notes, cached so that a rerun on the same notes is free."""
        basis = json.dumps([(i, title, note.summary) for i, title, note in noted])
        key = note_cache_key(f"week {period.label}\n{basis}", summarizer)
        if (cached := self.store.cached_week_summary(key)) is not None:
            return cached
        try:
            text = await summarizer.week_summary(period.label, noted)
        except SummarizeError as exc:
            log.warning("%s; the week summary falls back to the extractive one", exc)
            return await self.offline_summarizer().week_summary(period.label, noted)
        self.store.save_week_summary(key, period.label, text, self.clock())
        return text

    def offline_summarizer(self) -> Summarizer:
        """Stands in when the configured model fails on one item or on the week summary."""
        return make_summarizer(self.config.llm.model_copy(update={"provider": "offline"}))

    def summarizer(self) -> Summarizer:
        return make_summarizer(self.config.llm, on_call=self._record_call)

    def _record_call(self, call: CallRecord) -> None:
        self.store.record_llm_call(
            run_id=self.run_id,
            model=call.model,
            purpose=call.purpose,
            tokens_in=call.tokens_in,
            tokens_out=call.tokens_out,
            cost_usd=0.0,
            duration_s=call.duration_s,
            ok=call.ok,
            now=self.clock(),
        )


def note_request(item: Item, known_tags: Sequence[str]) -> NoteRequest:
    """The text a note is made from: the page when we have it, else what was saved with it."""
    if item.text:
        text, basis = item.text, NoteBasis.FULL_TEXT
    elif item.kind == ItemKind.POST:
        text, basis = item.context or "", NoteBasis.POST_TEXT
    else:
        parts = [item.title or item.extracted_title or "", item.context or ""]
        text, basis = (
            "\n\n".join(part for part in parts if part) or (item.url or ""),
            NoteBasis.SAVED_CONTEXT,
        )
    return NoteRequest(
        item_id=item.id,
        title=item.title or item.extracted_title,
        url=item.url,
        text=text,
        basis=basis,
        known_tags=tuple(known_tags),
    )


def resolve_period(config: Config, week: str | None, now: datetime) -> Period:
    """An ISO week label, "last" for the week before this one, or None for this week."""
    zone = config.digest.zone
    current = period_containing(now, zone)
    if week is None or week == "this":
        return current
    if week == "last":
        return previous_period(current, zone)
    return parse_week(week, zone)


STAGES = ("collect", "fetch", "notes", "deliver")


async def _run_stages(pipeline: Pipeline, period: Period, stages: Sequence[str]) -> RunResult:
    result = RunResult(period)
    if "collect" in stages:
        result.reports.extend(await pipeline.collect())
    if "fetch" in stages:
        result.reports.append(await pipeline.fetch_and_extract())
    if "notes" not in stages and "deliver" not in stages:
        return result
    summarizer = pipeline.summarizer()
    try:
        if "notes" in stages:
            result.reports.append(await pipeline.make_notes(summarizer))
        if "deliver" in stages:
            result.delivery = await pipeline.compose_and_deliver(period, summarizer)
            result.path = result.delivery.path
            result.reports.append(
                StageReport("deliver", len(result.delivery.delivered), result.delivery.failures)
            )
    finally:
        await summarizer.aclose()
    return result


def run(
    config: Config,
    command: str,
    *,
    period: Period,
    stages: Sequence[str] = STAGES,
    clock: Clock = utc_now,
) -> RunResult:
    """Open the store, run the stages in order and record the run; the caller holds the run lock."""
    store = open_store(config.db_path)
    try:
        pipeline = Pipeline(config, store, clock=clock)
        run_id = pipeline.run_id = store.start_run(command, clock())
        status, stats = "failed", dict[str, Any](period=period.label)
        try:
            result = asyncio.run(_run_stages(pipeline, period, stages))
            status = "partial" if result.failures else "ok"
            stats |= {report.stage: report.done for report in result.reports}
            stats["failures"] = len(result.failures)
        finally:
            store.finish_run(run_id, status, stats, clock())
        return result
    finally:
        store.close()


def _extract_in_worker(content: bytes, url: str, content_type: str | None) -> Extracted:
    return extract(content, url=url, content_type=content_type)


def daemon_jobs(config: Config, clock: Clock = utc_now) -> Jobs:
    """The daemon's two jobs: collect often; weekly, deliver the week that just ended."""

    def collect_job() -> None:
        period = resolve_period(config, None, clock())
        _log_result(run(config, "daemon collect", period=period, stages=STAGES[:3], clock=clock))

    def digest_job() -> None:
        period = resolve_period(config, "last", clock())
        _log_result(run(config, "daemon digest", period=period, clock=clock))

    return Jobs(collect=collect_job, digest=digest_job)


def _log_result(result: RunResult) -> None:
    for report in result.reports:
        log.info("%s: %d done, %d failed", report.stage, report.done, len(report.failures))
        for line in report.failures:
            log.warning("%s", line)
    if result.path is not None:
        log.info("digest %s written to %s", result.period.label, result.path)
