"""The Atom feed: this period's entry rewritten (same content, same bytes)."""

from __future__ import annotations

from digest.deliver.atom import FeedIds, found_ids, new_tag, update_feed
from digest.deliver.channel import DeliveryOutcome, Job
from digest.errors import DeliveryError


def feed_ids(job: Job) -> FeedIds:
    """The feed's and the week's ids, minted at their first delivery (or taken over from
    the feed file as an older digest wrote it) and stored."""
    store, now, label = job.store, job.now, job.period.label
    found = found_ids(job.config)
    tag = store.minted_id("tag", new_tag(job.config, now), now)
    feed = store.minted_id("feed", found.feed or tag, now)
    entry = store.minted_id(f"week:{label}", found.entries.get(label) or f"{tag}/{label}", now)
    return FeedIds(feed, entry)


class FeedChannel:
    name = "feed"
    carries_empty = False

    def wanted(self, job: Job) -> bool:
        return True

    def deliver(self, job: Job, outcome: DeliveryOutcome) -> None:
        record = job.store.digest_record(job.period.label, job.digest_hash)
        assert record is not None, "record_digest runs before the channels"
        try:
            changed = update_feed(
                job.config,
                job.period,
                job.markdown,
                updated=record.created_at,
                allowed_urls=job.allowed_urls,
                ids=feed_ids(job),
            )
        except OSError as exc:
            outcome.failures.append(f"cannot write feed in {job.config.digests_dir}: {exc}")
            return
        except DeliveryError as exc:
            outcome.failures.append(str(exc))
            return
        if changed:
            outcome.delivered.append(self.name)
