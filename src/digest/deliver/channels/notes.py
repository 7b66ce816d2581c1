"""A note per item in [output] notes_dir (a vault), once per content of the week's notes."""

from __future__ import annotations

from digest.deliver.channel import DeliveryOutcome, Job, begun, ended, failed, sent_before
from digest.deliver.vault import notes_hash, write_item_notes
from digest.models import DeliveryStatus


class NotesChannel:
    """Files left alone (not ours, or edited) fail the channel, so it is tried and said
    again."""

    name = "notes"
    carries_empty = False

    def wanted(self, job: Job) -> bool:
        return job.config.output.notes_dir is not None

    def deliver(self, job: Job, outcome: DeliveryOutcome) -> None:
        folder, zone = job.config.output.notes_dir, job.config.digest.zone
        assert folder is not None, "called only with a notes folder"
        key = notes_hash(job.period, job.items, zone)
        if sent_before(job, self.name, key):
            return
        record = begun(job, self.name, key)
        try:
            vault = write_item_notes(folder, job.period, job.items, zone)
        except OSError as exc:
            failed(
                job, outcome, record, f"cannot write item notes in {folder}: {exc.strerror or exc}"
            )
            return
        if vault.written:
            outcome.delivered.append(self.name)
        left = [
            f"{path}: not written by digest (or edited since): left as it is" for path in vault.left
        ]
        outcome.failures.extend(left)
        status = DeliveryStatus.FAILED if left else DeliveryStatus.SENT
        error = f"{len(left)} notes left alone: {left[0]}" if left else None
        ended(job, record, status, error=error)
