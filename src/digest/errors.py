"""Every error digest raises on purpose derives from DigestError.

    DigestError
    ├── ConfigError          bad or unreadable config: names the file and key
    ├── StoreError           the database could not be used
    │   ├── StoreLocked      another writer held it past the busy timeout
    │   └── StoreConflict    a write broke a uniqueness rule (names the constraint)
    ├── RunLocked            another digest run holds the run lock
    ├── RunCancelled         the daemon is stopping: the run ends after the item in hand
    ├── SourceError          a feed or file source could not be read
    ├── ImportFormatError    a file's format is unknown or was forced wrongly
    ├── FetchError           a page could not be fetched
    │   └── BlockedAddress   the URL resolves to an address the guard refuses
    ├── ExtractError         fetched bytes held no usable text
    ├── SummarizeError       the LLM could not give a valid note
    │   └── LLMUnavailable   stop the stage for this run (quota, auth, model)
    │       └── BudgetReached  llm.budget_usd is spent: no new calls this run
    └── DeliveryError        mail or file delivery failed

Per-item code catches these, records them against the item and goes on. Anything else
is a bug: at a unit's boundary (a file, a feed) `unit_bug` records it against that unit
with its traceback on the `digest.bugs` logger, which the test suite fails on, so a bug
stops no run in use and no test passes over it.
"""

from __future__ import annotations

import logging

BUG_LOGGER = "digest.bugs"


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


class ExtractError(DigestError):
    pass


class SummarizeError(DigestError):
    pass


class LLMUnavailable(SummarizeError):
    pass


class BudgetReached(LLMUnavailable):
    pass


class DeliveryError(DigestError):
    pass


def unit_bug(culprit: str, exc: Exception) -> str:
    """Log a bug met while handling one unit (traceback included) and return the one line to
    record against that unit, naming it, so that the run goes on without it."""
    logging.getLogger(BUG_LOGGER).error("bug while handling %s", culprit, exc_info=exc)
    return f"{culprit}: internal error ({type(exc).__name__}: {exc}); a bug in digest, please report it"
