"""Every error digest raises on purpose derives from DigestError; catch where it says.

    DigestError                 catch at a command's edge (cli.DigestGroup) or a unit's loop
    ├── ConfigError             bad or unreadable config (names file and key): exit 1, fix it
    ├── StoreError              the database could not be used: end the command
    │   ├── StoreLocked         another writer held it past the busy timeout: retry later
    │   ├── StoreConflict       a write broke a uniqueness rule (names the constraint): a bug
    │   ├── StoreTooNew         written by a newer digest: refused at open, upgrade digest
    │   └── DiskError           the data folder cannot be written (full, quota, read-only)
    ├── RunLocked               another run holds the run lock: wait (--wait) or exit
    ├── LinkRefused             a symbolic link where digest writes its own file (path)
    ├── RunCancelled            the daemon is stopping: let it end the run after the item
    ├── SourceError             a feed or file source could not be read: record, next source
    ├── ImportFormatError       a file's format is unknown or forced wrongly: tell the user
    ├── BadSearch               a search query FTS5 cannot parse: wrong usage (exit 2)
    │   └── SearchTooSlow       it ran past store.search.SEARCH_SECONDS: fewer words (exit 2)
    ├── FetchError              a page could not be fetched (url; permanent, retry_after):
    │   │                       record against the item, retry with backoff (lifecycle)
    │   ├── NoNetwork           no name resolves at all: stop fetching, nothing recorded
    │   ├── BlockedAddress      a scheme or address the guard refuses: given up sooner
    │   │   └── AddressRefused  (fetch.guard) raised in the transport, which knows no URL
    │   └── SkippedContent      binary: closed after its first bytes, never fetched again
    ├── ExtractError            fetched bytes held no usable text (url): record, retry later
    │   └── UnreadableDocument  a PDF no reader opens (broken, encrypted, scanned): final
    ├── SummarizeError          no valid note: a stand-in, retry later (llm.max_attempts sends)
    │   ├── UnusableAnswer      it answered, nothing usable
    │   └── LLMUnavailable      quota, auth, model, no server: stop the stage for this run
    │       └── BudgetReached   llm.budget_usd is spent: no new calls this run
    └── DeliveryError           mail or file delivery failed (fix: what to do): retry later
        ├── DeliveryUnknown     (deliver.mail) dropped after the message was sent: never resend
        ├── SmtpReplyError      (deliver.mail) the server answered an error code; 4xx is transient
        └── NoVoice             (audio.voices) nothing can speak: install espeak-ng or a voice

Outside the tree, on purpose: doctor.Problem (a failed check and its fix, caught by doctor
itself), collect.importers.common.TimeError (a ValueError a parser turns into a Rejected
line) and fetch.guard.UnresolvedHost (an httpcore error httpx wraps; fetch names it).

Per-item code catches these, records them against the item and goes on; anything else is
a bug and escapes. The culprit travels as data (DigestError.url, item_id, path, line) and
the one line shown is rendered by DigestError.__str__ alone.


A bug at a unit's boundary (a file, a feed) `unit_bug` records it against that unit
with its traceback on the `digest.bugs` logger, which the test suite fails on, so a bug
stops no run in use and no test passes over it.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

BUG_LOGGER = "digest.bugs"
# What a full, over-quota or read-only disk makes a write fail with.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


class DigestError(Exception):
    """Root of digest's own errors; str() is the one line the user sees, rendered here.

    The culprit is data: `url`, `item_id`, `path` and `line` say which page, item, file
    and line the error is about, for code to act on; `fix` says what to do, when the raiser
    knows. Given a culprit, the line reads "<action>: <culprit>: <reason>"; without one the
    reason names it itself.
    """

    action: ClassVar[str] = ""  # what failed, said before the culprit: "fetch failed"

    def __init__(
        self,
        reason: str,
        *,
        url: str | None = None,
        item_id: int | None = None,
        path: str | Path | None = None,
        line: int | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.url = url
        self.item_id = item_id
        self.path = path
        self.line = line
        self.fix = fix

    def __str__(self) -> str:
        culprit = self.culprit()
        if culprit is None:
            return self.reason
        return ": ".join(part for part in (self.action, culprit, self.reason) if part)

    def culprit(self) -> str | None:
        """Which item, page, file and line: 'item 7 'https://…'', 'notes.md:12'."""
        parts = []
        if self.item_id is not None:
            parts.append(f"item {self.item_id}")
        if self.url is not None:
            parts.append(repr(self.url))
        if self.path is not None:
            parts.append(f"{self.path}:{self.line}" if self.line is not None else str(self.path))
        return " ".join(parts) or None


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


