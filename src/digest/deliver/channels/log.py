"""The append-only log (digest-log.md): a revision block each time what a reader sees
changes."""

from __future__ import annotations

import os
from pathlib import Path

from digest.atomic import fsync_dir, open_append
from digest.deliver.channel import DeliveryOutcome, Job, begun, ended, failed, sent_before
from digest.deliver.logdiff import changes_entry, last_full_text
from digest.models import DeliveryStatus


def log_entry(period: str, revision: int, digest_hash: str, markdown: str) -> str:
    """One revision block of the log; its marker line names the period, revision and hash."""
    marker = f"<!-- digest {period} revision {revision} sha256:{digest_hash} -->"
    return f"\n---\n\n{marker}\n\n{markdown.rstrip(chr(10))}\n"


def append_log(log_path: Path, entry: str) -> None:
    """Append `entry` to the log and fsync; nothing is appended if the entry is already there.

    A crash between this append and recording it in the store must not double the
    entry on the next run. Earlier bytes of the log are never rewritten.
    """
    marker = next((line for line in entry.splitlines() if line.startswith("<!-- digest ")), None)
    if marker is None:
        raise ValueError("a log entry needs its '<!-- digest ... -->' marker line")
    # a log the user edited in another encoding is still appended to (its bytes are kept)
    earlier = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
    if _contains_entry(earlier, marker, entry):
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    created = not log_path.exists()
    with open_append(log_path) as log:
        log.write(entry)
        log.flush()
        os.fsync(log.fileno())
    if created:
        fsync_dir(log_path.parent)


def _contains_entry(log_text: str, marker: str, entry: str) -> bool:
    """The marker as a line of its own and the whole entry: a torn append does not count."""
    return marker in log_text.splitlines() and entry.lstrip("\n") in log_text


class LogChannel:
    """Keyed by what a reader sees (Job.reader_view): a revision is logged when it changes,
    not when only the rendering did."""

    name = "log"
    carries_empty = False

    def wanted(self, job: Job) -> bool:
        return True

    def deliver(self, job: Job, outcome: DeliveryOutcome) -> None:
        label, digest_hash = job.period.label, job.digest_hash
        key = job.reader_view or digest_hash
        if sent_before(job, self.name, key):
            return
        if sent_before(job, self.name, digest_hash):  # logged by a digest that keyed the log so
            ended(job, begun(job, self.name, key), DeliveryStatus.SENT)
            return
        revision = job.store.digest_revision(label, digest_hash)
        assert revision is not None, "record_digest runs before the channels"
        record = begun(job, self.name, key)
        log_path = job.config.log_path
        try:
            append_log(log_path, _log_block(job, revision))
        except OSError as exc:
            failed(job, outcome, record, f"cannot append to log {log_path}: {exc.strerror or exc}")
            return
        job.store.save_logged_text(label, job.markdown, job.now)
        ended(job, record, DeliveryStatus.SENT)
        outcome.delivered.append(self.name)


def _log_block(job: Job, revision: int) -> str:
    """The week's text when the log has none of it yet, else what changed since (dated by
    the revision's record, so that a run retrying a torn append writes the same block)."""
    label, digest_hash = job.period.label, job.digest_hash
    whole = log_entry(label, revision, digest_hash, job.markdown)
    before = job.store.logged_text(label)
    if before is None and job.config.log_path.exists():  # a log from before, or a lost store
        earlier = job.config.log_path.read_text(encoding="utf-8", errors="replace")
        if whole.lstrip("\n") in earlier:  # appended by a run that died before recording it
            return whole
        before = last_full_text(earlier, label)
    if before is None:
        return whole
    digest = job.store.digest_record(label, digest_hash)
    at = (digest.created_at if digest else job.now).astimezone(job.config.digest.zone)
    return changes_entry(label, revision, digest_hash, before, job.markdown, at)
