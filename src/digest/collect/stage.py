"""The collect stage: every source of the config (files, mailboxes, feeds) and the feeds imported into
the store (OPML), and a line for new items that belong to weeks before the run's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from digest.collect.feedlists import imported_feed_sources
from digest.collect.feeds import collect_feeds
from digest.collect.inbox import collect_file_source
from digest.collect.mail.stage import collect_mail_source
from digest.config import MAIL_KINDS, NO_SOURCES, NO_SOURCES_FIX, Config, SourceConfig
from digest.fetch.client import Fetcher
from digest.models import Period, Stage, StageReport
from digest.periods import period_containing
from digest.runtime.context import RunContext, StageOutcome
from digest.store import Store


@dataclass(frozen=True)
class CollectStage:
    period: Period  # the run's week: new items saved before it get a line of their own
    on_new: Callable[[int], None] = lambda new_items: None  # told of each source's new items

    async def run(self, run: RunContext) -> StageOutcome:
        last = run.store.last_item_id()
        reports = await collect(run, self.on_new)
        if reports and (earlier := earlier_weeks(run, self.period, last)):
            reports[-1].info.append(earlier)
        return StageOutcome(reports)


def source_ids(run: RunContext) -> list[tuple[int, SourceConfig]]:
    """The sources of the config that are not paused, each with its id in the store."""
    return [
        (
            run.store.ensure_source(
                source.name,
                source.kind,
                url=source.url or source.imap_location,
                path=str(source.path) if source.path else None,
                now=run.clock(),
            ),
            source,
        )
        for source in run.config.sources
        if not source.paused
    ]


def without_sources(config: Config, store: Store) -> bool:
    """No source in the config, none in the store and nothing saved: a fresh installation,
    told what to do (config.NO_SOURCES_FIX) by doctor, the collect stage and the digest."""
    return not config.sources and not store.holds_saves()


async def collect(
    run: RunContext, on_new: Callable[[int], None] = lambda new_items: None
) -> list[StageReport]:
    """Every source of the config, and the feeds imported into the store (OPML); `on_new`
    hears how many new items each source gave as soon as they are stored."""
    now = run.clock()
    if without_sources(run.config, run.store):
        return [StageReport(Stage.COLLECT, info=[f"{NO_SOURCES}: {NO_SOURCES_FIX}"])]
    sources = source_ids(run)
    feeds = [(sid, source) for sid, source in sources if source.kind == "feed"]
    feeds += imported_feed_sources(run.store, run.config.sources)
    reports = []
    for sid, source in sources:
        if source.kind == "file":
            reports.append(collect_file_source(run.store, source, sid, run.config.digest.zone, now))
            on_new(reports[-1].done)
            run.progress(Stage.COLLECT, len(reports), len(sources))
        elif source.kind in MAIL_KINDS:
            reports.append(collect_mail_source(run.store, source, sid, now))
            run.progress(Stage.COLLECT, len(reports), len(sources))
    if feeds:
        async with Fetcher(run.config.fetch, run.waits) as fetcher:
            report = await collect_feeds(run.store, fetcher, feeds, run.config.fetch, now, on_new)
            if fetcher.offline is not None and report.failures:
                report = _offline(report, fetcher.offline)
            reports.append(report)
        run.progress(Stage.COLLECT, len(sources), len(sources))
    return reports


def _offline(report: StageReport, why: str) -> StageReport:
    """The feeds' report of a run without a network: one line, not one per feed."""
    line = f"{why}: {report.failed} feeds left for a later run (polled next time)"
    return replace(report, failures=[line], failed_units=report.failed)


def earlier_weeks(run: RunContext, period: Period, last_item_id: int) -> str | None:
    """A line for the items newer than `last_item_id` that were saved before `period`:
    their digests are written only on request."""
    count, earliest = run.store.saved_before(period.start, after_id=last_item_id)
    if not count or earliest is None:
        return None
    first = period_containing(earliest, run.config.digest.zone).label
    things = "item belongs" if count == 1 else "items belong"
    return (
        f"{count} new {things} to earlier weeks (from {first}): "
        f"`digest now --since {first}` writes their digests"
    )
