"""The week's markdown file, written atomically; its revision is recorded in the store."""

from __future__ import annotations

from pathlib import Path

from digest.atomic import write_atomic
from digest.config import Config
from digest.deliver.channel import DeliveryOutcome, Job
from digest.errors import DeliveryError
from digest.models import Period


def digest_path(config: Config, period: Period) -> Path:
    return config.digests_dir / f"{period.label}.md"


def write_digest_file(path: Path, markdown: str) -> bool:
    """Write the digest atomically; True when its content changed."""
    try:
        changed = not path.exists() or path.read_text(encoding="utf-8") != markdown
        if changed:
            write_atomic(path, markdown)
    except OSError as exc:
        raise DeliveryError(f"cannot write digest {path}: {exc.strerror or exc}") from exc
    return changed


class FileChannel:
    """First of all: every other channel delivers a recorded revision. A file that cannot
    be written raises DeliveryError (the run has nothing to deliver)."""

    name = "file"
    carries_empty = True

    def wanted(self, job: Job) -> bool:
        return True

    def deliver(self, job: Job, outcome: DeliveryOutcome) -> None:
        if write_digest_file(outcome.path, job.markdown):
            outcome.delivered.append(self.name)
        outcome.revision = job.store.record_digest(
            job.period.label, job.digest_hash, str(outcome.path), job.now
        )