class LinkRefused(DigestError):
    """A symbolic link (or another kind of file) stands where digest writes its own file."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(
            "is a symbolic link or not a regular file; digest writes only its own files"
            " there: remove it and run again",
            path=path,
        )


class RunCancelled(DigestError):
    pass


class SourceError(DigestError):
    pass


class ImportFormatError(DigestError):
    pass


class BadSearch(DigestError):
    pass


class SearchTooSlow(BadSearch):
    pass


class FailureKind(StrEnum):
    """What kind of failure a page's fetch was: stored beside the error's text (with the HTTP
    status), so that what the reader is told comes from data, not from parsing the text."""

    UNRESOLVED = "unresolved"  # DNS has no address for the host
    REFUSED = "refused"  # the connection was refused or broken
    TIMEOUT = "timeout"
    HTTP = "http"  # an error status: see the status
    TOO_LARGE = "too_large"
    BLOCKED = "blocked"  # a scheme or address the guard refuses
    BINARY = "binary"  # not a page: skipped after its first bytes
    EXTRACT = "extract"  # fetched, but no text came out
    OTHER = "other"


class FetchError(DigestError):
    """A fetch failed. `permanent` failures (404, 410, refused address) are given up sooner;
    `retry_after` is the wait the server asked for, in seconds; `kind` and `status` say what
    failed, as data."""

    action = "fetch failed"
    default_kind: ClassVar[FailureKind] = FailureKind.OTHER

    def __init__(
        self,
        reason: str,
        *,
        url: str | None = None,
        permanent: bool = False,
        retry_after: float | None = None,
        kind: FailureKind | None = None,
        status: int | None = None,
    ):
        super().__init__(reason, url=url)
        self.permanent = permanent
        self.retry_after = retry_after
        self.kind = kind or self.default_kind
        self.status = status


class NoNetwork(FetchError):
    """Names do not resolve at all: the network is down, and no page's fault."""

    default_kind = FailureKind.UNRESOLVED


class BlockedAddress(FetchError):
    action = "fetch refused"
    default_kind = FailureKind.BLOCKED

    def __init__(self, reason: str, *, url: str | None = None):
        super().__init__(reason, url=url, permanent=True)


class SkippedContent(FetchError):
    """Not worth reading (an image, a video, an archive): final, never retried."""

    default_kind = FailureKind.BINARY

    def __init__(self, reason: str, *, url: str | None = None):
        super().__init__(reason, url=url, permanent=True)


class ExtractError(DigestError):
    action = "extract failed"


class UnreadableDocument(ExtractError):
    """A document (PDF) whose bytes no reader opens: the same bytes would fail again, so
    it is final, never fetched again."""


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


def unit_bug(culprit: str, exc: Exception) -> str:
    """Log a bug met while handling one unit (traceback included) and return the one line to
    record against that unit, naming it, so that the run goes on without it."""
    logging.getLogger(BUG_LOGGER).error("bug while handling %s", culprit, exc_info=exc)
    return f"{culprit}: {bug_reason(exc)}"


@contextmanager
def bugs_recorded(culprit: str, failures: list[str]) -> Iterator[None]:
    """Around one unit's work: a bug in it is logged (unit_bug) and its line added to
    `failures`, and the caller goes on; digest's own errors pass through as they are."""
    try:
        yield
    except DigestError:
        raise
    except Exception as exc:
        failures.append(unit_bug(culprit, exc))


def bug_reason(exc: Exception) -> str:
    """What a unit's record says of a bug met while handling it."""
    return f"internal error ({type(exc).__name__}: {exc}); a bug in digest, please report it"
