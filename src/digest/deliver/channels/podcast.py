"""The week spoken into its episode and the podcast feed, once per revision ([audio])."""

from __future__ import annotations

from digest.deliver.channel import DeliveryOutcome, Job, begun, ended, failed, sent_before
from digest.deliver.channels.feed import feed_ids
from digest.deliver.podcast import publish_episode
from digest.errors import DeliveryError
from digest.models import DeliveryStatus
from digest.periods import format_period


class PodcastChannel:
    """Before the mail, which then links the episode."""

    name = "podcast"
    carries_empty = False

    def wanted(self, job: Job) -> bool:
        return job.audio is not None

    def deliver(self, job: Job, outcome: DeliveryOutcome) -> None:
        store, label, digest_hash = job.store, job.period.label, job.digest_hash
        assert job.audio is not None, "called only with a script"
        if sent_before(job, self.name, digest_hash):
            return
        revision = store.digest_record(label, digest_hash)
        assert revision is not None, "record_digest runs before the channels"
        record = begun(job, self.name, digest_hash)
        dates = format_period(job.period, job.config.digest.zone)
        try:
            published = publish_episode(
                job.config,
                job.period,
                job.audio,
                dates=dates,
                updated=revision.created_at,
                guid=feed_ids(job).entry,
            )
        except DeliveryError as exc:
            failed(job, outcome, record, str(exc))
        except OSError as exc:
            error = f"audio: cannot write in {job.config.digests_dir}: {exc.strerror or exc}"
            failed(job, outcome, record, error)
        else:
            ended(job, record, DeliveryStatus.SENT)
            outcome.delivered.append(self.name)
            outcome.info.append(published.report())
