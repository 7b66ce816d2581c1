"""The archive site ([site] enabled): rebuilt after each revision (deliver/site.py)."""

from __future__ import annotations

from digest.compose.backlog import backlog_for, linkable_urls
from digest.config import Config
from digest.deliver.channel import DeliveryOutcome, Job
from digest.deliver.site import Links, build_site
from digest.periods import parse_week
from digest.store import Store
from digest.urls import for_display


def week_links(store: Store, config: Config) -> Links:
    """The URLs a week's page may link to: its stored items' and backlog's, as its digest."""

    def links(label: str) -> list[str]:
        period = parse_week(label, config.digest.zone)
        items = store.items_saved_between(period.start, period.end, text_chars=0)
        urls = linkable_urls(items, backlog_for(store, config, period))
        return [for_display(url) for url in urls]

    return links


class SiteChannel:
    name = "site"
    carries_empty = False

    def wanted(self, job: Job) -> bool:
        return job.config.site.enabled

    def deliver(self, job: Job, outcome: DeliveryOutcome) -> None:
        config, label = job.config, job.period.label
        others = week_links(job.store, config)

        def links(week: str) -> list[str]:
            return list(job.allowed_urls) if week == label else list(others(week))

        out = config.site_dir
        try:
            build = build_site(out, config.digests_dir, config.digest.zone, links)
        except OSError as exc:
            outcome.failures.append(f"site: cannot write in {out}: {exc.strerror or exc}")
            return
        if build.written:
            outcome.delivered.append(self.name)
        if build.problem:
            outcome.failures.append(build.problem)
