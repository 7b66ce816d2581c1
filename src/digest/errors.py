"""Every error digest raises on purpose derives from DigestError.

    DigestError
    ├── ConfigError          bad or unreadable config: names the file and key
    ├── StoreError           the database could not be used
    │   ├── StoreLocked      another writer held it past the busy timeout
    │   ├── StoreConflict    a write broke a uniqueness rule (names the constraint)
    │   ├── StoreTooNew      written by a newer digest: refused at open
    │   └── DiskError        the data folder cannot be written (full, quota, read-only)
    ├── RunLocked            another digest run holds the run lock
    ├── RunCancelled         the daemon is stopping: the run ends after the item in hand
    ├── SourceError          a feed or file source could not be read
    ├── ImportFormatError    a file's format is unknown or was forced wrongly
    ├── FetchError           a page could not be fetched
    │   ├── BlockedAddress   the URL resolves to an address the guard refuses
    │   └── SkippedContent   binary: closed after its first bytes, never fetched again
    ├── ExtractError         fetched bytes held no usable text
    ├── SummarizeError       the LLM could not give a valid note
    │   ├── UnusableAnswer   it answered, but nothing usable (counts against llm.max_attempts)
    │   └── LLMUnavailable   stop the stage for this run (quota, auth, model)
    │       └── BudgetReached  llm.budget_usd is spent: no new calls this run
    └── DeliveryError        mail or file delivery failed

Per-item code catches these, records them against the item and goes on; anything
else is a bug and escapes.
"""

from __future__ import annotations

import errno

# What a full, over-quota or read-only disk makes a write fail with.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


class DigestError(Exception):
    """Root of digest's own errors; str() is the one line the user sees."""


class ConfigError(DigestError):
    pass


class StoreError(DigestError):
    pass


class StoreLocked(StoreError):
    pass


class StoreConflict(StoreError):
    pass


class StoreTooNew(StoreError):
    pass


class DiskError(StoreError):
    pass


def disk_error(exc: OSError, what: object) -> DiskError:
    """One line for a write that failed because of the disk, with what to do about it."""
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    hint = "free some space and run again" if full else "make it writable and run again"
    return DiskError(f"cannot write {what}: {exc.strerror or exc}; {hint}")


class RunLocked(DigestError):
    pass


class RunCancelled(DigestError):
    pass


class SourceError(DigestError):
    pass


class ImportFormatError(DigestError):
    pass


class FetchError(DigestError):
    """A fetch failed. `permanent` failures (404, 410, refused address) are given up sooner."""

    def __init__(self, message: str, *, permanent: bool = False, retry_after: float | None = None):
        super().__init__(message)
        self.permanent = permanent
        self.retry_after = retry_after


class BlockedAddress(FetchError):
    def __init__(self, message: str):
        super().__init__(message, permanent=True)


class SkippedContent(FetchError):
    """Not worth reading (an image, a video, an archive): final, never retried."""

    def __init__(self, message: str):
        super().__init__(message, permanent=True)


class ExtractError(DigestError):
    pass


class SummarizeError(DigestError):
    pass


class UnusableAnswer(SummarizeError):
    pass


class LLMUnavailable(SummarizeError):
    pass


class BudgetReached(LLMUnavailable):
    pass


class DeliveryError(DigestError):
    pass
